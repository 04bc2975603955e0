#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# meson install into a scratch folder: the plugin in meson's libdir, the
# tools in bindir, both manual pages in man1; the installed tool finds the
# installed plugin beside it (bin -> the libdir) and passes its selftest.
# usage: install.sh BUILD_ROOT   (TAP on stdout)
set -u
build=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
if ! out=$(meson install -C "$build" --no-rebuild --destdir "$dest" 2>&1); then
  echo "not ok 1 - meson install"
  sed 's/^/# /' <<<"$out" | tail -20
  echo "1..1"
  exit 0
fi
so=$(find "$dest" -name libnccl-net-diag.so -type f | head -1)
tool=$(find "$dest" -path '*/bin/nccl-net-diag' -type f | head -1)
[ -n "$so" ] && ok "the plugin: ${so#"$dest"}" || notok "the plugin is installed"
[ -n "$tool" ] && ok "the tool: ${tool#"$dest"}" || notok "nccl-net-diag is installed"
for page in nccl-net-diag.1 nccl-net-bench.1; do
  found=$(find "$dest" -path "*/share/man/man1/$page*" | head -1)
  [ -n "$found" ] && ok "the manual page ${found#"$dest"}" || notok "the manual page $page is installed"
done
if [ -n "$tool" ]; then
  out=$(env -u NCCL_DIAG_PLUGIN_PATH -u NCCL_NET_PLUGIN "$tool" selftest --size 64K --iters 1 2>&1)
  if grep -q "^plugin $so, " <<<"$out" && grep -q "result: PASS" <<<"$out"; then
    ok "the installed tool loads the installed plugin and passes"
  else
    notok "the installed tool loads the installed plugin and passes"
    sed 's/^/# /' <<<"$out" | head -10
  fi
fi
echo "1..$n"
