#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-net-diag probe on namespace hosts joined by a bridge, each rank
started with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT), as torchrun starts one process per node.

usage: test_probe_netns.py NCCL_NET_DIAG LIBNCCL_22809 LIBNCCL_21903
Cases: a clean run on 4 and on 16 hosts; one host with NCCL_SOCKET_IFNAME
naming no interface and another with a different NCCL_PROTO; a host with
another NCCL release; a rank killed mid-probe; strangers at the
rendezvous; a rank that never starts; two ranks per host; a slow link;
usage errors, and an unwritable --json. Each asserts the exit status of every rank and,
in rank 0's JSON, the host, the cause and the fix."""
import os
import shutil
import subprocess
import sys
import time

import probelib as pl

BIN, NCCL_NEW, NCCL_OLD = sys.argv[1:4]
# Below the ephemeral range (32768 and up), where earlier connections of
# these namespaces could still hold a port.
PORT = 12000 + os.getpid() % 8000


def new_run(hosts, world, port_offset, tmp):
    names = [f'host{i}' for i in range(world)]
    return pl.Run(BIN, world, PORT + port_offset, [hosts.ns(i) for i in range(world)], names,
                  hosts.addr(0), tmp)


def ordered_ok(report):
    return {(p['src'], p['dst']) for p in report['pairs'] if p['ok']}


def clean(hosts, world, args, offset, tmp, label):
    run = new_run(hosts, world, offset, tmp).start(args).finish(240)
    rep = run.report()
    want = {(a, b) for a in range(world) for b in range(world) if a != b}
    ok = run.rc == [0] * world and len(rep['hosts']) == world and ordered_ok(rep) == want \
        and not pl.serious(rep)
    pl.case(ok, f'{label}: every rank exits 0, {len(want)} ordered pairs verified, no problem',
            f'exit {run.rc}, {len(ordered_ok(rep))} pairs ok, problems {pl.serious(rep)}\n'
            + run.logs([0]))
    return run, rep


def sampled(hosts, tmp):
    """More hosts than --all-pairs-max: the ring plus as many random pairs."""
    run = new_run(hosts, 16, 10, tmp).start(['--bytes', '256K', '--all-pairs-max', '8']).finish(120)
    rep = run.report()
    pairs = {(p['src'], p['dst']) for p in rep['pairs'] if p['ok']}
    ring = all((i, (i + 1) % 16) in pairs and ((i + 1) % 16, i) in pairs for i in range(16))
    pl.case(run.rc == [0] * 16 and 'random sample' in rep['pairs_mode'] and ring and
            len(pairs) == 64 and rep['rounds'] <= 8,
            f'16 hosts above --all-pairs-max 8: the ring and 16 random pairs, {len(pairs)} ordered '
            f'pairs in {rep["rounds"]} rounds ({run.wall:.1f} s)',
            f'exit {run.rc} {rep["pairs_mode"]} {sorted(pairs)}\n' + run.logs([0]))


