#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real NCCL end to end through libnccl-net-diag (design test layer 6): two
# processes share one GPU with different NCCL_HOSTID values, so NCCL treats
# them as two hosts and moves every byte through the network plugin. Checks
# every collective element by element, proves from NCCL's own log which
# plugin and ABI version it bound, and compares all_reduce bus bandwidth with
# NCCL's built-in Socket transport. Prints TAP. See tests/gpu/README.md.
#
# Without a GPU it prints "ok 1 - gpu end-to-end # SKIP skipped: no GPU".
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)

# The runner's parts, one concern each (see the README's file table).
# shellcheck source=lib/tap.sh
. "$here/lib/tap.sh"
# shellcheck source=lib/logcheck.sh
. "$here/lib/logcheck.sh"
# shellcheck source=lib/busbw.sh
. "$here/lib/busbw.sh"
# shellcheck source=lib/find_nccl.sh
. "$here/lib/find_nccl.sh"
# shellcheck source=lib/pair.sh
. "$here/lib/pair.sh"
# shellcheck source=lib/steps.sh
. "$here/lib/steps.sh"
# shellcheck source=lib/softverbs.sh
. "$here/lib/softverbs.sh"
# shellcheck source=lib/selftest.sh
. "$here/lib/selftest.sh"

usage() {
  cat <<'EOF'
usage: tests/gpu/run.sh [options]
  --build-dir DIR   the meson build folder holding plugin/libnccl-net-diag.so and
                    tests/gpu/nccl_e2e (default: build)
  --plugin PATH     the plugin to test (default: DIR/plugin/libnccl-net-diag.so)
  --bin PATH        the rank program (default: DIR/tests/gpu/nccl_e2e; built
                    here with cc when missing)
  --out DIR         where logs go (default: DIR/tests/gpu/e2e-out)
  --tar FILE        also pack the logs into FILE (.tar.gz)
  --quick           small sizes only (a smoke run)
  --sizes LIST      correctness sizes in bytes, K/M/G suffixes
  --bw MIN:MAX      all_reduce bandwidth range (default 1M:1G)
  --bw-budget B     bytes to move per timed size (default 4G; 5..100 iterations)
  --rounds N        bandwidth rounds, alternating diag and Socket; best kept (1)
  --skip-checks     no correctness run (e.g. bandwidth only, in a second command)
  --skip-bw         no bandwidth runs
  --skip-softverbs  no run over the plugin's IB device on softverbs
  --mps             run the two ranks under a private MPS daemon (kernels of
                    both ranks then run concurrently instead of time-sliced)
  --op-timeout S    seconds one NCCL operation may take (default 120)
  --mock            BIN is the test double built from mock_nccl.c (no GPU, no
                    NCCL; exercises this script and the element checks)
  --selftest        check this script's log matching, ABI mapping and table
                    against canned NCCL logs (and, with a mock, whole runs)
EOF
}

build_dir=build plugin="" bin="" out="" tarball=""
sizes="" bw_range=1M:1G bw_budget=4G rounds=1 do_checks=1 do_bw=1 do_softverbs=1
use_mps=0 mock=0 selftest=0
op_timeout=120
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build_dir=$2; shift ;;
    --plugin) plugin=$2; shift ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --tar) tarball=$2; shift ;;
    --quick) sizes=0,1,4,4099,131073,1M,1048579,4M; bw_range=1M:16M; bw_budget=256M ;;
    --sizes) sizes=$2; shift ;;
    --bw) bw_range=$2; shift ;;
    --bw-budget) bw_budget=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --skip-checks) do_checks=0 ;;
    --skip-bw) do_bw=0 ;;
    --skip-softverbs) do_softverbs=0 ;;
    --mps) use_mps=1 ;;
    --op-timeout) op_timeout=$2; shift ;;
    --mock) mock=1 ;;
    --selftest) selftest=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$(pwd)" "$1" ;; esac; }
case $build_dir in /*) ;; *) [ -d "$build_dir" ] || build_dir=$top/$build_dir ;; esac
build_dir=$(abspath "$build_dir")
[ -n "$plugin" ] && plugin=$(abspath "$plugin") || plugin=$build_dir/plugin/libnccl-net-diag.so
if [ -n "$bin" ]; then bin=$(abspath "$bin")
elif [ $mock = 1 ]; then bin=$build_dir/tests/gpu/nccl_e2e_mock
else bin=$build_dir/tests/gpu/nccl_e2e; fi
[ -n "$out" ] || out=$build_dir/tests/gpu/e2e-out
out=$(abspath "$out")

if [ $selftest = 1 ]; then
  selftest
  finish
fi

# ---- 0. a GPU? -------------------------------------------------------------------
mkdir -p "$out" || { echo "Bail out! cannot create $out"; exit 1; }
gpu_why=""
if ! have_gpu; then
  echo "# $gpu_why"
  skip "gpu end-to-end" "skipped: no GPU"
  finish
fi

# ---- 1. NCCL, the rank program, the plugin ---------------------------------------
nccl_code=22809
if [ $mock = 0 ]; then step_nccl; fi
step_probe
step_dlopen
if [ $use_mps = 1 ]; then step_mps; fi

size_args=()
[ -n "$sizes" ] && size_args=(--sizes "$sizes")
plugin_env=(NCCL_NET_PLUGIN="$plugin" NCCL_NET=diag)

# ---- 2. every collective through the plugin, checked element by element ------------
if [ $do_checks = 1 ]; then step_checks; fi
# ---- 3. all_reduce bus bandwidth: the plugin against NCCL's Socket transport --------
if [ $do_bw = 1 ]; then step_bw; fi
# ---- 4. the plugin's IB device over softverbs -------------------------------------
step_softverbs

echo "# logs: $out"
finish
