#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The RPM spec for EL8/EL9, built with rpmbuild -bb from a git archive of
# HEAD (the source tarball a release ships). Debian's rpm has no meson
# macros: el-macros defines them with the options EL's own take, and the
# packages' BuildRequires are not checked (--nodeps). Checks the files'
# places (lib64), the version against meson.build's, and the dependencies.
# usage: rpm.sh SOURCE_DIR         (TAP on stdout)
set -u
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1 ||
  skip_all "$src is not a git checkout: the tarball is a git archive of HEAD"
for t in rpmbuild rpmspec rpm meson; do
  command -v "$t" >/dev/null || skip_all "$t is not installed (.ci/deps installs it)"
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/nccl-net-diag-rpm.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
spec=packaging/rpm/nccl-net-diag.spec
mkdir -p "$scratch/src" "$scratch/top/SOURCES"
git -C "$src" archive HEAD | tar -x -C "$scratch/src"
[ -f "$scratch/src/$spec" ] || skip_all "HEAD has no $spec"
meson_ver=$(cd "$scratch/src" && meson introspect --projectinfo meson.build |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
rpm_args=(--load "$here/el-macros" --define "_topdir $scratch/top" --define "debug_package %{nil}")
spec_ver=$(rpmspec "${rpm_args[@]}" -q --srpm --qf '%{version}\n' "$scratch/src/$spec" 2>&1)
if [ -n "$meson_ver" ] && [ "$spec_ver" = "$meson_ver" ]; then
  ok "the spec's Version is meson.build's project version ($meson_ver)"
else
  notok "the spec's Version is meson.build's project version"
  echo "# spec '$spec_ver', meson.build '$meson_ver': set both to the release's version"
fi

git -C "$src" archive --prefix="nccl-net-diag-$spec_ver/" \
  -o "$scratch/top/SOURCES/nccl-net-diag-$spec_ver.tar.gz" HEAD
# --nocheck: the test suite has its own build.
if rpmbuild "${rpm_args[@]}" --nodeps --nocheck -bb "$scratch/src/$spec" >"$scratch/build.log" 2>&1; then
  ok "rpmbuild -bb builds the packages from a git archive of HEAD"
else
  notok "rpmbuild -bb builds the packages from a git archive of HEAD"
  tail -40 "$scratch/build.log" | sed 's/^/# /'
  echo "1..$n"; exit 1
fi

lib=$(ls "$scratch"/top/RPMS/*/libnccl-net-diag-[0-9]*.rpm 2>/dev/null | head -1)
tools=$(ls "$scratch"/top/RPMS/*/nccl-net-diag-[0-9]*.rpm 2>/dev/null | head -1)
files=$([ -n "$lib" ] && rpm -qpl "$lib" 2>/dev/null | grep -v '^/usr/lib/\.build-id')
want='/usr/lib64/libnccl-net-diag.so
/usr/share/licenses/libnccl-net-diag
/usr/share/licenses/libnccl-net-diag/LICENSE'
if [ "$files" = "$want" ]; then
  ok "the plugin package holds /usr/lib64/libnccl-net-diag.so (the name NCCL opens) and the license"
else
  notok "the plugin package holds /usr/lib64/libnccl-net-diag.so and the license"
  sed 's/^/# /' <<<"$files"
fi
tfiles=$([ -n "$tools" ] && rpm -qpl "$tools" 2>/dev/null)
missing=""
for f in /usr/bin/nccl-net-diag /usr/bin/nccl-net-bench /usr/share/man/man1/nccl-net-diag.1 \
  /usr/share/man/man1/nccl-net-bench.1 /usr/share/doc/nccl-net-diag/CHANGELOG.md; do
  grep -q "^$f" <<<"$tfiles" || missing+=" $f"
done
if [ -z "$missing" ]; then ok "the tools package holds both tools, their manual pages and CHANGELOG.md"
else notok "the tools package holds both tools, their manual pages and CHANGELOG.md"; echo "# missing:$missing"; fi

reqs=$([ -n "$lib" ] && rpm -qp --requires "$lib" 2>/dev/null | grep -v '^rpmlib(')
# libpthread.so.0 and libdl.so.2 are glibc's too (the link names them for
# glibc before 2.34, common/glibc_pins.h).
others=$(grep -vE '^(libc\.so\.6|libpthread\.so\.0|libdl\.so\.2|ld-linux[-a-z0-9_]*\.so\.[0-9]|rtld\(GNU_HASH\))' <<<"$reqs")
recs=$([ -n "$lib" ] && rpm -qp --recommends "$lib" 2>/dev/null)
if [ -n "$reqs" ] && [ -z "$others" ] && grep -qx libibverbs <<<"$recs" &&
   grep -qx hwloc-libs <<<"$recs"; then
  ok "the plugin requires libc only; libibverbs and hwloc-libs are recommended"
else
  notok "the plugin requires libc only; libibverbs and hwloc-libs are recommended"
  echo "# requires: $(tr '\n' ' ' <<<"$reqs")"; echo "# recommends: $(tr '\n' ' ' <<<"$recs")"
fi
treqs=$([ -n "$tools" ] && rpm -qp --requires "$tools" 2>/dev/null)
if grep -qE "^libnccl-net-diag\(.*\) = $spec_ver-" <<<"$treqs"; then
  ok "the tools package requires the plugin of its own version"
else
  notok "the tools package requires the plugin of its own version"
  echo "# requires: $(tr '\n' ' ' <<<"$treqs")"
fi
echo "1..$n"
