#!/usr/bin/env bash
# Real NCCL end to end through libnccl-net-diag (design test layer 6): two
# processes share one GPU with different NCCL_HOSTID values, so NCCL treats
# them as two hosts and moves every byte through the network plugin. Checks
# every collective element by element, proves from NCCL's own log which
# plugin and ABI version it bound, and compares all_reduce bus bandwidth with
# NCCL's built-in Socket transport. Prints TAP. See tests/gpu/README.md.
#
# Without a GPU it prints "ok 1 - gpu end-to-end # SKIP skipped: no GPU".
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)

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

# ---- TAP ---------------------------------------------------------------------
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
diag() { sed 's/^/# /'; }
# A case from the status of the command just run: `cmd; is "name"`.
is() { if [ $? = 0 ]; then ok "$1"; else notok "$1"; fi; }
finish() {
  echo "1..$n"
  [ -n "$tarball" ] && [ -d "$out" ] && tar czf "$tarball" -C "$out" . 2>/dev/null
  [ $failed -eq 0 ] && exit 0
  exit 1
}

# ---- matching NCCL's log lines (formats of NCCL 2.28.9, spec sections 1.2, 10) -
# A line reads "<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <message>".
re_escape() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }
# NCCL dlopened the plugin file whose name ends in $2.
log_plugin_loaded() {
  grep -m1 -E "NCCL INFO Successfully loaded external network plugin .*$(re_escape "$2")[[:space:]]*\$" "$1"
}
# The ABI version NCCL bound for the plugin named $2 (empty when none).
log_bound_abi() {
  sed -n -E "s/.*NCCL INFO NET\/Plugin: Loaded net plugin $(re_escape "$2") \(v([0-9]+)\)[[:space:]]*\$/\1/p" "$1" |
    head -n1
}
# shellcheck disable=SC2317 # called through log_case
log_bound_line() { grep -m1 -E "NCCL INFO NET/Plugin: Loaded net plugin $(re_escape "$2") \(v[0-9]+\)" "$1"; }
# The communicator uses network $2 (NCCL's "Using network <name>").
log_network() { grep -m1 -E "NCCL INFO Using network $(re_escape "$2")[[:space:]]*\$" "$1"; }
# Connections go through NET/<name> ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/diag/0").
log_via_net() { grep -m1 -E "NCCL INFO Channel .* via NET/$(re_escape "$2")/[0-9]+" "$1"; }
log_hostid() { grep -m1 -F "NCCL INFO NCCL_HOSTID set by environment to $2" "$1"; }

# The ABI NCCL binds for a plugin exporting v8..v11 (spec 1.1): 2.28 and later
# v11 (2.30 looks for v12 first, which we do not export), 2.26-2.27 v10,
# 2.24-2.25 v9, older v8.
expected_abi() {
  local major=$(($1 / 10000)) minor=$((($1 % 10000) / 100))
  if [ "$major" -gt 2 ] || [ "$minor" -ge 28 ]; then echo 11
  elif [ "$minor" -ge 26 ]; then echo 10
  elif [ "$minor" -ge 24 ]; then echo 9
  else echo 8; fi
}

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

