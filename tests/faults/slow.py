#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The slow link named while the job runs: a mesh of namespace hosts (every
rank sends to and receives from every other, each connection streaming on
its own), TCP. One path is made lossy with nftables (a share of its packets
dropped, both ways); its two ends must each WARN "slow link:" once, naming
the other end's address, with the counters that show it (retransmits,
packets out of order), within the bound, while the other ranks stay
silent; the end-of-job summary counts it and the metrics file flags it.
A path shaped to a third of what the mesh sends over it, one way (tc htb,
nothing dropped), is named by its sending end from its RTT (a queue on the
path), and by its receiving end, which has no evidence of its own, from
what the sender's liveness checks carry; over RDMA, from the sender's
writes' time to complete.
Clean runs of the same shape, several times over, must give no finding.
With --transport ib the mesh runs RDMA over softverbs, each rank on a
fixture host of its own whose port keeps hw_counters: a path that loses a
share of its messages (SOFTVERBS_LOSS) is named by both ends from their
ports' resend counters, a host whose own link loses is named by its peers
and explain names its end, and clean runs stay silent.
Prints, per scenario, the seconds from the fault to each end's WARN."""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults as F  # noqa: E402  (namespaces, sides, checks)
import stall  # noqa: E402  (the bridge of namespace hosts)

NRANKS = 4
MKHOST = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'mkhost.py')
BOUND = 60  # three 5 s windows of the four judged, the window in progress, a loaded host
SECONDS = 45
LOSSY_SECONDS = BOUND + 10  # the lossy mesh outlives the bound
ARGS = None


class MeshHosts(stall.RingHosts):
    """NRANKS namespace hosts on one bridge."""

    def __init__(self):
        super().__init__()
        self.ns = self.ns[:NRANKS]


class MeshIbHosts(MeshHosts):
    """The same hosts, their connections RDMA over softverbs."""
    kind = 'ib'


def fixture(tmp, h, i):
    """Rank i's host for softverbs: one RoCE port on eth0 with rank i's
    address, its GIDs from that address, hw_counters the NIC keeps."""
    spec = {
        'hostname': f'mesh-{i}', 'cpu': 'intel', 'numa': [{'cpus': '0-7', 'memory_gb': 64}],
        'roots': {'pci0000:15': 0},
        'devices': [{
            'bdf': '0000:19:00.0', 'path': ['pci0000:15', '0000:15:01.0'], 'model': 'cx6dx',
            'netdevs': [{'name': 'eth0', 'mac': f'1e:3a:7c:50:01:{i + 16:02x}', 'mtu': 1500,
                         'speed': 100000}],
            'rdma': {'name': 'mlx5_0', 'guid': f'1c3a:7cff:fe50:01{i + 16:02x}', 'ports': [{
                'num': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'link_layer': 'Ethernet',
                'rate': '100 Gb/sec (4X EDR)', 'netdev': 'eth0', 'gids': 'auto'}]}}],
        'ifaddrs': [['eth0', 'up', f'{h.ip(i)}/24']],
    }
    out = os.path.join(tmp, f'host{i}')
    path = out + '.json'
    with open(path, 'w') as f:
        json.dump(spec, f)
    F.sh([sys.executable, MKHOST, path, out])
    return out


def ib_env(h, tmp, i):
    """RDMA over softverbs, each rank on its own host: the ports count what a
    lossy path costs (hw_counters), and the ACK timeout is short enough
    (NCCL_IB_TIMEOUT=16, 268 ms) that a lost tail message slows its link
    rather than stalling it."""
    fix = fixture(tmp, h, i)
    return {'NCCL_DIAG_IBVERBS_LIB': ARGS.softverbs, 'NCCL_DIAG_SYSFS_ROOT': fix + '/sysfs',
            'HWLOC_XMLFILE': fix + '/topo.xml', 'NCCL_DIAG_IFADDRS': 'live',
            'HWLOC_COMPONENTS': '-pci', 'SOFTVERBS_HW_COUNTERS': '1', 'NCCL_IB_TIMEOUT': '16'}


