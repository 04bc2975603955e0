# SPDX-License-Identifier: Apache-2.0
# The failure scenarios that one kernel shows (sourced by g-one.sh after
# its setup): each breaks one thing under rxe0 (the listener) or rxe1 (the
# connector) and checks the diagnosis on both sides, that neither hangs, and
# how the connection ends (TCP with the data verified under
# NCCL_DIAG_FALLBACK=auto, a clean failure under off).
tap=$RXE_OUT/30-scenarios.tap
ctl="NCCL_SOCKET_IFNAME==ctl0"
A="$ctl NCCL_IB_HCA==rxe0"
B="$ctl NCCL_IB_HCA==rxe1"
zero=0000:0000:0000:0000:0000:0000:0000:0000

# Puts rxe0/rxe1's addresses and routes back as two_rxe made them (removing
# an address also removes the routes that use it as their source).
restore() {
  ip link set veth0 up
  ip link set veth1 up
  ip addr replace 10.0.0.1/24 dev veth0
  ip addr replace 10.0.0.2/24 dev veth1
  ip route replace 10.0.0.2 dev veth0 src 10.0.0.1 table 100
  ip route replace 10.0.0.1 dev veth1 src 10.0.0.2 table 101
  sysctl -qw net.ipv4.conf.veth1.arp_ignore=0
  ip neigh flush dev veth0
  ip neigh flush dev veth1
  local d i
  for d in rxe0 rxe1; do
    for i in $(seq 100); do
      [ "$(sysread /sys/class/infiniband/$d/ports/1/state)" = "4: ACTIVE" ] && break
      sleep 0.05
    done
  done
  wait_gid rxe0 1 && wait_gid rxe1 1
}

rdma_ok() { # both sides on RDMA with their data verified
  expect both result "path RDMA"
  expect both result "data verified"
}
tcp_ok() {
  expect both result "path TCP"
  expect both result "data verified"
}

# 1. The healthy pair: RDMA between rxe0 and rxe1, the data checked.
pair healthy "$A" "$B"
rdma_ok
expect listen info "rxe0" "RDMA, 1 queue pair"
expect connect info "rxe1" "RDMA, 1 queue pair"
verdict "healthy pair: RDMA between rxe0 and rxe1, data verified"

# 2. Cross-subnet on one L2 segment: rxe1 uses a GID on 10.9.0.0/24, rxe0 is
# on 10.0.0.0/24 and has no route there. The kernel looks the address up on
# veth0's own segment, veth1 answers the ARP, and RTR succeeds.
ip addr add 10.9.0.2/24 dev veth1 && wait_gid rxe1 2
# (NCCL_DIAG_REPAIR=off: the diagnosis alone; 3r and 3x below repair.)
off=NCCL_DIAG_REPAIR=off
pair cross_subnet_l2 "$A $off" "$B NCCL_IB_GID_INDEX=2 $off"
rdma_ok
expect listen warn "::ffff:10.9.0.2" "may fail unless the fabric routes or bridges the subnets"
expect listen info "RTR succeeded"
verdict "cross-subnet pair on one L2 segment: named as a risk, RTR succeeds, RDMA"

# 3. The same with ARP filtered on rxe1's side (arp_ignore=2: answer only a
# sender on the target's subnet): rxe0's RTR times out after about 1 s,
# rxe1's succeeds. Both sides name the cause; TCP carries the data.
sysctl -qw net.ipv4.conf.veth1.arp_ignore=2
ip neigh flush dev veth0
pair cross_subnet_filtered "$A NCCL_DIAG_FALLBACK=auto $off" \
  "$B NCCL_IB_GID_INDEX=2 NCCL_DIAG_FALLBACK=auto $off"
tcp_ok
# rxe0 and rxe1 are NICs of one host: that is said first, with the
# neighbour resolution on this host to check (rp_filter, arp_ignore).
expect both warn "ETIMEDOUT" "same host" "arp_ignore" "rp_filter"
verdict "cross-subnet pair, ARP filtered on one side: RTR ETIMEDOUT named on both sides, TCP"
ip neigh flush dev veth0
pair cross_subnet_filtered_off "$A NCCL_DIAG_FALLBACK=off $off" \
  "$B NCCL_IB_GID_INDEX=2 NCCL_DIAG_FALLBACK=off $off"
