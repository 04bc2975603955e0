#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin beside NCCL's own IB transport on the real kernel RDMA stack:
# soft-RoCE (rxe0 <-> rxe1 over a veth pair) in a QEMU guest booted with a
# TSC clock source, nccl-net-bench --compare with NCCL's IB transport as the
# compared plugin (each rank on its own device and CPU), and perftest's
# ib_write_bw / ib_write_lat / ib_send_lat in the same guest as the limit.
# One guest per run; prints one table of ratios, medians over the runs.
# Not a test: a measurement (bench/README.md has the results).
# usage: tests/rxe/compare.sh BUILD [RUNS]     (as root; RUNS default 3)
# Environment: NCCL_DIAG_COMPARE_PEERS (the folder with NCCL's transports as
# plugins; default ../shared/peers/nccl-builtin beside the checkout),
# BENCH_SIZES, BENCH_LAT_SIZES, BENCH_REPS, BENCH_TARGET, BENCH_MAX_MSGS,
# BENCH_LAT_ITERS, BENCH_MODES, PERF_BW_SIZES; BENCH_SHAPE=1 adds NCCL's
# shape, =only runs it alone (--nccl-shape; BENCH_SHAPE_SIZES, BENCH_SHAPE_COMMS,
# BENCH_SHAPE_TARGET) (all passed to the guest).
set -u
build=$(cd "${1:?usage: compare.sh BUILD [RUNS]}" && pwd)
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=$build/tests/rxe/cache
outdir=$build/tests/rxe/compare
[ "$(id -u)" = 0 ] || { echo "compare.sh: needs root (QEMU exports / to the guest)"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "compare.sh: no qemu-system-x86_64 (.ci/deps)"; exit 77; }
"$here/prepare.sh" "$cache" "$here/init" || exit 1
peers=${NCCL_DIAG_COMPARE_PEERS:-$src/../shared/peers/nccl-builtin}
[ -x "$peers/build.sh" ] || { echo "compare.sh: no $peers/build.sh (set NCCL_DIAG_COMPARE_PEERS)"; exit 77; }
"$peers/build.sh" "$outdir/peers" >/dev/null || { echo "compare.sh: NCCL's transports did not build"; exit 77; }
# perftest runs in the guest from the host's root file system.
command -v ib_write_bw >/dev/null || apt-get install -y -q --no-install-recommends perftest >/dev/null ||
  echo "compare.sh: perftest is not installable here: no ib_write_bw limit"
rm -rf "$outdir"/run-*
t0=$(date +%s)
for r in $(seq "$runs"); do
  out=$outdir/run-$r
  mkdir -p "$out"
  {
    printf 'BUILD=%s\nSRC=%s\nPLUGIN=%s\nPEER_IB=%s\n' "$build" "$src" \
      "$build/plugin/libnccl-net-diag.so" "$outdir/peers/libnccl-net-ncclib.so"
    for v in BENCH_SIZES BENCH_LAT_SIZES BENCH_REPS BENCH_TARGET BENCH_MAX_MSGS BENCH_LAT_ITERS \
      BENCH_MODES PERF_BW_SIZES BENCH_SHAPE BENCH_SHAPE_SIZES BENCH_SHAPE_COMMS \
      BENCH_SHAPE_TARGET; do
      [ -n "${!v:-}" ] && printf '%s="%s"\n' "$v" "${!v}"
    done
  } >"$out/env"
  GUEST_APPEND="clocksource=tsc tsc=reliable" "$here/guest.sh" "$cache" "$out" \
    "$here/g-compare.sh" 900 || echo "compare.sh: run $r failed (see $out/console.log)"
done
echo "# $runs runs in $(($(date +%s) - t0)) s"
python3 "$here/compare_report.py" "$outdir"/run-*
