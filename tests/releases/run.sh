#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replays every NCCL release on each host kind and prints the table
# (release x host kind -> end state): TCP-only namespace hosts with 1, 2
# and 4 interfaces (root only; skipped otherwise), also fused by
# NCCL_NET_MERGE_LEVEL=SYS and NCCL_NET_FORCE_MERGE, and softverbs RDMA hosts
# built from the fixture hosts (single-port NICs, a dual-port card, an IB
# node, a DGX-like node, SR-IOV, a container).
# usage: run.sh REPLAY PLUGIN SOFTVERBS_LIB FIXTURE_HOSTS_DIR
set -u
replay=$1 plugin=$2 svlib=$3 hosts=$4
rows=$(mktemp) tap=$(mktemp) && trap 'rm -f "$rows" "$tap"' EXIT
export NCCL_DIAG_PLUGIN_PATH=$plugin

emit() { # TAP lines through, ROW lines kept for the table
  while IFS= read -r line; do
    case $line in ROW*) echo "$line" >>"$rows" ;; 1..*) ;; *) echo "$line" | tee -a "$tap" ;; esac
  done
}

tcp_host() { # $1 = number of interfaces, $2 = label, then NAME=VALUE settings
  local n=$1 label=$2 ns=diagrel$$n
  shift 2
  ip netns add "$ns" || return 1
  ip -n "$ns" link set lo up
  for i in $(seq 0 $((n - 1))); do
    # a veth pair inside the host: dx$i carries the address, its peer the carrier
    ip -n "$ns" link add "dx$i" type veth peer name "dy$i"
    ip -n "$ns" addr add "10.91.$i.1/24" dev "dx$i"
    ip -n "$ns" link set "dy$i" up
    ip -n "$ns" link set "dx$i" up
  done
  for i in $(seq 0 $((n - 1))); do
    for t in $(seq 100); do ip -n "$ns" link show "dx$i" | grep -q 'state UP' && break; sleep 0.05; done
  done
  ip netns exec "$ns" env NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=dx "$@" \
    "$replay" --host "$label" --expect-net dx "$plugin" 2>/dev/null | emit
  ip netns del "$ns"
}

rdma_host() { # $1 = fixture host, $2 = label, then NAME=VALUE settings
  local host=$1 label=$2 libvar=NCCL_DIAG_IBVERBS_LIB
  shift 2
  if [ "${1:-}" = --nccl-ibverbs-lib ]; then libvar=NCCL_IBVERBS_LIB; shift; fi
  env "$libvar=$svlib" "$@" NCCL_DIAG_SYSFS_ROOT="$hosts/$host/sysfs" \
    HWLOC_XMLFILE="$hosts/$host/topo.xml" HWLOC_COMPONENTS=-pci NCCL_DIAG_IFADDRS=live \
    "$replay" --host "$label" --expect-net mlx5 "$plugin" 2>/dev/null | emit
}

if [ "$(id -u)" = 0 ]; then
  for n in 1 2 4; do tcp_host $n "tcp-${n}if"; done
  # every interface in one group: NCCL asks to fuse TCP interfaces
  tcp_host 2 tcp-2if-sys NCCL_NET_MERGE_LEVEL=SYS
  tcp_host 4 tcp-4if-force NCCL_NET_FORCE_MERGE="dx0,dx2;dx1,dx3"
else
  echo "ok - TCP-only namespace hosts # SKIP needs root" | tee -a "$tap"
fi
rdma_host roce-story5 rdma-1port
rdma_host roce-dual-port rdma-2port
# rails from NCCL_IB_HCA: one rail per port (2.30 with NCCL_NET_MERGE_POLICY=RAIL
# keeps them apart), and both ports on one rail (fused, the rail kept)
rdma_host roce-dual-port rdma-2rails NCCL_IB_HCA=mlx5_0:1:0:0,mlx5_1:1:1:1 \
  NCCL_NET_MERGE_POLICY=RAIL
rdma_host roce-dual-port rdma-1rail NCCL_IB_HCA=mlx5_0:1:3:0,mlx5_1:1:3:1
# rdma-core found through NCCL_IBVERBS_LIB, as NCCL finds it (a container
# with rdma-core elsewhere)
rdma_host roce-story5 rdma-ibverbs-lib --nccl-ibverbs-lib
rdma_host ib-hdr ib-hdr
rdma_host dgx-h100 dgx-h100
rdma_host sriov-pf-vf sriov
rdma_host container-partial-gids container

# The table: one row per release, one column per host kind.
echo "# replay table (release x host kind -> end state)"
awk -F'\t' '
  function field(s, k,   m) { if (match(s, k "=[0-9]+")) return substr(s, RSTART + length(k) + 1, RLENGTH - length(k) - 1); return 0 }
  { if (!($3 in seen)) { seen[$3] = 1; cols[++nc] = $3 }
    if (!($2 in rs)) { rs[$2] = 1; rel[++nr] = $2 }
    st = $4
    if ($4 ~ /^ok/) {
      st = "ok " field($4, "nets") "net"
      if (field($4, "fused") > 0) st = st "," field($4, "fused") "fused"
      if (field($4, "rails") > 0) st = st ",rails"
    }
    cell[$2, $3] = st }
  END {
    line = sprintf("# %-5s", "NCCL"); for (c = 1; c <= nc; c++) line = line sprintf(" %-16s", cols[c]); print line
    for (r = 1; r <= nr; r++) { line = sprintf("# %-5s", rel[r])
      for (c = 1; c <= nc; c++) line = line sprintf(" %-16s", cell[rel[r], cols[c]]); print line }
  }' "$rows"
echo "1..$(grep -c '' "$tap")"
