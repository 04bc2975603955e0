#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run-time stall diagnosis between two namespace hosts (TCP, and RDMA over
softverbs with --transports tcp,ib): a stream
stalls by a fault, and the waiting side's plugin must say, once and within
NCCL_DIAG_STALL_SEC plus a margin, whom it waits on, root first; then
nccl-net-diag explain, given both sides' logs (or only one), must name the
same root. Faults: the sender stopped (SIGSTOP); the sender's caller stops
posting while its process lives; the path blackholed (nft drop both ways);
a rank's link down (its switch port: no carrier).
Clean runs must give no stall line and no wait-for finding.
Prints, per scenario, the seconds from the fault to the WARN (measured)."""
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults as F  # noqa: E402  (namespaces, sides, checks)

STALL = 8  # NCCL_DIAG_STALL_SEC here: above two liveness check intervals (2 s each)
MARGIN = 6  # the test() cadence, the check interval, a loaded host
ENV = {'NCCL_DIAG_STALL_SEC': str(STALL), 'NCCL_DIAG_STALL_WARN_SEC': '0'}
STREAM = F.PACED + ['--max-seconds', '60']


def wait_line(side, needle, since, bound):
    """Seconds from since until a 'stall:' line with needle is in side's log."""
    end = since + bound + 2
    while time.monotonic() < end:
        for line in lines(side):
            if 'stall: ' in line and needle in line:
                return time.monotonic() - since, line
        time.sleep(0.25)
    return None, None


def lines(side):
    try:
        with open(side.log, errors='replace') as f:
            return f.read().splitlines()
    except OSError:
        return []


def as_nccl(log):
    """fault_side prefixes lines '[role pid] LEVEL'; NCCL's logger, which the
    plugin's lines go through in a job, writes 'host:pid:tid [dev] NCCL LEVEL'."""
    out = log + '.nccl'
    with open(log, errors='replace') as f, open(out, 'w') as g:
        for line in f:
            m = re.match(r'\[(\w+) (\d+)\] (\w+) (.*)', line)
            if m:
                g.write(f'{socket.gethostname()}:{m[2]}:{m[2]} [0] NCCL {m[3]} {m[4]}\n')
    return out


def explain(logs):
    out = subprocess.run([ARGS.explain, 'explain'] + [as_nccl(x) for x in logs],
                         capture_output=True, text=True, timeout=60)
    return out.stdout


def expect_warn(c, side, needles, t0, what):
    took, line = wait_line(side, needles[0], t0, STALL + MARGIN)
    if not c.ok(took is not None, f'{side.role}: a stall WARN naming {needles[0]} ({what})'):
        return
    c.ok(took <= STALL + MARGIN, f'{side.role}: within {STALL + MARGIN} s, took {took:.1f} s')
    for n in needles[1:]:
        c.ok(n in line, f'{side.role}: the WARN says "{n}": {line[:400]}')
    c.ok(sum('stall: ' in x for x in lines(side)) == 1, f'{side.role}: one stall WARN')
    c.notes.append(f'{what}: {side.role} WARN after {took:.1f} s')


def expect_explain(c, logs, needles, label):
    out = explain(logs)
    c.ok('wait-for' in out or 'hang\'s root' in out, f'explain ({label}): a wait-for finding')
    for n in needles:
        c.ok(n in out, f'explain ({label}) says "{n}": {out[:600]}')


def sc_stopped(h, tmp, c):
    recv, send = F.stream_pair(h, tmp, STREAM, STREAM, ENV)
    if F.started(c, [recv, send]):
        t0 = time.monotonic()
        send.signal(signal.SIGSTOP)
        expect_warn(c, recv, [f'pid {send.pid} ', 'whose process'], t0, 'stopped')
        expect_explain(c, [recv.log], [f'pid {send.pid}', 'stopped answering'], 'receiver only')
        send.signal(signal.SIGCONT)
    for x in (recv, send):
        x.finish()
    return [recv, send]


