#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-net-diag probe against faults of the network between namespace
hosts, each rank started with torchrun's variables.

usage: test_probe_faults.py NCCL_NET_DIAG
Cases: a firewall on one host of four (nftables drops new TCP connections
to its ephemeral ports: the plugin's listeners); a path-MTU black hole (MTU
9000 everywhere, one bridge port at 1500); the counts and addresses of the
report's text (a rank that never arrives, a world of one). Each asserts
rank 0's exit status and time, and in its JSON and text the host and the
cause. About 60 s for each of the first two under load. Then the black
holes that test does not build: on rank 0's own host, on a link between
two switches (9000 hosts, a 1500 link; 1500 hosts, a 1400 overlay-like
link) where no host's port shows it, and in one direction only (into or
out of one host), about 25 s each."""
import os
import shutil
import subprocess
import sys

import probelib as pl

BIN = sys.argv[1]
PORT = 12000 + (os.getpid() * 7) % 8000  # below the ephemeral range


def new_run(hosts, world, offset, tmp, ranks_ns=None):
    names = [f'host{i}' for i in range(world)]
    ns = ranks_ns or [hosts.ns(i) for i in range(world)]
    return pl.Run(BIN, world, PORT + offset, ns, names, hosts.addr(0), tmp)


def stdout_of(run, rank=0):
    with open(run.log(rank, 'out')) as f:
        return f.read()


def pairs_with(rep, rank):
    return [p for p in rep['pairs'] if rank in (p['src'], p['dst'])]


def firewall(hosts, tmp):
    """host2 drops new TCP connections to its ephemeral ports: every other
    host's connects to its listeners go unanswered, its own connects work."""
    nft = ['ip', 'netns', 'exec', hosts.ns(2), 'nft']
    rules = ['add table inet pbfw',
             'add chain inet pbfw in { type filter hook input priority 0 ; }',
             'add rule inet pbfw in tcp dport 32768-60999 ct state new drop']
    for rule in rules:
        r = subprocess.run(nft + rule.split(), capture_output=True, text=True)
        if r.returncode:
            pl.case(True, f'a firewall on one host # SKIP no nftables here: {r.stderr.strip()}')
            return
    try:
        run = new_run(hosts, 4, 0, tmp).start(['--bytes', '1M']).finish(150)
    finally:
        subprocess.run(nft + ['delete', 'table', 'inet', 'pbfw'], capture_output=True)
    rep = run.report()
    why = f'exit {run.rc} wall {run.wall:.1f}\n' + run.logs([0])
    named = [p for p in pl.problems_about(rep, 'firewall', host='host2') if p['hosts'] == ['host2']]
    pl.case(run.rc[0] == 1 and run.wall < 90 and named and
            'allow incoming TCP on host2' in named[0]['fix'],
            f'a firewall on host2: rank 0 ends in {run.wall:.1f} s (< 90), names host2, the '
            'firewall and the fix', f'{named}\n{why}')
    bad = pairs_with(rep, 2)
    others = {(p['src'], p['dst']) for p in rep['pairs'] if p['ok']}
    pl.case(len(bad) == 6 and all(not p['ok'] and p['cause'] == 'no answer' and
                                  p['plugin_cause'] == 'no_answer' for p in bad) and
            others == {(a, b) for a in (0, 1, 3) for b in (0, 1, 3) if a != b},
            'a firewall on host2: its 6 directions are labelled "no answer" from the plugin\'s '
            'cause code (not cross-plane), the other 6 pass',
            f'{[(p["src"], p["dst"], p["cause"], p.get("plugin_cause")) for p in bad]}\n{why}')
    diag = [p for p in pl.problems_about(rep, 'its TCP connects go unanswered')
            if 'host2' in p['hosts']]
    pl.case(len(diag) >= 3, 'a firewall on host2: each failed pair carries the plugin\'s own '
            'diagnosis (its connect timeout is inside the pair\'s time)', f'{diag}\n{why}')


