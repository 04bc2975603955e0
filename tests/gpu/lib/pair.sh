# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# Running a pair of ranks and turning their TAP into run.sh's. Sourced by
# run.sh; uses its $out, $bin and $op_timeout.

# shellcheck disable=SC2054 # commas belong to the value
common_env=(NCCL_SOCKET_IFNAME=lo NCCL_MNNVL_ENABLE=0 NCCL_DEBUG=INFO
            NCCL_DEBUG_SUBSYS=INIT,NET,ENV)
pair_rc=()
# Both ranks at once, each with its own NCCL_HOSTID (so NCCL counts two
# hosts), log files and TMPDIR under $out/<tag>; pair_rc gets their statuses.
run_pair() { # tag VAR=VALUE... -- rank program arguments...
  local tag=$1 envs=() pids=() r p tmo=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local d=$out/$tag
  rm -rf "$d" && mkdir -p "$d/tmp"
  command -v timeout >/dev/null 2>&1 && tmo=(timeout -k 10 "${PAIR_TIMEOUT:-1500}")
  for r in 0 1; do
    env -u NCCL_NET -u NCCL_NET_PLUGIN "${common_env[@]}" "${envs[@]}" TMPDIR="$d/tmp" \
      NCCL_HOSTID="diag-e2e-$tag-host$r" NCCL_DEBUG_FILE="$d/nccl.rank$r.log" \
      NCCL_DIAG_LOG_FILE="$d/diag-events.rank$r.jsonl" \
      "${tmo[@]}" "$bin" run --rank $r --nranks 2 --id-file "$d/unique-id" \
      --timeout "$op_timeout" "$@" >"$d/rank$r.out" 2>"$d/rank$r.err" &
    pids+=($!)
  done
  pair_rc=()
  for p in "${pids[@]}"; do
    wait "$p"
    pair_rc+=($?)
  done
}

# Re-emits the ranks' TAP lines as ours, named "<tag> rank R: ...", with the
# detail lines under a failure, and fails a rank that died without saying why.
relay_tap() { # tag
  local tag=$1 r kind text why bad
  for r in 0 1; do
    bad=0
    while IFS=$'\t' read -r kind text why; do
      case $kind in
        OK) ok "$tag rank $r: $text" ;;
        NOTOK) notok "$tag rank $r: $text"; bad=1 ;;
        SKIP) skip "$tag rank $r: $text" "$why" ;;
        BAIL) notok "$tag rank $r: bail out: $text"; bad=1 ;;
        DIAG) echo "#   $text" ;;
      esac
    done < <(awk '
      /^not ok [0-9]+ - / { sub(/^not ok [0-9]+ - /, ""); print "NOTOK\t" $0; after = 1; next }
      /^ok [0-9]+ - .* # SKIP / { sub(/^ok [0-9]+ - /, ""); i = index($0, " # SKIP ")
                                  print "SKIP\t" substr($0, 1, i - 1) "\t" substr($0, i + 8); after = 0; next }
      /^ok [0-9]+ - / { sub(/^ok [0-9]+ - /, ""); print "OK\t" $0; after = 0; next }
      /^Bail out!/ { sub(/^Bail out! */, ""); print "BAIL\t" $0; next }
      /^# (rank|NCCL_NET|communicator)/ { sub(/^# /, ""); print "DIAG\t" $0; next }
      /^#/ && after { sub(/^# */, ""); print "DIAG\t" $0; next }' "$out/$tag/rank$r.out")
    if [ "${pair_rc[$r]}" != 0 ] && [ $bad = 0 ]; then
      case ${pair_rc[$r]} in
        124|137) notok "$tag rank $r: killed after ${PAIR_TIMEOUT:-1500} s (hung)" ;;
        *) notok "$tag rank $r: exited with status ${pair_rc[$r]}" ;;
      esac
      tail -n 5 "$out/$tag/rank$r.err" | diag
    fi
  done
}
