#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-net-diag probe over RDMA: two namespace hosts built from the RoCE
fixture host and its peer (softverbs carries the verbs traffic, so the
kernel's routing decides which RDMA paths exist), each probe started with
torchrun's variables and the RDMA ports NCCL_IB_HCA names.

usage: test_probe_rdma.py NCCL_NET_DIAG SOFTVERBS_LIB SV_NETNS_SH HOST_A HOST_B
Cases: both hosts on the RDMA plane (mlx5_4): the pair passes over RDMA;
host-a on its storage-plane port (mlx5_bond_0): the pair fails, and rank
0's JSON names both hosts, both subnets and the fix the plugin gives;
NCCL_IB_GID_INDEX=1 (link-local) on host-a: the pair passes over RDMA,
repaired, and is a warning with the fix on host-a; a cross-rail pair
(host-a's device 0 mlx5_2, host-b's mlx5_3): repaired onto a port on the
peer's rail, a warning with NCCL_CROSS_NIC=0; host-b's port linking at a
quarter of host-a's rate: both directions pass, and a warning (exit 1) names
host-b, both rates and how to check the links."""
import os
import shutil
import subprocess
import sys

import probelib as pl

BIN, SOFTVERBS, SVNETNS, HOST_A, HOST_B = sys.argv[1:6]
PORT = 20000 + (os.getpid() * 7) % 8000  # below the ephemeral range


def run_pair(name, hca_a, hca_b, offset, tmp, extra_a=None, host_b=None):
    fixtures = [HOST_A, host_b or HOST_B]
    env = {}
    for r, hca in enumerate((hca_a, hca_b)):
        env[r] = dict(extra_a or {}) if r == 0 else {}
        env[r] |= {'NCCL_DIAG_IBVERBS_LIB': SOFTVERBS,
                  'NCCL_DIAG_SYSFS_ROOT': os.path.join(fixtures[r], 'sysfs'),
                  'HWLOC_XMLFILE': os.path.join(fixtures[r], 'topo.xml'),
                  'HWLOC_COMPONENTS': '-pci', 'NCCL_DIAG_IFADDRS': 'live',
                  'NCCL_SOCKET_IFNAME': '=bond0', 'NCCL_IB_HCA': hca}
    run = pl.Run(BIN, 2, PORT + offset, [f'{name}a', f'{name}b'], ['host-a', 'host-b'],
                 '10.0.0.5', tmp)
    return run.start(['--bytes', '8M', '--timeout', '60'], env).finish(120)


def main():
    why = subprocess.run([SVNETNS, 'check'], capture_output=True, text=True)
    if why.returncode:
        pl.case(True, f'probe over RDMA between namespace hosts # SKIP {why.stdout.strip()}')
        return pl.done()
    name = f'svq{os.getpid()}'
    tmp = pl.scratch()
    try:
        up = subprocess.run([SVNETNS, 'up', name, HOST_A, HOST_B], capture_output=True, text=True)
        if up.returncode:
            pl.case(False, 'build the two RDMA namespace hosts', up.stderr)
            return pl.done()
        os.makedirs(os.path.join(tmp, 'ok'))
        run = run_pair(name, '=mlx5_4', '=mlx5_4', 0, os.path.join(tmp, 'ok'))
        rep = run.report()
        rdma = [p for p in rep['pairs'] if p['ok'] and p['transport'] == 'RDMA' and
                p['device_name'] == 'mlx5_4']
        pl.case(run.rc == [0, 0] and len(rdma) == 2 and not pl.serious(rep),
                'both hosts on the RDMA plane: both directions pass over RDMA on mlx5_4, exit 0',
                f'exit {run.rc} {rep["pairs"]} {pl.serious(rep)}\n' + run.logs([0]))
        os.makedirs(os.path.join(tmp, 'cross'))
        run = run_pair(name, '=mlx5_bond_0', '=mlx5_4', 1, os.path.join(tmp, 'cross'))
        rep = run.report()
        hits = pl.problems_about(rep, '10.0.0.0/24', '10.1.4.0/24', host='host-a')
        pl.case(run.rc == [1, 0] and
                all(not p['ok'] and p['cause'] == 'cross-plane' for p in rep['pairs']) and
                any('host-b' in p['hosts'] and p['severity'] == 'error' and
                    'export NCCL_IB_HCA=^mlx5_bond_0 on every node' in p['fix'] for p in hits),
                'a cross-plane pair (mlx5_bond_0 to mlx5_4): exit 1, both hosts, both subnets '
                'and the fix in the JSON',
                f'exit {run.rc} {hits}\n' + run.logs([0]))
        os.makedirs(os.path.join(tmp, 'repaired'))
        run = run_pair(name, '=mlx5_4', '=mlx5_4', 2, os.path.join(tmp, 'repaired'),
                       {'NCCL_IB_GID_INDEX': '1'})
        rep = run.report()
        rdma = [p for p in rep['pairs'] if p['ok'] and p['transport'] == 'RDMA' and
                p.get('plugin_cause') == 'repaired']
        hits = [p for p in rep.get('problems', []) if p['severity'] == 'warning' and
                'repaired' in p['text'] and 'NCCL_IB_GID_INDEX=1 is forced on host-a' in p['fix']]
        pl.case(len(rdma) == 2 and hits,
                'a link-local GID forced on host-a: both directions pass over RDMA, repaired, '
                'and the probe names it as a warning with the fix on host-a',
                f'exit {run.rc} {rep["pairs"]} {rep.get("problems")}\n' + run.logs([0]))
        os.makedirs(os.path.join(tmp, 'rail'))
        run = run_pair(name, '=mlx5_2,mlx5_3', '=mlx5_3,mlx5_4', 3, os.path.join(tmp, 'rail'))
        rep = run.report()
        rdma = [p for p in rep['pairs'] if p['ok'] and p['transport'] == 'RDMA' and
                p.get('plugin_cause') == 'repaired']
        hits = [p for p in rep.get('problems', []) if p['severity'] == 'warning' and
                'cross-rail pair' in p['text'] and 'NCCL_CROSS_NIC=0' in p['fix']]
        pl.case(len(rdma) >= 2 and hits,
                'a cross-rail pair: both directions pass over RDMA on a port on the peer\'s rail, '
                'and the probe names it as a warning with NCCL_CROSS_NIC=0',
                f'exit {run.rc} {rep["pairs"]} {rep.get("problems")}\n' + run.logs([0]))
        slow_b = os.path.join(tmp, 'slow-b')
        shutil.copytree(HOST_B, slow_b, symlinks=True)
        with open(os.path.join(slow_b, 'sysfs/class/infiniband/mlx5_4/ports/1/rate'), 'w') as f:
            f.write('25 Gb/sec (1X EDR)\n')
        os.makedirs(os.path.join(tmp, 'rate'))
        run = run_pair(name, '=mlx5_4', '=mlx5_4', 4, os.path.join(tmp, 'rate'), host_b=slow_b)
        rep = run.report()
        hits = [p for p in rep.get('problems', []) if p['severity'] == 'warning' and
                'link rate of the fastest RDMA port of each node differs' in p['text']]
        h = hits[0] if hits else {}
        pl.case(run.rc == [1, 0] and len(hits) == 1 and '100 Gb/s' in h['text'] and
                '25 Gb/s' in h['text'] and 'host-b' in h.get('hosts', '') and
                'mlxlink' in h.get('fix', ''),
                'host-b\'s port links at 25 Gb/s, host-a\'s at 100: one warning naming host-b, '
                'both rates and how to check the links',
                f'exit {run.rc} {rep.get("problems")}\n' + run.logs([0]))
    finally:
        subprocess.run([SVNETNS, 'down', name])
        shutil.rmtree(tmp, ignore_errors=True)
    return pl.done()


if __name__ == '__main__':
    sys.exit(main())
