#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin in an older distribution's root file system: the oldest Debian
# release the package mirror still serves (buster has glibc 2.28, bullseye
# 2.31), made once by debootstrap (about a minute, 215 MiB) and kept in the
# build folder. Inside it (chroot), the distribution's own perl opens the
# plugin with every symbol bound at once (LD_BIND_NOW, as NCCL's RTLD_NOW)
# and looks up its newest ncclNetPlugin table.
# usage: oldroot.sh PLUGIN_SO CACHE_DIR   (TAP on stdout)
set -u
so=$1 cache=$2
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip_all "making a root file system needs root"
command -v debootstrap >/dev/null || skip_all "debootstrap is not installed"
mirror=${DIAG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache"
root=
for suite in buster bullseye; do
  if [ -x "$cache/$suite/usr/bin/perl" ]; then root=$cache/$suite; break; fi
done
for suite in buster bullseye; do
  [ -z "$root" ] || break
  dir=$cache/$suite
  rm -rf "$dir"
  if timeout 600 debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$cache/$suite.log" 2>&1; then
    root=$dir
    break
  fi
  rm -rf "$dir"
done
[ -n "$root" ] || skip_all "the mirror $mirror serves neither buster nor bullseye"
glibc=$(chroot "$root" /usr/bin/ldd --version 2>/dev/null | sed -n '1s/.* //p')
echo "1..1"
cp "$so" "$root/tmp/plugin.so"
# shellcheck disable=SC2016 # perl code
out=$(chroot "$root" /usr/bin/env -i LD_BIND_NOW=1 /usr/bin/perl -MDynaLoader -e '
  my $h = DynaLoader::dl_load_file($ARGV[0], 0) or die DynaLoader::dl_error() . "\n";
  for my $v (reverse 5 .. 12) {
    if (DynaLoader::dl_find_symbol($h, "ncclNetPlugin_v$v")) { print "ncclNetPlugin_v$v\n"; exit 0 }
  }
  die "no ncclNetPlugin table\n"' /tmp/plugin.so 2>&1)
rc=$?
rm -f "$root/tmp/plugin.so"
if [ $rc = 0 ]; then
  echo "ok 1 - $(basename "$root") (glibc $glibc) loads the plugin with every symbol bound: $out"
else
  echo "not ok 1 - $(basename "$root") (glibc $glibc) cannot load the plugin"
  sed 's/^/# /' <<<"$out"
fi