def set_mtu(hosts, mtu, small_port=None):
    """One TCP segment per packet (gso_max_segs 1), as a NIC without
    segmentation offload sends them: a bridge port checks only a packet
    that is not a batch of segments against its MTU."""
    br = f'{hosts.prefix}b'
    segs = '1' if small_port is not None else '65535'
    for i in range(hosts.n):
        subprocess.run(['ip', '-n', hosts.ns(i), 'link', 'set', 'dev', 'eth0', 'mtu', str(mtu),
                        'gso_max_segs', segs])
        subprocess.run(['ip', '-n', br, 'link', 'set', 'dev', f'v{i}', 'mtu', str(mtu),
                        'gso_max_segs', segs])
    if small_port is not None:
        subprocess.run(['ip', '-n', br, 'link', 'set', f'v{small_port}', 'mtu', '1500'])


def mtu_black_hole_rank0(hosts, tmp):
    """The same black hole on rank 0's own host (the one that gathers every
    rank's results): host0's bridge port at 1500 among 9000."""
    set_mtu(hosts, 9000, small_port=0)
    try:
        run = new_run(hosts, 4, 4, tmp).start(['--bytes', '1M']).finish(150)
    finally:
        set_mtu(hosts, 1500)
    rep = run.report()
    why = f'exit {run.rc} wall {run.wall:.1f}\n' + run.logs([0])
    named = [p for p in pl.problems_about(rep, 'large transfers stall while small ones pass',
                                          'path MTU', 'MTU is 9000', host='host0')
             if p['hosts'] == ['host0']]
    pl.case(run.rc[0] == 1 and run.wall < 90 and named,
            f'one hop at MTU 1500 on rank 0\'s host: rank 0 ends in {run.wall:.1f} s (< 90) and '
            'names host0 and the path MTU', f'{named}\n{why}')
    bad = pairs_with(rep, 0)
    pl.case(len(bad) == 6 and all(not p['ok'] and p['cause'] == 'path MTU' for p in bad),
            'on rank 0\'s host: its 6 directions are labelled "path MTU"',
            f'{[(p["src"], p["dst"], p["cause"]) for p in bad]}\n{why}')


def trunk(hosts, mtu):
    """Two switches: host0 and host1 on br0, host2 and host3 on br1, joined
    by an inter-switch link at mtu (None: undo). Every host and port at
    9000, so the drop is in the middle of the path, on no host's port."""
    br = f'{hosts.prefix}b'

    def ip(*a):
        subprocess.run(['ip', '-n', br] + list(a), capture_output=True)
    if mtu is None:
        ip('link', 'del', 't0')
        ip('link', 'del', 'br1')
        for i in (2, 3):
            ip('link', 'set', f'v{i}', 'master', 'br0')
        return
    ip('link', 'add', 'br1', 'type', 'bridge')
    ip('link', 'set', 'br1', 'up')
    for i in (2, 3):
        ip('link', 'set', f'v{i}', 'master', 'br1')
    ip('link', 'add', 't0', 'type', 'veth', 'peer', 'name', 't1')
    for t, b in (('t0', 'br0'), ('t1', 'br1')):
        ip('link', 'set', t, 'gso_max_segs', '1', 'master', b, 'up')
    ip('link', 'set', 't0', 'mtu', str(mtu))
    ip('link', 'set', 't1', 'mtu', str(mtu))


