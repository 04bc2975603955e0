#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NCCL's own adapters (the getNcclNet_vN functions of a real libnccl.so.2,
# 2.28 or later) load each of our tables that NCCL knows and drive it through
# init, properties, a loopback connection and a verified message; NCCL logs
# "NET/Plugin: Loaded net plugin diag (vN)" and the plugin says which table
# was bound. No GPU is needed. Skips where no such NCCL is installed, or its
# library has no symbol table to find those functions in.
# usage: nccl_adapters.sh DRIVER PLUGIN_SO [LIBNCCL]
set -u
driver=$1 plugin=$2 lib=${3:-${NCCL_LIB:-}}
if [ -z "$lib" ]; then
  for c in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2 \
    /usr/lib/x86_64-linux-gnu/libnccl.so.2; do
    [ -r "$c" ] && lib=$c && break
  done
fi
skip() { echo "ok 1 - NCCL's adapters drive our tables # SKIP $1"; echo "1..1"; exit 0; }
[ -n "$lib" ] || skip "no libnccl.so.2 installed (set NCCL_LIB)"
syms=$(nm -C "$lib" 2>/dev/null | grep -E ' getNcclNet_v[0-9]+\(void\*\)$|ncclDebugLog\(' | grep -v cold)
logger=$(awk '/ t ncclDebugLog\(/ { print $1; exit }' <<<"$syms")
versions=$(sed -n -E 's/.* getNcclNet_v([0-9]+)\(void\*\)$/\1/p' <<<"$syms" | sort -n)
[ -n "$logger" ] && [ -n "$versions" ] || skip "$lib has no symbol table with NCCL's loader functions"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
n=0
for v in $versions; do
  n=$((n + 1))
  off=$(awk -v v="$v" '$3 == "getNcclNet_v" v "(void*)" { print $1 }' <<<"$syms")
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET "$driver" "$lib" "$plugin" "$off" "$logger" >"$out" 2>&1
  rc=$?
  name="NCCL's getNcclNet_v$v ($(basename "$lib")) binds ncclNetPlugin_v$v and moves verified data"
  if [ $rc = 77 ]; then
    echo "ok $n - $name # SKIP $(head -n1 "$out")"
  elif [ $rc = 0 ] && grep -q "NCCL INFO NET/Plugin: Loaded net plugin diag (v$v)\$" "$out" &&
    grep -q "bound through ncclNetPlugin_v$v)" "$out" && grep -q '^PASSED$' "$out"; then
    echo "ok $n - $name"
    grep -E '^(device|message|isend)' "$out" | sed 's/^/# /'
  else
    echo "not ok $n - $name (status $rc)"
    sed 's/^/# /' "$out" | tail -40
  fi
done
echo "1..$n"
