#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The glibc a built binary needs: no symbol version newer than the baseline
# (meson.build's glibc_baseline), read from the dynamic symbol table as the
# loader of an old distribution would check it.
# usage: glibc.sh BASELINE PINNED FILE...   (TAP on stdout; PINNED is
# false for builds that keep glibc's default binding, such as sanitizers)
set -u
base=$1 pinned=$2
shift 2
if [ "$pinned" != true ]; then echo "1..0 # SKIP this build keeps glibc's newest symbol versions"; exit 0; fi
command -v objdump >/dev/null || { echo "1..0 # SKIP objdump is not installed"; exit 0; }
echo "1..$#"
n=0
for f in "$@"; do
  n=$((n + 1))
  # "(GLIBC_2.34) pthread_create" -> "2.34 pthread_create"; versions compare
  # field by field (2.3.2 < 2.26).
  newer=$(objdump -T "$f" | sed -n 's/.*(GLIBC_\([0-9.]*\)) *\(.*\)$/\1 \2/p' | sort -u |
    while read -r v sym; do
      if [ "$(printf '%s\n%s\n' "$base" "$v" | sort -V | tail -n1)" != "$base" ]; then
        echo "$sym needs glibc $v"
      fi
    done)
  if [ -z "$newer" ]; then
    echo "ok $n - $(basename "$f") needs glibc $base or older"
  else
    echo "not ok $n - $(basename "$f") needs a glibc newer than $base"
    sed 's/^/# /' <<<"$newer"
    echo "# bind the function at its old version in common/glibc_pins.h"
  fi
done
