# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# Matching NCCL's log lines (formats of NCCL 2.28.9, spec sections 1.2, 10)
# and the assertions run.sh makes on each rank's log. Sourced by run.sh.
# A line reads "<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <message>".

re_escape() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }
# NCCL dlopened the plugin file whose name ends in $2.
log_plugin_loaded() {
  grep -m1 -E "NCCL INFO Successfully loaded external network plugin .*$(re_escape "$2")[[:space:]]*\$" "$1"
}
# The ABI version NCCL bound for the plugin named $2 (empty when none). NCCL
# 2.12-2.23 log no "Loaded net plugin" line for the table they bind without
# an adapter; the plugin's own INFO line ("bound through ncclNetPlugin_vN")
# says it there.
log_bound_abi() {
  local v
  v=$(sed -n -E "s/.*NCCL INFO NET\/Plugin: Loaded net plugin $(re_escape "$2") \(v([0-9]+)\)[[:space:]]*\$/\1/p" "$1" |
    head -n1)
  [ -n "$v" ] || v=$(sed -n -E 's/.*NCCL INFO NET\/diag libnccl-net-diag .*bound through ncclNetPlugin_v([0-9]+)\).*/\1/p' "$1" |
    head -n1)
  echo "$v"
}
# shellcheck disable=SC2317 # called through log_case
log_bound_line() {
  grep -m1 -E "NCCL INFO NET/Plugin: Loaded net plugin $(re_escape "$2") \(v[0-9]+\)" "$1" ||
    grep -m1 -E "NCCL INFO NET/diag libnccl-net-diag .*bound through ncclNetPlugin_v[0-9]+\)" "$1"
}
# The communicator uses network $2 (NCCL's "Using network <name>").
log_network() { grep -m1 -E "NCCL INFO Using network $(re_escape "$2")[[:space:]]*\$" "$1"; }
# Connections go through NET/<name> ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/diag/0").
log_via_net() { grep -m1 -E "NCCL INFO Channel .* via NET/$(re_escape "$2")/[0-9]+" "$1"; }
log_hostid() { grep -m1 -F "NCCL INFO NCCL_HOSTID set by environment to $2" "$1"; }

# The ABI NCCL binds for a plugin exporting v5..v12 (README, "NCCL versions"):
# the newest table each release looks for.
expected_abi() {
  local major=$(($1 / 10000)) minor=$((($1 % 10000) / 100))
  if [ "$major" -gt 2 ] || [ "$minor" -ge 30 ]; then echo 12
  elif [ "$minor" -ge 28 ]; then echo 11
  elif [ "$minor" -ge 26 ]; then echo 10
  elif [ "$minor" -ge 24 ]; then echo 9
  elif [ "$minor" -ge 20 ]; then echo 8
  elif [ "$minor" -ge 19 ]; then echo 7
  elif [ "$minor" -ge 13 ]; then echo 6
  else echo 5; fi
}

# One assertion on a log: passes when the matcher prints a line (quoted
# under the case); on failure, quotes the log's lines that match context.
log_case() { # name log context-regex matcher args...
  local name=$1 log=$2 ctx=$3 line
  shift 3
  if line=$("$@"); then
    ok "$name"
    echo "$line" | diag
  else
    notok "$name"
    grep -m3 -E "$ctx" "$log" | diag
  fi
}
# shellcheck disable=SC2317 # called through log_case
log_abi_is() { [ "$(log_bound_abi "$1" "$2")" = "$3" ] && log_bound_line "$1" "$2"; }

# Asserts, from NCCL's own log of each rank, which network the communicator
# used and (when a plugin is expected) that NCCL loaded ours with ABI v$abi.
check_logs() { # tag network plugin-expected(0|1) abi
  local tag=$1 net=$2 want_plugin=$3 abi=$4 r log so
  so=$(basename "$plugin")
  for r in 0 1; do
    log=$out/$tag/nccl.rank$r.log
    if [ ! -s "$log" ]; then notok "$tag rank $r: NCCL wrote a log ($log)"; continue; fi
    if [ "$want_plugin" = 1 ]; then
      log_case "$tag rank $r: NCCL loaded the plugin file $so" "$log" 'NET/Plugin|network plugin' \
        log_plugin_loaded "$log" "$so"
      log_case "$tag rank $r: NCCL bound plugin diag through ABI v$abi" "$log" 'Loaded net plugin' \
        log_abi_is "$log" diag "$abi"
    fi
    log_case "$tag rank $r: the communicator uses network $net" "$log" \
      'Using network|Failed to initialize' log_network "$log" "$net"
    log_case "$tag rank $r: NCCL connected its channels via NET/$net" "$log" 'via NET/' \
      log_via_net "$log" "$net"
    log_case "$tag rank $r: NCCL took NCCL_HOSTID diag-e2e-$tag-host$r (two hosts on one GPU)" \
      "$log" 'NCCL_HOSTID' log_hostid "$log" "diag-e2e-$tag-host$r"
  done
  grep -h -m2 -E 'NET/diag .*(libnccl-net-diag|using )' "$out/$tag/nccl.rank0.log" 2>/dev/null | diag
}
