# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# run.sh --selftest: the runner's own logic, no GPU needed. The log matchers
# against canned NCCL logs, the ABI mapping, the table, and whole runs of
# run.sh against the test double (mock_nccl.c). Sourced by run.sh.

selftest_abi() {
  local c want got
  for c in 23007:12 23001:12 22809:11 22907:11 22703:10 22605:10 22505:9 22403:9 22304:8 22003:8 \
    21903:7 21805:6 21403:6 21304:6 21212:5; do
    want=${c#*:}
    got=$(expected_abi "${c%%:*}")
    [ "$got" = "$want" ]
    is "selftest: NCCL ${c%%:*} binds ABI v$want"
  done
}

selftest_logs() { # canned-folder
  local good=$1/nccl-2.28.9-diag.log
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

  local fb=$1/nccl-2.28.9-fallback.log
  ! log_network "$fb" diag >/dev/null && log_network "$fb" Socket >/dev/null
  is "selftest: canned fallback log (plugin without devices): not counted as network diag"
  local v10=$1/nccl-2.27.7-diag-v10.log
  [ "$(log_bound_abi "$v10" diag)" = 10 ] && [ "$(expected_abi 22707)" = 10 ]
  is "selftest: canned 2.27.7 log: v10 bound and expected there"
  local none=$1/nccl-2.28.9-noplugin.log
  [ -z "$(log_bound_abi "$none" diag)" ] && ! log_plugin_loaded "$none" libnccl-net-diag.so >/dev/null &&
    ! log_network "$none" diag >/dev/null
  is "selftest: canned log of a plugin NCCL could not open: nothing matches"
}

selftest_table() { # scratch-folder
  local d=$1 t
  printf '%s\n' "BW label=diag bytes=1048576 iters=100 time_us=1.0 algbw_gbs=1.000 busbw_gbs=1.000" \
    "BW label=diag bytes=2097152 iters=100 time_us=1.0 algbw_gbs=3.000 busbw_gbs=3.000" >"$d/bw-a1"
  printf '%s\n' "BW label=diag bytes=1048576 iters=100 time_us=1.0 algbw_gbs=1.500 busbw_gbs=1.500" \
    "BW label=diag bytes=2097152 iters=100 time_us=1.0 algbw_gbs=2.000 busbw_gbs=2.000" >"$d/bw-a2"
  printf '%s\n' "BW label=Socket bytes=2097152 iters=100 time_us=1.0 algbw_gbs=4.000 busbw_gbs=4.000" \
    "BW label=Socket bytes=1048576 iters=100 time_us=1.0 algbw_gbs=3.000 busbw_gbs=3.000" >"$d/bw-b"
  if t=$(bw_table diag Socket "$d/bw-a1" "$d/bw-a2" "$d/bw-b") && grep -qE '^ +1 MiB +1\.500 +3\.000 +0\.50$' <<<"$t" &&
     grep -qE '^ +2 MiB +3\.000 +4\.000 +0\.75$' <<<"$t"; then
    ok "selftest: busbw table keeps the best round and divides diag by Socket"
  else
    notok "selftest: busbw table keeps the best round and divides diag by Socket"
  fi
  echo "$t" | diag
  ! bw_table diag Socket "$d/bw-a1" >/dev/null
  is "selftest: busbw table fails when a network has no numbers"
}

# ---- whole runs of this script against the test double ------------------------
# Each takes the scratch folder, then run.sh's arguments for a mock run.

selftest_mock_clean() {
  local d=$1 rc
  shift
  "$0" "$@" --out "$d/clean" >"$d/clean.tap" 2>&1
  rc=$?
  if [ $rc = 0 ] && ! grep -q '^not ok' "$d/clean.tap" && grep -q 'busbw table' "$d/clean.tap" &&
     [ "$(grep -c '^ok .*rank [01]: allgather' "$d/clean.tap")" = 14 ]; then
    ok "selftest: a clean mock run passes every check ($(grep -c '^ok' "$d/clean.tap") cases)"
  else
    notok "selftest: a clean mock run passes every check (status $rc)"
    grep -E '^not ok|^Bail' "$d/clean.tap" | head -n 10 | diag
  fi
}

# 8 failures: the 4 reduce_scatter sizes that leave each rank at least one
# float, on both ranks; everything else must still pass.
selftest_mock_corrupt() {
  local d=$1 rc bad other
  shift
  NCCL_E2E_MOCK_CORRUPT=reducescatter "$0" "$@" --skip-bw --out "$d/corrupt" >"$d/corrupt.tap" 2>&1
  rc=$?
  bad=$(grep -c '^not ok .*reducescatter float sum' "$d/corrupt.tap")
  other=$(grep '^not ok' "$d/corrupt.tap" | grep -vc 'reducescatter')
  if [ $rc != 0 ] && [ "$bad" = 8 ] && [ "$other" = 0 ] &&
     grep -q '^#   .*1 of [0-9]* elements wrong' "$d/corrupt.tap"; then
    ok "selftest: one corrupted byte per reduce_scatter result fails exactly those cases"
  else
    notok "selftest: one corrupted byte per reduce_scatter result fails exactly those cases (status $rc, $bad failed, $other others)"
  fi
}

selftest_mock_abi10() {
  local d=$1 rc
  shift
  NCCL_E2E_MOCK_MAX_ABI=10 "$0" "$@" --skip-bw --out "$d/abi10" >"$d/abi10.tap" 2>&1
  rc=$?
  if [ $rc != 0 ] && [ "$(grep -c '^not ok .*through ABI v11$' "$d/abi10.tap")" = 2 ] &&
     grep -q '^# .*Loaded net plugin diag (v10)$' "$d/abi10.tap"; then
    ok "selftest: NCCL binding v10 where v11 is expected fails the ABI check"
  else
    notok "selftest: NCCL binding v10 where v11 is expected fails the ABI check (status $rc)"
  fi
}

selftest_mock_hang() {
  local d=$1 rc
  shift
  NCCL_E2E_MOCK_HANG=broadcast "$0" "$@" --skip-bw --op-timeout 1 --out "$d/hang" \
    >"$d/hang.tap" 2>&1
  rc=$?
  if [ $rc != 0 ] && [ "$(grep -c '^not ok .*bail out: watchdog: broadcast' "$d/hang.tap")" = 2 ]; then
    ok "selftest: an operation that never returns becomes a failure, not a hang"
  else
    notok "selftest: an operation that never returns becomes a failure, not a hang (status $rc)"
  fi
}

selftest_mock_nogpu() {
  local d=$1 rc
  shift
  NCCL_E2E_MOCK_NO_GPU=1 "$0" "$@" --out "$d/nogpu" >"$d/nogpu.tap" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -qx 'ok 1 - gpu end-to-end # SKIP skipped: no GPU' "$d/nogpu.tap" &&
     grep -q 'cudaErrorInsufficientDriver' "$d/nogpu.tap"; then
    ok "selftest: without a GPU the run skips with \"skipped: no GPU\" and says why"
  else
    notok "selftest: without a GPU the run skips with \"skipped: no GPU\" and says why (status $rc)"
  fi
}

selftest_mock_noplugin() { # scratch-folder mock-binary
  local d=$1 mockbin=$2 rc
  "$0" --mock --bin "$mockbin" --plugin "$d/no-such-plugin.so" --build-dir "$build_dir" \
    --skip-bw --skip-softverbs --out "$d/noplugin" >"$d/noplugin.tap" 2>&1
  rc=$?
  if [ $rc != 0 ] && grep -q '^not ok .*plugin loads on this host' "$d/noplugin.tap"; then
    ok "selftest: a plugin that does not load stops the run"
  else
    notok "selftest: a plugin that does not load stops the run (status $rc)"
  fi
}

# They exercise the rank program's checks and every step of this script
# except the real NCCL.
selftest_mock() { # scratch-folder
  local d=$1 mockbin=$build_dir/tests/gpu/nccl_e2e_mock
  [ -n "$bin" ] && [ "$(basename "$bin")" = nccl_e2e_mock ] && mockbin=$bin
  if [ ! -x "$mockbin" ] || [ ! -e "$plugin" ]; then
    skip "selftest: whole runs against the mock" "no $mockbin or no $plugin"
    return
  fi
  # shellcheck disable=SC2054 # commas belong to the values
  local args=(--mock --bin "$mockbin" --plugin "$plugin" --build-dir "$build_dir"
              --sizes 0,1,4,100,4099,131073,1M --bw 1M:4M --bw-budget 16M --skip-softverbs)
  selftest_mock_clean "$d" "${args[@]}"
  selftest_mock_corrupt "$d" "${args[@]}"
  selftest_mock_abi10 "$d" "${args[@]}"
  selftest_mock_hang "$d" "${args[@]}"
  selftest_mock_nogpu "$d" "${args[@]}"
  selftest_mock_noplugin "$d" "$mockbin"
}

selftest() {
  local d=$out/selftest
  rm -rf "$d" && mkdir -p "$d"
  selftest_abi
  selftest_logs "$here/canned"
  selftest_table "$d"
  selftest_mock "$d"
}