def must_show(hosts, tmp):
    """Host 3 names no interface, host 2 another NCCL_PROTO."""
    env = {3: {'NCCL_SOCKET_IFNAME': 'eth9'}, 2: {'NCCL_PROTO': 'Simple'}}
    run = new_run(hosts, 4, 2, tmp).start(['--bytes', '4M', '--timeout', '60'], env).finish(120)
    rep = run.report()
    why = run.logs([0])
    pl.case(run.rc[0] == 1 and run.rc[1:] == [0, 0, 0],
            'eth9 + NCCL_PROTO: rank 0 exits 1, the other ranks 0', f'exit {run.rc}\n{why}')
    ifname = pl.problems_about(rep, 'NCCL_SOCKET_IFNAME', 'eth9', host='host3')
    pl.case(any(p['severity'] == 'error' and 'eth0' in p['text'] and
                'export NCCL_SOCKET_IFNAME==eth0' in p['fix'] for p in ifname),
            'eth9: an error names host3, NCCL_SOCKET_IFNAME=eth9, the interface it has, the fix',
            f'{ifname}\n{why}')
    proto = pl.problems_about(rep, 'NCCL_PROTO differs', 'Simple', host='host2')
    pl.case(any(p['severity'] == 'error' and 'unset NCCL_PROTO' in p['fix'] and
                'host0' in p['text'] for p in proto),
            'NCCL_PROTO: an error names host2 with Simple against the others, and the fix',
            f'{proto}\n{why}')
    untested = [p for p in rep['pairs'] if 3 in (p['src'], p['dst'])]
    others = {(p['src'], p['dst']) for p in rep['pairs'] if p['ok']}
    pl.case(len(untested) == 6 and all(not p['ok'] and p['cause'] == 'no device' for p in untested)
            and others == {(a, b) for a in range(3) for b in range(3) if a != b},
            'eth9: host3\'s pairs fail as "no device", the other 6 pairs pass',
            f'{untested}\n{why}')


def nccl_versions(hosts, tmp):
    args_of = {r: ['--nccl-lib', NCCL_OLD if r == 1 else NCCL_NEW] for r in range(4)}
    run = new_run(hosts, 4, 3, tmp).start(['--bytes', '1M'], args_of=args_of).finish(120)
    rep = run.report()
    hits = pl.problems_about(rep, 'NCCL versions differ', '2.19.3 on host1', '2.28.9 on host0',
                             host='host1')
    pl.case(run.rc == [1, 0, 0, 0] and any('install the same NCCL' in p['fix'] for p in hits),
            'NCCL 2.19.3 on host1, 2.28.9 elsewhere: exit 1, host1 named, the fix',
            f'exit {run.rc} {hits}\n' + run.logs([0]))
    pl.case(rep['hosts'][1]['nccl']['version'] == '2.19.3' and
            rep['hosts'][1]['nccl']['path'].endswith('libnccl-v21903.so'),
            'the JSON carries each host\'s NCCL version and library', str(rep['hosts'][1]['nccl']))


def killed_rank(hosts, tmp):
    """Rank 2 is killed once the pair rounds run; the probe still ends in time."""
    run = new_run(hosts, 4, 4, tmp).start(['--bytes', '256M', '--timeout', '40'])
    started = run.wait_for(0, 'round 1 of', 30)
    time.sleep(0.2)
    run.kill(2)
    run.finish(60)
    rep = run.report()
    gone = pl.problems_about(rep, 'host2', 'stopped', host='host2')
    pl.case(started and run.rc[0] == 1 and run.rc[1] == 0 and run.rc[3] == 0 and
            rep['hosts'][2]['state'] == 'gone' and any('log' in p['fix'] for p in gone),
            'a rank killed mid-probe: exit 1, host2 named as gone with its cause and what to check',
            f'started {started} exit {run.rc} {gone}\n' + run.logs([0]))
    bad = [p for p in rep['pairs'] if 2 in (p['src'], p['dst']) and p['ok'] is False]
    pl.case(run.wall < 40 and rep['elapsed_s'] < 40 and bad and
            all(p['cause'] in ('host gone', 'not tested') for p in bad if p['tested'] is False),
            f'the probe ends within --timeout 40 ({run.wall:.1f} s) and host2\'s pairs fail',
            f'wall {run.wall:.1f} {bad}')