def mesh(h, tmp, env=None, seconds=SECONDS, rank_env=None, nranks=NRANKS):
    sides = []
    for i in range(nranks):
        metrics = os.path.join(tmp, f'metrics{i}')
        os.makedirs(metrics, exist_ok=True)
        e = {**h.env('r'), 'NCCL_DIAG_METRICS': metrics, **(env or {})}
        if h.kind == 'ib':
            e.update(ib_env(h, tmp, i))
        e.update((rank_env or {}).get(i, {}))
        args = ['--rank', str(i), '--nranks', str(nranks), '--size', '131072', '--pace-us',
                '10000', '--seconds', str(seconds)]
        sides.append(F.Side(f'r{i}', h.ns[i], e, args, tmp, mode='mesh'))
    return sides


def lines(side, needle):
    try:
        with open(side.log, errors='replace') as f:
            return [x for x in f.read().splitlines() if needle in x]
    except OSError:
        return []


def warns(side):
    return [x for x in lines(side, 'slow link: ') if ' WARN ' in x]


def wait_slow(side, since, bound, which=None):
    """The seconds from since to side's first WARN of which (warns by
    default) and that line, or None, None after bound."""
    end = since + bound
    while time.monotonic() < end:
        found = (which or warns)(side)
        if found:
            return time.monotonic() - since, found[0]
        time.sleep(0.5)
    return None, None


def metrics_flags(tmp, rank):
    """The conns flagged slow in rank's last metrics file: their peer_addr labels."""
    out = []
    for path in glob.glob(os.path.join(tmp, f'metrics{rank}', '*.prom')):
        with open(path) as f:
            for line in f:
                if line.startswith('nccl_diag_connection_slow{') and line.rstrip().endswith(' 1'):
                    out.append(re.search(r'peer_addr="([^"]*)"', line)[1])
    return out


def finish(sides, seconds=SECONDS):
    for s in sides:
        s.wait(seconds + 30)
    for s in sides:
        s.finish()


def sc_lossy(h, tmp, c):
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    a, b = 2, 3
    pair = f'{{ {h.ip(a)}, {h.ip(b)} }}'
    t0 = time.monotonic()
    F.nft_set(h.ns[b], f'ip saddr {pair} ip daddr {pair} numgen random mod 100 < 5 drop')
    for me, other in ((a, b), (b, a)):
        took, line = wait_slow(sides[me], t0, BOUND)
        if not c.ok(took is not None, f'r{me}: a slow-link WARN within {BOUND} s'):
            continue
        c.notes.append(f'r{me} WARN {took:.1f} s after the loss began')
        c.ok(f'{h.ip(other)}<' in line.split(' pid ')[0], f'r{me}: names r{other}: {line[:400]}')
        c.ok(f'({h.ip(me)}<' in line, f'r{me}: names its own end: {line[:400]}')
        c.ok(re.search(r'[1-9]\d* retransmits|[1-9]\d* packets received out of order', line),
             f'r{me}: the counters show it: {line[:400]}')
    for s in sides:
        r = s.wait(LOSSY_SECONDS + 30)
        c.ok(r and r['status'] == 'ok', f'{s.role}: the mesh ran: {r}')
    F.nft_clear(h.ns[b])
    finish(sides, LOSSY_SECONDS)
    out = ' '.join(stall.explain([sides[a].log, sides[b].log]).split())
    c.ok(f'network path between {h.ip(a)} and {h.ip(b)} runs well below' in out,
         f'explain names the path: {out[:600]}')
    for i, s in enumerate(sides):
        warned = warns(s)
        if i in (a, b):
            peers = [ln.split(' pid ')[0] for ln in warned]
            c.ok(all(h.ip(a if i == b else b) in p for p in peers),
                 f'{s.role}: names only the lossy path: {warned}')
            c.ok(len(warned) <= 2, f'{s.role}: said once per direction, at most: {len(warned)}')
            summary = lines(s, 'run summary:')
            c.ok(summary and re.search(r'slow links named: [12]\b', summary[-1]),
                 f'{s.role}: the summary counts it: {summary[-1:]}')
            c.ok(any(x.startswith(h.ip(b if i == a else a)) for x in metrics_flags(tmp, i)),
                 f'{s.role}: the metrics file flags it')
        else:
            c.ok(not warned, f'{s.role}: no slow-link WARN off the lossy path: {warned[:1]}')
    return sides


