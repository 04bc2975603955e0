#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-net-diag probe compares the RoCE QoS of its hosts: two namespace hosts built from the RoCE
fixture host and its peer (softverbs carries the verbs traffic), each reading the DCB state of a
copy of its fixture host with PFC, trust and ECN added.

usage: test_probe_qos.py NCCL_NET_DIAG SOFTVERBS_LIB SV_NETNS_SH HOST_A HOST_B
Cases: both hosts trust DSCP with PFC and ECN on priority 3, NCCL_IB_TC=106: the QoS travels
with each host's report, no QoS problem; the same with NCCL_IB_TC unset (the classic, on both
hosts): the lossy pair named, fix NCCL_IB_TC=106; host-b has PFC on priority 5 instead: rank 0
names the hosts whose QoS differs and the pair that runs on a lossy priority, with the priority
to make lossless on host-b."""
import os
import shutil
import subprocess
import sys

import probelib as pl

BIN, SOFTVERBS, SVNETNS, HOST_A, HOST_B = sys.argv[1:6]
PORT = 28000 + (os.getpid() * 11) % 4000  # below the ephemeral range
NETDEV = 'xgbe4'  # mlx5_4's interface on both hosts


def with_dcb(src, dst, pfc):
    """A copy of fixture host src whose RoCE interface has DCB state: trust dscp, PFC on pfc."""
    shutil.copytree(src, dst, symlinks=True)
    net = os.path.realpath(os.path.join(dst, 'sysfs/class/net', NETDEV))
    with open(os.path.join(net, 'x-diag-dcb'), 'w') as f:
        f.write(f'pfc-en {pfc}\nprio-tc 0 1 2 3 4 5 6 7\n')
    os.makedirs(os.path.join(net, 'qos'))
    with open(os.path.join(net, 'qos/trust'), 'w') as f:
        f.write('dscp\n')
    for point in ('np', 'rp'):
        d = os.path.join(net, f'ecn/roce_{point}/enable')
        os.makedirs(d)
        for prio in range(8):
            with open(os.path.join(d, str(prio)), 'w') as f:
                f.write('1\n' if prio == pfc else '0\n')
    return dst


def run_pair(name, fixtures, offset, tmp, tc='106'):
    env = {r: {'NCCL_DIAG_IBVERBS_LIB': SOFTVERBS,
               'NCCL_DIAG_SYSFS_ROOT': os.path.join(fixtures[r], 'sysfs'),
               'HWLOC_XMLFILE': os.path.join(fixtures[r], 'topo.xml'),
               'HWLOC_COMPONENTS': '-pci', 'NCCL_DIAG_IFADDRS': 'live',
               'NCCL_SOCKET_IFNAME': '=bond0', 'NCCL_IB_HCA': '=mlx5_4'} | ({'NCCL_IB_TC': tc} if tc else {})
           for r in range(2)}
    run = pl.Run(BIN, 2, PORT + offset, [f'{name}a', f'{name}b'], ['host-a', 'host-b'],
                 '10.0.0.5', tmp)
    return run.start(['--bytes', '1M', '--timeout', '60'], env).finish(120)


def qos_facts(rep):
    return {h['host']: [x.get('qos') for x in h.get('rdma', [])] for h in rep.get('hosts', [])}


def qos_problems(rep):
    return [p for p in rep.get('problems', []) if 'RoCE' in p['text'] or 'PFC' in p['text']]


def same(name, tmp):
    a = with_dcb(HOST_A, os.path.join(tmp, 'a3'), 3)
    b = with_dcb(HOST_B, os.path.join(tmp, 'b3'), 3)
    os.makedirs(os.path.join(tmp, 'same'))
    run = run_pair(name, [a, b], 0, os.path.join(tmp, 'same'))
    rep = run.report()
    facts = qos_facts(rep)
    read = [q for qs in facts.values() for q in qs if q and q.get('state') == 'read']
    pl.case(run.rc == [0, 0] and len(read) == 2 and
            all(q['priority'] == 3 and q['lossless'] and
                q['config'] == 'trust dscp, PFC on 3, ECN on 3' for q in read) and
            not qos_problems(rep),
            'same QoS on both hosts, NCCL_IB_TC=106: each report carries it, lossless on '
            'priority 3, no QoS problem',
            f'exit {run.rc} {facts} {qos_problems(rep)}\n' + run.logs([0]))


def classic(name, tmp):
    a, b = os.path.join(tmp, 'a3'), os.path.join(tmp, 'b3')
    os.makedirs(os.path.join(tmp, 'classic'))
    run = run_pair(name, [a, b], 2, os.path.join(tmp, 'classic'), tc=None)
    rep = run.report()
    ps = qos_problems(rep)
    lossy = [p for p in ps if 'lossy priority' in p['text'] and
             'host-a sends NCCL_IB_TC=0 (DSCP 0) on priority 0 of mlx5_4 (xgbe4), where PFC is '
             'off (PFC on 3)' in p['text'] and 'host-b sends NCCL_IB_TC=0' in p['text'] and
             'host-a <-> host-b' in p['text'] and
             p['fix'].startswith('export NCCL_IB_TC=106 (DSCP 26, a PFC priority there) on '
                                 'every host')]
    pl.case(run.rc[1] == 0 and len(ps) == 1 and lossy,
            'NCCL_IB_TC unset on hosts with PFC on priority 3: the lossy pair named once, fix '
            'NCCL_IB_TC=106 on every host', f'exit {run.rc} {ps}\n' + run.logs([0]))


def differs(name, tmp):
    a = os.path.join(tmp, 'a3')
    b = with_dcb(HOST_B, os.path.join(tmp, 'b5'), 5)
    os.makedirs(os.path.join(tmp, 'differs'))
    run = run_pair(name, [a, b], 1, os.path.join(tmp, 'differs'))
    rep = run.report()
    ps = qos_problems(rep)
    diff = [p for p in ps if 'the RoCE QoS of the RDMA ports differs' in p['text'] and
            'PFC on 3' in p['text'] and 'PFC on 5' in p['text'] and 'host-a' in p['text'] and
            'host-b' in p['text']]
    lossy = [p for p in ps if 'lossy priority' in p['text'] and
             'host-b sends NCCL_IB_TC=106 (DSCP 26) on priority 3 of mlx5_4 (xgbe4), where PFC '
             'is off (PFC on 5)' in p['text'] and 'host-a <-> host-b' in p['text'] and
             'host-b' in p['hosts'] and 'host-a' not in p['hosts'] and
             p['fix'].startswith('enable PFC on priority 3 of xgbe4 on host-b, as on the other')]
    pl.case(run.rc[1] == 0 and diff and lossy and
            all(p['severity'] == 'warning' for p in diff + lossy),
            'host-b has PFC on priority 5: the hosts whose QoS differs and the lossy pair are '
            'named, with the priority to make lossless on host-b',
            f'exit {run.rc} {ps}\n' + run.logs([0]))


def main():
    why = subprocess.run([SVNETNS, 'check'], capture_output=True, text=True)
    if why.returncode:
        pl.case(True, f'probe compares RoCE QoS between namespace hosts # SKIP {why.stdout.strip()}')
        return pl.done()
    name = f'svd{os.getpid()}'
    tmp = pl.scratch()
    try:
        up = subprocess.run([SVNETNS, 'up', name, HOST_A, HOST_B], capture_output=True, text=True)
        if up.returncode:
            pl.case(False, 'build the two RDMA namespace hosts', up.stderr)
            return pl.done()
        same(name, tmp)
        classic(name, tmp)
        differs(name, tmp)
    finally:
        subprocess.run([SVNETNS, 'down', name])
        shutil.rmtree(tmp, ignore_errors=True)
    return pl.done()


if __name__ == '__main__':
    sys.exit(main())
