#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test of the project and ends with one line:
#   N passed, N failed[, N skipped]
# Four builds: the normal one (all suites), ASan+UBSan (the unit, api, explain
# and faults suites), ThreadSanitizer (the api suite on the v11 table, TCP and
# RDMA), and a clang one for the libFuzzer targets (bounded runs). Last, the rxe
# suite of the normal build alone: its QEMU guests use both CPUs (tests/rxe).
# Environment: JOBS (parallel tests), SKIP_ASAN=1, SKIP_TSAN=1, SKIP_FUZZ=1, SKIP_RXE=1,
# NCCL_DIAG_COMPARE_PEERS or NCCL_DIAG_COMPARE_PLUGIN (see bench/README.md).
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
logs=()
broken=()
status=0

step() { printf '\n=== %s\n' "$*"; }

build() { # dir, meson options...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
  fi
  ninja -C "$dir" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; return 1; }
}

run_suites() { # dir, meson test args...
  local dir=$1; shift
  rm -f "$dir/meson-logs/testlog.json"
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "${JOBS:-2}" "$@" \
    | grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):' || true
  # One copy per run: a build folder may run twice (the rxe suite after the rest).
  local copy=$dir/meson-logs/testlog-${#logs[@]}.json
  [ -f "$dir/meson-logs/testlog.json" ] && cp "$dir/meson-logs/testlog.json" "$copy" && logs+=("$copy")
}

# nccl-net-bench --compare in the bench smoke test: NCCL's own transports as
# plugins, from the peers folder beside the checkout where there is one.
if [ -z "${NCCL_DIAG_COMPARE_PEERS:-}${NCCL_DIAG_COMPARE_PLUGIN:-}" ] &&
   [ -f "$top/../shared/peers/nccl-builtin/build.sh" ]; then
  export NCCL_DIAG_COMPARE_PEERS="$top/../shared/peers/nccl-builtin"
fi

step "build (gcc, debugoptimized)"
main_ok=0
if build build; then
  run_suites build --no-suite rxe
  main_ok=1
else
  echo "main build failed"; status=1; broken+=(--broken build)
fi

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  step "build with AddressSanitizer + UndefinedBehaviorSanitizer"
  if build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=disabled; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      run_suites build-asan --suite unit --suite api --suite explain --suite faults
  else
    echo "sanitizer build failed"; status=1; broken+=(--broken build-asan)
  fi
fi

if [ "${SKIP_TSAN:-0}" != 1 ]; then
  step "build with ThreadSanitizer (conformance suite, v11 table)"
  if build build-tsan -Db_sanitize=thread -Db_lundef=false -Dfuzz=disabled; then
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$top/tests/lib/tsan.supp" \
      run_suites build-tsan api-v11 api-v11-netns api-ib-v11
  else
    echo "ThreadSanitizer build failed"; status=1; broken+=(--broken build-tsan)
  fi
fi

if [ "${SKIP_FUZZ:-0}" != 1 ] && command -v clang >/dev/null; then
  step "libFuzzer targets (clang)"
  if CC=clang build build-fuzz -Dfuzz=enabled -Db_lundef=false; then
    run_suites build-fuzz --suite fuzz
  else
    echo "fuzz build failed"; status=1; broken+=(--broken build-fuzz)
  fi
fi

if [ "${SKIP_RXE:-0}" != 1 ] && [ $main_ok = 1 ]; then
  step "the real RDMA stack: soft-RoCE in QEMU (rxe suite, alone)"
  run_suites build --suite rxe --num-processes 1
fi

step "summary"
python3 "$top/tests/lib/count.py" "${broken[@]}" "${logs[@]}" || status=1
exit $status