def sc_lossy_ib(h, tmp, c):
    """RDMA: the path between ranks 2 and 3 loses 5 % of its messages both
    ways (a priority without PFC on one switch hop): each end's port counts
    the resends and out-of-sequence arrivals; both ends name the path."""
    a, b = 2, 3
    loss = {a: {'SOFTVERBS_LOSS': f'50:mlx5_0:{h.ip(b)}'},
            b: {'SOFTVERBS_LOSS': f'50:mlx5_0:{h.ip(a)}'}}
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS, rank_env=loss)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    t0 = time.monotonic()
    for me, other in ((a, b), (b, a)):
        took, line = wait_slow(sides[me], t0, BOUND)
        if not c.ok(took is not None, f'r{me}: a slow-link WARN within {BOUND} s'):
            continue
        c.notes.append(f'r{me} WARN {took:.1f} s after the mesh started')
        c.ok(f'{h.ip(other)}<' in line.split(' pid ')[0], f'r{me}: names r{other}: {line[:400]}')
        c.ok(f'({h.ip(me)}, mlx5_0 port 1)' in line, f'r{me}: names its own end: {line[:400]}')
        c.ok(re.search(r'mlx5_0 port 1 counted [1-9]\d* ', line) and 'PFC' in line,
             f"r{me}: its port's counters and the fix: {line[:700]}")
    for s in sides:
        r = s.wait(LOSSY_SECONDS + 30)
        c.ok(r and r['status'] == 'ok', f'{s.role}: the mesh ran: {r}')
    finish(sides, LOSSY_SECONDS)
    out = ' '.join(stall.explain([sides[a].log, sides[b].log]).split())
    c.ok(f'network path between {h.ip(a)} and {h.ip(b)} runs well below' in out,
         f'explain names the path: {out[:600]}')
    for i, s in enumerate(sides):
        warned = warns(s)
        if i in (a, b):
            peers = [ln.split(' pid ')[0] for ln in warned]
            c.ok(all(h.ip(a if i == b else b) in p for p in peers),
                 f'{s.role}: names only the lossy path: {warned}')
            c.ok(any(x.startswith(h.ip(b if i == a else a)) for x in metrics_flags(tmp, i)),
                 f'{s.role}: the metrics file flags it')
        else:
            c.ok(not warned, f'{s.role}: no slow-link WARN off the lossy path: {warned[:1]}')
    return sides


def port_warns(side):
    return [x for x in lines(side, 'lossy port: ') if ' WARN ' in x]


def sc_lossy_pair_ib(h, tmp, c):
    """RDMA, a job of two hosts: their one path loses 5 % of its messages
    both ways. No connection stands out from its siblings (there are
    none), so each host names its port: what it counted, its connections,
    the fix; no slow-link line, and explain names both ports."""
    loss = {0: {'SOFTVERBS_LOSS': f'50:mlx5_0:{h.ip(1)}'},
            1: {'SOFTVERBS_LOSS': f'50:mlx5_0:{h.ip(0)}'}}
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS, rank_env=loss, nranks=2)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    t0 = time.monotonic()
    for me, other in ((0, 1), (1, 0)):
        took, line = wait_slow(sides[me], t0, BOUND, port_warns)
        if not c.ok(took is not None, f'r{me}: a lossy-port WARN within {BOUND} s'):
            continue
        c.notes.append(f'r{me} WARN {took:.1f} s after the job started')
        c.ok(f'mlx5_0 port 1 on mesh-{me} ({h.ip(me)}) counted ' in line or
             f'({h.ip(me)}) counted ' in line, f'r{me}: names its port and address: {line[:300]}')
        c.ok(f'{h.ip(other)}<' in line and 'PFC' in line,
             f'r{me}: names its peer and the fix: {line[:700]}')
    for s in sides:
        r = s.wait(LOSSY_SECONDS + 30)
        c.ok(r and r['status'] == 'ok', f'{s.role}: the job ran: {r}')
    finish(sides, LOSSY_SECONDS)
    for s in sides:
        c.ok(len(port_warns(s)) == 1, f'{s.role}: said once: {len(port_warns(s))}')
        c.ok(not warns(s), f'{s.role}: no slow-link line (nothing to compare): {warns(s)[:1]}')
        summary = lines(s, 'run summary:')
        c.ok(summary and 'lossy ports named: 1' in summary[-1],
             f'{s.role}: the summary counts it: {summary[-1:]}')
    out = ' '.join(stall.explain([s.log for s in sides]).split())
    for me in (0, 1):
        c.ok(re.search(rf'RDMA port mlx5_0 port 1 on \S+ \({re.escape(h.ip(me))}\) lost packets',
                       out), f'explain names r{me}\'s port: {out[:600]}')
    return sides


