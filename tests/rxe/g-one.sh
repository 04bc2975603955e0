# SPDX-License-Identifier: Apache-2.0
# One guest, two soft-RoCE devices on a veth pair (g-lib.sh two_rxe): doctor
# against ibv_devinfo, the conformance suite over real verbs on the v11 and
# v8 tables, the proxy driver, and the failure scenarios one kernel can show.
. "${BASH_SOURCE%/*}/g-lib.sh"
. "${BASH_SOURCE%/*}/g-scen.sh"
hostname rxe-guest
tap=$RXE_OUT/00-setup.tap
tap_check "two rxe devices on a veth pair, rxe0 on veth0 and rxe1 on veth1" two_rxe
# The plugin's control connections use their own interface, so that taking
# a veth down or its address away breaks only the RDMA path under test.
ip link add ctl0 type dummy && ip addr add 192.168.77.1/24 dev ctl0 && ip link set ctl0 up
rdma link show >"$RXE_OUT/rdma-link.txt" 2>&1

# --- doctor reads the real sysfs: its table against ibv_devinfo -v
tap=$RXE_OUT/10-doctor.tap
doctor_check() { # what
  "$BUILD/tools/nccl-net-diag" doctor --json >"$RXE_OUT/doctor-$1.json" 2>"$RXE_OUT/doctor-$1.err"
  echo "doctor --json exit status $?" >>"$RXE_OUT/doctor-$1.err"
  "$BUILD/tools/nccl-net-diag" doctor >"$RXE_OUT/doctor-$1.txt" 2>&1
  ibv_devinfo -v >"$RXE_OUT/devinfo-$1.txt" 2>&1
  python3 "$SRC/tests/rxe/check_doctor.py" "$1" "$RXE_OUT/doctor-$1.json" "$RXE_OUT/devinfo-$1.txt" \
    "$RXE_OUT/doctor-$1.txt" >>"$tap" 2>&1 || echo "not ok - doctor against ibv_devinfo ($1)" >>"$tap"
}
doctor_check "two ports"
# A hole in the GID table: index 2 emptied, 3 still set. The kernel answers
# EINVAL for an empty entry's type and netdev; doctor must list the same
# entries as ibv_devinfo and nothing for the hole.
ip addr add 10.0.1.1/24 dev veth0 && wait_gid rxe0 2
ip addr add 10.0.2.1/24 dev veth0 && wait_gid rxe0 3
ip addr del 10.0.1.1/24 dev veth0 && wait_gid rxe0 2 0000:0000:0000:0000:0000:0000:0000:0000
doctor_check "a GID table with a hole"
ip addr del 10.0.2.1/24 dev veth0

# --- the conformance suite over real verbs
for abi in ${API_ABIS-11 8}; do
  "$BUILD/tests/api/api_suite" --abi $abi --transport ib --verbs real \
    --env-recv NCCL_IB_HCA==rxe0 --env-send NCCL_IB_HCA==rxe1 >"$RXE_OUT/20-api-v$abi.tap" 2>&1
done

# --- NCCL's proxy-thread call pattern (tests/proxy) over real verbs: rank 0
# on rxe0, rank 1 on rxe1, each both sending and receiving. Small, as TCG is
# slow: grouped receives with the tags in step and out of step, a slow last
# test() after the peer closed, a late accept with four QPs per connection.
proxy_run() { # name, then the driver's options
  local name=$1
  shift
  "$BUILD/tests/proxy/proxy_driver" --abi 11 --transport ib --timeout 60 --label "rxe $name" \
    --env-recv NCCL_IB_HCA==rxe0 --env-send NCCL_IB_HCA==rxe1 "$@" >"$RXE_OUT/25-proxy-$name.tap" 2>&1
}
proxy_run grouped-in-step --channels 2 --steps 50 --group 4 --in-step --max-size 65536
proxy_run grouped --channels 2 --steps 50 --group 4 --max-size 65536 --seed 2
proxy_run slow-last-flush --channels 2 --steps 30 --max-size 262144 --slow-last 200 --flush --seed 3
proxy_run late-accept-qps4 --channels 2 --steps 100 --max-size 65536 --late-accept 300 \
  --env NCCL_IB_QPS_PER_CONNECTION=4 --env NCCL_IB_SPLIT_DATA_ON_QPS=1 --seed 4

# --- failure scenarios
. "${BASH_SOURCE%/*}/g-one-scen.sh"