def mtu_black_hole_trunk(hosts, tmp, host_mtu=9000, hop=1500):
    """A black hole no host's port shows: the link between two switches at
    hop bytes, every host and port at host_mtu (9000 and 1500, or an
    overlay's 1400 under hosts at 1500). The pairs across it stall, those
    within a switch pass; no one host is common to the stalled pairs."""
    set_mtu(hosts, host_mtu, small_port=None)
    set_mtu_segs(hosts)
    trunk(hosts, hop)
    try:
        run = new_run(hosts, 4, 5 if hop == 1500 else 8, tmp).start(['--bytes', '1M']).finish(150)
    finally:
        trunk(hosts, None)
        set_mtu(hosts, 1500)
    rep = run.report()
    why = f'exit {run.rc} wall {run.wall:.1f}\n' + run.logs([0])
    across = [p for p in rep.get('pairs', []) if (p['src'] < 2) != (p['dst'] < 2)]
    within = [p for p in rep.get('pairs', []) if (p['src'] < 2) == (p['dst'] < 2)]
    pl.case(run.rc[0] == 1 and run.wall < 90,
            f'a {hop} link between two switches of {host_mtu}: rank 0 ends in {run.wall:.1f} s '
            '(< 90)', why)
    pl.case(len(across) == 8 and all(not p['ok'] and p['cause'] == 'path MTU' for p in across) and
            within and all(p['ok'] for p in within),
            'the 8 directions across the switches are labelled "path MTU", the 4 within pass',
            f'{[(p["src"], p["dst"], p["ok"], p.get("cause")) for p in rep.get("pairs", [])]}\n{why}')
    named = pl.problems_about(rep, 'path MTU')
    pl.case(named and 'ping -M do' in named[0]['fix'],
            'a problem names the path MTU and how to find the hop', f'{named}\n{why}')


def mtu_black_hole_one_way(hosts, tmp, hook='input'):
    """A black hole in one direction only: every host and port at 9000, and
    packets above 1500 dropped on their way into host3 (hook input) or out
    of it (output): an asymmetric path, one router hop smaller. That
    direction stalls, the other passes."""
    if not shutil.which('nft'):
        pl.case(True, 'a one-way black hole # SKIP no nft here')
        return
    set_mtu(hosts, 9000, small_port=None)
    set_mtu_segs(hosts)
    nft = ['ip', 'netns', 'exec', hosts.ns(3), 'nft']
    subprocess.run(nft + ['add table inet pmtu; add chain inet pmtu in '
                          f'{{ type filter hook {hook} priority 0 ; }} ; '
                          'add rule inet pmtu in meta length gt 1500 drop'], capture_output=True)
    try:
        run = new_run(hosts, 4, 6 if hook == 'input' else 7, tmp).start().finish(200)
    finally:
        subprocess.run(nft + ['delete table inet pmtu'], capture_output=True)
        set_mtu(hosts, 1500)
    rep = run.report()
    why = f'exit {run.rc} wall {run.wall:.1f}\n' + run.logs([0])
    way = 'into' if hook == 'input' else 'out of'
    into = [p for p in rep.get('pairs', []) if (p['dst'] if hook == 'input' else p['src']) == 3]
    pl.case(run.rc[0] == 1 and run.wall < 90,
            f'a one-way black hole {way} host3: rank 0 ends in {run.wall:.1f} s (< 90)', why)
    pl.case(len(into) == 3 and all(not p['ok'] and p['cause'] == 'path MTU' for p in into),
            f'the 3 directions {way} host3 are labelled "path MTU"',
            f'{[(p["src"], p["dst"], p["ok"], p.get("cause")) for p in rep.get("pairs", [])]}\n{why}')
    named = [p for p in pl.problems_about(rep, 'path MTU') if 'host3' in p['hosts']]
    pl.case(named and 'ping -M do' in named[0]['fix'],
            'a problem names host3, the path MTU and how to find the hop', f'{named}\n{why}')


def set_mtu_segs(hosts):
    """One segment per packet on every host and port (see set_mtu)."""
    br = f'{hosts.prefix}b'
    for i in range(hosts.n):
        subprocess.run(['ip', '-n', hosts.ns(i), 'link', 'set', 'dev', 'eth0', 'gso_max_segs', '1'])
        subprocess.run(['ip', '-n', br, 'link', 'set', 'dev', f'v{i}', 'gso_max_segs', '1'])


