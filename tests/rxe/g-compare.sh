# SPDX-License-Identifier: Apache-2.0
# Guest side of compare.sh: rxe0 and rxe1 on a veth pair (g-lib.sh), then
# perftest's limits, then nccl-net-bench with NCCL's own IB transport beside
# the plugin, each rank on its own device. Raw outputs go to $RXE_OUT; the
# host reads them.
. "${BASH_SOURCE%/*}/g-lib.sh"
hostname rxe-compare
tap=$RXE_OUT/00-setup.tap
tap_check "two rxe devices on a veth pair" two_rxe
note "clock source: $(sysread /sys/devices/system/clocksource/clocksource0/current_clocksource)"
sysread /sys/devices/system/clocksource/clocksource0/current_clocksource >"$RXE_OUT/clocksource"

# perftest: the server on rxe1 (10.0.0.2), the client on rxe0; GID 1 is
# the IPv4-mapped RoCE v2 entry. Each tool's client output is kept.
perf() { # name tool size args...
  local name=$1 tool=$2 size=$3
  shift 3
  "$tool" -d rxe1 -x 1 -F -s "$size" "$@" >"$RXE_OUT/perf-$name.server" 2>&1 &
  local srv=$!
  sleep 1
  "$tool" -d rxe0 -x 1 -F -s "$size" "$@" 10.0.0.2 >"$RXE_OUT/perf-$name.txt" 2>&1
  wait $srv
}
if [ "${BENCH_SHAPE:-}" = only ]; then
  : # NCCL's shape alone (below)
elif command -v ib_write_bw >/dev/null; then
  for s in ${PERF_BW_SIZES:-1048576 4194304}; do perf "write_bw-$s" ib_write_bw "$s" -n 200; done
  perf write_lat-8 ib_write_lat 8 -n 2000
  perf send_lat-8 ib_send_lat 8 -n 2000
else
  note "perftest is not installed: no ib_write_bw limit"
fi

# The plugin and NCCL's IB transport, interleaved in one run; rank 0 on
# rxe0, rank 1 on rxe1 (both read NCCL_IB_HCA), each rank on its own CPU.
[ "${BENCH_SHAPE:-}" = only ] || NCCL_DEBUG=WARN "$BUILD/bench/nccl-net-bench" --transport ib --compare "$PEER_IB" \
  --rank-env 0:NCCL_IB_HCA==rxe0 --rank-env 1:NCCL_IB_HCA==rxe1 --pin \
  --modes "${BENCH_MODES:-uni,lat}" --sizes "${BENCH_SIZES:-8,4K,64K,1M,4M}" \
  --lat-sizes "${BENCH_LAT_SIZES:-8,4K,64K}" --reps "${BENCH_REPS:-3}" \
  --target-bytes "${BENCH_TARGET:-32M}" --max-msgs "${BENCH_MAX_MSGS:-4000}" \
  --lat-iters "${BENCH_LAT_ITERS:-2000}" --json="$RXE_OUT/bench.json" >"$RXE_OUT/bench.txt" 2>&1
[ "${BENCH_SHAPE:-}" = only ] || echo "bench exit status $?" >>"$RXE_OUT/bench.txt"

# NCCL's shape (BENCH_SHAPE=1, or =only for nothing else): a connection per channel, 8 in flight on
# each, both transports interleaved. Fewer sizes and channels than on TCP:
# rxe under TCG moves tens of MB/s, and 16 channels of 4 MiB would take
# minutes per cell.
if [ -n "${BENCH_SHAPE:-}" ]; then
  NCCL_DEBUG=WARN "$BUILD/bench/nccl-net-bench" --transport ib --compare "$PEER_IB" \
    --rank-env 0:NCCL_IB_HCA==rxe0 --rank-env 1:NCCL_IB_HCA==rxe1 --pin --nccl-shape \
    --sizes "${BENCH_SHAPE_SIZES:-128K,512K,1M}" --comms "${BENCH_SHAPE_COMMS:-2,4,8}" \
    --reps "${BENCH_REPS:-3}" --target-bytes "${BENCH_SHAPE_TARGET:-48M}" \
    --json="$RXE_OUT/shape.json" >"$RXE_OUT/shape.txt" 2>&1
  echo "bench exit status $?" >>"$RXE_OUT/shape.txt"
fi
