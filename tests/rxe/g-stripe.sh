# SPDX-License-Identifier: Apache-2.0
# Guest side of stripe.sh: four rxe devices on two veth pairs; each rank
# of nccl-net-bench sees two of them (rank 0 rxe0 and rxe2, rank 1 rxe1
# and rxe3), fuses them with makeVDevice and measures one connection over
# the fused NIC, then over its first device alone. Raw outputs go to
# $RXE_OUT; the host prints them.
. "${BASH_SOURCE%/*}/g-lib.sh"
hostname rxe-stripe
tap=$RXE_OUT/00-setup.tap

# The second pair as two_rxe (g-lib.sh) makes the first: 10.0.1.1 and
# 10.0.1.2, each address's packets sent out of the other end's veth.
second_pair() {
  ip link add veth2 type veth peer name veth3 || return 1
  ip addr add 10.0.1.1/24 dev veth2
  ip addr add 10.0.1.2/24 dev veth3
  ip link set veth2 up
  ip link set veth3 up
  local k
  for k in veth2 veth3; do sysctl -qw net.ipv4.conf.$k.accept_local=1 net.ipv4.conf.$k.rp_filter=0; done
  ip rule add pref 12 iif lo to 10.0.1.2 lookup 102
  ip route add 10.0.1.2 dev veth2 src 10.0.1.1 table 102
  ip rule add pref 13 iif lo to 10.0.1.1 lookup 103
  ip route add 10.0.1.1 dev veth3 src 10.0.1.2 table 103
  rdma link add rxe2 type rxe netdev veth2 || return 1
  rdma link add rxe3 type rxe netdev veth3 || return 1
  wait_gid rxe2 1 && wait_gid rxe3 1
}
tap_check "two rxe devices on a veth pair" two_rxe
tap_check "two more on a second pair" second_pair

for how in "--fuse 0,1" "--dev 0"; do
  name=${how// /}
  name=${name//,/}
  NCCL_DEBUG=WARN "$BUILD/bench/nccl-net-bench" --transport ib $how --no-baseline \
    --rank-env 0:NCCL_IB_HCA==rxe0,rxe2 --rank-env 1:NCCL_IB_HCA==rxe1,rxe3 --pin \
    --modes uni --sizes "${BENCH_SIZES:-1M,4M}" --reps "${BENCH_REPS:-3}" \
    --target-bytes "${BENCH_TARGET:-32M}" --max-msgs "${BENCH_MAX_MSGS:-4000}" \
    >"$RXE_OUT/bench$name.txt" 2>&1
  echo "bench exit status $?" >>"$RXE_OUT/bench$name.txt"
done
