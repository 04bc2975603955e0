#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin's dynamic symbol table holds exactly the ABI tables every NCCL
# from 2.12 to 2.30 looks for (ncclNetPlugin_v5 for 2.12, v6 for 2.13-2.18,
# v7 for 2.19, v8 for 2.20-2.23, v9, v10, v11, v12 for 2.30), each a data
# object, and nothing else: no helper leaks into NCCL's process.
# usage: exports.sh PLUGIN_SO
set -u
so=$1
want=$(printf 'ncclNetPlugin_v%s\n' 5 6 7 8 9 10 11 12 | sort)
if ! out=$(nm -D --defined-only "$so" 2>&1); then
  echo "not ok 1 - nm -D --defined-only $so: $out"; echo "1..1"; exit 1
fi
got=$(awk 'NF == 3 { print $3 }' <<<"$out" | sort)
if [ "$got" = "$want" ]; then
  echo "ok 1 - the plugin exports exactly ncclNetPlugin_v5 .. v12"
else
  echo "not ok 1 - the plugin exports exactly ncclNetPlugin_v5 .. v12"
  diff <(echo "$want") <(echo "$got") | sed 's/^/# /'
fi
bad=$(awk 'NF == 3 && $2 != "D" && $2 != "R" { print $3 " (" $2 ")" }' <<<"$out")
if [ -z "$bad" ]; then
  echo "ok 2 - every exported table is a data object"
else
  echo "not ok 2 - every exported table is a data object"
  echo "# not data: $bad"
fi
echo "1..2"
