#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fault suite, as TAP: each scenario runs the two sides of a connection
(fault_side, which drives the plugin through its v11 table) on two
network-namespace hosts, injects one fault mid-stream, and asserts the
outcome on BOTH sides: completed with every byte verified, or a named error
within the scenario's bound. Then it checks that nothing is left behind (no
namespace, no nft table, no process).

Faults: a peer killed (SIGKILL) or stopped (SIGSTOP, then SIGCONT), a
permanent blackhole and one that clears after 5 s, 5 % and 30 % packet loss
(nftables: this kernel has no netem), a listener out of file descriptors
(RLIMIT_NOFILE), a stale handle, and ABI misuse (double, foreign and wild
handles, a stale request).

Placements: 'tcp' (a veth pair, the plugin's TCP devices) and 'ib' (RDMA
over softverbs between the namespace hosts that tests/softverbs/sv-netns.sh
builds from two fixture hosts). 'rxe' is the hook for the real kernel RDMA
stack (tests/rxe): a placement class with up(), down(), the namespaces or
machines each side runs in, and each side's environment; see RxeHosts.

NCCL_DIAG_PEER_TIMEOUT_SEC is 20 for the whole suite, so a stopped peer or a
permanent blackhole must end within 20 s + SLACK. Scenarios run in parallel
(--jobs): most of them wait, and each has its own namespaces.

usage: faults.py --driver PATH --plugin PATH --softverbs LIB --sv-netns SH
                 --fixture-a DIR --fixture-b DIR [--transports tcp,ib]
                 [--only TEXT] [--jobs N] [--keep-logs]
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PEER_TIMEOUT = 20  # NCCL_DIAG_PEER_TIMEOUT_SEC for every scenario
SLACK = 8          # "a few seconds": the check interval (2 s), polling, a busy host
KILLED_BOUND = 10  # a killed peer: its sockets close at once
RESUME_BOUND = 10  # a stopped peer, continued: it reads the survivor's notice
STALE_BOUND = 10   # a stale handle's connector

ARGS = None
TAG_LOCK = threading.Lock()
TAGS = iter(range(1, 10000))


def now_ms():
    return int(time.monotonic() * 1000)  # CLOCK_MONOTONIC, as the driver's t_ms


def sh(cmd, check=True, quiet=True, inp=None):
    r = subprocess.run(cmd, input=inp, text=True, capture_output=quiet)
    if check and r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)}: exit {r.returncode}: {r.stderr.strip()}')
    return r


def next_tag():
    with TAG_LOCK:
        return next(TAGS)


# ---- placements ----

class TcpHosts:
    """Two namespace hosts joined by one veth pair, eth0 on both sides."""
    kind = 'tcp'

    def __init__(self):
        self.tag = next_tag()
        pid = os.getpid()
        self.ns_recv, self.ns_send = f'dflt{pid}r{self.tag}', f'dflt{pid}s{self.tag}'
        self.iface = 'eth0'

    def up(self):
        sh(['ip', 'netns', 'add', self.ns_recv])
        sh(['ip', 'netns', 'add', self.ns_send])
        sh(['ip', 'link', 'add', 'eth0', 'netns', self.ns_recv, 'type', 'veth', 'peer', 'name',
            'eth0', 'netns', self.ns_send])
        octet = self.tag % 250 + 1
        for ns, host in ((self.ns_recv, 1), (self.ns_send, 2)):
            sh(['ip', '-n', ns, 'addr', 'add', f'10.{octet}.0.{host}/24', 'dev', 'eth0'])
            sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
            sh(['ip', '-n', ns, 'link', 'set', 'eth0', 'up'])
        for ns in (self.ns_recv, self.ns_send):  # a veth has carrier a moment after both ends are up
            for _ in range(100):
                if 'LOWER_UP' in sh(['ip', '-n', ns, 'link', 'show', 'eth0']).stdout:
                    break
                time.sleep(0.05)

    def down(self):
        for ns in (self.ns_recv, self.ns_send):
            sh(['ip', 'netns', 'del', ns], check=False)

    def namespaces(self):
        return [self.ns_recv, self.ns_send]

    def env(self, role):
        return {'NCCL_SOCKET_IFNAME': 'eth0'}

    def env_single(self):
        return {}


