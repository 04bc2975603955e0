#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nccl-net-diag probe under a real launcher: Debian's Open MPI, mpirun -np 2
on this machine, so the ranks read OMPI_COMM_WORLD_* as mpirun sets them
and find the rendezvous on this node by themselves (every rank is local).
Each rank gets its own host name (a UTS namespace) so the two form a pair.

usage: test_probe_mpirun.py NCCL_NET_DIAG   (skips without mpirun)"""
import json
import os
import shutil
import subprocess
import sys

import probelib as pl

BIN = sys.argv[1]


def main():
    mpirun = shutil.which('mpirun')
    if not mpirun:
        pl.case(True, 'probe under mpirun # SKIP mpirun not installed (apt-get install openmpi-bin)')
        return pl.done()
    if os.geteuid() == 0 and subprocess.run(['unshare', '--uts', 'true']).returncode:
        pl.case(True, 'probe under mpirun # SKIP cannot create UTS namespaces here')
        return pl.done()
    tmp = pl.scratch()
    out = os.path.join(tmp, 'probe.json')
    port = str(28000 + (os.getpid() * 13) % 4000)  # below the ephemeral range
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RANK', 'WORLD_SIZE', 'MASTER_', 'SLURM_', 'PMI_'))}
    wrap = ['unshare', '--uts', '--', 'sh', '-c',
            'hostname "mpi$OMPI_COMM_WORLD_RANK" && exec "$@"', 'sh'] if os.geteuid() == 0 else []
    cmd = [mpirun, '--allow-run-as-root', '--oversubscribe', '-np', '2',
           '--mca', 'btl', 'self,tcp', '-x', f'MASTER_PORT={port}', '-x', 'NCCL_DIAG_PLUGIN_PATH'] \
        + wrap + [BIN, 'probe', '--bytes', '4M', '--timeout', '60', f'--json={out}']
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
        try:
            rep = json.load(open(out))
        except (OSError, ValueError) as e:
            rep = {'hosts': [], 'pairs': [], 'error': str(e)}
        why = f'exit {r.returncode}\n{r.stdout}\n{r.stderr}'
        pl.case(r.returncode == 0 and rep.get('launcher') == 'Open MPI' and
                rep.get('world_size') == 2,
                'mpirun -np 2: the ranks read Open MPI\'s variables, exit 0', why)
        hosts = rep['hosts']
        pl.case(len(hosts) == 2 and [h['rank'] for h in hosts] == [0, 1] and
                all(h['local_rank'] == h['rank'] for h in hosts) and
                '127.0.0.1' in rep.get('rendezvous', ''),
                'rank and local rank of each, rendezvous found on this node', json.dumps(hosts)[:2000])
        if wrap:
            pl.case(sum(p['ok'] for p in rep['pairs']) == 2,
                    'the two ranks (two host names) move verified data both ways',
                    json.dumps(rep['pairs']))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return pl.done()


if __name__ == '__main__':
    sys.exit(main())
