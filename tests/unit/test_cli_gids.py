#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""doctor's per-GID view, as show_gids prints it: one line per GID with
DEV PORT INDEX GID IPv4 VER DEV, so grep finds a GID by its address or its
netdev; the GID this plugin uses is marked on its line.

usage: test_cli_gids.py NCCL_NET_DIAG HOSTS_DIR"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
from taplib import case as check, done  # noqa: E402

tool, hosts = sys.argv[1], sys.argv[2]


def doctor(host):
    e = {k: v for k, v in os.environ.items() if not k.startswith(('NCCL_', 'HWLOC_'))}
    e.update(HWLOC_COMPONENTS='-pci', NCCL_DIAG_SYSFS_ROOT=os.path.join(hosts, host, 'sysfs'),
             HWLOC_XMLFILE=os.path.join(hosts, host, 'topo.xml'))
    return subprocess.run([tool, 'doctor', '--pid1-environ', '/dev/null'], capture_output=True,
                          text=True, timeout=60, env=e).stdout


out = doctor('roce-story5')
lines = [x.split() for x in out.splitlines() if '10.1.2.5' in x and x.startswith('  mlx5_2 ')]
check(len(lines) == 2 and [x[2] for x in lines] == ['2', '3'] and
      [x[5] for x in lines] == ['v1', 'v2'] and all(x[6] == 'xgbe2' for x in lines),
      'grep 10.1.2.5: mlx5_2 port 1, GID 2 (v1) and GID 3 (v2) on xgbe2, one line each', out)
check(lines and lines[-1][-1] == 'chosen' and lines[0][-1] != 'chosen',
      'the GID this plugin uses (RoCE v2, IPv4) is marked on its line', lines)
head = [x for x in out.splitlines() if x.split()[:7] == ['DEV', 'PORT', 'INDEX', 'GID', 'IPv4',
                                                         'VER', 'DEV']]
check(len(head) == 1, "the view's header is show_gids' columns", out[:2000])
ib = doctor('ib-hdr')
rows = [x.split() for x in ib.splitlines() if x.startswith('  mlx5_0 ') and 'fe80::' in x]
check(len(rows) == 1 and rows[0][4:6] == ['-', 'IB'],
      'an InfiniBand port: its GID, no IPv4, VER IB', ib[:3000])
sys.exit(done())
