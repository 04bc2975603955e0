#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A port that flaps while the job runs: a mesh of namespace hosts over
RDMA (softverbs, each rank on a fixture host of its own), one rank's port
taken down for a while and brought back (SOFTVERBS_PORT_EVENTS: the port's
events, and its link carries nothing meanwhile, both ways). The queue
pairs' deadline is NCCL_IB_TIMEOUT=16 with NCCL_IB_RETRY_CNT=7, 2.1 s:
- a flap shorter than that loses nothing: every rank runs to the end, and
  the flapped rank's port says it came back within the deadline and that
  no connection on it failed;
- a longer one fails that rank's connections (retry exceeded, its own or
  its peers'), and the port's return counts those that failed while it was
  down (some hear of it only after) and names the NCCL_IB_TIMEOUT that
  would have ridden it out;
- a flap longer than the stall time (NCCL_DIAG_STALL_SEC) but inside a
  longer deadline stalls every rank: each names that port as the root (the
  flapped rank its own port, the others that rank's, which its liveness
  answers tell), and no rank blames a slow or lossy path for what the
  flap did.
Prints, per scenario, the seconds from the port's return to its WARN, or
from the port's loss to each rank's stall WARN."""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults as F  # noqa: E402  (namespaces, sides, checks)
import slow  # noqa: E402  (the RDMA mesh: its fixture hosts and ranks)
import stall  # noqa: E402

RANK = 2
SECONDS = 30
ARGS = None


def active_line(side):
    return [x for x in slow.lines(side, 'device mlx5_0 port 1: port active') if ' WARN ' in x]


def blamed_path(sides):
    """The slow-link and lossy-port WARNs of every rank: a flap is none."""
    return [x for s in sides for x in slow.lines(s, ' WARN ')
            if 'slow link: ' in x or 'lossy port: ' in x]


def explained(c, sides, needles):
    """explain over every rank's log: its first finding is the port's flap."""
    out = ' '.join(stall.explain([s.log for s in sides]).split())
    first = out.split(' 2. [')[0]
    c.ok('1. [high] cause: RDMA port mlx5_0 port 1 on vm went down while the job ran' in first
         and all(n in first for n in needles),
         f'explain: the flap first, one finding for the port and what it caused: {first[:700]}')


def ran_clean(c, sides, seconds):
    """Every rank ran to its end, and none blamed a path for the flap."""
    for s in sides:
        r = s.wait(seconds + 30)
        c.ok(r and r['status'] == 'ok', f'{s.role}: the mesh ran to its end: {F.short(r)}')
    slow.finish(sides, seconds)
    blamed = blamed_path(sides)
    c.ok(not blamed, f'no rank blames a path for the flap: {blamed[:2]}')


def flap(h, tmp, c, down_s, env=None, seconds=SECONDS, watch=None, rate=None):
    """watch(sides, t0, down_s), when given, takes the down time instead of
    a sleep: t0 is when the port went down. rate, when given, is the rate
    the port's link retrains at (its sysfs rate while it is down)."""
    events = os.path.join(tmp, 'events')
    open(events, 'w').close()
    rank_env = {i: dict(env or {}) for i in range(slow.NRANKS)}
    rank_env[RANK]['SOFTVERBS_PORT_EVENTS'] = events
    sides = slow.mesh(h, tmp, seconds=seconds, rank_env=rank_env)
    if not F.started(c, sides):
        slow.finish(sides, SECONDS)
        return sides, None
    with open(events, 'w') as f:
        f.write('down:mlx5_0:1\n')
    if rate:
        with open(os.path.join(tmp, f'host{RANK}', 'sysfs', 'class', 'infiniband', 'mlx5_0',
                               'ports', '1', 'rate'), 'w') as f:
            f.write(rate + '\n')
    if watch:
        watch(sides, time.monotonic(), down_s)
    else:
        time.sleep(down_s)
    with open(events, 'w') as f:
        f.write('')
    t0 = time.monotonic()
    took, line = slow.wait_slow(sides[RANK], t0, 10, active_line)
    if c.ok(took is not None, f'r{RANK}: the port\'s return is said within 10 s'):
        c.notes.append(f'r{RANK} port WARN {took:.1f} s after it came back')
    c.ok(any('mlx5_0 port 1' in x and 'port error' in x
             for x in slow.lines(sides[RANK], ' WARN ')),
         f'r{RANK}: the port going down is said')
    return sides, line or ''


