# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# TAP for run.sh: numbered cases, "# " detail lines and the closing plan.
# Sourced by run.sh; uses its $tarball and $out.

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
diag() { sed 's/^/# /'; }
# A case from the status of the command just run: `cmd; is "name"`.
is() { if [ $? = 0 ]; then ok "$1"; else notok "$1"; fi; }
# The plan, the log archive, and the exit status: every way out goes here.
finish() {
  echo "1..$n"
  [ -n "$tarball" ] && [ -d "$out" ] && tar czf "$tarball" -C "$out" . 2>/dev/null
  [ $failed -eq 0 ] && exit 0
  exit 1
}
