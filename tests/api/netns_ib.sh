#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the api suite over RDMA (softverbs) between two network-namespace
# hosts built from two fixture hosts: each side reads its own host's sysfs
# and topology, and its interfaces are the fixture's, so the kernel's
# routing decides which RDMA paths exist. Needs root; otherwise a skip.
# usage: netns_ib.sh SV_NETNS_SH FIXTURE_A FIXTURE_B API_SUITE [api_suite args...]
set -u
svnetns=$1 a=$2 b=$3 suite=$4
shift 4
if ! why=$("$svnetns" check); then
  echo "ok 1 - api suite over RDMA between two namespace hosts # SKIP $why"
  echo "1..1"
  exit 0
fi
name=svi$$
trap '"$svnetns" down "$name"' EXIT
"$svnetns" up "$name" "$a" "$b" || { echo "not ok 1 - cannot build the namespace hosts"; echo "1..1"; exit 1; }
"$suite" "$@" --transport ib --netns "${name}a,${name}b" \
  --env-recv "NCCL_DIAG_SYSFS_ROOT=$a/sysfs" --env-recv "HWLOC_XMLFILE=$a/topo.xml" \
  --env-send "NCCL_DIAG_SYSFS_ROOT=$b/sysfs" --env-send "HWLOC_XMLFILE=$b/topo.xml" \
  --env NCCL_DIAG_IFADDRS=live --env NCCL_SOCKET_IFNAME==bond0 --env HWLOC_COMPONENTS=-pci
