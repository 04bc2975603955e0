#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds two network-namespace hosts from two fixture hosts, for softverbs.
#
#   sv-netns.sh up NAME FIXTURE_A FIXTURE_B   namespaces NAMEa and NAMEb
#   sv-netns.sh down NAME                     removes them (never fails)
#   sv-netns.sh check                         exit 0 if namespaces can be made here
#
# NAME is "sv", a letter and the pid of the test that owns it (e.g. svr1234):
# "up" first removes namespaces left by tests that are gone (killed ones).
#
# Every interface that both fixtures' ifaddrs list (lo aside) becomes one
# veth pair, one end in each namespace under that name, with the fixture's
# addresses, MTU, MAC (when Ethernet) and state (up, else down): a back-to-back cable
# per interface, so interfaces with the same name form one plane. As on
# multi-NIC RoCE hosts, arp_ignore=1 and arp_announce=2, so a host answers
# ARP only on the interface that owns the address (a GID's plane is then
# really its interface's). Needs root.
set -u

die() { echo "sv-netns: $*" >&2; exit 1; }

ifaddrs_line() { # fixture, interface -> its ifaddrs line
  awk -v n="$2" '$1 == n { print; exit }' "$1/ifaddrs"
}

sysfs_value() { # fixture, interface, file
  local f="$1/sysfs/class/net/$2/$3"
  [ -r "$f" ] && cat "$f"
}

configure() { # namespace, fixture, interface
  local ns=$1 fix=$2 ifc=$3 line mtu mac addr
  line=$(ifaddrs_line "$fix" "$ifc")
  mtu=$(sysfs_value "$fix" "$ifc" mtu)
  mac=$(sysfs_value "$fix" "$ifc" address)
  ip -n "$ns" link set dev "$ifc" addrgenmode none || return 1
  [ -n "$mtu" ] && { ip -n "$ns" link set dev "$ifc" mtu "$mtu" || return 1; }
  if [[ "$mac" =~ ^([0-9a-f]{2}:){5}[0-9a-f]{2}$ ]]; then
    ip -n "$ns" link set dev "$ifc" address "$mac" || return 1
  fi
  for addr in $(echo "$line" | awk '{ for (i = 3; i <= NF; i++) print $i }'); do
    case $addr in
      *:*) ip -n "$ns" addr add "$addr" dev "$ifc" nodad || return 1 ;;
      *) ip -n "$ns" addr add "$addr" dev "$ifc" || return 1 ;;
    esac
  done
  # "nocarrier" stays down too: a veth has no way to be up without carrier.
  [ "$(echo "$line" | awk '{print $2}')" != up ] || ip -n "$ns" link set dev "$ifc" up
}

sweep() { # namespaces of tests that no longer run
  local ns pid
  for ns in $(ip netns list | awk '{ print $1 }'); do
    [[ "$ns" =~ ^sv[a-z]([0-9]+)[ab]$ ]] || continue
    pid=${BASH_REMATCH[1]}
    kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
  done
}

up() { # name, fixture a, fixture b
  local name=$1 a=$2 b=$3 n=0 ifc
  [ -r "$a/ifaddrs" ] && [ -r "$b/ifaddrs" ] || die "no ifaddrs in $a or $b"
  sweep
  for ns in "${name}a" "${name}b"; do
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
      net.ipv4.conf.default.arp_ignore=1 net.ipv4.conf.default.arp_announce=2 >/dev/null || return 1
  done
  for ifc in $(awk '$1 != "lo" { print $1 }' "$a/ifaddrs"); do
    [ -n "$(ifaddrs_line "$b" "$ifc")" ] || continue
    ip link add "${name}v${n}a" type veth peer name "${name}v${n}b" || return 1
    ip link set "${name}v${n}a" netns "${name}a" name "$ifc" || return 1
    ip link set "${name}v${n}b" netns "${name}b" name "$ifc" || return 1
    configure "${name}a" "$a" "$ifc" || return 1
    configure "${name}b" "$b" "$ifc" || return 1
    n=$((n + 1))
  done
}

down() {
  ip netns del "${1}a" 2>/dev/null
  ip netns del "${1}b" 2>/dev/null
  return 0
}

check() {
  [ "$(id -u)" = 0 ] || { echo "needs root"; return 1; }
  command -v ip >/dev/null || { echo "needs ip (iproute2)"; return 1; }
  local probe="svchk$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "cannot create network namespaces here"
    return 1
  fi
  ip netns del "$probe"
}

case "${1:-}" in
  up)
    [ $# = 4 ] || die "usage: $0 up NAME FIXTURE_A FIXTURE_B"
    [[ "$2" =~ ^sv[a-z][0-9]+$ ]] && [ ${#2} -le 10 ] || die "name $2: want sv, a letter, a pid (10 characters at most)"
    up "$2" "$3" "$4" || { down "$2"; die "could not build namespaces $2a and $2b"; }
    ;;
  down) [ $# = 2 ] || die "usage: $0 down NAME"; down "$2" ;;
  check) check ;;
  *) die "usage: $0 up NAME FIXTURE_A FIXTURE_B | down NAME | check" ;;
esac
