#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The attack suite, as TAP: a healthy connection between two namespace
hosts (fault_side, the plugin driven through its v11 table as NCCL's proxy
does) while a third host on the same bridge, which knows only addresses
and ports (attacker.py), attacks the plugin's ports. Each scenario asserts:
the healthy connection keeps moving verified data and fails nowhere; the
stranger gets no byte back; the attacked process's descriptors and CPU stay
bounded; nothing is left behind.

Placements: three namespace hosts on a bridge (tcp), and RDMA over
softverbs between the fixture hosts with the attacker on a link of its own
to the receiver (ib).

usage: attack.py --driver PATH --plugin PATH --softverbs LIB --sv-netns SH
                 --fixture-a DIR --fixture-b DIR [--only TEXT] [--keep-logs]
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults as F  # noqa: E402  (namespaces, sides, checks)

HERE = os.path.dirname(os.path.abspath(__file__))
PEER_TIMEOUT = 6   # NCCL_DIAG_PEER_TIMEOUT_SEC here: a check every second
ATTACK_S = 10      # longer than the timeout: a healthy peer starved of answers would fail
CONNS = 5000


class ThreeHosts(F.TcpHosts):
    """recv (.1), send (.2) and an attacker (.3) on one bridge."""

    def __init__(self):
        super().__init__()
        pid = os.getpid()
        self.ns_atk, self.ns_br = f'dflt{pid}x{self.tag}', f'dflt{pid}b{self.tag}'

    def up(self):
        sh = F.sh
        sh(['ip', 'netns', 'add', self.ns_br])
        sh(['ip', '-n', self.ns_br, 'link', 'add', 'br0', 'type', 'bridge'])
        sh(['ip', '-n', self.ns_br, 'link', 'set', 'br0', 'up'])
        self.octet = self.tag % 250 + 1
        for ns, host in ((self.ns_recv, 1), (self.ns_send, 2), (self.ns_atk, 3)):
            sh(['ip', 'netns', 'add', ns])
            sh(['ip', 'link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer', 'name',
                f'v{host}', 'netns', self.ns_br])
            sh(['ip', '-n', self.ns_br, 'link', 'set', f'v{host}', 'master', 'br0'])
            sh(['ip', '-n', self.ns_br, 'link', 'set', f'v{host}', 'up'])
            sh(['ip', '-n', ns, 'addr', 'add', f'10.{self.octet}.0.{host}/24', 'dev', 'eth0'])
            sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
            sh(['ip', '-n', ns, 'link', 'set', 'eth0', 'up'])
        for ns in (self.ns_recv, self.ns_send, self.ns_atk):
            for _ in range(100):
                if 'LOWER_UP' in sh(['ip', '-n', ns, 'link', 'show', 'eth0']).stdout:
                    break
                time.sleep(0.05)

    def down(self):
        for ns in (self.ns_recv, self.ns_send, self.ns_atk, self.ns_br):
            F.sh(['ip', 'netns', 'del', ns], check=False)

    def namespaces(self):
        return [self.ns_recv, self.ns_send, self.ns_atk, self.ns_br]

    def addr(self, host):
        return f'10.{self.octet}.0.{host}'


class IbThreeHosts(F.IbHosts):
    """RDMA over softverbs between the fixture hosts (F.IbHosts), and an
    attacker joined to the receiver by a link of its own (atk0 there, an
    interface the plugin does not choose: NCCL_SOCKET_IFNAME=bond0)."""

    def __init__(self):
        super().__init__()
        self.ns_atk = self.name + 'x'
        self.octet = self.tag % 250 + 1

    def up(self):
        super().up()
        sh = F.sh
        sh(['ip', 'netns', 'add', self.ns_atk])
        sh(['ip', 'link', 'add', 'atk0', 'netns', self.ns_recv, 'type', 'veth', 'peer', 'name',
            'eth0', 'netns', self.ns_atk])
        for ns, dev, host in ((self.ns_recv, 'atk0', 1), (self.ns_atk, 'eth0', 3)):
            sh(['ip', '-n', ns, 'addr', 'add', f'10.250.{self.octet}.{host}/24', 'dev', dev])
            sh(['ip', '-n', ns, 'link', 'set', dev, 'up'])
        sh(['ip', '-n', self.ns_atk, 'link', 'set', 'lo', 'up'])
        for _ in range(100):
            if 'LOWER_UP' in sh(['ip', '-n', self.ns_atk, 'link', 'show', 'eth0']).stdout:
                break
            time.sleep(0.05)

    def down(self):
        F.sh(['ip', 'netns', 'del', self.ns_atk], check=False)
        super().down()

    def namespaces(self):
        return super().namespaces() + [self.ns_atk]

    def addr(self, host):
        return f'10.250.{self.octet}.{host}'


