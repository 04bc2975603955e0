#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The 'rxe' suite: boots Debian's kernel under QEMU with soft-RoCE and runs
# the plugin's tests over it, as TAP. Guest sessions:
#   one    one guest, rxe0 and rxe1 on a veth pair (g-one.sh): doctor against
#          ibv_devinfo, the conformance suite on the v11 and v8 tables, and
#          the failure scenarios that one kernel can show;
#   two    two guests on a QEMU socket wire (g-two.sh): the asymmetric
#          failure, where ARP is filtered on one side only.
# Skips (with the reason) only where QEMU cannot run at all: not root, no
# qemu-system-x86_64, no kernel package to be had.
# usage: rxe.sh SRC BUILD PLUGIN CACHE
# Environment: RXE_SESSIONS (default "one two"), RXE_API_ABIS (the api
# suite's tables, default "11 8"), RXE_KEEP=1 keeps the output.
set -u
src=$1 build=$2 plugin=$3 cache=$4
here=$src/tests/rxe
runs=$build/tests/rxe/run
start=$(date +%s)

skip_all() {
  echo "1..0 # SKIP $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip_all "needs root (QEMU's 9p export of / and the guest's root)"
command -v qemu-system-x86_64 >/dev/null || skip_all "no qemu-system-x86_64 (.ci/deps installs it)"
why=$("$here/prepare.sh" "$cache" "$here/init" 2>&1)
rc=$?
[ $rc = 77 ] && skip_all "$why"
if [ $rc != 0 ]; then
  echo "not ok 1 - kernel and initramfs for the guest: $why"
  echo "1..1"
  exit 1
fi
echo "# guest kernel $(cat "$cache/kernel-version"), prepared in $(($(date +%s) - start)) s"

rm -rf "$runs"
mkdir -p "$runs"
n=0
failed=0

# Merges the guests' TAP streams into one numbered stream: each program
# numbers its own cases and prints its own plan.
emit() { # files...
  local f line
  for f in "$@"; do
    [ -f "$f" ] || continue
    while IFS= read -r line; do
      case $line in
      1..*) ;;
      "ok "* | "ok") n=$((n + 1)); echo "ok $n ${line#ok}" | sed -E "s/^ok $n +[0-9]* *-? */ok $n - /" ;;
      "not ok"*)
        n=$((n + 1)) failed=$((failed + 1))
        echo "not ok $n ${line#not ok}" | sed -E "s/^not ok $n +[0-9]* *-? */not ok $n - /"
        ;;
      "#"*) echo "$line" ;;
      *) echo "# $line" ;;
      esac
    done <"$f"
  done
}
case_line() { # ok|not-ok name
  n=$((n + 1))
  if [ "$1" = ok ]; then echo "ok $n - $2"; else failed=$((failed + 1)) && echo "not ok $n - $2"; fi
}

env_file() { # out
  mkdir -p "$1"
  printf 'BUILD=%s\nSRC=%s\nPLUGIN=%s\nAPI_ABIS="%s"\n' "$build" "$src" "$plugin" \
    "${RXE_API_ABIS-11 8}" >"$1/env"
}

session_one() {
  local out=$runs/one t0=$(date +%s)
  env_file "$out"
  # 700 s: 180-450 s idle, past 600 s on a loaded host (the api suite alone
  # 3 min per table), of which the proxy driver batch takes about 15 s.
  if "$here/guest.sh" "$cache" "$out" "$here/g-one.sh" 700 >"$out/guest.txt"; then
    case_line ok "one guest, rxe0 and rxe1: booted, ran and powered off"
  else
    case_line not-ok "one guest, rxe0 and rxe1: booted, ran and powered off"
  fi
  cat "$out/guest.txt"
  emit $(ls "$out"/*.tap 2>/dev/null | sort)
  echo "# session one: $(($(date +%s) - t0)) s"
}

wire() { # a|b listen|connect port: eth0 (RoCE) and eth1 (control), one socket wire each
  echo -netdev "socket,id=n0,$2=127.0.0.1:$3" -device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:0$1" \
    -netdev "socket,id=n1,$2=127.0.0.1:$(($3 + 1))" -device "virtio-net-pci,netdev=n1,mac=52:54:00:00:01:0$1"
}

session_two() {
  local t0=$(date +%s) port=$((20000 + $$ % 20000 * 2)) share=$runs/share
  mkdir -p "$share"
  env_file "$runs/two-a"
  env_file "$runs/two-b"
  # One CPU each: both guests fit on the two host CPUs. b listens on the
  # wires, a connects; both see the shared folder for handles and phases.
  GUEST_CPUS=1 GUEST_MEM=1G RXE_SHARE=$share "$here/guest.sh" "$cache" "$runs/two-b" \
    "$here/g-two.sh" 300 $(wire b listen $port) >"$runs/two-b/guest.txt" &
  local pb=$!
  sleep 1
  GUEST_CPUS=1 GUEST_MEM=1G RXE_SHARE=$share "$here/guest.sh" "$cache" "$runs/two-a" \
    "$here/g-two.sh" 300 $(wire a connect $port) >"$runs/two-a/guest.txt"
  local ra=$?
  wait $pb
  local rb=$?
  if [ $ra = 0 ] && [ $rb = 0 ]; then
    case_line ok "two guests on a wire: booted, ran and powered off"
  else
    case_line not-ok "two guests on a wire: booted, ran and powered off"
  fi
  cat "$runs/two-a/guest.txt" "$runs/two-b/guest.txt"
  emit $(ls "$runs"/two-a/*.tap "$runs"/two-b/*.tap 2>/dev/null | sort)
  echo "# session two: $(($(date +%s) - t0)) s"
}

for s in ${RXE_SESSIONS:-one two}; do "session_$s"; done
echo "1..$n"
echo "# rxe suite: $(($(date +%s) - start)) s wall, $failed failed"
[ "${RXE_KEEP:-0}" = 1 ] || [ $failed != 0 ] || rm -rf "$runs"
[ $failed = 0 ]
