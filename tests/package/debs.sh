#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages, as a cluster installs them: built by dpkg-buildpackage
# from a clean clone of HEAD (so a file missing from git fails here), checked
# by lintian, then installed with dpkg into a private mount namespace whose
# /usr, /etc and /var are overlays (the host is not changed), where the
# loader's cache must list the plugin, NCCL's dlopen by name must find it,
# and the installed tools must report the package's version and pass their
# selftest.
# usage: debs.sh SOURCE_DIR        (TAP on stdout)
set -u
src=$(cd "$1" && pwd)
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { # description, command...: one case from a command's status
  local what=$1; shift
  if out=$("$@" 2>&1); then ok "$what"; else notok "$what"; sed 's/^/# /' <<<"$out" | tail -20; fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# --- inside the private mount namespace (this script runs itself there) ----
if [ "${2:-}" = "--inside" ]; then
  scratch=$3 n=$4
  trap 'echo "$n" >"$scratch/count"' EXIT
  mount -t tmpfs tmpfs "$scratch/ov" || { notok "a tmpfs for the overlays"; exit 1; }
  for d in usr etc var; do
    mkdir -p "$scratch/ov/$d/upper" "$scratch/ov/$d/work"
    if ! mount -t overlay overlay \
        -o "lowerdir=/$d,upperdir=$scratch/ov/$d/upper,workdir=$scratch/ov/$d/work" "/$d"; then
      notok "an overlay on /$d"; exit 1
    fi
  done
  rm -f /var/lib/man-db/auto-update # no mandb run for two pages (the host's own is untouched)
  debs=("$scratch"/libnccl-net-diag_*.deb "$scratch"/nccl-net-diag_*.deb)
  check "dpkg -i installs both packages (only libc needed)" dpkg -i "${debs[@]}"
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  lib=/usr/lib/$multiarch/libnccl-net-diag.so
  # The first entry is the one dlopen takes: another copy (an old 'meson
  # install' in /usr/local) would shadow the package's.
  check "ldconfig -p lists $lib first (the package's ldconfig trigger ran)" \
    bash -c "ldconfig -p | grep -m1 -E '^[[:space:]]+libnccl-net-diag\.so ' |
      grep -E '=> (/usr)?/lib/$multiarch/libnccl-net-diag\.so$' || { ldconfig -p | grep nccl-net-diag; false; }"
  # NCCL_NET_PLUGIN=diag: NCCL calls dlopen("libnccl-net-diag.so"). The tool
  # takes a bare name the same way, and selftest then drives the plugin.
  check "dlopen(\"libnccl-net-diag.so\") by name finds the installed plugin and it moves data" \
    env -u LD_LIBRARY_PATH NCCL_DIAG_PLUGIN_PATH=libnccl-net-diag.so \
    /usr/bin/nccl-net-diag selftest --size 1048576 --iters 16
  pkgver=$(dpkg-query -W -f '${Version}' nccl-net-diag)
  for tool in nccl-net-diag nccl-net-bench; do
    got=$(/usr/bin/$tool --version 2>&1)
    if [ "$got" = "$tool $pkgver" ]; then ok "$tool --version prints the package's version ($pkgver)"
    else notok "$tool --version prints the package's version"; echo "# got '$got', package $pkgver"; fi
  done
  check "the installed nccl-net-diag selftest passes (it finds the plugin beside itself)" \
    env -u LD_LIBRARY_PATH -u NCCL_DIAG_PLUGIN_PATH /usr/bin/nccl-net-diag selftest \
    --size 1048576 --iters 16
  exit 0
fi

# --- outside: build, inspect, then install in the namespace ----------------
git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1 ||
  skip_all "$src is not a git checkout: the packages are built from a clone of HEAD"
for t in git dpkg-buildpackage dh fakeroot unshare dpkg-checkbuilddeps; do
  command -v "$t" >/dev/null || skip_all "$t is not installed (.ci/deps installs it)"
done
[ "$(id -u)" = 0 ] || skip_all "installing into a private mount namespace needs root"
unshare -m true 2>/dev/null || skip_all "unshare -m is not permitted here (a container without CAP_SYS_ADMIN)"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/nccl-net-diag-pkg.XXXXXX")
trap 'umount -q "$scratch/ov" 2>/dev/null; rm -rf "$scratch"' EXIT
mkdir "$scratch/ov"
if ! git clone -q "$src" "$scratch/src" 2>"$scratch/clone.log"; then
  notok "git clone of the checkout"; sed 's/^/# /' "$scratch/clone.log"; echo "1..$n"; exit 1
fi
(cd "$scratch/src" && dpkg-checkbuilddeps) >"$scratch/deps.log" 2>&1 ||
  skip_all "build dependencies missing ($(tail -1 "$scratch/deps.log")); .ci/deps installs them"

# nocheck: the test suite has its own build; here only the installed targets.
if (cd "$scratch/src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
      dpkg-buildpackage -b -us -uc) >"$scratch/build.log" 2>&1; then
  ok "dpkg-buildpackage -b builds the packages from a clean clone of HEAD"
else
  notok "dpkg-buildpackage -b builds the packages from a clean clone of HEAD"
  tail -40 "$scratch/build.log" | sed 's/^/# /'
  echo "1..$n"; exit 1
fi

meson_ver=$(cd "$scratch/src" && meson introspect --projectinfo meson.build |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
deb_ver=$(cd "$scratch/src" && dpkg-parsechangelog -S Version)
if [ -n "$meson_ver" ] && [ "$deb_ver" = "$meson_ver" ]; then
  ok "debian/changelog's version is meson.build's project version ($meson_ver)"
else
  notok "debian/changelog's version is meson.build's project version"
  echo "# debian/changelog '$deb_ver', meson.build '$meson_ver': set both to the release's version"
fi

libdeb=$(ls "$scratch"/libnccl-net-diag_*.deb 2>/dev/null | head -1)
tooldeb=$(ls "$scratch"/nccl-net-diag_*.deb 2>/dev/null | head -1)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
if [ -n "$libdeb" ] && dpkg-deb -c "$libdeb" | grep -q " \./usr/lib/$multiarch/libnccl-net-diag\.so$"; then
  ok "the runtime package ships the unversioned name NCCL opens, in /usr/lib/$multiarch"
else
  notok "the runtime package ships /usr/lib/$multiarch/libnccl-net-diag.so"
fi
deps=$([ -n "$libdeb" ] && dpkg-deb -f "$libdeb" Depends)
recs=$([ -n "$libdeb" ] && dpkg-deb -f "$libdeb" Recommends)
if [[ "$deps" =~ ^libc6\ \(\>=\ [0-9.]+\)$ ]] && [[ "$recs" == *libibverbs1* ]] &&
   [[ "$recs" == *libhwloc* ]]; then
  ok "the plugin depends on libc only; libibverbs and hwloc are recommended (opened when present)"
else
  notok "the plugin depends on libc only; libibverbs and hwloc are recommended"
  echo "# Depends: $deps; Recommends: $recs"
fi
tdeps=$([ -n "$tooldeb" ] && dpkg-deb -f "$tooldeb" Depends)
if [[ "$tdeps" == *"libnccl-net-diag (= $deb_ver)"* ]]; then
  ok "the tools package depends on the plugin of its own version"
else
  notok "the tools package depends on the plugin of its own version"; echo "# Depends: $tdeps"
fi

if command -v lintian >/dev/null; then
  tags=$(lintian --fail-on none "$scratch"/*.changes 2>&1 | grep -E '^[EW]: ')
  if [ -z "$tags" ]; then ok "lintian finds no error or warning (overrides say why)"
  else notok "lintian finds no error or warning"; sed 's/^/# /' <<<"$tags"; fi
else
  echo "ok $((n += 1)) - lintian # SKIP lintian is not installed"
fi

hostlib=/usr/lib/$multiarch/libnccl-net-diag.so
was="$(dpkg-query -W -f '${Status} ${Version}' libnccl-net-diag 2>/dev/null) $(ls -l "$hostlib" 2>&1)"
unshare -m --propagation private "$0" "$src" --inside "$scratch" "$n"
[ -f "$scratch/count" ] && n=$(cat "$scratch/count") || n=$((n + 1))
now="$(dpkg-query -W -f '${Status} ${Version}' libnccl-net-diag 2>/dev/null) $(ls -l "$hostlib" 2>&1)"
if [ "$was" = "$now" ] && ! mountpoint -q "$scratch/ov"; then
  ok "the host's package database and library folder are as they were (the install stayed in the namespace)"
else
  notok "the host's package database is as it was"; echo "# before '$was', after '$now'"
fi
echo "1..$n"