def never_arrives(hosts, tmp):
    """Rank 3 never starts; later a lone rank waits for a rank 0 that never starts."""
    run = new_run(hosts, 4, 7, tmp).start(['--bytes', '1M', '--timeout', '15'], ranks=[0, 1, 2])
    run.procs = run.procs[:3]
    run.finish(40)
    rep = run.report()
    hits = pl.problems_about(rep, 'rank 3 never reached', 'MASTER_PORT', host='rank 3')
    pl.case(run.rc == [1, 0, 0] and run.wall < 15 and rep['hosts'][3]['state'] == 'never arrived'
            and hits and len([p for p in rep['pairs'] if p['ok']]) == 6,
            f'a rank that never starts: named, the other 3 hosts tested, ends within --timeout 15 '
            f'({run.wall:.1f} s)', f'exit {run.rc} {hits}\n' + run.logs([0]))
    lone = new_run(hosts, 2, 8, tmp).start(['--timeout', '5'], ranks=[1])
    lone.procs = lone.procs[1:]
    lone.finish(40)
    err = open(lone.log(1, 'err')).read()
    pl.case(lone.rc == [1] and 'did not answer' in err and 'MASTER_ADDR' in err,
            f'rank 0 never starts: the other rank gives up ({lone.wall:.1f} s) and says where it '
            'looked', err)