def sc_lossy_host_ib(h, tmp, c):
    """RDMA: rank 2's own link loses 5 % of what it carries, both ways (its
    cable or switch port): every other rank names its link to rank 2, rank
    2 sees all its links alike, and explain names rank 2's end, not three
    paths."""
    bad = 2
    loss = {i: {'SOFTVERBS_LOSS': '50:mlx5_0' + ('' if i == bad else f':{h.ip(bad)}')}
            for i in range(NRANKS)}
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS, rank_env=loss)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    t0 = time.monotonic()
    for me in range(NRANKS):
        if me == bad:
            continue
        took, line = wait_slow(sides[me], t0, BOUND)
        if not c.ok(took is not None, f'r{me}: a slow-link WARN within {BOUND} s'):
            continue
        c.notes.append(f'r{me} WARN {took:.1f} s after the mesh started')
        c.ok(f'{h.ip(bad)}<' in line.split(' pid ')[0], f'r{me}: names r{bad}: {line[:400]}')
    for s in sides:
        s.wait(LOSSY_SECONDS + 30)
    finish(sides, LOSSY_SECONDS)
    c.ok(port_warns(sides[bad]), f'r{bad}: names its own port, all its links alike')
    out = ' '.join(stall.explain([s.log for s in sides]).split())
    c.ok(f'every one has {h.ip(bad)} at one end' in out, f'explain names r{bad}\'s end: {out[:600]}')
    for i, s in enumerate(sides):
        warned = [ln.split(' pid ')[0] for ln in warns(s)]
        c.ok(all(h.ip(bad) in p for p in warned) or i == bad,
             f'{s.role}: names only links to r{bad}: {warned}')
    return sides


def shape(h, me, other, rate):
    """me's egress toward other's address through an htb class of rate; the
    rest of its traffic unshaped."""
    tc = ['ip', 'netns', 'exec', h.ns[me], 'tc']
    F.sh(tc + ['qdisc', 'add', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '10',
               'r2q', '1000'])
    F.sh(tc + ['class', 'add', 'dev', 'eth0', 'parent', '1:', 'classid', '1:10', 'htb', 'rate',
               '40gbit'])
    F.sh(tc + ['class', 'add', 'dev', 'eth0', 'parent', '1:', 'classid', '1:20', 'htb', 'rate',
               rate, 'ceil', rate])
    F.sh(tc + ['filter', 'add', 'dev', 'eth0', 'parent', '1:', 'protocol', 'ip', 'prio', '1', 'u32',
               'match', 'ip', 'dst', f'{h.ip(other)}/32', 'flowid', '1:20'])


def check_far_end(h, c, side, me, other, t0):
    """The receiving end of a path shaped one way has no evidence of its
    own: it names its receive from other with what the sending end
    measured, which the sender's liveness checks carry. (Over TCP it may
    also name its own send to other: its ACKs queue behind the shaped
    data.)"""
    took, line = wait_slow(side, t0, BOUND,
                           lambda s: [x for x in warns(s) if 'slow link: receive from ' in x])
    if not c.ok(took is not None, f'r{me}: a slow-link WARN within {BOUND} s'):
        return
    c.notes.append(f'r{me} (the receiving end) WARN {took:.1f} s after the shaping began')
    head = line.split('slow link: ')[1]
    c.ok(head.startswith('receive from ') and f'{h.ip(other)}' in head.split(' pid ')[0],
         f'r{me}: names its receive from r{other}: {line[:400]}')
    c.ok('the other end names this path (its send to this host' in line and
         'a queue builds on this path' in line, f'r{me}: says what the sender measured: '
         f'{line[:700]}')


