#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One connection over a fused NIC of two rxe devices against one rxe device,
# on the real kernel RDMA stack (g-stripe.sh in one QEMU guest). Not a test:
# a measurement; prints both tables.
# usage: tests/rxe/stripe.sh BUILD     (as root; about 3 to 5 minutes)
# Environment: BENCH_SIZES, BENCH_REPS, BENCH_TARGET, BENCH_MAX_MSGS.
set -u
build=$(cd "${1:?usage: stripe.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=$build/tests/rxe/cache
out=$build/tests/rxe/stripe
[ "$(id -u)" = 0 ] || { echo "stripe.sh: needs root (QEMU exports / to the guest)"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "stripe.sh: no qemu-system-x86_64 (.ci/deps)"; exit 77; }
"$here/prepare.sh" "$cache" "$here/init" || exit 1
rm -rf "$out"
mkdir -p "$out"
{
  printf 'BUILD=%s\nSRC=%s\nPLUGIN=%s\n' "$build" "$src" "$build/plugin/libnccl-net-diag.so"
  for v in BENCH_SIZES BENCH_REPS BENCH_TARGET BENCH_MAX_MSGS; do
    [ -n "${!v:-}" ] && printf '%s="%s"\n' "$v" "${!v}"
  done
} >"$out/env"
GUEST_APPEND="clocksource=tsc tsc=reliable" "$here/guest.sh" "$cache" "$out" "$here/g-stripe.sh" 600 ||
  echo "stripe.sh: the guest failed (see $out/console.log)"
cat "$out"/00-setup.tap 2>/dev/null
for f in "$out"/bench*.txt; do
  echo "== $(basename "$f" .txt)"
  grep -vE '^$' "$f"
done
