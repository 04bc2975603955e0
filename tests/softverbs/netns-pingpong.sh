#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sv_rc_pingpong between two network-namespace hosts built from fixture
# hosts, as two machines would run ibv_rc_pingpong: the server in host a,
# the client in host b naming the server's address; the QP addresses go
# over one interface, the RDMA traffic over the device's own port.
#   netns-pingpong.sh SV_RC_PINGPONG SV_NETNS_SH HOSTS_DIR PEERS_DIR
# (the shared fixture hosts, and softverbs' peers of them). TAP output;
# cases are skipped, with the reason, without root.
set -u
pp=$1 netns=$2 hosts=$3 peers=$4
n=0
failed=0
names=()
tmp=$(mktemp -d)

cleanup() {
  for name in "${names[@]}"; do "$netns" down "$name"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

report() { # ok?, case, logs...
  local ok=$1 what=$2 log
  shift 2
  n=$((n + 1))
  [ "$ok" = 0 ] || failed=$((failed + 1))
  for log in "$@"; do sed 's/^/# /' "$log"; done
  echo "$([ "$ok" = 0 ] || echo 'not ')ok $n - $what"
}

# name host-a host-b device gid oob-address [VAR=value...] (host folders)
pingpong() {
  local name=$1 fa=$2 fb=$3 dev=$4 gid=$5 addr=$6
  shift 6
  local port=$((20000 + $$ % 20000)) rc_a rc_b
  ip netns exec "${name}a" env NCCL_DIAG_SYSFS_ROOT="$fa/sysfs" "$@" \
    timeout 30 "$pp" -d "$dev" -g "$gid" -n 500 -s 65536 -p "$port" >"$tmp/a.log" 2>&1 &
  local server=$!
  ip netns exec "${name}b" env NCCL_DIAG_SYSFS_ROOT="$fb/sysfs" "$@" \
    timeout 30 "$pp" -d "$dev" -g "$gid" -n 500 -s 65536 -p "$port" "$addr" >"$tmp/b.log" 2>&1
  rc_b=$?
  wait "$server"
  rc_a=$?
  [ "$rc_a" = 0 ] && [ "$rc_b" = 0 ]
}

cases=("roce-story5 and its peer: mlx5_2 GID 3 over xgbe2, addresses over bond0 (sv_rc_pingpong)"
       "ib-hdr and its peer: mlx5_0 by LID, addresses over eno1 (sv_rc_pingpong)")
if ! why=$("$netns" check); then
  for c in "${cases[@]}"; do n=$((n + 1)); echo "ok $n - $c # SKIP $why"; done
  echo "1..$n"
  exit 0
fi

names+=("svp$$")
ra=$hosts/roce-story5 rb=$peers/roce-story5-b
if "$netns" up "svp$$" "$ra" "$rb"; then
  pingpong "svp$$" "$ra" "$rb" mlx5_2 3 10.0.0.5 SOFTVERBS_WIRE=net
  report $? "${cases[0]}" "$tmp/a.log" "$tmp/b.log"
else
  report 1 "${cases[0]} (building the namespaces failed)"
fi

names+=("svq$$")
ia=$hosts/ib-hdr ib=$peers/ib-hdr-b
if "$netns" up "svq$$" "$ia" "$ib"; then
  pingpong "svq$$" "$ia" "$ib" mlx5_0 -1 10.3.0.42 SOFTVERBS_WIRE=net SOFTVERBS_FABRIC="$ia/sysfs:$ib/sysfs"
  report $? "${cases[1]}" "$tmp/a.log" "$tmp/b.log"
else
  report 1 "${cases[1]} (building the namespaces failed)"
fi

echo "1..$n"
[ "$failed" = 0 ]