def sc_shaped(h, tmp, c):
    """The path from rank 2 to rank 3 shaped to 40 Mbit/s, a third of what
    the mesh sends, one way, dropping nothing: rank 2 names it from its
    sockets' RTT, rank 3 from what rank 2's liveness checks say."""
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    a, b = 2, 3
    t0 = time.monotonic()
    shape(h, a, b, '40mbit')
    took, line = wait_slow(sides[a], t0, BOUND)
    if c.ok(took is not None, f'r{a}: a slow-link WARN within {BOUND} s'):
        c.notes.append(f'r{a} (the sending end) WARN {took:.1f} s after the shaping began')
        c.ok(f'{h.ip(b)}<' in line.split(' pid ')[0], f'r{a}: names r{b}: {line[:400]}')
        c.ok('a queue builds on this path' in line, f'r{a}: says why, the RTT: {line[:500]}')
    check_far_end(h, c, sides[b], b, a, t0)
    for s in sides:
        s.wait(LOSSY_SECONDS + 30)
    finish(sides, LOSSY_SECONDS)
    out = ' '.join(stall.explain([sides[a].log, sides[b].log]).split())
    c.ok(f'network path between {h.ip(a)} and {h.ip(b)} runs well below' in out,
         f'explain names the path: {out[:600]}')
    for i, s in enumerate(sides):
        if i not in (a, b):
            c.ok(not warns(s), f'{s.role}: no slow-link WARN off the shaped path: {warns(s)[:1]}')
    return sides


class CnpCounters(threading.Thread):
    """What DCQCN's NICs count on a congested path, played into ranks'
    fixture ports (softverbs has no ECN): the receiving side's CNPs sent,
    the sending side's CNPs handled, a few a second."""

    def __init__(self, tmp, ranks):
        super().__init__(daemon=True)
        self.dirs = [os.path.join(tmp, f'host{r}', 'sysfs', 'class', 'infiniband', 'mlx5_0',
                                  'ports', '1', 'hw_counters') for r in ranks]
        self.stop = threading.Event()

    def run(self):
        n = 0
        for d in self.dirs:
            os.makedirs(d, exist_ok=True)
        while not self.stop.wait(0.25):
            n += 7
            for d in self.dirs:
                for name in ('np_cnp_sent', 'rp_cnp_handled', 'np_ecn_marked_roce_packets'):
                    with open(os.path.join(d, name + '.t'), 'w') as f:
                        f.write(f'{n}\n')
                    os.replace(os.path.join(d, name + '.t'), os.path.join(d, name))


def sc_shaped_ib(h, tmp, c, cnp=False, one_way=False, rate='10mbit'):
    """RDMA: the path between ranks 2 and 3 shaped to rate both ways (10
    Mbit/s, a tenth of what the mesh sends; 40 Mbit/s, a third), nothing
    lost: each end's sending connection names it from its writes'
    completion time (a queue on the path), nobody else warns. With cnp,
    the two ports also count CNPs and ECN marks, as DCQCN's NICs do on a
    congested path: the WARN names the congestion. With one_way, only the
    path from rank 2 to rank 3: rank 3 names it from rank 2's checks."""
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    a, b = 2, 3
    t0 = time.monotonic()
    shape(h, a, b, rate)
    if not one_way:
        shape(h, b, a, rate)
    marks = CnpCounters(tmp, (a, b)) if cnp else None
    if marks:
        marks.start()
    for me, other in ((a, b),) if one_way else ((a, b), (b, a)):
        took, line = wait_slow(sides[me], t0, BOUND)
        if not c.ok(took is not None, f'r{me}: a slow-link WARN within {BOUND} s'):
            continue
        c.notes.append(f'r{me} WARN {took:.1f} s after the shaping began')
        # the ports' CNPs count for both directions; the writes' time for the sender's only
        c.ok((cnp or line.split('slow link: ')[1].startswith('send to ')) and
             f'{h.ip(other)}<' in line.split(' pid ')[0], f'r{me}: names its link to r{other}: '
             f'{line[:400]}')
        if cnp:
            c.ok(re.search(r'mlx5_0 port 1 counted \d+ CNPs sent, \d+ CNPs handled', line) and
                 'the path is congested' in line, f'r{me}: says why, the CNPs: {line[:600]}')
        else:
            c.ok('its writes take' in line and 'a queue builds on this path' in line,
                 f'r{me}: says why, its writes\' completion time: {line[:600]}')
    if one_way:
        check_far_end(h, c, sides[b], b, a, t0)
    if marks:
        marks.stop.set()
    for s in sides:
        s.wait(LOSSY_SECONDS + 30)
    finish(sides, LOSSY_SECONDS)
    for i, s in enumerate(sides):
        if i not in (a, b):
            c.ok(not warns(s), f'{s.role}: no slow-link WARN off the shaped path: {warns(s)[:1]}')
    return sides