expect both result "connect failed"
# A long WARN reaches NCCL's logger in pieces: the cause and the policy
# may sit in two of them.
expect both warn "ETIMEDOUT"
expect both warn "NCCL_DIAG_FALLBACK=off"
verdict "cross-subnet pair, ARP filtered, fallback off: a clean failure on both sides"

# 3r. The same pair with repair on (the default): rxe1's GID 2 (10.9.0.2)
# and rxe0's GID 1 share no subnet, and rxe1's GID 1 does: both sides
# repair onto it before RTR, and the data moves over RDMA.
ip neigh flush dev veth0
pair cross_subnet_repaired "$A" "$B NCCL_IB_GID_INDEX=2"
rdma_ok
expect both warn "Repaired, not moved to TCP" "NCCL_IB_GID_INDEX=2 is forced on"
verdict "cross-subnet GID forced, ARP filtered, repair on: repaired onto GID 1 before RTR, RDMA, data verified"
ip addr del 10.9.0.2/24 dev veth1
restore

# 3x. Three devices on two subnets: rxa0 on veth2 (10.9.1.1/24) sorts first,
# so the connector's device 0 is rxa0, across subnets from rxe0; its rxe1
# shares rxe0's subnet. Both sides move the connector to rxe1 before RTR,
# the queue pairs and registrations on rxe1, and the data moves over RDMA.
ip link add veth2 type veth peer name veth3 && ip addr add 10.9.1.1/24 dev veth2 &&
  ip link set veth2 up && ip link set veth3 up && rdma link add rxa0 type rxe netdev veth2 &&
  wait_gid rxa0 1
pair three_devices_repaired "$A" "$ctl NCCL_IB_HCA==rxa0,rxe1"
rdma_ok
expect both warn "Repaired, not moved to TCP" "rxa0 port 1" "rxe1 port 1 GID 1" "NCCL_CROSS_NIC=0"
expect connect info "rxe1" "RDMA, 1 queue pair"
verdict "three devices on two subnets, NCCL's pair across them: repaired onto rxe1, RDMA, data verified"
rdma link delete rxa0
ip link del veth2
restore

# 4. The local GID's netdev goes down after the plugin read its devices:
# RTR on rxe0 fails at once with ENETUNREACH (rxe1, whose veth lost its
# carrier, times out).
HOOK="ip link set veth0 down" pair netdev_down "$A" "$B"
tcp_ok
expect listen warn "ENETUNREACH" "veth0" "is down"
expect connect warn "rxe0"
verdict "the local GID's netdev down: ENETUNREACH named on both sides, TCP"
restore

# 5. The address behind rxe0's GID 1 removed: the entry is empty, RTR gives
# ENODATA.
HOOK="ip addr del 10.0.0.1/24 dev veth0; wait_gid rxe0 1 $zero" pair gid_removed "$A" "$B"
tcp_ok
expect listen warn "ENODATA" "removed"
expect connect warn "rxe0"
verdict "the GID's address removed: ENODATA named on both sides, TCP"
restore

# 6. The address replaced (10.0.0.1 -> 10.0.0.11): GID 1 of rxe0 holds the
# new address; the plugin must use it, not the value it read at start.
ip route replace 10.0.0.11 dev veth1 src 10.0.0.2 table 101
ip rule add pref 12 iif lo to 10.0.0.11 lookup 101
HOOK="ip addr del 10.0.0.1/24 dev veth0; ip addr add 10.0.0.11/24 dev veth0;
  ip route replace 10.0.0.2 dev veth0 src 10.0.0.11 table 100; wait_gid rxe0 1 0000:0000:0000:0000:0000:ffff:0a00:000b" \
  pair gid_changed "$A" "$B"
