# SPDX-License-Identifier: Apache-2.0
"""Namespace hosts and probe runs for the probe tests.

Hosts: network namespaces PREFIX h0..hN-1, each with eth0 on one bridge
(in its own namespace, PREFIX b), 10.77.0.(i+1)/24. PREFIX is "pb", a
letter and this test's pid, so parallel runs never collide and a killed
run's namespaces are swept by the next one. Each probe runs in its host's
namespace with its own host name (a UTS namespace), as on N machines."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'fixtures'))
import taplib  # noqa: E402

case = taplib.case
done = taplib.done


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def can_netns():
    if os.geteuid() != 0:
        return 'needs root'
    probe = f'pbchk{os.getpid()}'
    if sh('ip', 'netns', 'add', probe).returncode:
        return 'cannot create network namespaces here'
    sh('ip', 'netns', 'del', probe)
    if sh('unshare', '--uts', 'true').returncode:
        return 'cannot create UTS namespaces (host names) here'
    return None


def sweep():
    """Namespaces of probe tests that no longer run."""
    out = sh('ip', 'netns', 'list').stdout
    for line in out.splitlines():
        m = re.match(r'^(pb[a-z](\d+)[bh]\d*)\b', line)
        if m and not os.path.exists(f'/proc/{m.group(2)}'):
            sh('ip', 'netns', 'del', m.group(1))


class Hosts:
    def __init__(self, letter, n):
        self.prefix = f'pb{letter}{os.getpid()}'
        self.n = n
        self.made = []

    def ns(self, i):
        return f'{self.prefix}h{i}'

    @staticmethod
    def addr(i):
        return f'10.77.0.{i + 1}'

    def up(self):
        sweep()
        br = f'{self.prefix}b'
        steps = [('ip', 'netns', 'add', br), ('ip', '-n', br, 'link', 'add', 'br0', 'type', 'bridge'),
                 ('ip', '-n', br, 'link', 'set', 'br0', 'up')]
        self.made.append(br)
        for cmd in steps:
            if sh(*cmd).returncode:
                return f'{" ".join(cmd)} failed'
        for i in range(self.n):
            h = self.ns(i)
            self.made.append(h)
            for cmd in [('ip', 'netns', 'add', h),
                        ('ip', 'link', 'add', 'eth0', 'netns', h, 'type', 'veth', 'peer', 'name',
                         f'v{i}', 'netns', br),
                        ('ip', '-n', br, 'link', 'set', f'v{i}', 'master', 'br0', 'up'),
                        ('ip', '-n', h, 'addr', 'add', f'{self.addr(i)}/24', 'dev', 'eth0'),
                        ('ip', '-n', h, 'link', 'set', 'lo', 'up'),
                        ('ip', '-n', h, 'link', 'set', 'eth0', 'up')]:
                r = sh(*cmd)
                if r.returncode:
                    return f'{" ".join(cmd)} failed: {r.stderr.strip()}'
        return None

    def down(self):
        for ns in self.made:
            sh('ip', 'netns', 'del', ns)
        self.made = []


class Run:
    """One probe run: a process per rank, each in its namespace."""

    def __init__(self, binary, world, port, namespaces, names, master, tmp):
        self.binary, self.world, self.port = binary, world, port
        self.namespaces, self.names, self.master = namespaces, names, master
        self.tmp = tmp
        self.procs, self.rc = [], []
        self.wall = 0.0

    def json_path(self, rank):
        return os.path.join(self.tmp, f'probe{rank}.json')

    def log(self, rank, what):
        return os.path.join(self.tmp, f'rank{rank}.{what}')

    def start(self, args=(), env=None, args_of=None, ranks=None):
        """Starts the ranks (all by default); start_rank starts one later."""
        self.args, self.env, self.args_of = list(args), env or {}, args_of or {}
        self.t0 = time.monotonic()
        self.procs = [None] * self.world
        for r in ranks if ranks is not None else range(self.world):
            self.start_rank(r)
        return self

    def start_rank(self, r):
        e = dict(os.environ, RANK=str(r), WORLD_SIZE=str(self.world), LOCAL_RANK='0',
                 MASTER_ADDR=self.master, MASTER_PORT=str(self.port))
        for k in [k for k in e if k.startswith('NCCL_') and k != 'NCCL_DIAG_PLUGIN_PATH']:
            del e[k]
        e.update(self.env.get(r, {}))
        cmd = ['ip', 'netns', 'exec', self.namespaces[r], 'unshare', '--uts', '--', 'sh', '-c',
               'hostname "$0" && exec "$@"', self.names[r], self.binary, 'probe',
               f'--json={self.json_path(r)}'] + self.args + list(self.args_of.get(r, []))
        self.procs[r] = subprocess.Popen(cmd, env=e, stdout=open(self.log(r, 'out'), 'w'),
                                         stderr=open(self.log(r, 'err'), 'w'))

    def wait_for(self, rank, text, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with open(self.log(rank, 'err')) as f:
                if text in f.read():
                    return True
            time.sleep(0.02)
        return False

    def kill(self, rank):
        self.procs[rank].send_signal(signal.SIGKILL)

    def finish(self, timeout):
        end = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.wall = time.monotonic() - self.t0
        self.rc = [p.returncode for p in self.procs]
        return self

    def report(self):
        try:
            with open(self.json_path(0)) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            return {'error': str(e), 'hosts': [], 'pairs': [], 'problems': []}

    def logs(self, ranks=None):
        text = []
        for r in ranks if ranks is not None else range(self.world):
            for what in ('out', 'err'):
                with open(self.log(r, what)) as f:
                    body = f.read().strip()
                if body:
                    text.append(f'--- rank {r} std{what} (exit {self.rc[r] if self.rc else "?"})')
                    text.append(body)
        return '\n'.join(text)


def scratch():
    return tempfile.mkdtemp(prefix='probe-test-')


def problems_about(report, *words, host=None):
    """The problems whose text or fix has every word (and that name host)."""
    hits = []
    for p in report.get('problems', []):
        blob = p['text'] + '\n' + p['fix']
        if all(w in blob for w in words) and (host is None or host in p['hosts']):
            hits.append(p)
    return hits


def serious(report):
    return [p for p in report.get('problems', []) if p['severity'] in ('error', 'warning')]