# ---- finding NCCL and the CUDA runtime -----------------------------------------
nccl_lib_dir="" nccl_inc_dir="" cudart="" cudart_inc="" looked=()
cuda_roots() {
  local nv
  {
    nv=$(command -v nvcc 2>/dev/null) && dirname "$(dirname "$nv")"
    echo /usr/local/cuda
  } | awk '!seen[$0]++'
}
python_pkg_dir() { # nvidia.<name> from a pip wheel (PyTorch ships NCCL this way)
  command -v python3 >/dev/null 2>&1 || return 1
  python3 - "$1" 2>/dev/null <<'EOF'
import importlib.util, sys
try:
    s = importlib.util.find_spec("nvidia." + sys.argv[1])
except Exception:
    s = None
if s and s.submodule_search_locations:
    print(list(s.submodule_search_locations)[0])
EOF
}
find_nccl() {
  local pairs=() root l arch d
  arch=$(uname -m)-linux
  [ -n "${NCCL_HOME:-}" ] && pairs+=("$NCCL_HOME/lib:$NCCL_HOME/include" "$NCCL_HOME/lib64:$NCCL_HOME/include")
  while read -r root; do
    pairs+=("$root/lib64:$root/include" "$root/lib:$root/include"
            "$root/targets/$arch/lib:$root/targets/$arch/include")
  done < <(cuda_roots)
  l=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [ -n "$l" ] && pairs+=("$(dirname "$l"):$(dirname "$(dirname "$l")")/include")
  d=$(python_pkg_dir nccl) && [ -n "$d" ] && pairs+=("$d/lib:$d/include")
  for p in "${pairs[@]}"; do
    looked+=("${p%%:*}")
    if [ -z "$nccl_lib_dir" ] && [ -e "${p%%:*}/libnccl.so.2" ]; then
      nccl_lib_dir=${p%%:*}
      [ -e "${p#*:}/nccl.h" ] && nccl_inc_dir=${p#*:}
    fi
    [ -z "$nccl_inc_dir" ] && [ -e "${p#*:}/nccl.h" ] && nccl_inc_dir=${p#*:}
  done
  [ -n "$nccl_lib_dir" ]
}
find_cudart() { # for building the rank program on the GPU host itself
  local dirs=() root d sub
  while read -r root; do
    dirs+=("$root/lib64:$root/include" "$root/lib:$root/include"
           "$root/targets/$(uname -m)-linux/lib:$root/targets/$(uname -m)-linux/include")
  done < <(cuda_roots)
  for sub in cu13 cuda_runtime; do
    d=$(python_pkg_dir "$sub") && [ -n "$d" ] && dirs+=("$d/lib:$d/include")
  done
  for p in "${dirs[@]}"; do
    [ -e "${p#*:}/cuda_runtime_api.h" ] || continue
    for f in "${p%%:*}/libcudart_static.a" "${p%%:*}"/libcudart.so.[0-9]*; do
      [ -e "$f" ] || continue
      cudart=$f cudart_inc=${p#*:}
      return 0
    done
  done
  return 1
}
build_rank_program() {
  local cc=${CC:-} c
  for c in cc gcc clang; do [ -z "$cc" ] && command -v $c >/dev/null 2>&1 && cc=$c; done
  [ -n "$cc" ] || { echo "no C compiler here: build it with meson where one is and carry it"; return 1; }
  [ -n "$nccl_inc_dir" ] || { echo "no nccl.h found in: ${looked[*]}"; return 1; }
  find_cudart || { echo "no CUDA runtime (cuda_runtime_api.h with libcudart) found"; return 1; }
  case $cudart in *.so*) LD_LIBRARY_PATH="${cudart%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                         export LD_LIBRARY_PATH ;; esac
  bin=$out/nccl_e2e
  echo "$cc -std=c11 -O2 -D_GNU_SOURCE -I$nccl_inc_dir -I$cudart_inc nccl_e2e.c -l:libnccl.so.2 $cudart"
  "$cc" -std=c11 -O2 -D_GNU_SOURCE -I"$nccl_inc_dir" -I"$cudart_inc" "$here/nccl_e2e.c" -o "$bin" \
    -L"$nccl_lib_dir" -l:libnccl.so.2 "$cudart" -ldl -lrt -lpthread 2>&1
}

# ---- running a pair of ranks --------------------------------------------------
# shellcheck disable=SC2054 # commas belong to the value
common_env=(NCCL_SOCKET_IFNAME=lo NCCL_MNNVL_ENABLE=0 NCCL_DEBUG=INFO
            NCCL_DEBUG_SUBSYS=INIT,NET,ENV)
pair_rc=()
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

# ---- selftest: the runner's own logic, no GPU needed -------------------------
selftest() {
  local canned=$here/canned d=$out/selftest
  rm -rf "$d" && mkdir -p "$d"
  local c want got
  for c in 22809:11 22907:11 23001:11 22703:10 22605:10 22505:9 22403:9 22304:8 21903:8; do
    want=${c#*:}
    got=$(expected_abi "${c%%:*}")
    [ "$got" = "$want" ]
    is "selftest: NCCL ${c%%:*} binds ABI v$want"
  done

  local good=$canned/nccl-2.28.9-diag.log
  log_plugin_loaded "$good" libnccl-net-diag.so >/dev/null
  is "selftest: canned 2.28.9 log: plugin file found"
  [ "$(log_bound_abi "$good" diag)" = 11 ]
  is "selftest: canned 2.28.9 log: ABI v11 bound"
  log_network "$good" diag >/dev/null
  is "selftest: canned 2.28.9 log: network diag"
  log_via_net "$good" diag >/dev/null
  is "selftest: canned 2.28.9 log: channels via NET/diag"
  log_hostid "$good" diag-e2e-check-host0 >/dev/null
  is "selftest: canned 2.28.9 log: NCCL_HOSTID"
  ! log_network "$good" dia >/dev/null && ! log_network "$good" Socket >/dev/null
  is "selftest: network names match whole words only"

  local fb=$canned/nccl-2.28.9-fallback.log
  ! log_network "$fb" diag >/dev/null && log_network "$fb" Socket >/dev/null
  is "selftest: canned fallback log (plugin without devices): not counted as network diag"
  local v10=$canned/nccl-2.27.7-diag-v10.log
  [ "$(log_bound_abi "$v10" diag)" = 10 ] && [ "$(expected_abi 22707)" = 10 ]
  is "selftest: canned 2.27.7 log: v10 bound and expected there"
  local none=$canned/nccl-2.28.9-noplugin.log
  [ -z "$(log_bound_abi "$none" diag)" ] && ! log_plugin_loaded "$none" libnccl-net-diag.so >/dev/null &&
    ! log_network "$none" diag >/dev/null
  is "selftest: canned log of a plugin NCCL could not open: nothing matches"

  printf '%s\n' "BW label=diag bytes=1048576 iters=100 time_us=1.0 algbw_gbs=1.000 busbw_gbs=1.000" \
    "BW label=diag bytes=2097152 iters=100 time_us=1.0 algbw_gbs=3.000 busbw_gbs=3.000" >"$d/bw-a1"
  printf '%s\n' "BW label=diag bytes=1048576 iters=100 time_us=1.0 algbw_gbs=1.500 busbw_gbs=1.500" \
    "BW label=diag bytes=2097152 iters=100 time_us=1.0 algbw_gbs=2.000 busbw_gbs=2.000" >"$d/bw-a2"
  printf '%s\n' "BW label=Socket bytes=2097152 iters=100 time_us=1.0 algbw_gbs=4.000 busbw_gbs=4.000" \
    "BW label=Socket bytes=1048576 iters=100 time_us=1.0 algbw_gbs=3.000 busbw_gbs=3.000" >"$d/bw-b"
  local t
  if t=$(bw_table diag Socket "$d/bw-a1" "$d/bw-a2" "$d/bw-b") && grep -qE '^ +1 MiB +1\.500 +3\.000 +0\.50$' <<<"$t" &&
     grep -qE '^ +2 MiB +3\.000 +4\.000 +0\.75$' <<<"$t"; then
    ok "selftest: busbw table keeps the best round and divides diag by Socket"
  else
    notok "selftest: busbw table keeps the best round and divides diag by Socket"
  fi
  echo "$t" | diag
  ! bw_table diag Socket "$d/bw-a1" >/dev/null
  is "selftest: busbw table fails when a network has no numbers"

  # Whole runs against the test double: they exercise the rank program's
  # checks and every step of this script except the real NCCL.
  local mockbin=$build_dir/tests/gpu/nccl_e2e_mock
  [ -n "$bin" ] && [ "$(basename "$bin")" = nccl_e2e_mock ] && mockbin=$bin
  if [ ! -x "$mockbin" ] || [ ! -e "$plugin" ]; then
    skip "selftest: whole runs against the mock" "no $mockbin or no $plugin"
    return
  fi
  # shellcheck disable=SC2054 # commas belong to the values
  local args=(--mock --bin "$mockbin" --plugin "$plugin" --build-dir "$build_dir"
              --sizes 0,1,4,100,4099,131073,1M --bw 1M:4M --bw-budget 16M --skip-softverbs)
  "$0" "${args[@]}" --out "$d/clean" >"$d/clean.tap" 2>&1
  local rc=$?
  if [ $rc = 0 ] && ! grep -q '^not ok' "$d/clean.tap" && grep -q 'busbw table' "$d/clean.tap" &&
     [ "$(grep -c '^ok .*rank [01]: allgather' "$d/clean.tap")" = 14 ]; then
    ok "selftest: a clean mock run passes every check ($(grep -c '^ok' "$d/clean.tap") cases)"
  else
    notok "selftest: a clean mock run passes every check (status $rc)"
    grep -E '^not ok|^Bail' "$d/clean.tap" | head -n 10 | diag
  fi
  NCCL_E2E_MOCK_CORRUPT=reducescatter "$0" "${args[@]}" --skip-bw --out "$d/corrupt" >"$d/corrupt.tap" 2>&1
  rc=$?
  local bad other
  bad=$(grep -c '^not ok .*reducescatter float sum' "$d/corrupt.tap")
  other=$(grep '^not ok' "$d/corrupt.tap" | grep -vc 'reducescatter')
  if [ $rc != 0 ] && [ "$bad" = 8 ] && [ "$other" = 0 ] &&
     grep -q '^#   .*1 of [0-9]* elements wrong' "$d/corrupt.tap"; then
    ok "selftest: one corrupted byte per reduce_scatter result fails exactly those cases"
  else
    notok "selftest: one corrupted byte per reduce_scatter result fails exactly those cases (status $rc, $bad failed, $other others)"
  fi
  NCCL_E2E_MOCK_MAX_ABI=10 "$0" "${args[@]}" --skip-bw --out "$d/abi10" >"$d/abi10.tap" 2>&1
  rc=$?
  if [ $rc != 0 ] && [ "$(grep -c '^not ok .*through ABI v11$' "$d/abi10.tap")" = 2 ] &&
     grep -q '^# .*Loaded net plugin diag (v10)$' "$d/abi10.tap"; then
    ok "selftest: NCCL binding v10 where v11 is expected fails the ABI check"
  else
    notok "selftest: NCCL binding v10 where v11 is expected fails the ABI check (status $rc)"
  fi
  NCCL_E2E_MOCK_HANG=broadcast "$0" "${args[@]}" --skip-bw --op-timeout 1 --out "$d/hang" \
    >"$d/hang.tap" 2>&1
  rc=$?
  if [ $rc != 0 ] && [ "$(grep -c '^not ok .*bail out: watchdog: broadcast' "$d/hang.tap")" = 2 ]; then
    ok "selftest: an operation that never returns becomes a failure, not a hang"
  else
    notok "selftest: an operation that never returns becomes a failure, not a hang (status $rc)"
  fi
  NCCL_E2E_MOCK_NO_GPU=1 "$0" "${args[@]}" --out "$d/nogpu" >"$d/nogpu.tap" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -qx 'ok 1 - gpu end-to-end # SKIP skipped: no GPU' "$d/nogpu.tap" &&
     grep -q 'cudaErrorInsufficientDriver' "$d/nogpu.tap"; then
    ok "selftest: without a GPU the run skips with \"skipped: no GPU\" and says why"
  else
    notok "selftest: without a GPU the run skips with \"skipped: no GPU\" and says why (status $rc)"
  fi
  "$0" --mock --bin "$mockbin" --plugin "$d/no-such-plugin.so" --build-dir "$build_dir" \
    --skip-bw --skip-softverbs --out "$d/noplugin" >"$d/noplugin.tap" 2>&1
  rc=$?
  if [ $rc != 0 ] && grep -q '^not ok .*plugin loads on this host' "$d/noplugin.tap"; then
    ok "selftest: a plugin that does not load stops the run"
  else
    notok "selftest: a plugin that does not load stops the run (status $rc)"
  fi
}

if [ $selftest = 1 ]; then
  selftest
  finish
fi

# ---- 0. a GPU? ------------------------------------------------------------------
mkdir -p "$out" || { echo "Bail out! cannot create $out"; exit 1; }
gpu_why=""
have_gpu() {
  local l
  if [ $mock = 0 ]; then
    if command -v nvidia-smi >/dev/null 2>&1; then
      l=$(nvidia-smi -L 2>&1)
      if grep -q '^GPU [0-9]' <<<"$l"; then
        echo "$l" | diag
        # Two processes must be able to share the GPU: compute mode Default.
        nvidia-smi --query-gpu=index,compute_mode,driver_version --format=csv,noheader 2>&1 | diag
        return 0
      fi
      gpu_why="nvidia-smi -L: $(head -n1 <<<"$l")"
    else
      gpu_why="no nvidia-smi on PATH"
    fi
    find_nccl && export LD_LIBRARY_PATH="$nccl_lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ -x "$bin" ]; then
    l=$("$bin" probe 2>&1) && return 0
    gpu_why="${gpu_why:+$gpu_why; }nccl_e2e probe: $(tail -n1 <<<"$l")"
  fi
  return 1
}
if ! have_gpu; then
  echo "# $gpu_why"
  skip "gpu end-to-end" "skipped: no GPU"
  finish
fi

# ---- 1. NCCL, the rank program, the plugin ----------------------------------------
nccl_code=22809
if [ $mock = 0 ]; then
  if [ -z "$nccl_lib_dir" ] && ! find_nccl; then
    notok "NCCL found (libnccl.so.2)"
    echo "# looked in: ${looked[*]} (and ldconfig -p, python3 nvidia.nccl); set NCCL_HOME"
    finish
  fi
  ok "NCCL found: $nccl_lib_dir/libnccl.so.2"
  echo "# looked in order: ${looked[*]}"
  case ":${LD_LIBRARY_PATH:-}:" in *":$nccl_lib_dir:"*) ;;
    *) export LD_LIBRARY_PATH="$nccl_lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac
  if [ ! -x "$bin" ]; then
    # Not carried: build it here (this sets bin and may extend LD_LIBRARY_PATH).
    if build_rank_program >"$out/build-rank-program.log"; then
      ok "rank program built here: $bin"
      diag <"$out/build-rank-program.log"
    else
      notok "rank program built here"
      diag <"$out/build-rank-program.log"
      finish
    fi
  fi
fi
if probe=$("$bin" probe 2>&1); then
  ok "rank program runs with this NCCL and sees a GPU"
  echo "$probe" | diag
else
  notok "rank program runs with this NCCL and sees a GPU"
  echo "$probe" | diag
  finish
fi
nccl_code=$(sed -n -E 's/.*\(code ([0-9]+)\).*/\1/p' <<<"$probe" | head -n1)
abi=$(expected_abi "${nccl_code:-0}")
echo "# NCCL version code $nccl_code: a plugin exporting v8..v11 is bound through v$abi"

if msg=$("$bin" dlopen "$plugin" 2>&1); then
  ok "plugin loads on this host as built (dlopen RTLD_NOW): $plugin"
  echo "$msg" | diag
  if command -v ldd >/dev/null 2>&1; then ldd "$plugin" 2>&1 | diag; fi
else
  notok "plugin loads on this host as built (dlopen RTLD_NOW): $plugin"
  echo "$msg" | diag
  finish
fi

if [ $use_mps = 1 ]; then
  if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    export CUDA_MPS_PIPE_DIRECTORY=$out/mps-pipe CUDA_MPS_LOG_DIRECTORY=$out/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT
      ok "private MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
    else
      notok "private MPS daemon started"
    fi
  else
    notok "private MPS daemon started (no nvidia-cuda-mps-control on PATH)"
  fi
fi

size_args=()
[ -n "$sizes" ] && size_args=(--sizes "$sizes")

# ---- 2. every collective through the plugin, checked element by element -------------
plugin_env=(NCCL_NET_PLUGIN="$plugin" NCCL_NET=diag)
if [ $do_checks = 1 ]; then
  run_pair check "${plugin_env[@]}" -- "${size_args[@]}"
  relay_tap check
  check_logs check diag 1 "$abi"
fi

# ---- 3. all_reduce bus bandwidth: the plugin against NCCL's Socket transport ---------
if [ $do_bw = 1 ]; then
  bw_files=()
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
fi

# ---- 4. the plugin's IB device over softverbs --------------------------------------
sv_name="softverbs: the correctness run over the plugin's IB device"
sv_lib=$build_dir/tests/softverbs/libibverbs.so.1
sv_tool=$build_dir/tools/nccl-net-diag
if [ $do_softverbs = 0 ]; then
  skip "$sv_name" "--skip-softverbs"
elif [ ! -e "$sv_lib" ]; then
  skip "$sv_name" "softverbs is not built ($sv_lib): the IB transport has not landed"
elif [ ! -x "$sv_tool" ]; then
  skip "$sv_name" "no $sv_tool to ask the plugin for its devices"
else
  sv_host=${DIAG_GPU_SOFTVERBS_HOST:-}
  if [ -z "$sv_host" ]; then
    for h in "$top"/tests/fixtures/hosts/*/; do
      [ -d "$h/sysfs/class/infiniband" ] && { sv_host=${h%/}; break; }
    done
  fi
  if [ -z "$sv_host" ]; then
    skip "$sv_name" "no fixture host with an RDMA device (set DIAG_GPU_SOFTVERBS_HOST)"
  else
    # DIAG_GPU_SOFTVERBS_ENV: extra VAR=VALUE words softverbs may need.
    read -r -a sv_extra <<<"${DIAG_GPU_SOFTVERBS_ENV:-}"
    sv_env=(NCCL_DIAG_IBVERBS_LIB="$sv_lib" NCCL_DIAG_SYSFS_ROOT="$sv_host/sysfs" "${sv_extra[@]}")
    sv_probe=$(env "${sv_env[@]}" NCCL_DEBUG=INFO "$sv_tool" selftest --size 4096 --iters 1 \
      --plugin "$plugin" 2>&1)
    if ! grep -qE 'using .*/RDMA' <<<"$sv_probe"; then
      skip "$sv_name" "the plugin offers no RDMA device over softverbs on $(basename "$sv_host")"
      grep -E 'WARN|using|devices' <<<"$sv_probe" | head -n 5 | diag
    else
      run_pair softverbs "${plugin_env[@]}" "${sv_env[@]}" -- "${size_args[@]}"
      relay_tap softverbs
      check_logs softverbs diag 1 "$abi"
      if grep -qE 'NET/diag.*using .*/RDMA' "$out/softverbs/nccl.rank0.log"; then
        ok "softverbs: NCCL drove the plugin's RDMA device"
      else
        notok "softverbs: NCCL drove the plugin's RDMA device"
      fi
    fi
  fi
fi

echo "# logs: $out"
finish
