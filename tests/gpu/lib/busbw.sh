# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# all_reduce bus bandwidth: the plugin against NCCL's Socket transport, and
# the table that compares them. Sourced by run.sh.

# Bus bandwidth table from "BW label=... bytes=... busbw_gbs=..." lines in the
# given files: one row per size, best of all rounds per network, and the ratio
# of the first network to the second.
bw_table() { # first-label second-label files...
  local a=$1 b=$2; shift 2
  awk -v A="$a" -v B="$b" '
    function human(x) {
      if (x >= 1073741824 && x % 1073741824 == 0) return (x / 1073741824) " GiB"
      if (x >= 1048576 && x % 1048576 == 0) return (x / 1048576) " MiB"
      if (x >= 1024 && x % 1024 == 0) return (x / 1024) " KiB"
      return x " B"
    }
    /^BW / {
      lab = ""; sz = ""; bw = ""
      for (i = 2; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] == "label") lab = kv[2]
        else if (kv[1] == "bytes") sz = kv[2] + 0
        else if (kv[1] == "busbw_gbs") bw = kv[2] + 0
      }
      if (lab == "" || sz == "" || bw == "") next
      k = lab SUBSEP sz
      if (!(k in best) || bw > best[k]) best[k] = bw
      if (!(sz in seen)) { seen[sz] = 1; sizes[++ns] = sz }
    }
    END {
      for (i = 2; i <= ns; i++) {        # sort sizes ascending
        v = sizes[i]; j = i - 1
        while (j > 0 && sizes[j] > v) { sizes[j + 1] = sizes[j]; j-- }
        sizes[j + 1] = v
      }
      printf "%10s  %12s  %12s  %9s\n", "size", A " GB/s", B " GB/s", A "/" B
      missing = 0
      for (i = 1; i <= ns; i++) {
        s = sizes[i]; ka = A SUBSEP s; kb = B SUBSEP s
        x = (ka in best) ? sprintf("%.3f", best[ka]) : "-"
        y = (kb in best) ? sprintf("%.3f", best[kb]) : "-"
        if (!(ka in best) || !(kb in best)) missing++
        r = ((ka in best) && (kb in best) && best[kb] > 0) ? sprintf("%.2f", best[ka] / best[kb]) : "n/a"
        printf "%10s  %12s  %12s  %9s\n", human(s), x, y, r
      }
      if (ns == 0 || missing) exit 1
    }' "$@"
}

# Rounds alternate diag and Socket so a drift of the host's speed during the
# run hits both columns alike; the table keeps each network's best round.
step_bw() {
  local bw_files=() k table table_rc
  for ((k = 1; k <= rounds; k++)); do
    run_pair "bw-diag-$k" "${plugin_env[@]}" -- --checks none --bw "$bw_range" \
      --bw-budget "$bw_budget" --label diag
    relay_tap "bw-diag-$k"
    run_pair "bw-socket-$k" NCCL_NET_PLUGIN=none NCCL_NET=Socket -- --checks none --bw "$bw_range" \
      --bw-budget "$bw_budget" --label Socket
    relay_tap "bw-socket-$k"
    check_logs "bw-diag-$k" diag 1 "$abi"
    check_logs "bw-socket-$k" Socket 0 "$abi"
    bw_files+=("$out/bw-diag-$k/rank0.out" "$out/bw-socket-$k/rank0.out")
  done
  table=$(bw_table diag Socket "${bw_files[@]}")
  table_rc=$?
  {
    echo "all_reduce bus bandwidth, 2 ranks sharing one GPU as two hosts, NCCL code $nccl_code;"
    echo "busbw = algbw * 2(n-1)/n; best of $rounds round(s); ratio = diag / Socket"
    echo "$table"
  } >"$out/busbw.txt"
  if [ $table_rc = 0 ]; then
    ok "busbw table: every size through diag and through Socket ($out/busbw.txt)"
  else
    notok "busbw table: every size through diag and through Socket ($out/busbw.txt)"
  fi
  diag <"$out/busbw.txt"
}
