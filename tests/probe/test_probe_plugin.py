#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-net-diag probe on namespace hosts where each node names the plugin
its own way, and where interface names differ, as users set them up.

usage: test_probe_plugin.py NCCL_NET_DIAG PLUGIN_SO
Cases: NCCL_NET_PLUGIN=diag (found through LD_LIBRARY_PATH) on one host and
the full path of the same file on the other: one plugin, exit 0. A path that
does not exist on one host: exit 1, that host named, and a fix that does not
copy the broken value. A misspelt NCCL_* name on one host: one warning
with the closest name. Socket interfaces eth0 and ens1f0 on one subnet, with
NCCL_SOCKET_IFNAME=e on both: a note, exit 0."""
import os
import shutil
import subprocess
import sys

import probelib as pl

BIN, PLUGIN = sys.argv[1:3]
PLUGIN_DIR = os.path.dirname(os.path.abspath(PLUGIN))
PORT = 12000 + (os.getpid() + 4000) % 8000


def new_run(hosts, port_offset, tmp):
    return pl.Run(BIN, 2, PORT + port_offset, [hosts.ns(0), hosts.ns(1)], ['host0', 'host1'],
                  hosts.addr(0), tmp)


# The tools' own override would hide NCCL_NET_PLUGIN: each rank goes without it.
def env_of(**kw):
    return dict(NCCL_DIAG_PLUGIN_PATH='', **kw)


def same_plugin(hosts, tmp):
    env = {0: env_of(NCCL_NET_PLUGIN='diag', LD_LIBRARY_PATH=PLUGIN_DIR),
           1: env_of(NCCL_NET_PLUGIN=os.path.abspath(PLUGIN))}
    run = new_run(hosts, 0, tmp).start(['--bytes', '1M'], env).finish(120)
    rep = run.report()
    about = pl.problems_about(rep, 'NCCL_NET_PLUGIN')
    pl.case(run.rc == [0, 0] and not pl.serious(rep) and not about,
            'NCCL_NET_PLUGIN=diag on host0, the full path of the same file on host1: one plugin, '
            'both ranks exit 0, no problem', f'exit {run.rc} {rep.get("problems")}\n' + run.logs())
    paths = {h.get('plugin', {}).get('path') for h in rep.get('hosts', [])}
    pl.case(paths == {os.path.realpath(PLUGIN)},
            'the JSON names the file NCCL loads on each host, the same one',
            f'{paths} {[h.get("plugin") for h in rep.get("hosts", [])]}')


def missing_path(hosts, tmp):
    bad = '/opt/nowhere/libnccl-net-diag.so'
    env = {0: env_of(NCCL_NET_PLUGIN='diag', LD_LIBRARY_PATH=PLUGIN_DIR),
           1: env_of(NCCL_NET_PLUGIN=bad)}
    run = new_run(hosts, 1, tmp).start(['--bytes', '1M', '--timeout', '30'], env).finish(120)
    rep = run.report()
    hits = pl.problems_about(rep, bad, 'does not load', host='host1')
    pl.case(run.rc[0] == 1 and any(p['severity'] == 'error' for p in hits),
            'a path that does not exist on host1: exit 1, an error names host1, the value and why',
            f'exit {run.rc} {rep.get("problems")}\n' + run.logs([0]))
    fixes = [p['fix'] for p in rep.get('problems', []) if 'NCCL_NET_PLUGIN' in p['fix']]
    pl.case(fixes and not any('export NCCL_NET_PLUGIN=' in f for f in fixes)
            and any('on host1' in f for f in fixes),
            'the fix names host1 and never tells a node to copy the broken value', str(fixes))


def rename(hosts, i, new):
    ns = hosts.ns(i)
    for cmd in (['ip', '-n', ns, 'link', 'set', 'eth0', 'down'],
                ['ip', '-n', ns, 'link', 'set', 'eth0', 'name', new],
                ['ip', '-n', ns, 'link', 'set', new, 'up']):
        subprocess.run(cmd, check=True)


def iface_names(hosts, tmp):
    rename(hosts, 1, 'ens1f0')
    env = {r: {'NCCL_SOCKET_IFNAME': 'e'} for r in (0, 1)}
    run = new_run(hosts, 2, tmp).start(['--bytes', '1M'], env).finish(120)
    rep = run.report()
    notes = [p for p in pl.problems_about(rep, 'eth0', 'ens1f0') if p['severity'] == 'note']
    pl.case(run.rc == [0, 0] and not pl.serious(rep) and notes,
            'eth0 on host0, ens1f0 on host1, one subnet, NCCL_SOCKET_IFNAME=e: exit 0 and a note',
            f'exit {run.rc} {rep.get("problems")}\n' + run.logs([0]))


def misspelt(hosts, tmp):
    env = {1: {'NCCL_SOCKET_IFNAM': 'eth0'}}
    run = new_run(hosts, 3, tmp).start(['--bytes', '64K'], env).finish(120)
    rep = run.report()
    hits = pl.problems_about(rep, 'NCCL_SOCKET_IFNAM ', 'did you mean NCCL_SOCKET_IFNAME?',
                             host='host1')
    pl.case(len(hits) == 1 and hits[0]['severity'] == 'warning' and 'on host1' in hits[0]['fix']
            and 'NCCL_SOCKET_IFNAME' in hits[0]['fix'],
            'NCCL_SOCKET_IFNAM on host1: one warning naming host1 and the closest name',
            f'{rep.get("problems")}\n' + run.logs([0]))


def main():
    why = pl.can_netns()
    if why:
        pl.case(True, f'namespace hosts # SKIP {why}')
        return pl.done()
    hosts = pl.Hosts('p', 2)
    tmp = pl.scratch()
    try:
        err = hosts.up()
        if err:
            pl.case(False, 'build 2 namespace hosts on a bridge', err)
            return pl.done()
        for sub in ('same', 'miss', 'ifn', 'typo'):
            os.makedirs(os.path.join(tmp, sub))
        same_plugin(hosts, os.path.join(tmp, 'same'))
        missing_path(hosts, os.path.join(tmp, 'miss'))
        misspelt(hosts, os.path.join(tmp, 'typo'))
        iface_names(hosts, os.path.join(tmp, 'ifn'))
    finally:
        hosts.down()
        shutil.rmtree(tmp, ignore_errors=True)
    return pl.done()


if __name__ == '__main__':
    sys.exit(main())
