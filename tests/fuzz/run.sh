#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one fuzz target for a bounded time: new inputs go to a scratch
# corpus, the checked-in seeds are read only. A crash leaves its input in
# the build directory (crash-*) and fails the test.
# usage: run.sh FUZZER SEEDS SECONDS
set -u
fuzzer=$1 seeds=$2 seconds=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$(dirname "$fuzzer")"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$scratch" "$seeds" 2>&1 | grep -E "^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|.*deadly signal)" 
exit "${PIPESTATUS[0]}"
