# SPDX-License-Identifier: Apache-2.0
# Two guests on a QEMU socket wire, one kernel per host (rxe.sh boots both):
# eth0 carries RoCE (rxe0), eth1 the plugin's control connections. Guest a
# connects, guest b listens; they meet in /rxe-share. Guest a checks both
# sides' outcomes and writes the TAP cases.
#   cross-subnet   a on 10.0.0.1/24, b on 10.2.0.1/24, no routes, one L2:
#                  each kernel finds the other by ARP on eth0, RTR succeeds
#   rp_filter      the same with rp_filter=1 on b: b drops a's ARP (its
#                  source is on no subnet of b), so a's RTR times out while
#                  b's succeeds. b must learn the outcome from a over the
#                  control connection and say it, not wait. b knows a's MAC
#                  already (a static neighbour entry), so no ARP of b's
#                  teaches a b's MAC meanwhile.
#   rp_filter_data the same, but b asks for a's MAC (ARP): a learns b's from
#                  the request, so both RTRs succeed and b's rp_filter drops
#                  a's RoCE packets, acknowledgements included: the first
#                  writes (b's clear-to-send, a's data) are never acknowledged.
. "${BASH_SOURCE%/*}/g-lib.sh"
. "${BASH_SOURCE%/*}/g-scen.sh"
share=/rxe-share
case $(sysread /sys/class/net/eth0/address) in
*:0a) me=a other=b ;;
*) me=b other=a ;;
esac
hostname "rxe-$me"
tap=$RXE_OUT/40-two-$me.tap

flag() { touch "$share/$1.$me"; }
await() { # flag [seconds]: the other guest's flag
  local i
  for i in $(seq $((${2:-120} * 20))); do [ -f "$share/$1.$other" ] && return 0; sleep 0.05; done
  note "guest $other did not reach '$1'"
  return 1
}

setup() {
  ip link set lo up
  ip link set eth0 up
  ip link set eth1 up
  if [ $me = a ]; then ip addr add 10.0.0.1/24 dev eth0; else ip addr add 10.2.0.1/24 dev eth0; fi
  ip addr add 192.168.50.$([ $me = a ] && echo 1 || echo 2)/24 dev eth1
  rdma link add rxe0 type rxe netdev eth0 && wait_gid rxe0 1
}
tap_check "guest $me: rxe0 on eth0" setup
flag setup
await setup || exit 1

env0="NCCL_SOCKET_IFNAME==eth1 NCCL_IB_HCA==rxe0 NCCL_IB_GID_INDEX=1"
phase() { # name: b listens, a connects; both outputs in the share
  scen=$share/$1
  mkdir -p "$scen.d"
  local t0=$(date +%s%N)
  if [ $me = b ]; then
    env $env0 "$peer" listen "$scen.d" --msgs 4 --timeout-s 40 >"$scen.listen.tmp" 2>&1
    mv "$scen.listen.tmp" "$scen.listen"
  else
    env $env0 "$peer" connect "$scen.d" --msgs 4 --timeout-s 40 >"$scen.connect.tmp" 2>&1
    mv "$scen.connect.tmp" "$scen.connect"
  fi
  elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$elapsed_ms" >"$scen.ms.$me"
  flag "$1-done"
  await "$1-done" 60
}
check_start() { # a judges both sides
  problems=()
  local side
  for side in listen connect; do
    [ -f "$scen.$side" ] || { problems+=("no output from the $side side"); touch "$scen.$side"; }
    grep -q '^RESULT hang' "$scen.$side" && problems+=("the $side side hung")
    grep -q '^RESULT exit' "$scen.$side" || problems+=("the $side side did not finish")
  done
  elapsed_ms="a $(cat "$scen.ms.a" 2>/dev/null), b $(cat "$scen.ms.b" 2>/dev/null)"
}

phase cross_subnet
if [ $me = a ]; then
  check_start
  expect both result "path RDMA"
  expect both result "data verified"
  verdict "two hosts, cross-subnet GIDs on one L2 segment: ARP answered, RTR succeeds, RDMA"
fi

if [ $me = b ]; then
  sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.eth0.rp_filter=1
  ip neigh replace 10.0.0.1 lladdr 52:54:00:00:00:0a dev eth0 nud permanent
else
  ip neigh flush dev eth0
fi
flag filtered
await filtered
phase rp_filter
if [ $me = a ]; then
  check_start
  expect both result "path TCP"
  expect both result "data verified"
  expect connect warn "ETIMEDOUT" "not resolvable from this GID's netdev"
  expect connect warn "rp_filter"
  expect listen warn "reported by the peer" "ETIMEDOUT"
  expect listen warn "rp_filter"
  [ "$(cat "$scen.ms.b" 2>/dev/null || echo 99999)" -lt 20000 ] ||
    problems+=("the listening side took $(cat "$scen.ms.b") ms")
  verdict "two hosts, rp_filter=1 on one: the other's RTR times out, it learns that over the control connection, both on TCP"
fi

if [ $me = b ]; then ip neigh del 10.0.0.1 dev eth0; else ip neigh flush dev eth0; fi
flag learn
await learn
env0="$env0 NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3"
phase rp_filter_data
if [ $me = a ]; then
  check_start
  expect both result "path RDMA"
  expect both result "data failed"
  expect both warn "IBV_WC_RETRY_EXC_ERR" "first RDMA write after RTR"
  verdict "two hosts, rp_filter=1 on one, both RTRs succeed: the dropped first write named, both end"
fi