def sc_short(h, tmp, c):
    """Down 1 s, inside the 2.1 s deadline: nothing lost; the link retrains
    with 2 of its 4 lanes, and the port's return says so."""
    sides, line = flap(h, tmp, c, 1.0, rate='50 Gb/sec (2X EDR)')
    if line is not None:
        c.ok(re.search(r'port active again after (0\.9|1\.)\d+ s down, within its queue pairs\' deadline '
                       r'of 2\.1 s \(NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7\): no connection of '
                       r'this process on it failed: its connections survived the flap', line),
             f'r{RANK}: within the deadline, nothing failed: {line[:500]}')
        c.ok('survived the flap; and it came back at 50 Gb/sec (2X EDR), below the 100 Gb/sec it '
             'linked at when the job started' in line and 'mlxlink -d mlx5_0 -p 1' in line,
             f'r{RANK}: the link came back slower, said with the check: {line[:700]}')
    ran_clean(c, sides, SECONDS)
    explained(c, sides, ['within its queue pairs\' deadline of 2.1 s', 'rode it out'])
    # the link carried nothing while down: the queue pairs that had a message
    # on it (rank 2's, or its peers' toward it) timed out and sent it again
    total = 0
    for i in range(slow.NRANKS):
        path = os.path.join(tmp, f'host{i}', 'sysfs', 'class', 'infiniband', 'mlx5_0', 'ports',
                            '1', 'hw_counters', 'local_ack_timeout_err')
        try:
            with open(path) as f:
                total += int(f.read().strip() or 0)
        except (OSError, ValueError):
            pass
    c.ok(total > 0, f'ACK timeouts counted while rank {RANK}\'s port was down: {total}')
    return sides


def sc_long(h, tmp, c):
    """Down 4 s, past the deadline: its connections fail."""
    # liveness checks every second (a tenth of this, at least 1 s), so the
    # peers hear of the port before their queue pairs give up
    sides, line = flap(h, tmp, c, 4.0, env={'NCCL_DIAG_PEER_TIMEOUT_SEC': '10'})
    if line is not None:
        m = re.search(r'port active again after (3\.9|4\.)\d+ s down, longer than its queue '
                      r'pairs\' deadline of 2\.1 s \(NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7\): '
                      r'(no|\d+) connections? of this process on it failed while it was down '
                      r'\(a connection that sent into the dead link', line)
        # the count is what this process saw fail before the port came back:
        # its connection-failure WARNs before that line (a failure its peer
        # caused may be heard of only after)
        warned = slow.lines(sides[RANK], ' WARN ')
        before = warned[:warned.index(line)] if line in warned else []
        failed = [x for x in before
                  if re.search(r'(send|receive) connection with .* \(RDMA\): ', x)]
        n = 0 if not m or m[2] == 'no' else int(m[2])
        c.ok(m and n == len(failed), f'r{RANK}: past the deadline, the connections that failed '
             f'while it was down counted ({len(failed)} WARNs before it): {line[:500]}')
        c.ok('set NCCL_IB_TIMEOUT=18' in line, f'r{RANK}: the timeout that rides it out: '
             f'{line[:600]}')
    r = sides[RANK].wait(SECONDS + 30) if sides else None
    c.ok(r and r['status'] == 'error', f'r{RANK}: its connections failed: {F.short(r)}')
    if sides:
        c.ok(any('IBV_WC_RETRY_EXC_ERR' in x for x in slow.lines(sides[RANK], ' WARN ')),
             f'r{RANK}: its connections end with retry-exceeded errors')
        # a peer whose writes to it went unacknowledged names its port, not the path
        for s in sides[:RANK] + sides[RANK + 1:]:
            retry = [x for x in slow.lines(s, ' WARN ') if 'IBV_WC_RETRY_EXC_ERR' in x
                     and 'side ended the connection' not in x]  # not the peer's words relayed
            named = [x for x in retry if "the peer's RDMA port (vm's mlx5_0) " in x]
            c.ok(len(named) == len(retry), f'{s.role}: its retry-exceeded WARNs name the '
                 f'peer\'s port ({len(named)} of {len(retry)}): {retry[:1]}')
            if retry:
                c.notes.append(f'{s.role}: {len(retry)} retry-exceeded, port named')
    slow.finish(sides, SECONDS)
    blamed = blamed_path(sides)
    c.ok(not blamed, f'no rank blames a path for the flap: {blamed[:2]}')
    explained(c, sides, ['longer than its queue pairs\' deadline of 2.1 s',
                         'its consequence', 'set NCCL_IB_TIMEOUT=18 on every rank'])
    return sides