def sc_idle(h, tmp, c):
    recv, send = F.stream_pair(h, tmp, STREAM, STREAM + ['--idle-after', '20'], ENV)
    if F.started(c, [recv, send]) and send.wait(30):
        t0 = time.monotonic()  # its caller stopped at its RESULT line
        expect_warn(c, recv, [f'pid {send.pid} ', 'whose caller has posted nothing'], t0,
                    'caller idle')
        took, _ = wait_line(send, 'its peers wait on', t0, STALL + MARGIN)
        c.ok(took is not None, 'send: the idle process names itself as the root')
        for logs, label in (([recv.log, send.log], 'both'), ([recv.log], 'receiver only')):
            expect_explain(c, logs, [f'pid {send.pid}', 'py-spy dump --pid'], label)
    for x in (recv, send):
        x.finish()
    return [recv, send]


def sc_blackhole(h, tmp, c):
    recv, send = F.stream_pair(h, tmp, STREAM, STREAM, ENV)
    if F.started(c, [recv, send]):
        t0 = time.monotonic()
        F.nft_set(h.ns_send, 'drop')
        # each end names the path, both of its ends, and the counters that show it
        for me, other in ((recv, send), (send, recv)):
            ends = [f'({h_ip(h, me)}<', f'({h_ip(h, other)}<'] if h.kind == 'tcp' else []
            expect_warn(c, me, [f'pid {other.pid} ', 'the path between this host and',
                                'drops everything', 'unacknowledged'] + ends, t0, 'blackhole')
        expect_explain(c, [recv.log, send.log], ['network path between'], 'both')
        F.nft_clear(h.ns_send)
    for x in (recv, send):
        x.finish()
    return [recv, send]


def h_ip(h, side):
    """A side's address on the two-host pair (TcpHosts and IbHosts)."""
    ns = h.ns_recv if side.role == 'recv' else h.ns_send
    out = F.sh(['ip', '-n', ns, '-4', '-o', 'addr', 'show', 'dev', 'eth0']).stdout
    return out.split('inet ')[1].split('/')[0] if 'inet ' in out else '?'


def sc_clean(h, tmp, c, send_extra):
    args = ['--size', '65536', '--window', '2', '--count', '500', '--pace-us', '40000',
            '--max-seconds', '60']
    recv, send = F.stream_pair(h, tmp, args, args + send_extra, ENV)
    for x in (recv, send):
        F.expect_verified(c, x, x.wait(60), 500)
        c.ok(not any('stall: ' in ln for ln in lines(x)), f'{x.role}: no stall line')
    out = explain([recv.log, send.log])
    c.ok('wait-for' not in out and "hang's root" not in out, 'explain: no wait-for finding')
    for x in (recv, send):
        x.finish()
    return [recv, send]


# ---- a ring of namespace hosts on one bridge ----

NRANKS = 8


class RingHosts:
    """NRANKS namespace hosts, each eth0 on one bridge (in a hub namespace)."""
    kind = 'tcp'
    nranks = NRANKS

    def __init__(self):
        self.tag = F.next_tag()
        self.hub = f'dsth{os.getpid()}x{self.tag}'
        self.ns = [f'dst{os.getpid()}x{self.tag}r{i}' for i in range(self.nranks)]
        self.octet = 250 - self.tag % 50
        self.ns_recv, self.ns_send = self.ns[0], self.ns[1]

    def ip(self, i):
        return f'10.{self.octet}.1.{i + 1}'

    def up(self):
        F.sh(['ip', 'netns', 'add', self.hub])
        F.sh(['ip', '-n', self.hub, 'link', 'add', 'br0', 'type', 'bridge'])
        F.sh(['ip', '-n', self.hub, 'link', 'set', 'br0', 'up'])
        for i, ns in enumerate(self.ns):
            F.sh(['ip', 'netns', 'add', ns])
            F.sh(['ip', 'link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer', 'name',
                  f'p{i}', 'netns', self.hub])
            F.sh(['ip', '-n', self.hub, 'link', 'set', f'p{i}', 'master', 'br0', 'up'])
            F.sh(['ip', '-n', ns, 'addr', 'add', f'{self.ip(i)}/24', 'dev', 'eth0'])
            F.sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
            F.sh(['ip', '-n', ns, 'link', 'set', 'eth0', 'up'])
        for ns in self.ns:
            for _ in range(100):
                if 'LOWER_UP' in F.sh(['ip', '-n', ns, 'link', 'show', 'eth0']).stdout:
                    break
                time.sleep(0.05)

    def down(self):
        for ns in self.ns + [self.hub]:
            F.sh(['ip', 'netns', 'del', ns], check=False)

    def namespaces(self):
        return self.ns + [self.hub]

    def env(self, role):
        return {'NCCL_SOCKET_IFNAME': 'eth0'}


