#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# nccl-net-diag selftest through every table NCCL 2.12-2.30 binds: each run
# loads that ncclNetPlugin_vN, the plugin says it was bound through it, and a
# loopback transfer is verified. A table outside 5..12 is refused.
# usage: selftest_abi.sh NCCL_NET_DIAG
set -u
tool=$1 n=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for v in 5 6 7 8 9 10 11 12; do
  n=$((n + 1))
  "$tool" selftest --abi "$v" --size 256K --iters 4 >"$out" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -q "ABI v$v, network name \"diag\"" "$out" &&
    grep -q "bound through ncclNetPlugin_v$v)" "$out" && grep -q "sent and verified" "$out" &&
    grep -q "^result: PASS" "$out"; then
    echo "ok $n - selftest --abi $v: bound through ncclNetPlugin_v$v, data verified"
  else
    echo "not ok $n - selftest --abi $v: bound through ncclNetPlugin_v$v, data verified (status $rc)"
    sed 's/^/# /' "$out"
  fi
done
n=$((n + 1))
"$tool" selftest --abi 4 >"$out" 2>&1
rc=$?
if [ $rc != 0 ] && grep -q "ABI v4 is not one this loader drives (v5 to v12)" "$out"; then
  echo "ok $n - selftest --abi 4 is refused, naming the tables it drives"
else
  echo "not ok $n - selftest --abi 4 is refused, naming the tables it drives (status $rc)"
  sed 's/^/# /' "$out"
fi
echo "1..$n"