STALL = 8
STALL_ENV = {'NCCL_DIAG_STALL_SEC': str(STALL), 'NCCL_DIAG_STALL_WARN_SEC': '0',
             'NCCL_IB_TIMEOUT': '19'}  # deadline 17.2 s


def stall_lines(side):
    return [x for x in slow.lines(side, ' WARN ') if 'stall: ' in x]


def sc_stall(h, tmp, c):
    """Down 12 s: past the stall time, inside the 17.2 s deadline."""
    seconds = 45
    took = {}

    def watch(sides, t0, down_s):
        while time.monotonic() - t0 < down_s:
            for s in sides:
                if s.role not in took and stall_lines(s):
                    took[s.role] = time.monotonic() - t0
            time.sleep(0.25)

    sides, line = flap(h, tmp, c, 12.0, env=STALL_ENV, seconds=seconds, watch=watch)
    if took:
        c.notes.append('stall WARN after the port went down: ' +
                       ', '.join(f'{r} {t:.1f} s' for r, t in sorted(took.items())))
    for s in sides:
        c.ok(s.role in took and took[s.role] <= STALL + 4,
             f'{s.role}: its stall WARN while the port was down, within {STALL + 4} s: '
             f'{took.get(s.role)}')
    if line is None:
        return sides
    c.ok(re.search(r"within its queue pairs' deadline of 17\.2 s .*survived the flap", line),
         f'r{RANK}: the flap was inside the deadline: {line[:400]}')
    flapped = sides[RANK]
    for s in sides:
        st = stall_lines(s)
        if not c.ok(st, f'{s.role}: a stall WARN while the port was down'):
            continue
        if s is flapped:
            c.ok(all('this host\'s RDMA port mlx5_0 port 1 is down' in x for x in st),
                 f'{s.role}: its stall names its own port: {st[0][:500]}')
            c.ok(len(st) == 1, f'{s.role}: said once for the port, not per connection: {len(st)}')
            c.ok('nothing is lost' in st[0], f'{s.role}: and that its return in time loses '
                 f'nothing: {st[0][:600]}')
        else:
            named = [x for x in st if f'pid {flapped.pid} ' in x and
                     ('whose RDMA port is down' in x or 'network link of its process is down' in x)]
            c.ok(len(named) == len(st), f'{s.role}: every stall WARN names r{RANK}\'s port '
                 f'({len(named)} of {len(st)}): {st[0][:500]}')
    ran_clean(c, sides, seconds)
    for logs, label in (([s.log for s in sides], 'every rank'), ([sides[0].log], 'r0 alone')):
        out = ' '.join(stall.explain(logs).split())
        c.ok(f'of vm pid {flapped.pid}' in out and 'that is down' in out and
             ('root is RDMA port mlx5_0 port 1 of' in out or label != 'every rank'),
             f'explain ({label}) names the port: {out[:600]}')
    return sides


SCENARIOS = [
    (f'RDMA mesh of {slow.NRANKS}: rank {RANK}\'s port down 1 s, inside the queue pairs\' '
     'deadline, back with half its lanes', sc_short),
    (f'RDMA mesh of {slow.NRANKS}: rank {RANK}\'s port down 4 s, past the queue pairs\' '
     'deadline', sc_long),
    (f'RDMA mesh of {slow.NRANKS}: rank {RANK}\'s port down 12 s, past the stall time, inside '
     'the deadline', sc_stall),
]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--driver', required=True)
    ap.add_argument('--plugin', required=True)
    ap.add_argument('--explain', required=True)
    ap.add_argument('--softverbs', required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--only', default='')
    ap.add_argument('--keep-logs', action='store_true')
    ARGS = ap.parse_args()
    ARGS.transport = 'ib'
    F.ARGS = stall.ARGS = slow.ARGS = ARGS
    todo = [(t, fn) for t, fn in SCENARIOS if not ARGS.only or ARGS.only in t]
    return slow.run_table(todo, 'ib', slow.MeshIbHosts)

if __name__ == '__main__':
    sys.exit(main())