def proc_fds(pid):
    try:
        return len(os.listdir(f'/proc/{pid}/fd'))
    except OSError:
        return -1


def proc_cpu_s(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return 0.0


class Sampler:
    """The most descriptors pid held, and its CPU, while the attack runs."""

    def __init__(self, pid):
        self.pid, self.max_fds, self.stop = pid, 0, threading.Event()
        self.cpu0, self.t0 = proc_cpu_s(pid), time.monotonic()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.wait(0.1):
            self.max_fds = max(self.max_fds, proc_fds(self.pid))

    def end(self):
        self.stop.set()
        self.t.join()
        return self.max_fds, (proc_cpu_s(self.pid) - self.cpu0) / (time.monotonic() - self.t0)


def log_value(side, pattern, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with open(side.log, errors='replace') as f:
                m = re.search(pattern, f.read())
            if m:
                return m.group(1)
        except OSError:
            pass
        time.sleep(0.1)
    return None


def attack(h, port, talk, seconds=ATTACK_S, conns=CONNS, during=None, forbid=()):
    """Runs the attacker; during(), when given, runs 2 s into the attack."""
    cmd = ['ip', 'netns', 'exec', h.ns_atk, sys.executable, os.path.join(HERE, 'attacker.py'),
           '--host', h.addr(1), '--port', str(port), '--conns', str(conns), '--seconds',
           str(seconds), '--talk', talk]
    for f in forbid:
        cmd += ['--forbid', f]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if during:
        time.sleep(2)
        during()
    out, err = p.communicate(timeout=seconds + 60)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {'error': err[-500:]}


def cut_checks(h, port, c):
    """The sender's checking connection to the receiver's liveness port,
    ended in the kernel (ss -K): it must reconnect, and be admitted, in the
    middle of the flood."""
    def run():
        r = F.sh(['ip', 'netns', 'exec', h.ns_send, 'ss', '-K', 'dst', h.addr(1), 'dport', '=',
                  f':{port}'], check=False)
        c.ok(f':{port}' in r.stdout, f'send: its checking connection was cut: {r.stdout.strip()}')
    return run


ENV = {'NCCL_DIAG_PEER_TIMEOUT_SEC': str(PEER_TIMEOUT), 'NCCL_DEBUG': 'INFO',
       'NCCL_DEBUG_SUBSYS': 'INIT,NET'}
ARGS = F.PACED + ['--max-seconds', str(ATTACK_S + PEER_TIMEOUT + 14)]


def healthy_pair(h, tmp, late_sender=False):
    recv = F.Side('recv', h.ns_recv, {**h.env('recv'), **ENV}, ARGS + ['--nofile', '1000'], tmp)
    send = None if late_sender else sender(h, tmp)
    return recv, send


def sender(h, tmp):
    return F.Side('send', h.ns_send, {**h.env('send'), **ENV}, ARGS, tmp)


def expect_healthy(c, sides):
    """Ran to --max-seconds ('hang' is the driver's word for time up with
    the stream still going) with every message verified, and no WARN."""
    for x in sides:
        r = x.wait(ATTACK_S + PEER_TIMEOUT + 40)
        c.ok(r and r['status'] == 'hang' and r['msgs'] > 100 and r['code'] == 0,
             f'{x.role}: kept moving data through the attack, no error: {F.short(r)}')
        if x.role == 'recv' and r:
            c.ok(r['verified'], 'recv: every byte verified')
        c.ok(not x.log_has('has not answered') and not x.log_has('host down'),
             f'{x.role}: its peer was not blamed')
        c.ok(not x.log_has('cannot check whether'), f'{x.role}: its checks were answered')


def sc_liveness_flood(h, tmp, c):
    """5,000 strangers on the receiver's liveness port, a quarter sending
    checks with guessed tokens, one at full rate; the receiver at about
    1,024 descriptors; the sender's checks reconnect in the middle of it."""
    recv, send = healthy_pair(h, tmp)
    if not F.started(c, [recv, send]):
        return [recv, send]
    port = log_value(recv, r'peer liveness checks answer on port (\d+)')
    if not c.ok(port, 'recv: its liveness port is in its log'):
        return [recv, send]
    base = Sampler(recv.pid)
    time.sleep(2)
    _, cpu_idle = base.end()
    s = Sampler(recv.pid)
    st = attack(h, int(port), 'live', during=cut_checks(h, port, c))
    max_fds, cpu = s.end()
    c.notes.append(f'attacker {st}; recv: at most {max_fds} descriptors, CPU {cpu:.2f} core '
                   f'under attack, {cpu_idle:.2f} before')
    c.ok(st.get('opened', 0) > 1000, f'the attack opened connections: {st}')
    c.ok(st.get('bytes_back', 1) == 0, f'the stranger got nothing back: {st}')
    c.ok(0 < max_fds <= 200, f'recv: descriptors bounded ({max_fds} at most, at most 200)')
    c.ok(cpu <= cpu_idle + 0.35, f'recv: CPU bounded ({cpu:.2f} core, {cpu_idle:.2f} before)')
    expect_healthy(c, [recv, send])
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_listen_burst(h, tmp, c):
    """5,000 strangers on the receiver's listen port, most silent, a quarter
    presenting guessed nonces; the real peer connects 2 s into it."""
    recv, _ = healthy_pair(h, tmp, late_sender=True)
    port = log_value(recv, r'listening for device \S+ on port (\d+)')
    if not c.ok(port, 'recv: its listen port is in its log'):
        return [recv]
    sides = [recv]
    s = Sampler(recv.pid)
    st = attack(h, int(port), 'nonce', during=lambda: sides.append(sender(h, tmp)),
                forbid=[socket.gethostname(), 'libnccl', '0.2.0'])
    max_fds, cpu = s.end()
    c.notes.append(f'attacker {st}; recv: at most {max_fds} descriptors, CPU {cpu:.2f} core')
    c.ok(st.get('opened', 0) > 1000, f'the attack opened connections: {st}')
    c.ok(st.get('forbidden', 1) == 0, f'no host name or version came back: {st}')
    c.ok(0 < max_fds <= 200, f'recv: descriptors bounded ({max_fds} at most, at most 200)')
    if len(sides) == 2 and F.started(c, sides):
        expect_healthy(c, sides)
    for x in sides:
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return sides


def sc_liveness_unchosen(h, tmp, c):
    """The liveness port is open only on the interfaces the plugin chose:
    from a link it did not choose, nothing connects to it."""
    recv, send = healthy_pair(h, tmp)
    if not F.started(c, [recv, send]):
        return [recv, send]
    port = log_value(recv, r'peer liveness checks answer on port (\d+)')
    if c.ok(port, 'recv: its liveness port is in its log'):
        st = attack(h, int(port), 'live', seconds=2, conns=50)
        c.notes.append(f'attacker {st}')
        c.ok(st.get('opened', 1) == 0 and st.get('bytes_back', 1) == 0,
             f'no connection to the liveness port from an interface not chosen: {st}')
    for x in (recv, send):
        r = x.wait(ATTACK_S + PEER_TIMEOUT + 40)
        c.ok(r and r['status'] == 'hang' and r['code'] == 0, f'{x.role}: no error: {F.short(r)}')
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


SCENARIOS = [
    ('liveness port: 5,000 strangers, guessed checks, one at full rate', sc_liveness_flood,
     ThreeHosts),
    ('listen port: 5,000 strangers, silent or guessing nonces, during a real connect',
     sc_listen_burst, ThreeHosts),
    ('listen port: 5,000 strangers, silent or guessing nonces, during a real connect',
     sc_listen_burst, IbThreeHosts),
    ('liveness port: not open on an interface the plugin did not choose', sc_liveness_unchosen,
     IbThreeHosts),
]


def main():
    ap = argparse.ArgumentParser()
    for a in ('--driver', '--plugin', '--softverbs', '--sv-netns', '--fixture-a', '--fixture-b'):
        ap.add_argument(a, required=True)
    ap.add_argument('--only', default='')
    ap.add_argument('--keep-logs', action='store_true')
    args = ap.parse_args()
    F.ARGS = args
    n = 0
    for title, fn, placement in SCENARIOS:
        title = f'{placement.kind}: {title}'
        if args.only and args.only not in title:
            continue
        n += 1
        if os.geteuid() != 0 or not shutil.which('ip'):
            print(f'ok {n} - {title} # SKIP needs root (namespaces)', flush=True)
            continue
        F.tap_result(n, title, *F.run_one(title, fn, placement.kind, placement))
    print(f'1..{n}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