def sc_clean(h, tmp, c):
    sides = mesh(h, tmp)
    c.ok(F.started(c, sides), 'the mesh started')
    for s in sides:
        r = s.wait(SECONDS + 30)
        c.ok(r and r['status'] == 'ok', f'{s.role}: the mesh ran: {r}')
    finish(sides)
    for s in sides:
        c.ok(not lines(s, 'slow link: '), f'{s.role}: no slow-link line: '
             f'{lines(s, "slow link: ")[:1]}')
        summary = lines(s, 'run summary:')
        c.ok(summary and 'slow links named: 0' in summary[-1], f'{s.role}: summary says 0')
        m = re.search(r'slowest link: .*? (\d+\.\d+x) the median', (summary or [''])[-1])
        c.notes.append(f'{s.role} slowest {m[1] if m else "?"} of its siblings')
    out = ' '.join(stall.explain([s.log for s in sides]).split())
    c.ok('runs well below the other links' not in out, f'explain: no slow-link finding: {out[:300]}')
    return sides


SCENARIOS = [
    (f'mesh of {NRANKS}: the path between ranks 2 and 3 drops 5 % (nft)', sc_lossy),
    (f'mesh of {NRANKS}: the path from rank 2 to rank 3 shaped to 40 Mbit/s (a third of its '
     'traffic), one way, no loss (tc htb)', sc_shaped),
] + [(f'mesh of {NRANKS}: clean run {k + 1}', sc_clean) for k in range(3)]
SCENARIOS_IB = [
    (f'RDMA mesh of {NRANKS}: the path between ranks 2 and 3 loses 5 % of its messages',
     sc_lossy_ib),
    (f'RDMA mesh of {NRANKS}: rank 2\'s own link loses 5 % both ways', sc_lossy_host_ib),
    ('RDMA job of 2 hosts: their one path loses 5 % both ways', sc_lossy_pair_ib),
    (f'RDMA mesh of {NRANKS}: the path between ranks 2 and 3 shaped to 40 Mbit/s (a third of its '
     'traffic), no loss', lambda h, t, c: sc_shaped_ib(h, t, c, rate='40mbit')),
    (f'RDMA mesh of {NRANKS}: the path from rank 2 to rank 3 shaped to 10 Mbit/s, one way',
     lambda h, t, c: sc_shaped_ib(h, t, c, one_way=True)),
    (f'RDMA mesh of {NRANKS}: the path between ranks 2 and 3 congested (shaped, its ports count '
     'CNPs)', lambda h, t, c: sc_shaped_ib(h, t, c, cnp=True)),
] + [(f'RDMA mesh of {NRANKS}: clean run {k + 1}', sc_clean) for k in range(2)]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--driver', required=True)
    ap.add_argument('--plugin', required=True)
    ap.add_argument('--explain', required=True)
    ap.add_argument('--transport', default='tcp', choices=('tcp', 'ib'))
    ap.add_argument('--softverbs', default='')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--only', default='')
    ap.add_argument('--keep-logs', action='store_true')
    ARGS = ap.parse_args()
    F.ARGS = stall.ARGS = ARGS
    table = SCENARIOS_IB if ARGS.transport == 'ib' else SCENARIOS
    todo = [(t, fn) for t, fn in table if not ARGS.only or ARGS.only in t]
    place = MeshIbHosts if ARGS.transport == 'ib' else MeshHosts
    return run_table(todo, ARGS.transport, place)


def run_table(todo, kind, place):
    """Runs the scenarios (title, fn) ARGS.jobs at a time and prints TAP;
    skipped without root or nft."""
    n = 0
    if os.geteuid() != 0 or not shutil.which('nft'):
        for t, _ in todo:
            n += 1
            print(f'ok {n} - {t} # SKIP needs root (namespaces) and nft', flush=True)
        todo = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=ARGS.jobs) as pool:
        futures = {pool.submit(F.run_one, t, fn, kind, place): t for t, fn in todo}
        for f in concurrent.futures.as_completed(futures):
            n += 1
            F.tap_result(n, futures[f], *f.result())
    print(f'1..{n}')
    return 0

if __name__ == '__main__':
    sys.exit(main())
