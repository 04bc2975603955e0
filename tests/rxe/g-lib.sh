# SPDX-License-Identifier: Apache-2.0
# Sourced by the guest scripts (they run as root inside the guest, see
# init). Reads the run's settings from $RXE_OUT/env (written by rxe.sh):
# BUILD (the build tree), SRC (the source tree), PLUGIN (the built .so). Output: TAP streams in
# $RXE_OUT/*.tap, merged and numbered by the host.
set -u
. "$RXE_OUT/env"
touch "$RXE_OUT/started"
trap 'touch "$RXE_OUT/finished"' EXIT
export NCCL_DIAG_PLUGIN_PATH=$PLUGIN
# The scenarios provoke RTR timeouts on purpose: one retry, not NCCL's
# minute of them (NCCL_IB_MQP_RETRY_CNT=34), or each would outlast its bound.
export NCCL_IB_MQP_RETRY_CNT=${NCCL_IB_MQP_RETRY_CNT:-1}

note() { echo "# $*"; }

# Appends one TAP case to the stream $tap (the host numbers the cases).
tap_ok() { echo "ok - $*" >>"$tap"; }
tap_not_ok() { echo "not ok - $*" >>"$tap"; }
tap_check() { # name, then a command: ok when it exits 0
  local name=$1
  shift
  if "$@" >>"$tap" 2>&1; then tap_ok "$name"; else tap_not_ok "$name"; fi
}

# Reads a sysfs file with the shell's own read: a fork and exec costs about
# 100 ms under TCG, and GID tables have 1024 entries.
sysread() { local v=; read -r v <"$1" 2>/dev/null; echo "$v"; }

# Waits until DEV's GID INDEX holds an address (the kernel fills the table
# from netdev events, a moment after the address is added).
wait_gid() { # dev index [want]
  local i g
  for i in $(seq 100); do
    read -r g <"/sys/class/infiniband/$1/ports/1/gids/$2" 2>/dev/null
    if [ -n "${3:-}" ]; then [ "$g" = "$3" ] && return 0
    elif [ -n "$g" ] && [ "$g" != "0000:0000:0000:0000:0000:0000:0000:0000" ]; then return 0; fi
    sleep 0.05
  done
  note "GID $2 of $1 did not become ${3:-set}: ${g:-unreadable}"
  return 1
}

# Two soft-RoCE devices in one kernel, on the two ends of a veth pair:
#   rxe0 on veth0 10.0.0.1/24, rxe1 on veth1 10.0.0.2/24 (GID 1: IPv4-mapped)
# Both addresses are local, so the kernel would route traffic between them
# through lo, where no rxe device listens (RTR then times out). Policy
# routing sends locally generated packets for each address out of the other
# end's veth, and accept_local lets the veth take in packets from a local
# source address. Namespaces are no way out on 6.1: rxe's data path looks
# routes up in the initial namespace only (every work request completes
# with a local QP operation error).
two_rxe() {
  ip link set lo up
  ip link add veth0 type veth peer name veth1 || return 1
  ip addr add 10.0.0.1/24 dev veth0
  ip addr add 10.0.0.2/24 dev veth1
  ip link set veth0 up
  ip link set veth1 up
  local k
  for k in all veth0 veth1; do
    sysctl -qw net.ipv4.conf.$k.accept_local=1 net.ipv4.conf.$k.rp_filter=0
  done
  ip rule add pref 10 iif lo to 10.0.0.2 lookup 100
  ip route add 10.0.0.2 dev veth0 src 10.0.0.1 table 100
  ip rule add pref 11 iif lo to 10.0.0.1 lookup 101
  ip route add 10.0.0.1 dev veth1 src 10.0.0.2 table 101
  ip rule add pref 1000 lookup local
  ip rule del pref 0
  rdma link add rxe0 type rxe netdev veth0 || return 1
  rdma link add rxe1 type rxe netdev veth1 || return 1
  wait_gid rxe0 1 && wait_gid rxe1 1
}