class Ring16Hosts(RingHosts):
    """A job's worth of hosts: 16 on one bridge."""
    nranks = 16


class Ring6Hosts(RingHosts):
    """The same ring with IPv6 addresses only (fd00::/64 on the bridge)."""

    def ip(self, i):
        return f'fd00:{self.octet}::{i + 1}'

    def up(self):
        F.sh(['ip', 'netns', 'add', self.hub])
        F.sh(['ip', '-n', self.hub, 'link', 'add', 'br0', 'type', 'bridge'])
        F.sh(['ip', '-n', self.hub, 'link', 'set', 'br0', 'up'])
        for i, ns in enumerate(self.ns):
            F.sh(['ip', 'netns', 'add', ns])
            F.sh(['ip', 'link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer', 'name',
                  f'p{i}', 'netns', self.hub])
            F.sh(['ip', '-n', self.hub, 'link', 'set', f'p{i}', 'master', 'br0', 'up'])
            F.sh(['ip', '-n', ns, '-6', 'addr', 'add', f'{self.ip(i)}/64', 'dev', 'eth0', 'nodad'])
            F.sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
            F.sh(['ip', '-n', ns, 'link', 'set', 'eth0', 'up'])
        for ns in self.ns:
            for _ in range(100):
                if 'LOWER_UP' in F.sh(['ip', '-n', ns, 'link', 'show', 'eth0']).stdout:
                    break
                time.sleep(0.05)

    def env(self, role):
        return {'NCCL_SOCKET_IFNAME': 'eth0', 'NCCL_SOCKET_FAMILY': 'AF_INET6'}


def ring(h, tmp, extra=None):
    extra = extra or {}
    n = len(h.ns)
    args = ['--size', '65536', '--nranks', str(n), '--pace-us', '2000', '--max-seconds', '60']
    env = {**h.env('r'), **ENV}
    return [F.Side(f'r{i}', h.ns[i], env,
                   args + ['--rank', str(i)] + extra.get(i, []), tmp, mode='ring')
            for i in range(n)]


def expect_ring(c, sides, t0, root, what, needles, subsets, path=None):
    """Every rank but the root: one stall WARN within the bound; explain on
    every log, and on each subset, names the root and only it."""
    worst, n = 0, 0
    for s in sides:
        if s is root:
            continue
        # a rank whose peer waits itself takes the root its peer tells (a
        # check interval per hop), up to half the stall time more
        bound = STALL + STALL // 2 + MARGIN
        took, line = wait_line(s, 'pid ', t0, bound)
        if c.ok(took is not None, f'{s.role}: a stall WARN ({what})'):
            worst, n = max(worst, took), n + 1
            c.ok(took <= bound, f'{s.role}: within {bound} s, took {took:.1f} s')
            if root:
                head = line.split('(')[0]
                c.ok(f'pid {root.pid} ' in head or f'pid {root.pid}:' in head,
                     f'{s.role}: the WARN names the root, pid {root.pid}, first: {line[:300]}')
            if path:  # its first WARN names the path: both of its ends
                head = line.split('; here ')[0]
                c.ok(all(f'{ip}<' in head or f'at {ip} ' in head for ip in path),
                     f'{s.role}: the WARN names the path {path[0]} - {path[1]}: {line[:400]}')
    c.notes.append(f'{what}: the last of {n} ranks warned {worst:.1f} s after the fault')
    for sub in subsets:
        logs = [sides[i].log for i in sub]
        out = explain(logs)
        label = 'ranks ' + ','.join(str(i) for i in sub)
        c.ok(out.count("hang's root") == 1, f'explain ({label}): one root: {out[:800]}')
        for n in needles:
            c.ok(n in out, f'explain ({label}) says "{n}": {out[:800]}')


