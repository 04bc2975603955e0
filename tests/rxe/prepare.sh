#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes the guest's kernel and initramfs, once, in a cache folder:
#   CACHE/<package>.deb    Debian's kernel package, downloaded once (kept, so a
#                          later run or a changed /init needs no download)
#   CACHE/vmlinuz          its kernel
#   CACHE/initramfs.gz     static busybox + the modules the guest loads + /init
# The package is the one Debian's linux-image-amd64 depends on today, not a
# pinned version. Nothing is installed on the host: dpkg -x only unpacks.
# usage: prepare.sh CACHE_DIR INIT_SCRIPT
# Exit status 0: ready; 77: QEMU cannot run here (the reason on stdout);
# anything else: a failure (the reason on stdout).
set -euo pipefail
cache=$1 init=$(realpath "$2") self=$(realpath "$0")
mkdir -p "$cache"
cd "$cache"
skip() { echo "$*"; exit 77; }

kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'
}
pkg=$(kernel_package)
if [ -z "$pkg" ]; then
  # A machine whose package lists were never fetched knows no kernel yet.
  apt-get update -q >apt-update.log 2>&1 || true
  pkg=$(kernel_package)
fi
if [ -z "$pkg" ]; then
  # Offline, but a kernel fetched earlier still serves.
  deb=$(ls -t linux-image-*.deb 2>/dev/null | head -1 || true)
  [ -n "$deb" ] || skip "no Debian kernel package can be found (apt-cache depends linux-image-amd64)"
  pkg=${deb%%_*}
fi
deb=$(ls "${pkg}"_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
  # apt-get download drops privileges to _apt and warns that it cannot in
  # a root-owned folder; the download still works.
  apt-get download -q "$pkg" >download.log 2>&1 || skip "cannot download $pkg: $(tail -1 download.log)"
  deb=$(ls "${pkg}"_*.deb | head -1)
  # One kernel at a time in the cache.
  for old in linux-image-*.deb; do [ "$old" = "$deb" ] || rm -f "$old"; done
fi

# Rebuild when the package or /init changed.
stamp="$deb $(sha256sum "$init" "$self" | cut -c1-16 | tr '\n' ' ')"
if [ -f ready ] && [ "$(cat ready)" = "$stamp" ] && [ -f vmlinuz ] && [ -f initramfs.gz ]; then
  exit 0
fi
rm -f ready
rm -rf unpacked initramfs
dpkg -x "$deb" unpacked
mods=
for d in unpacked/lib/modules/* unpacked/usr/lib/modules/*; do [ -d "$d" ] && mods=$(pwd)/$d && break; done
[ -n "$mods" ] || { echo "$deb holds no module tree"; exit 1; }
kv=$(basename "$mods")
cp "$(ls unpacked/boot/vmlinuz-* | head -1)" vmlinuz
root=$(pwd)/unpacked
# The .deb ships no modules.dep; make one to resolve dependencies below.
depmod -b "$root" "$kv"

# The initramfs: what mounts the host root (virtio, 9p, overlay) and what the
# tests use (veth, dummy, virtio_net, rdma_rxe and its crc32, ib_uverbs, sch_netem).
ir=initramfs
mkdir -p $ir/bin $ir/proc $ir/sys $ir/dev $ir/lib/modules/"$kv"
cp "$(command -v busybox)" $ir/bin/busybox
# It runs before any library is reachable: it must be the static build.
{ ldd $ir/bin/busybox 2>&1 || true; } | grep -q 'not a dynamic\|statically linked' ||
  { echo "busybox is not static (install busybox-static)"; exit 1; }
want="virtio_pci 9pnet_virtio 9p overlay virtio_net veth dummy crc32_generic rdma_rxe ib_uverbs sch_netem"
for m in $want; do modprobe -d "$root" -S "$kv" --show-depends "$m"; done |
  awk '/^insmod/{print $2}' | sort -u | while read -r f; do
    rel=${f#"$mods"/}
    rel=${rel#"$root"/lib/modules/"$kv"/}
    mkdir -p "$ir/lib/modules/$kv/$(dirname "$rel")"
    cp "$f" "$ir/lib/modules/$kv/$rel"
  done
cp "$mods"/modules.order "$mods"/modules.builtin "$mods"/modules.builtin.modinfo "$ir/lib/modules/$kv/"
depmod -b "$(pwd)/$ir" "$kv"
cp "$init" $ir/init
chmod +x $ir/init
(cd $ir && find . | cpio -o -H newc --quiet | gzip -1) >initramfs.gz.new
mv initramfs.gz.new initramfs.gz
echo "$kv" >kernel-version
# The unpacked tree (about 400 MB) is not needed once the initramfs exists.
rm -rf unpacked initramfs
echo "$stamp" >ready