rdma_ok
expect listen warn "GID 1" "::ffff:10.0.0.11" "changed"
verdict "the GID's address replaced: the change noticed, the new GID used, RDMA"
ip addr del 10.0.0.11/24 dev veth0
ip rule del pref 12
restore

# 7. NCCL_IB_GID_INDEX forced to the link-local entry on both sides.
pair link_local "$A NCCL_IB_GID_INDEX=0" "$B NCCL_IB_GID_INDEX=0"
expect both warn "link-local"
expect both result "data verified"
verdict "NCCL_IB_GID_INDEX at the link-local entry: named on both sides, data verified"

# 8. rxe1's netdev goes down in the middle of a transfer: the port event is
# logged with device and port, the requests in flight end with a named
# error, neither side hangs. Then the port comes back and a new connection
# is RDMA again.
rm -rf /tmp/scen-port_down_mid
(
  for i in $(seq 400); do [ -f /tmp/scen-port_down_mid/moving ] && break; sleep 0.05; done
  sleep 1
  ip link set veth1 down
) &
pair port_down_mid "$A NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3" "$B NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3" \
  --seconds 8 --size 262144
wait
expect both result "data failed"
expect both warn "port 1" "port error"
# veth1 down takes its pair's carrier too: both ports report the event, and
# whichever side's request fails first names the port (the other side then
# reads that reason from it).
expect connect warn "port 1 went down during the transfer"
verdict "a port down mid-transfer: the event named with device and port, requests end named, no hang"
restore
# 8b. A flap shorter than the queue pairs' deadline: rxe1's netdev down for
# 2 s in the middle of a transfer, then up again (NCCL's default timeout
# and retries: 34.4 s). rxe completes a write it tries to send while its
# netdev is down with IBV_WC_LOC_QP_OP_ERR at once (mlx5 drops the packet
# and resends), so the connection lives only when nothing was sent in those
# 2 s. Either way each side's port return says how long it was down
# against the deadline and counts what failed: it claims the connections
# survived only on a side whose data was verified. Both sides stay until
# the port is back (--linger): a side whose connection failed would
# otherwise exit before its port's return.
rm -rf /tmp/scen-port_flap
(
  for i in $(seq 400); do [ -f /tmp/scen-port_flap/moving ] && break; sleep 0.05; done
  sleep 1
  ip link set veth1 down
  sleep 2
  ip link set veth1 up
  sleep 2
  echo g > /tmp/scen-port_flap/linger-go
) &
pair port_flap "$A" "$B" --msgs 1200 --size 262144 --linger 1
wait
expect both warn "port 1: port active again after" "within its queue pairs' deadline of 34.4 s"
for side in listen connect; do
  if grep -q '^RESULT .*data verified' "$scen.$side"; then
    expect $side warn "port active again" "no connection of this process on it failed"
  else
    expect $side warn "port active again" "1 connection of this process on it failed while it was down"
  fi
done
verdict "a port flap of 2 s: each side says how long it was down against the deadline and what failed"
restore
pair port_up_again "$A" "$B"
rdma_ok
verdict "the port up again: a new connection is RDMA"

# 9. A lossy link: both veths drop 3 % of their packets (netem) for the
# whole transfer. rxe resends (sequence NAKs, out-of-sequence requests,
# timeouts: its own hw_counters); the one connection has no sibling to
# stand against, so each side names its port as lossy, with those counters.
tc qdisc add dev veth0 root netem loss 3%
tc qdisc add dev veth1 root netem loss 3%
pair lossy_link "$A NCCL_IB_TIMEOUT=14" "$B NCCL_IB_TIMEOUT=14" --msgs 500 --size 65536 \
  --timeout-s 120
tc qdisc del dev veth0 root
tc qdisc del dev veth1 root
expect both result "data verified"
expect listen warn "lossy port: rxe0 port 1 on " " counted " "PFC"
expect connect warn "lossy port: rxe1 port 1 on " " counted " "PFC"
verdict "a link that loses 3 %: rxe resends, each side names its port with its counters, data verified"
restore
