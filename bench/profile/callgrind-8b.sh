#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Where an 8-byte round trip's instructions go: the plugin and NCCL's IB
# transport (built by ../shared/peers/nccl-builtin) driven by nccl-net-bench
# over softverbs under callgrind, in the same ranks. Instruction counts do
# not depend on the host's load, unlike times.
#   bench/profile/callgrind-8b.sh BUILD PEERS [ITERS]     (root: it bind-mounts a
#   fixture host's sysfs over /sys in a private mount namespace for NCCL's transport)
set -euo pipefail
build=$(realpath "$1") peers=$(realpath "$2") iters=${3:-500}
top=$(cd "$(dirname "$0")/../.." && pwd)
host=$top/tests/fixtures/hosts/roce-story5
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
command -v valgrind >/dev/null || { echo "callgrind-8b: valgrind is not installed (apt-get install valgrind)"; exit 77; }
[ -f "$peers/libnccl-net-ncclib.so" ] || { echo "callgrind-8b: no $peers/libnccl-net-ncclib.so: build it with ../shared/peers/nccl-builtin/build.sh $peers"; exit 77; }
export LD_LIBRARY_PATH=$build/tests/softverbs NCCL_DIAG_IBVERBS_LIB=$build/tests/softverbs/libibverbs.so.1
export NCCL_DIAG_SYSFS_ROOT=$host/sysfs HWLOC_XMLFILE=$host/topo.xml NCCL_DIAG_IFADDRS=live HWLOC_COMPONENTS=-pci
# One run per transport and entry, each alone in its ranks, collecting
# only inside the bench's calls of that entry (isend, irecv or test): what
# a transport's own code costs per call, apart from the verbs provider.
run() { # label, entry, bench args...
  local label=$1 entry=$2; shift 2
  mkdir -p "$out/$label"
  unshare -m bash -c '
    mount --make-rprivate / && mount --bind "$1/sysfs" /sys && shift &&
    exec "$@"' _ "$host" valgrind -q --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$out/$label/cg.%p" --toggle-collect="netload_$entry" \
    "$build/bench/nccl-net-bench" --transport ib --modes lat \
    --lat-sizes 8 --lat-iters "$iters" --reps 1 --no-baseline --json="$out/$label.json" "$@" 2>&1 | grep -E '^ +8 B|FAILED' || true
}
args=()
for entry in isend irecv test; do
  run "plugin-$entry" "$entry"
  run "nccl-ib-$entry" "$entry" --plugin "$peers/libnccl-net-ncclib.so"
  for label in "plugin-$entry" "nccl-ib-$entry"; do
    for f in "$out/$label"/cg.*; do args+=("$label=$f"); done
  done
done
python3 "$top/bench/profile/callgrind_report.py" "${args[@]}"