def sc_ring_stopped(h, tmp, c):
    sides = ring(h, tmp)
    if F.started(c, sides):
        t0 = time.monotonic()
        sides[2].signal(signal.SIGSTOP)
        expect_ring(c, sides, t0, sides[2], 'ring, rank 2 stopped',
                    [f'pid {sides[2].pid}', 'stopped'], [[0, 1, 3], [0, 3]])
        sides[2].signal(signal.SIGCONT)
        time.sleep(3)  # its liveness thread reads the checks queued while it was stopped
        c.ok(not any('its peers wait on' in x for x in lines(sides[2])),
             'rank 2, continued: does not call its stop an idle caller')
    for x in sides:
        x.finish()
    return sides


def sc_ring16_stopped(h, tmp, c):
    """16 hosts: the ranks furthest along the chain name the same root, in
    the same bound, and explain on any handful of the logs agrees."""
    sides = ring(h, tmp)
    if F.started(c, sides):
        t0 = time.monotonic()
        sides[9].signal(signal.SIGSTOP)
        expect_ring(c, sides, t0, sides[9], 'ring of 16, rank 9 stopped',
                    [f'pid {sides[9].pid}', 'stopped'], [list(range(16)), [0, 4, 15], [10]])
        sides[9].signal(signal.SIGCONT)
    for x in sides:
        x.finish()
    return sides


def sc_ring6_stopped(h, tmp, c):
    """The root told along the ring carries its IPv6 address."""
    sides = ring(h, tmp)
    if F.started(c, sides):
        t0 = time.monotonic()
        sides[2].signal(signal.SIGSTOP)
        expect_ring(c, sides, t0, sides[2], 'ring over IPv6, rank 2 stopped',
                    [f'pid {sides[2].pid}', h.ip(2)], [[0, 1, 3]])
        for s in sides[3:] + sides[:2]:
            first = next((x for x in lines(s) if 'stall: ' in x), '')
            c.ok(f'{h.ip(2)}' in first.split('; here ')[0],
                 f'{s.role}: names the root by its IPv6 address {h.ip(2)}: {first[:300]}')
        sides[2].signal(signal.SIGCONT)
    for x in sides:
        x.finish()
    return sides


def sc_ring_idle(h, tmp, c):
    sides = ring(h, tmp, {2: ['--idle-after', '30']})
    if F.started(c, sides) and sides[2].wait(30):
        t0 = time.monotonic()
        expect_ring(c, sides, t0, sides[2], "ring, rank 2's caller idle",
                    [f'pid {sides[2].pid}', 'py-spy dump'], [[0, 1, 2, 3], [0, 1, 3]])
    for x in sides:
        x.finish()
    return sides


def sc_ring_link(h, tmp, c):
    sides = ring(h, tmp)
    if F.started(c, sides):
        t0 = time.monotonic()
        pair = f'{{ {h.ip(1)}, {h.ip(2)} }}'
        F.nft_set(h.ns[1], f'ip saddr {pair} ip daddr {pair} drop')
        expect_ring(c, sides, t0, None, 'ring, path rank 1 - rank 2 blackholed',
                    ['network path between'], [[0, 1, 2, 3]], path=(h.ip(1), h.ip(2)))
        F.nft_clear(h.ns[1])
    for x in sides:
        x.finish()
    return sides


