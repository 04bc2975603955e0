#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The slow link named while the job runs: a mesh of namespace hosts (every
rank sends to and receives from every other, each connection streaming on
its own), TCP. One path is made lossy with nftables (a share of its packets
dropped, both ways); its two ends must each WARN "slow link:" once, naming
the other end's address, with the counters that show it (retransmits,
packets out of order), within the bound, while the other ranks stay
silent; the end-of-job summary counts it and the metrics file flags it.
A path shaped to a low rate both ways (tc htb, nothing dropped) is named
by each end's sending connection, from its RTT: a queue on the path.
Clean runs of the same shape, several times over, must give no finding.
Prints, per scenario, the seconds from the fault to each end's WARN."""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults as F  # noqa: E402  (namespaces, sides, checks)
import stall  # noqa: E402  (the bridge of namespace hosts)

NRANKS = 4
BOUND = 60  # three 5 s windows of the four judged, the window in progress, a loaded host
SECONDS = 45
LOSSY_SECONDS = BOUND + 10  # the lossy mesh outlives the bound
ARGS = None


class MeshHosts(stall.RingHosts):
    """NRANKS namespace hosts on one bridge."""

    def __init__(self):
        super().__init__()
        self.ns = self.ns[:NRANKS]


def mesh(h, tmp, env=None, seconds=SECONDS):
    sides = []
    for i in range(NRANKS):
        metrics = os.path.join(tmp, f'metrics{i}')
        os.makedirs(metrics, exist_ok=True)
        e = {**h.env('r'), 'NCCL_DIAG_METRICS': metrics, **(env or {})}
        args = ['--rank', str(i), '--nranks', str(NRANKS), '--size', '131072', '--pace-us',
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


def wait_slow(side, since, bound):
    end = since + bound
    while time.monotonic() < end:
        found = warns(side)
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


def sc_shaped(h, tmp, c):
    """The path between ranks 2 and 3 shaped to a tenth of what the mesh
    sends, both ways, dropping nothing: both ends name it."""
    sides = mesh(h, tmp, seconds=LOSSY_SECONDS)
    if not F.started(c, sides):
        finish(sides, LOSSY_SECONDS)
        return sides
    a, b = 2, 3
    t0 = time.monotonic()
    shape(h, a, b, '10mbit')
    shape(h, b, a, '10mbit')
    for me, other in ((a, b), (b, a)):
        took, line = wait_slow(sides[me], t0, BOUND)
        if not c.ok(took is not None, f'r{me}: a slow-link WARN within {BOUND} s'):
            continue
        c.notes.append(f'r{me} WARN {took:.1f} s after the shaping began')
        c.ok(f'{h.ip(other)}<' in line.split(' pid ')[0], f'r{me}: names r{other}: {line[:400]}')
        c.ok('a queue builds on this path' in line, f'r{me}: says why, the RTT: {line[:500]}')
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
    (f'mesh of {NRANKS}: the path between ranks 2 and 3 shaped to 10 Mbit/s, no loss (tc htb)',
     sc_shaped),
] + [(f'mesh of {NRANKS}: clean run {k + 1}', sc_clean) for k in range(3)]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--driver', required=True)
    ap.add_argument('--plugin', required=True)
    ap.add_argument('--explain', required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--only', default='')
    ap.add_argument('--keep-logs', action='store_true')
    ARGS = ap.parse_args()
    F.ARGS = stall.ARGS = ARGS
    todo = [(t, fn) for t, fn in SCENARIOS if not ARGS.only or ARGS.only in t]
    n = 0
    if os.geteuid() != 0 or not shutil.which('nft'):
        for t, _ in todo:
            n += 1
            print(f'ok {n} - {t} # SKIP needs root (namespaces) and nft', flush=True)
        todo = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=ARGS.jobs) as pool:
        futures = {pool.submit(F.run_one, t, fn, 'tcp', MeshHosts): t for t, fn in todo}
        for f in concurrent.futures.as_completed(futures):
            n += 1
            F.tap_result(n, futures[f], *f.result())
    print(f'1..{n}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
