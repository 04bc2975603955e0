#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the api suite between two network-namespace hosts joined by a veth
# pair (10.x addresses). Needs root; otherwise reports a skip.
# usage: netns.sh API_SUITE [api_suite args...]
set -u
suite=$1; shift
if [ "$(id -u)" != 0 ]; then
  echo "ok 1 - api suite between two namespace hosts # SKIP needs root"
  echo "1..1"
  exit 0
fi
a=diagapiA$$ b=diagapiB$$
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; }
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" || { echo "not ok 1 - cannot create namespaces"; echo "1..1"; exit 1; }
ip link add eth0 netns "$a" type veth peer name eth0 netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev eth0
ip -n "$b" addr add 10.77.0.2/24 dev eth0
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; ip -n "$ns" link set eth0 up; done
# A veth runs (has carrier) a moment after both ends are up: until then the
# plugin would see eth0 without carrier and choose lo.
for ns in "$a" "$b"; do
  for i in $(seq 100); do ip -n "$ns" link show eth0 | grep -q 'state UP' && break; sleep 0.05; done
done
"$suite" "$@" --netns "$a,$b"
