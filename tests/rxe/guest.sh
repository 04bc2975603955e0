#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Boots one guest (Debian's kernel under QEMU, TCG) that runs SCRIPT as root
# over the host's root file system, then powers off. Bounded twice: the
# in-guest watchdog powers off after LIMIT seconds, and the host kills QEMU
# 30 s later. The console goes to OUT/console.log; OUT is the guest's
# /rxe-out. Exit status: 0 when the guest ran the script and powered off, 1
# otherwise (with the console's tail on stdout, as TAP comments).
# usage: guest.sh CACHE OUT SCRIPT LIMIT [extra QEMU arguments...]
# Environment: GUEST_CPUS (2), GUEST_MEM (2G), RXE_ACCEL (tcg), RXE_SHARE (a
# folder that several guests see as /rxe-share), GUEST_APPEND (more kernel
# arguments).
set -u
cache=$1 out=$2 script=$3 limit=$4
shift 4
mkdir -p "$out"
rm -f "$out/started" "$out/finished" "$out/watchdog"
# TCG: where /dev/kvm exists here it is nested KVM, which aborts QEMU at
# start ("failed to set MSR"). RXE_ACCEL=kvm tries it anyway.
accel=${RXE_ACCEL:-tcg}
share=() shared=0
[ -n "${RXE_SHARE:-}" ] && shared=1 share=(-virtfs "local,path=$RXE_SHARE,mount_tag=share,security_model=none")
start=$(date +%s)
timeout -k 5 $((limit + 30)) qemu-system-x86_64 \
  -machine q35,accel=$accel -cpu max -smp "${GUEST_CPUS:-2}" -m "${GUEST_MEM:-2G}" \
  -nographic -no-reboot -nodefaults -serial stdio \
  -kernel "$cache/vmlinuz" -initrd "$cache/initramfs.gz" \
  -append "console=ttyS0 quiet loglevel=4 panic=-1 rxe.script=$script rxe.limit=$limit rxe.share=$shared ${GUEST_APPEND:-}" \
  -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$out,mount_tag=out,security_model=none" \
  "${share[@]}" "$@" </dev/null >"$out/console.log" 2>&1
rc=$?
secs=$(($(date +%s) - start))
if [ -f "$out/finished" ] && [ ! -f "$out/watchdog" ] && [ $rc = 0 ]; then
  echo "# guest $(basename "$out"): ${secs} s wall"
  exit 0
fi
if [ $rc = 124 ] || [ $rc = 137 ]; then
  why="QEMU killed after $((limit + 30)) s"
elif [ -f "$out/watchdog" ]; then
  why="the in-guest watchdog fired after $limit s"
elif [ ! -f "$out/started" ]; then
  why="the guest never started its script (boot failure?), QEMU exit status $rc"
else
  why="the script did not finish, QEMU exit status $rc"
fi
echo "# guest $(basename "$out") failed: $why; last lines of its console:"
tail -40 "$out/console.log" | sed 's/^/#   /'
exit 1