class MtuHosts(TcpHosts):
    """Two namespace hosts on a bridge in a third, MTU 9000 on every
    interface but the receiver's bridge port (1500): a path-MTU black hole.
    Frames above 1500 to or from the receiver are dropped at that port
    without a word; small ones (handshakes, headers, liveness checks) pass.
    One TCP segment per packet (gso_max_segs 1), as a NIC without
    segmentation offload sends them: a bridge port checks only a packet
    that is not a batch of segments against its MTU."""

    def __init__(self):
        super().__init__()
        self.ns_br = f'dflt{os.getpid()}b{self.tag}'

    def up(self):
        br = self.ns_br
        sh(['ip', 'netns', 'add', br])
        sh(['ip', '-n', br, 'link', 'add', 'br0', 'type', 'bridge'])
        sh(['ip', '-n', br, 'link', 'set', 'br0', 'up'])
        octet = self.tag % 250 + 1
        for ns, host in ((self.ns_recv, 1), (self.ns_send, 2)):
            sh(['ip', 'netns', 'add', ns])
            sh(['ip', 'link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer', 'name',
                f'v{host}', 'netns', br])
            sh(['ip', '-n', br, 'link', 'set', f'v{host}', 'master', 'br0'])
            for dev, where in (('eth0', ns), (f'v{host}', br)):
                sh(['ip', '-n', where, 'link', 'set', 'dev', dev, 'mtu', '9000',
                    'gso_max_segs', '1'])
            sh(['ip', '-n', br, 'link', 'set', f'v{host}', 'up'])
            sh(['ip', '-n', ns, 'addr', 'add', f'10.{octet}.0.{host}/24', 'dev', 'eth0'])
            sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
            sh(['ip', '-n', ns, 'link', 'set', 'eth0', 'up'])
        sh(['ip', '-n', br, 'link', 'set', 'v1', 'mtu', '1500'])  # the receiver's port
        for ns in (self.ns_recv, self.ns_send):
            for _ in range(100):
                if 'LOWER_UP' in sh(['ip', '-n', ns, 'link', 'show', 'eth0']).stdout:
                    break
                time.sleep(0.05)

    def down(self):
        super().down()
        sh(['ip', 'netns', 'del', self.ns_br], check=False)

    def namespaces(self):
        return [self.ns_recv, self.ns_send, self.ns_br]


class IbHosts:
    """RDMA over softverbs: the fixture host pair's interfaces as veth pairs,
    each side reading its own fixture host (as tests/api/netns_ib.sh)."""
    kind = 'ib'

    def __init__(self):
        self.tag = next_tag()
        letter = 'abcdefghijklmnopqrstuvwxyz'[self.tag % 26]
        self.name = f'sv{letter}{os.getpid()}'
        assert len(self.name) <= 10
        self.ns_recv, self.ns_send = self.name + 'a', self.name + 'b'

    def up(self):
        sh([ARGS.sv_netns, 'up', self.name, ARGS.fixture_a, ARGS.fixture_b])

    def down(self):
        sh([ARGS.sv_netns, 'down', self.name], check=False)

    def namespaces(self):
        return [self.ns_recv, self.ns_send]

    def env(self, role):
        fix = ARGS.fixture_a if role == 'recv' else ARGS.fixture_b
        return {'NCCL_DIAG_IBVERBS_LIB': ARGS.softverbs, 'NCCL_DIAG_SYSFS_ROOT': fix + '/sysfs',
                'HWLOC_XMLFILE': fix + '/topo.xml', 'NCCL_DIAG_IFADDRS': 'live',
                'NCCL_SOCKET_IFNAME': '=bond0', 'HWLOC_COMPONENTS': '-pci'}

    def env_single(self):
        e = self.env('recv')
        del e['NCCL_SOCKET_IFNAME']
        return e