def mtu_black_hole(hosts, tmp):
    """MTU 9000 on every host and bridge port but host3's (1500): frames
    above 1500 to or from host3 are dropped at that port, small ones pass."""
    set_mtu(hosts, 9000, small_port=3)
    try:
        run = new_run(hosts, 4, 1, tmp).start(['--bytes', '1M']).finish(150)
    finally:
        set_mtu(hosts, 1500)
    rep = run.report()
    why = f'exit {run.rc} wall {run.wall:.1f}\n' + run.logs([0])
    named = [p for p in pl.problems_about(rep, 'large transfers stall while small ones pass',
                                          'path MTU', 'MTU is 9000', host='host3')
             if p['hosts'] == ['host3']]
    pl.case(run.rc[0] == 1 and run.wall < 90 and named and 'ping -M do -s 8972' in named[0]['fix'],
            f'one hop at MTU 1500 among 9000: rank 0 ends in {run.wall:.1f} s (< 90), names '
            'host3, the path MTU, its MTU and how to find the hop', f'{named}\n{why}')
    bad = pairs_with(rep, 3)
    pl.case(len(bad) == 6 and all(not p['ok'] and p['cause'] == 'path MTU' for p in bad) and
            len([p for p in rep['pairs'] if p['ok']]) == 6,
            'one hop at MTU 1500: host3\'s 6 directions are labelled "path MTU", the others pass',
            f'{[(p["src"], p["dst"], p["cause"]) for p in bad]}\n{why}')
    table = stdout_of(run)
    rows = [line for line in table.splitlines() if line.strip().startswith(('0 ', '3 '))]
    pl.case(' MTU ' in table and len(rows) == 2 and all(' 9000 ' in r for r in rows),
            'the hosts table has an MTU column (9000 on host0 and host3)', table)


def counts(hosts, tmp):
    """Three ranks expected, two on two hosts arrive; then a world of one."""
    run = new_run(hosts, 3, 2, tmp).start(['--bytes', '64K', '--timeout', '8'], ranks=[0, 1])
    run.procs = run.procs[:2]
    run.finish(40)
    rep = run.report()
    head = stdout_of(run).splitlines()[:1]
    pl.case(head and '2 of 3 ranks (1 never arrived) on 2 hosts' in head[0],
            'a rank that never arrives: the first line counts the ranks that came, of how many',
            f'{head}\n' + run.logs([0]))
    addr = rep['hosts'][0].get('addr') if rep.get('hosts') else None
    pl.case(addr is not None and addr.startswith('127.0.0.1<'),
            'rank 0\'s own connection shows as 127.0.0.1, not as an IPv4-mapped IPv6 address',
            f'{addr}\n' + run.logs([0]))
    one = new_run(hosts, 1, 3, tmp).start(['--timeout', '8']).finish(40)
    err = open(one.log(0, 'err')).read()
    head = stdout_of(one).splitlines()[:1]
    pl.case('waits for 1 rank on port' in err and '1 of 1 rank reported' in err and head and
            ' 1 rank on 1 host ' in head[0],
            'a world of one: "waits for 1 rank", "1 of 1 rank reported", "1 rank on 1 host"',
            f'{head}\n{err}')


def main():
    why = pl.can_netns()
    if why:
        pl.case(True, f'namespace hosts # SKIP {why}')
        return pl.done()
    hosts = pl.Hosts('f', 4)
    tmp = pl.scratch()
    only = os.environ.get('PROBE_FAULTS_ONLY', '')
    try:
        err = hosts.up()
        if err:
            pl.case(False, 'build 4 namespace hosts on a bridge', err)
            return pl.done()
        for name, fn in (('counts', counts), ('firewall', firewall), ('mtu', mtu_black_hole),
                         ('mtu-rank0', mtu_black_hole_rank0), ('mtu-trunk', mtu_black_hole_trunk),
                         ('mtu-overlay', lambda h, t: mtu_black_hole_trunk(h, t, 1500, 1400)),
                         ('mtu-one-way', mtu_black_hole_one_way),
                         ('mtu-one-way-out', lambda h, t: mtu_black_hole_one_way(h, t, 'output'))):
            if only and name not in only.split(','):
                continue
            os.makedirs(os.path.join(tmp, name))
            fn(hosts, os.path.join(tmp, name))
    finally:
        hosts.down()
        shutil.rmtree(tmp, ignore_errors=True)
    return pl.done()


if __name__ == '__main__':
    sys.exit(main())