def sc_ring_cable(h, tmp, c):
    """Rank 2's switch port goes down (its eth0 loses carrier, as when its
    cable is pulled): rank 2 names its own interface, once; the others name
    rank 2 (their checks to it go unanswered); explain, with rank 2's log,
    names its interface as the root."""
    sides = ring(h, tmp)
    if F.started(c, sides):
        t0 = time.monotonic()
        F.sh(['ip', '-n', h.hub, 'link', 'set', 'p2', 'down'])
        took, line = wait_line(sides[2], 'this host\'s interface eth0 has no carrier', t0,
                               STALL + MARGIN)
        if c.ok(took is not None, 'r2: a stall WARN naming its own interface, no carrier'):
            c.notes.append(f'cable: r2 named its interface {took:.1f} s after')
        c.ok(sum('stall: ' in x for x in lines(sides[2])) == 1,
             f'r2: said once, not per connection: {[x[:120] for x in lines(sides[2]) if "stall: " in x]}')
        expect_ring(c, sides, t0, sides[2], "ring, rank 2's link down",
                    [f'pid {sides[2].pid}', 'interface eth0 of'], [[0, 1, 2, 3]])
        F.sh(['ip', '-n', h.hub, 'link', 'set', 'p2', 'up'])
    for x in sides:
        x.finish()
    return sides


def sc_ring_clean(h, tmp, c):
    sides = ring(h, tmp, {i: ['--count', '3000'] for i in range(NRANKS)})
    for s in sides:
        r = s.wait(60)
        c.ok(r and r['status'] == 'ok', f'{s.role}: ring completed: {F.short(r)}')
        c.ok(not any('stall: ' in ln for ln in lines(s)), f'{s.role}: no stall line')
    out = explain([s.log for s in sides])
    c.ok("hang's root" not in out, 'explain: no wait-for finding')
    for x in sides:
        x.finish()
    return sides


SCENARIOS = [
    ('a sender stopped (SIGSTOP)', sc_stopped, None),
    ("a sender's caller stops posting, its process alive", sc_idle, None),
    ('the path blackholed (nft drop)', sc_blackhole, None),
    ('clean run: a paced stream longer than the stall time', lambda h, t, c: sc_clean(h, t, c, []),
     None),
    ('clean run: a sender busy elsewhere for 5 s first (under the stall time)',
     lambda h, t, c: sc_clean(h, t, c, ['--late-ms', '5000']), None),
    (f'ring of {NRANKS}: rank 2 stopped (SIGSTOP)', sc_ring_stopped, RingHosts),
    (f"ring of {NRANKS}: rank 2's caller stops posting", sc_ring_idle, RingHosts),
    (f'ring of {NRANKS} over IPv6: rank 2 stopped (SIGSTOP)', sc_ring6_stopped, Ring6Hosts),
    (f'ring of {NRANKS}: the path between ranks 1 and 2 blackholed', sc_ring_link, RingHosts),
    (f"ring of {NRANKS}: rank 2's link down (its switch port, no carrier)", sc_ring_cable,
     RingHosts),
    (f'ring of {NRANKS}: clean run', sc_ring_clean, RingHosts),
    ('ring of 16: rank 9 stopped (SIGSTOP)', sc_ring16_stopped, Ring16Hosts),
]

def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ('--driver', '--plugin', '--explain'):
        ap.add_argument(a, required=True)
    for a in ('--softverbs', '--sv-netns', '--fixture-a', '--fixture-b'):
        ap.add_argument(a, default='')
    ap.add_argument('--transports', default='tcp')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--only', default='')
    ap.add_argument('--keep-logs', action='store_true')
    ARGS = ap.parse_args()
    F.ARGS = ARGS
    todo = [(f'{k}: {t}', fn, k, pl) for k in ARGS.transports.split(',') for t, fn, pl in SCENARIOS
            if not pl or pl.kind == k]
    todo = [x for x in todo if not ARGS.only or ARGS.only in x[0]]
    n = 0
    if os.geteuid() != 0 or not shutil.which('nft'):
        for title, *_ in todo:
            n += 1
            print(f'ok {n} - {title} # SKIP needs root (namespaces) and nft', flush=True)
        todo = []
    # Two at a time: the wall time stays modest, the bounds keep their margin.
    with concurrent.futures.ThreadPoolExecutor(max_workers=ARGS.jobs) as pool:
        futures = {pool.submit(F.run_one, t, fn, k, pl): t for t, fn, k, pl in todo}
        for f in concurrent.futures.as_completed(futures):
            title = futures[f]
            n += 1
            F.tap_result(n, title, *f.result())
    print(f'1..{n}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
