#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# softverbs' peer hosts cannot drift from their host.json: each is written
# again by the shared generator and compared with the checked-in tree.
#   check-peers.sh MKHOST_PY PEERS_DIR      (TAP)
set -u
mkhost=$1 peers=$2 n=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for json in "$peers"/*/host.json; do
  host=$(basename "$(dirname "$json")")
  n=$((n + 1))
  if python3 "$mkhost" "$json" "$tmp/$host" &&
     diff -r --no-dereference -x host.json -x README.md "$(dirname "$json")" "$tmp/$host" > "$tmp/$host.diff"; then
    echo "ok $n - $host equals mkhost.py's output for its host.json"
  else
    sed 's/^/# /' "$tmp/$host.diff" | head -20
    echo "not ok $n - $host equals mkhost.py's output for its host.json"
    failed=$((failed + 1))
  fi
done
echo "1..$n"
[ "$failed" = 0 ]