class RxeHosts:
    """The hook for tests/rxe (the kernel's soft-RoCE in QEMU): two guests
    instead of two namespaces. A placement provides up() and down(), a way
    to start fault_side on each side (namespaces() here; a VM placement
    would override Side's command), each side's environment, and the
    fault hooks (nft in each side's network stack). Not built yet."""
    kind = 'rxe'


PLACEMENTS = {'tcp': TcpHosts, 'ib': IbHosts}


# ---- one side of a scenario ----

class Side:
    def __init__(self, role, ns, env, args, logdir, mode='stream'):
        self.role = role
        self.result = None
        self.results = []
        self.started = threading.Event()
        self.reported = threading.Event()
        self.log = os.path.join(logdir, f'{role}.log')
        full_env = dict(os.environ)
        for k in list(full_env):
            if k.startswith('NCCL_'):
                del full_env[k]
        full_env.update({'NCCL_DIAG_PLUGIN_PATH': ARGS.plugin,
                         'NCCL_DIAG_PEER_TIMEOUT_SEC': str(PEER_TIMEOUT),
                         'NCCL_DIAG_STALL_WARN_SEC': '8'})
        full_env.update(env)
        cmd = [ARGS.driver, '--role', role, '--mode', mode, '--dir', logdir] + args
        if ns:
            cmd = ['ip', 'netns', 'exec', ns] + cmd
        self.p = subprocess.Popen(cmd, env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.log, 'w'), text=True)
        self.pid = self.p.pid  # ip netns exec execs the driver: the same process
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            line = line.strip()
            if line == 'STARTED':
                self.started.set()
            elif line.startswith('RESULT '):
                r = json.loads(line[7:])
                self.results.append(r)
                if self.result is None:
                    self.result = r
                self.reported.set()
        self.reported.set()

    def wait(self, seconds):
        self.reported.wait(seconds)
        return self.result

    def signal(self, sig):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def finish(self):
        """Lets it exit (stdin closed), or ends it: its exit status."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
            return self.p.wait()

    def log_tail(self, n=12):
        try:
            with open(self.log, errors='replace') as f:
                return f.read().splitlines()[-n:]
        except OSError:
            return []

    def log_has(self, text):
        try:
            with open(self.log, errors='replace') as f:
                return text in f.read()
        except OSError:
            return False


# ---- faults ----

NFT_TABLE = 'diagfault'


def nft_set(ns, rule):
    """rule on every packet in and out of ns but loopback's: 'drop', or
    'numgen random mod 100 < 5 drop'."""
    script = (f'table inet {NFT_TABLE} {{\n'
              f' chain in {{ type filter hook input priority 0; policy accept; '
              f'iifname != "lo" {rule}; }}\n'
              f' chain out {{ type filter hook output priority 0; policy accept; '
              f'oifname != "lo" {rule}; }}\n}}\n')
    sh(['ip', 'netns', 'exec', ns, 'nft', '-f', '-'], inp=script)


def nft_clear(ns):
    sh(['ip', 'netns', 'exec', ns, 'nft', 'delete', 'table', 'inet', NFT_TABLE], check=False)


# ---- assertions ----

class Checks:
    def __init__(self):
        self.items = []
        self.notes = []  # what was measured, printed with the result
        self.diag = None

    def ok(self, cond, text):
        self.items.append((bool(cond), text))
        return bool(cond)

    def failed(self):
        return [t for ok, t in self.items if not ok]


def short(r):
    if not r:
        return 'no outcome'
    return (f'{r["status"]} {r["code_name"]} msgs={r["msgs"]} verified={r["verified"]} '
            f'warn="{r["warn"][:300]}"')


def expect_named_error(c, side, r, code, since_ms, bound_s, needles=()):
    if not c.ok(r and r['status'] == 'error', f'{side.role}: a named error, got {short(r)}'):
        return
    if code:
        c.ok(r['code_name'] == code, f'{side.role}: {code}, got {r["code_name"]}')
    c.ok(r['warn'], f'{side.role}: the error has a WARN')
    took = (r['t_ms'] - since_ms) / 1000
    c.ok(took <= bound_s, f'{side.role}: within {bound_s} s of the fault, took {took:.1f} s')
    c.notes.append(f'{side.role} {r["code_name"]} after {took:.1f} s')
    for n in needles:
        c.ok(n in r['warn'], f'{side.role}: the WARN names "{n}": {r["warn"][:400]}')
    return took


def expect_verified(c, side, r, count):
    c.ok(r and r['status'] == 'ok' and r['msgs'] == count,
         f'{side.role}: all {count} messages completed, got {short(r)}')
    if side.role == 'recv' and r:
        c.ok(r['verified'], f'{side.role}: every byte verified')


# ---- scenarios ----

PACED = ['--size', '65536', '--window', '2', '--pace-us', '2000']


def stream_pair(h, tmp, recv_args=(), send_args=(), env=None):
    e = dict(env or {})
    recv = Side('recv', h.ns_recv, {**h.env('recv'), **e}, list(recv_args), tmp)
    send = Side('send', h.ns_send, {**h.env('send'), **e}, list(send_args), tmp)
    return recv, send


def started(c, sides, seconds=60):
    ok = all(s.started.wait(seconds) or s.reported.is_set() for s in sides)
    ok = ok and all(s.started.is_set() for s in sides)
    return c.ok(ok, 'both sides set up and moving data: ' +
                '; '.join(f'{s.role}: {short(s.result)}' for s in sides))


def sc_killed(h, tmp, c, victim):
    recv, send = stream_pair(h, tmp, PACED, PACED)
    sides = {'recv': recv, 'send': send}
    v, s = sides[victim], sides['send' if victim == 'recv' else 'recv']
    if started(c, [recv, send]):
        t0 = now_ms()
        v.signal(signal.SIGKILL)
        expect_named_error(c, s, s.wait(KILLED_BOUND + 5), 'ncclRemoteError', t0, KILLED_BOUND,
                           ['connection with'])
    codes = {x.role: x.finish() for x in (recv, send)}
    c.ok(codes[victim] == -signal.SIGKILL, f'{victim}: killed, exit {codes[victim]}')
    return [recv, send]


def sc_stopped(h, tmp, c, victim):
    recv, send = stream_pair(h, tmp, PACED, PACED)
    sides = {'recv': recv, 'send': send}
    v, s = sides[victim], sides['send' if victim == 'recv' else 'recv']
    if started(c, [recv, send]):
        t0 = now_ms()
        v.signal(signal.SIGSTOP)
        r = s.wait(PEER_TIMEOUT + SLACK + 5)
        took = expect_named_error(c, s, r, 'ncclRemoteError', t0, PEER_TIMEOUT + SLACK,
                                  [f'pid {v.pid} ', 'has not answered for', 'stopped or frozen'])
        if took is not None:
            c.ok(took >= PEER_TIMEOUT - 2, f'{s.role}: not before the timeout ({took:.1f} s)')
        t1 = now_ms()
        v.signal(signal.SIGCONT)
        expect_named_error(c, v, v.wait(RESUME_BOUND + 5), 'ncclRemoteError', t1, RESUME_BOUND)
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_late_peer(h, tmp, c):
    """A receiver alive but busy for longer than the timeout before it posts:
    the sender waits (warned that the peer is alive), and both complete."""
    count = 8
    late = (PEER_TIMEOUT + 10) * 1000
    # Over TCP a window of 64 KiB messages fits in the socket buffers and
    # completes without the receiver: 16 MiB ones make the sender wait.
    size = 65536 if h.kind == 'ib' else 16 << 20
    args = ['--size', str(size), '--count', str(count)]
    recv, send = stream_pair(h, tmp, args + ['--late-ms', str(late)], args)
    for x in (recv, send):
        expect_verified(c, x, x.wait(late / 1000 + 60), count)
    c.ok(send.log_has('it is alive and has not reached the matching operation') or
         h.kind not in LIVENESS_TRANSPORTS,
         'send: the no-progress warning says the peer is alive')
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_short_stop(h, tmp, c):
    """A process stopped for less than the timeout, then continued: nothing
    fails, on either side."""
    count = 2000
    args = ['--size', '65536', '--count', str(count), '--pace-us', '2000']
    recv, send = stream_pair(h, tmp, args, args)
    if started(c, [recv, send]):
        send.signal(signal.SIGSTOP)
        time.sleep(PEER_TIMEOUT / 2)
        send.signal(signal.SIGCONT)
        for x in (recv, send):
            expect_verified(c, x, x.wait(120), count)
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_blackhole(h, tmp, c):
    recv, send = stream_pair(h, tmp, PACED, PACED)
    if started(c, [recv, send]):
        t0 = now_ms()
        nft_set(h.ns_recv, 'drop')
        for x in (recv, send):
            expect_named_error(c, x, x.wait(PEER_TIMEOUT + SLACK + 5), 'ncclRemoteError', t0,
                               PEER_TIMEOUT + SLACK,
                               ['has not answered for', 'network between the hosts'])
        nft_clear(h.ns_recv)
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_blackhole_clears(h, tmp, c):
    count = 64
    args = ['--size', str(1 << 20), '--count', str(count)]
    recv, send = stream_pair(h, tmp, args, args)
    if started(c, [recv, send]):
        nft_set(h.ns_recv, 'drop')
        time.sleep(5)
        nft_clear(h.ns_recv)
        for x in (recv, send):
            expect_verified(c, x, x.wait(PEER_TIMEOUT + 60), count)
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_loss(h, tmp, c, percent, count, size):
    args = ['--size', str(size), '--count', str(count)]
    recv, send = stream_pair(h, tmp, args, args)
    bound = PEER_TIMEOUT + SLACK + 90
    if started(c, [recv, send], 90):
        t0 = now_ms()
        nft_set(h.ns_recv, f'numgen random mod 100 < {percent} drop')
        rs = [x.wait(bound + 5) for x in (recv, send)]
        if percent <= 5:
            for x, r in zip((recv, send), rs):
                expect_verified(c, x, r, count)
        else:
            # Plain TCP crawls here: what must hold is a bounded outcome on
            # both sides, and no byte reported that was not delivered.
            for x, r in zip((recv, send), rs):
                if r and r['status'] == 'ok':
                    expect_verified(c, x, r, count)
                else:
                    expect_named_error(c, x, r, None, t0, bound)
            c.diag = 'outcomes: ' + ', '.join(f'{x.role} {short(r)}' for x, r in
                                              zip((recv, send), rs))
        nft_clear(h.ns_recv)
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_nofile(h, tmp, c):
    env = {'NCCL_DIAG_CONNECT_TIMEOUT_MS': '10000'}
    t0 = now_ms()
    recv, send = stream_pair(h, tmp, PACED + ['--nofile', '3'], PACED, env)
    bound = 10 + SLACK + 10  # the connect timeout, and setup
    for x in (recv, send):
        expect_named_error(c, x, x.wait(bound + 5), None, t0, bound)
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_stale(h, tmp, c):
    recv = Side('recv', h.ns_recv, h.env('recv'), [], tmp, mode='stale')
    send = Side('send', h.ns_send, h.env('send'), [], tmp, mode='stale')
    r = send.wait(STALE_BOUND + 30)
    if c.ok(r and r['status'] == 'error', f'send: the stale connect failed, got {short(r)}'):
        c.ok(r['code_name'] == 'ncclInvalidUsage', f'send: ncclInvalidUsage, got {r["code_name"]}')
        ms = int(r['note'].split()[2]) if r['note'].startswith('refused after') else 10 ** 9
        c.ok(ms < STALE_BOUND * 1000, f'send: refused within {STALE_BOUND} s: {r["note"]}')
        for n in ('refused this connection', 'no listen on port', 'stale'):
            c.ok(n in r['warn'], f'send: the WARN carries the listener\'s reason "{n}": '
                                 f'{r["warn"][:400]}')
    rr = recv.wait(40)
    c.ok(rr and rr['status'] == 'ok' and rr['msgs'] == 1,
         f'recv: refused the stale one and took the real peer, got {short(rr)}')
    c.ok(recv.log_has('refused connection from'), 'recv: the refusal is logged')
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


def sc_gone(h, tmp, c, late_ms):
    """The listener's process exits after handing out its handle: at once
    (its kernel refuses the connect), or after late_ms with our connection
    in its kernel's backlog (reset when it exits). Either way the connector
    must say the process is gone, not that a live one broke the handshake,
    and must not send the user to a log of that listener."""
    recv = Side('recv', h.ns_recv, h.env('recv'), ['--late-ms', str(late_ms)], tmp, mode='gone')
    # a refused address is retried until the connect deadline: keep it short
    env = dict(h.env('send'), NCCL_DIAG_CONNECT_TIMEOUT_MS='5000')
    send = Side('send', h.ns_send, env, ['--late-ms', str(late_ms)], tmp, mode='gone')
    r = send.wait(late_ms / 1000 + 40)
    if c.ok(r and r['status'] == 'error' and r['code'] != 0,
            f'send: the connect failed with an NCCL error, got {short(r)}'):
        w = r['warn']
        c.ok('process on host' in w or 'exited' in w, f'send: the WARN says the process that '
             f'handed out the address is gone: {w[:500]}')
        c.ok('broke' not in w and 'is not the listener' not in w,
             f'send: no live listener that broke the handshake: {w[:500]}')
        c.ok('restart every rank' in w, f'send: the fix restarts the job\'s ranks: {w[:500]}')
    c.ok(recv.p.wait(late_ms / 1000 + 30) == 0, 'recv: exited as a dying rank does')
    c.ok(send.finish() == 0, 'send: exits cleanly')
    return [recv, send]


def sc_misuse(h, tmp, c):
    one = Side('recv', None, h.env_single(), [], tmp, mode='misuse')
    r = one.wait(60)
    c.ok(r and r['status'] == 'ok' and r['msgs'] >= 8,
         f'every misuse refused by name, got {short(r)}')
    code = one.finish()
    c.ok(code == 0, f'no crash and no sanitizer report: exit {code}')
    return [one]


def sc_mtu_black_hole(h, tmp, c):
    """A path-MTU black hole (MtuHosts): a small message passes, a large one
    stalls after its header. Each side's no-progress warning leads with the
    black hole and names both ends' MTUs and the check; the sender's also
    its retransmissions. Neither side hangs: each reports, then exits when
    told."""
    args = ['--count', '2', '--window', '1', '--first-size', '1000', '--size', str(4 << 20),
            '--max-seconds', '10']
    recv, send = stream_pair(h, tmp, args, args, {'NCCL_DIAG_STALL_WARN_SEC': '3'})
    octet = h.tag % 250 + 1
    for x in (recv, send):
        r = x.wait(40)
        if not c.ok(r and r['status'] == 'hang' and r['msgs'] == 1,
                    f'{x.role}: the small message moved, the large one stalled, got {short(r)}'):
            continue
        w = r['first_warn'].split('NET/diag ', 1)[-1]
        c.notes.append(f'{x.role}: {w}')
        c.ok(len(w) < 1000, f'{x.role}: one line under 1000 characters ({len(w)})')
        for n in ('path-MTU black hole suspected: ', 'stalls after its header',
                  'MTU 9000 on eth0 here, 9000 on ', 'Fix: make the MTU equal on every hop',
                  f'ping -M do -s 8972 10.{octet}.0.{2 if x.role == "recv" else 1}'):
            c.ok(n in w, f'{x.role}: the no-progress WARN names "{n}": {w[:600]}')
        c.ok(w.startswith('path-MTU black hole'), f'{x.role}: the cause comes first: {w[:200]}')
        c.ok('not reached the matching operation' not in w,
             f'{x.role}: not told the peer has not reached its operation: {w[:600]}')
    if send.result and send.result['status'] == 'hang':
        w = send.result['first_warn'].split('NET/diag ', 1)[-1]
        c.ok(' retransmissions, path MTU as the kernel sees it 9000' in w,
             f'send: the WARN gives the data socket\'s retransmissions and path MTU: {w[:600]}')
    for x in (recv, send):
        c.ok(x.finish() == 0, f'{x.role}: exits cleanly')
    return [recv, send]


# name, function, whether it needs the transport to ask the liveness check;
# a fourth element: the placement class it needs over TCP (it runs there only)
SCENARIOS = [
    ('peer stopped (SIGSTOP): the sender', lambda h, t, c: sc_stopped(h, t, c, 'send'), True),
    ('peer stopped (SIGSTOP): the receiver', lambda h, t, c: sc_stopped(h, t, c, 'recv'), True),
    ('permanent blackhole', sc_blackhole, True),
    ('peer alive but busy past the timeout: waited for', sc_late_peer, False),
    ('peer stopped for half the timeout: nothing fails', sc_short_stop, False),
    ('30 % loss', lambda h, t, c: sc_loss(h, t, c, 30, 32, 1 << 20), False),
    ('peer killed: the sender', lambda h, t, c: sc_killed(h, t, c, 'send'), False),
    ('peer killed: the receiver', lambda h, t, c: sc_killed(h, t, c, 'recv'), False),
    ('5 s blackhole that clears', sc_blackhole_clears, False),
    ('5 % loss', lambda h, t, c: sc_loss(h, t, c, 5, 64, 1 << 20), False),
    ('listener out of file descriptors', sc_nofile, False),
    ('stale handle', sc_stale, False),
    ('listener process exited after its handle: refused', lambda h, t, c: sc_gone(h, t, c, 0),
     False),
    ('listener process died with our connection in its backlog: reset',
     lambda h, t, c: sc_gone(h, t, c, 3000), False),
    ('ABI misuse: double, foreign, wild handles; stale request', sc_misuse, False),
    ('path-MTU black hole: a large message stalls after its header', sc_mtu_black_hole, True,
     MtuHosts),
]

# Transports whose data path asks the liveness check (liveness.h): a stopped
# peer or a permanent blackhole can only end there.
LIVENESS_TRANSPORTS = {'ib', 'tcp'}
# Transports that bound a connection whose data stays unacknowledged: at
# 30 % loss plain TCP's retransmission backoff stalls without end.
BOUNDED_TRANSPORTS = {'ib'}


def leftovers(h, tmp, sides):
    found = []
    listed = sh(['ip', 'netns', 'list'], check=False).stdout
    for ns in h.namespaces():
        if any(line.split()[0] == ns for line in listed.splitlines() if line.strip()):
            found.append(f'namespace {ns}')
    tables = sh(['nft', 'list', 'tables'], check=False).stdout
    if NFT_TABLE in tables:
        found.append(f'nft table {NFT_TABLE} in this namespace')
    for s in sides:
        if s.p.poll() is None:
            found.append(f'process {s.pid} ({s.role})')
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                if tmp.encode() in f.read():
                    found.append(f'process {pid} still runs with {tmp}')
        except OSError:
            pass
    return found


def run_one(name, fn, kind, placement=None):
    h = (placement or PLACEMENTS[kind])()
    tmp = tempfile.mkdtemp(prefix=f'diagfault{os.getpid()}.')
    c = Checks()
    sides = []
    t0 = time.monotonic()
    try:
        h.up()
        sides = fn(h, tmp, c) or []
    except Exception as e:  # a harness failure is a failed scenario, never a hang
        c.ok(False, f'harness: {e}')
    finally:
        for s in sides:
            if s.p.poll() is None:
                s.finish()
        h.down()
    calls = [(r['call_max_us'], r['call_max_cpu_us'], s.role) for s in sides for r in s.results
             if 'call_max_us' in r]
    for wall, cpu, role in calls:
        c.notes.append(f'{role} longest call {wall} us ({cpu} us CPU)')
    if calls:
        with CALLS_LOCK:
            CALLS.append((max(x[1] for x in calls), max(x[0] for x in calls), name))
    left = leftovers(h, tmp, sides)
    c.ok(not left, 'nothing left behind: ' + ', '.join(left))
    logs = {s.role: s.log_tail() for s in sides}
    if not ARGS.keep_logs:
        shutil.rmtree(tmp, ignore_errors=True)
    return c, logs, time.monotonic() - t0


# The longest call of each scenario: (CPU us, wall us, scenario).
CALLS, CALLS_LOCK = [], threading.Lock()


def tap_result(n, title, c, logs, secs):
    """One scenario's TAP line, what it measured, and on failure each side's log tail."""
    bad = c.failed()
    print(f'{"not ok" if bad else "ok"} {n} - {title} ({secs:.0f} s)', flush=True)
    if c.notes:
        print(f'#   measured: {"; ".join(c.notes)}')
    if getattr(c, 'diag', None):
        print(f'#   {c.diag}')
    for b in bad:
        print(f'#   {b}')
    if bad:
        for role, lines in logs.items():
            print(f'#   --- {role} log (last lines) ---')
            for line in lines:
                print(f'#   {line[:600]}')
    sys.stdout.flush()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ('--driver', '--plugin', '--softverbs', '--sv-netns', '--fixture-a', '--fixture-b'):
        ap.add_argument(a, required=True)
    ap.add_argument('--transports', default='tcp,ib')
    ap.add_argument('--only', default='')
    ap.add_argument('--jobs', type=int, default=8)
    ap.add_argument('--keep-logs', action='store_true')
    ARGS = ap.parse_args()
    todo, skips = [], []
    root = os.geteuid() == 0
    has_nft = shutil.which('nft') is not None
    for name, fn, needs_liveness, *placement in SCENARIOS:
        for kind in ARGS.transports.split(','):
            if placement and kind != placement[0].kind:
                continue
            title = f'{kind}: {name}'
            if ARGS.only and ARGS.only not in title:
                continue
            if not root:
                skips.append((title, 'needs root (namespaces, nftables)'))
            elif not has_nft and ('loss' in name or 'blackhole' in name):
                skips.append((title, 'needs nft (nftables)'))
            elif needs_liveness and kind not in LIVENESS_TRANSPORTS:
                skips.append((title, f'the {kind} transport does not ask the liveness check yet'))
            elif '30 %' in name and kind not in BOUNDED_TRANSPORTS:
                skips.append((title, f'the {kind} transport does not bound a stalled data '
                                     'connection yet (its retransmissions back off without end)'))
            else:
                todo.append((title, fn, kind, placement[0] if placement else None))
    n = 0
    for title, why in skips:
        n += 1
        print(f'ok {n} - {title} # SKIP {why}', flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, ARGS.jobs)) as pool:
        futures = {pool.submit(run_one, title, fn, kind, pl): title for title, fn, kind, pl in todo}
        for f in concurrent.futures.as_completed(futures):
            title = futures[f]
            n += 1
            tap_result(n, title, *f.result())
    if CALLS:
        cpu, wall, what = max(CALLS)
        print(f'# longest call into the plugin over {len(CALLS)} scenarios: {cpu} us of CPU '
              f'({what}); longest wall clock {max(x[1] for x in CALLS)} us (a loaded host, and '
              f'a process the scenario stops mid-call, included)')
    print(f'1..{n}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