def two_ranks_per_host(hosts, tmp):
    """torchrun --nproc-per-node 2 on two hosts: one rank per host tests the pairs."""
    env = {r: {'LOCAL_RANK': str(r % 2)} for r in range(4)}
    run = pl.Run(BIN, 4, PORT + 9, [hosts.ns(r // 2) for r in range(4)],
                 [f'host{r // 2}' for r in range(4)], hosts.addr(0), tmp)
    run.start(['--bytes', '1M'], env).finish(60)
    rep = run.report()
    pl.case(run.rc == [0] * 4 and rep['host_count'] == 2 and len(rep['hosts']) == 4 and
            {(p['src'], p['dst']) for p in rep['pairs'] if p['ok']} == {(0, 2), (2, 0)},
            'two ranks per host: all four report, local rank 0 of each host tests the pair',
            f'exit {run.rc} {rep["pairs"]}\n' + run.logs([0]))


def slow_link(hosts, tmp):
    """host3 sends at 100 Mbit/s (a token bucket on its eth0): its pairs out are
    flagged after a second measurement; the ones into it are not."""
    tc = ['ip', 'netns', 'exec', hosts.ns(3), 'tc', 'qdisc']
    r = subprocess.run(tc + ['add', 'dev', 'eth0', 'root', 'tbf', 'rate', '100mbit', 'burst',
                             '32kb', 'latency', '100ms'], capture_output=True, text=True)
    if r.returncode:
        pl.case(True, f'a slow link is flagged # SKIP no tc tbf here: {r.stderr.strip()}')
        return
    try:
        run = new_run(hosts, 4, 6, tmp).start(['--bytes', '8M', '--timeout', '120']).finish(180)
    finally:
        subprocess.run(tc + ['del', 'dev', 'eth0', 'root'], capture_output=True)
    rep = run.report()
    out = [p for p in rep['pairs'] if p['src'] == 3]
    into = [p for p in rep['pairs'] if p['dst'] == 3]
    hits = pl.problems_about(rep, 'host3 ->', 'far below the median', 'best of two runs')
    pl.case(run.rc[0] == 1 and all(p['ok'] and p['slow'] and p['retested'] for p in out) and
            not any(p['slow'] for p in into) and len(hits) == 3 and
            all(p['severity'] == 'warning' and 'host3' in p['hosts'] for p in hits),
            'a 100 Mbit/s link out of host3: its 3 pairs out are flagged slow after a retest, '
            'the pairs into it are not',
            f'exit {run.rc} out {out} into {into} {hits}\n' + run.logs([0]))


def strangers(hosts, tmp):
    """A port scanner and a probe of another job knock at rank 0's port."""
    run = new_run(hosts, 2, 5, tmp).start(['--bytes', '1M', '--timeout', '60'], ranks=[0])
    run.wait_for(0, 'waits for', 20)
    scan = subprocess.run(['ip', 'netns', 'exec', hosts.ns(3), 'bash', '-c',
                           f'exec 3<>/dev/tcp/{hosts.addr(0)}/{PORT + 5}; '
                           'printf "GET / HTTP/1.0\\r\\n\\r\\n" >&3; cat <&3'],
                          capture_output=True, timeout=20)
    env = dict(os.environ, RANK='1', WORLD_SIZE='2', MASTER_ADDR=hosts.addr(0),
               MASTER_PORT=str(PORT + 5))
    other = subprocess.run(['ip', 'netns', 'exec', hosts.ns(2), BIN, 'probe', '--job-id', 'other',
                            '--timeout', '20'], capture_output=True, text=True, env=env, timeout=60)
    run.start_rank(1)
    run.finish(60)
    rep = run.report()
    refused = pl.problems_about(rep, 'refused a connection')
    pl.case(other.returncode == 1 and 'refused this rank' in other.stderr and
            'rendezvous secret' in other.stderr and "job ''" not in other.stderr,
            'a probe of another job is refused, says why, and learns nothing of this job',
            other.stderr)
    pl.case(run.rc == [0, 0] and len(refused) >= 2 and
            all(p['severity'] == 'note' for p in refused) and
            'refused a connection from' in open(run.log(0, 'err')).read(),
            'rank 0 names and logs both strangers and keeps serving its own job: exit 0',
            f'exit {run.rc} scanner {scan.returncode} {refused}\n' + run.logs())


def forged_rank(hosts, tmp):
    """A rogue on the network claims rank 1 before the real one (a probe
    without the job's secret), and 200 strangers each half-send a 1 MiB
    message: rank 0 believes none of them, stays small, takes the real
    rank 1 and verifies the pair; a weak secret is said, a strong one not."""
    secret = {'NCCL_DIAG_PROBE_SECRET': os.urandom(16).hex()}
    run = new_run(hosts, 2, 9, tmp).start(['--bytes', '1M', '--timeout', '60'],
                                          env={0: secret, 1: secret}, ranks=[0])
    run.wait_for(0, 'waits for', 20)
    env = dict(os.environ, RANK='1', WORLD_SIZE='2', MASTER_ADDR=hosts.addr(0),
               MASTER_PORT=str(PORT + 9))
    rogue = subprocess.run(['ip', 'netns', 'exec', hosts.ns(3), BIN, 'probe', '--timeout', '20'],
                           capture_output=True, text=True, env=env, timeout=60)
    flood = ('import socket,struct,time\n'
             'ss=[]\n'
             'for i in range(200):\n'
             '  s=socket.create_connection(("%s",%d))\n'
             '  s.settimeout(2)\n'
             '  try: s.sendall(struct.pack("<IHHI",0x4e445052,2,1,1<<20)+b"x"*1000000)\n'
             '  except OSError: pass\n'
             '  ss.append(s)\n'
             'time.sleep(3)\n') % (hosts.addr(0), PORT + 9)
    subprocess.run(['ip', 'netns', 'exec', hosts.ns(2), sys.executable, '-c', flood],
                   capture_output=True, timeout=60)
    try:
        with open(f'/proc/{run.procs[0].pid}/status') as f:
            rss = [int(x.split()[1]) for x in f if x.startswith('VmHWM')][0] // 1024
    except (OSError, IndexError):
        rss = -1
    run.start_rank(1)
    run.finish(60)
    rep = run.report()
    ok = ordered_ok(rep)
    err0 = open(run.log(0, 'err')).read()
    pl.case(rogue.returncode == 1 and 'rendezvous secret' in rogue.stderr,
            'a rank claimed by a host without the secret is refused, and it is told why',
            rogue.stderr[-500:])
    pl.case(run.rc == [0, 0] and ok == {(0, 1), (1, 0)},
            'the real rank 1 is taken and its pair verified: exit 0',
            f'exit {run.rc} pairs {ok}\n' + run.logs())
    pl.case(0 < rss < 120, f'rank 0 stays small under 200 half-sent 1 MiB messages: {rss} MiB')
    pl.case('rendezvous secret comes from' not in err0,
            'a strong secret (NCCL_DIAG_PROBE_SECRET) is not warned about', err0[-500:])
    weak = subprocess.run(['ip', 'netns', 'exec', hosts.ns(4), BIN, 'probe', '--timeout', '5'],
                          capture_output=True, text=True, timeout=60,
                          env=dict(env, RANK='0', WORLD_SIZE='2', SLURM_JOB_ID='4242',
                                   MASTER_ADDR=hosts.addr(4), MASTER_PORT=str(PORT + 11)))
    pl.case('rendezvous secret comes from' in weak.stderr and 'NCCL_DIAG_PROBE_SECRET' in
            weak.stderr, 'a weak secret is said, with the fix', weak.stderr[-500:])


def usage_errors():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RANK', 'WORLD_SIZE', 'OMPI_', 'PMI_', 'SLURM_', 'MASTER_'))}
    r = subprocess.run([BIN, 'probe'], capture_output=True, text=True, env=env)
    pl.case(r.returncode == 2 and all(v in r.stderr for v in
                                      ('RANK', 'WORLD_SIZE', 'OMPI_COMM_WORLD_RANK', 'PMI_RANK',
                                       'SLURM_PROCID')),
            'no launcher: exit 2 naming the variables looked for', r.stderr)
    r = subprocess.run([BIN, 'probe', '--pairs', 'some'], capture_output=True, text=True,
                       env=dict(env, RANK='0', WORLD_SIZE='1'))
    pl.case(r.returncode == 2 and '--pairs' in r.stderr, 'a bad option: exit 2', r.stderr)
    r = subprocess.run([BIN, 'probe', '--json=/nonexistent/dir/p.json'], capture_output=True,
                       text=True, env=dict(env, RANK='0', WORLD_SIZE='1'))
    pl.case(r.returncode == 2 and '/nonexistent/dir/p.json' in r.stderr and
            'No such file or directory' in r.stderr,
            'an unwritable --json=FILE: exit 2 at once, the file and the cause named', r.stderr)


def main():
    usage_errors()
    why = pl.can_netns()
    if why:
        pl.case(True, f'namespace hosts # SKIP {why}')
        return pl.done()
    hosts = pl.Hosts('n', 16)
    tmp = pl.scratch()
    try:
        err = hosts.up()
        if err:
            pl.case(False, 'build 16 namespace hosts on a bridge', err)
            return pl.done()
        for sub in ('c4', 'c16', 'show', 'ver', 'kill', 'str', 'slow', 'never', 'two', 'smp', 'forged'):
            os.makedirs(os.path.join(tmp, sub))
        clean(hosts, 4, [], 0, os.path.join(tmp, 'c4'), 'clean, 4 hosts')
        run, rep = clean(hosts, 16, ['--bytes', '1M'], 1, os.path.join(tmp, 'c16'),
                         'clean, 16 hosts, 1 MiB each way')
        print(f'# 16 hosts, {len(rep["pairs"])} ordered pairs in {rep.get("rounds")} rounds: '
              f'wall time {run.wall:.1f} s (rank 0 reports {rep.get("elapsed_s")} s)')
        sampled(hosts, os.path.join(tmp, 'smp'))
        must_show(hosts, os.path.join(tmp, 'show'))
        nccl_versions(hosts, os.path.join(tmp, 'ver'))
        killed_rank(hosts, os.path.join(tmp, 'kill'))
        strangers(hosts, os.path.join(tmp, 'str'))
        forged_rank(hosts, os.path.join(tmp, 'forged'))
        never_arrives(hosts, os.path.join(tmp, 'never'))
        two_ranks_per_host(hosts, os.path.join(tmp, 'two'))
        slow_link(hosts, os.path.join(tmp, 'slow'))
    finally:
        hosts.down()
        shutil.rmtree(tmp, ignore_errors=True)
    return pl.done()


if __name__ == '__main__':
    sys.exit(main())
