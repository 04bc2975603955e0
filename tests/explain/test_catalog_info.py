#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every NCCL INFO message that carries state explain reads across hosts,
or that it drops as stateless at scale (tools/explain/catalog_info.tsv, the
format strings of NCCL v2.4 to v2.30 by gen_catalog.py --info), as a sample
line with NCCL's prefix:
 - alone, it is NCCL output with nothing wrong: exit 0, never 2;
 - the stateless ones (channels, rings, trees, init progress, timings),
   three times from one host: the first kept, the others only counted
   (input.stateless_lines), which keeps memory to the processes;
 - the network and net plugin lines, with another host's line that differs
   (IB against Socket; a loaded plugin against the internal one): the
   difference is a finding (network-skew, plugin-skew) in every release's
   wording.
TAP. Usage: test_catalog_info.py NCCL_NET_DIAG CATALOG_INFO_TSV"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
import test_catalog  # noqa: E402
from taplib import case, done  # noqa: E402

CONV = test_catalog.CONV


def fill(fmt, value):
    """The format with every %s as value and numbers as 1."""
    out, pos = [], 0
    for m in CONV.finditer(fmt):
        out.append(fmt[pos:m.start()])
        conv = m.group(5)
        out.append('%' if conv == '%' else value if conv == 's' else '0x7f00' if conv == 'p' else
                   '1.5' if conv in 'eEfgG' else '1')
        pos = m.end()
    out.append(fmt[pos:])
    return ''.join(out)


def line(host, text):
    return f'{host}:11:12 [0] NCCL INFO {text}\n'


def main():
    test_catalog.TOOL = sys.argv[1]
    rows = []
    with open(sys.argv[2]) as fh:
        for ln in fh:
            if ln.startswith('#') or not ln.strip():
                continue
            fam, kind, first, last, path, fmt = ln.rstrip('\n').split('\t')
            rows.append((fam, kind, first, last, path, fmt))
    case(len(rows) > 100, f'the INFO catalogue has the state families of every release ({len(rows)})')
    for fam, kind, first, last, path, fmt in rows:
        # the plugin NCCL looks for by default: one the job asked for and
        # did not find is a finding (net-plugin-missing), not a state line
        value = {'bootstrap': 'eth0:10.0.0.1<0>', 'socket-devices': 'eth0:10.0.0.1<0>',
                 'plugin': 'libnccl-net.so'}.get(fam, 'IB')
        text = fill(fmt, value)
        rc, doc, err = test_catalog.explain(line('node1', text))
        case(rc == 0 and doc == [], f'{fam} ({first}..{last}) alone: exit 0, nothing wrong: {fmt}',
             (rc, doc, err[:200]))
    for fam, kind, first, last, path, fmt in rows:
        if kind != 'inert':
            continue
        text = line('node1', fill(fmt, 'IB'))
        p = subprocess.run([test_catalog.TOOL, 'explain', '--json', '-'], input=(text * 3).encode(),
                           capture_output=True, timeout=60)
        try:
            n = json.loads(p.stdout)['input']['stateless_lines']
        except (ValueError, KeyError):
            n = None
        case(p.returncode == 0 and n == 2, f'{fam} ({first}..{last}) three times from one host: '
             f'the first kept, 2 counted as stateless: {fmt}', (p.returncode, n, text))
    for fam, kind, first, last, path, fmt in rows:
        if fam == 'network':
            a, b = fill(fmt, 'IB'), fill(fmt, 'Socket')
            want = 'network-skew'
        elif fam == 'plugin':
            loaded = 'Loaded net plugin' in fmt
            a = fill(fmt, 'AWS Libfabric' if loaded else 'libnccl-net.so')
            b = ('NET/Plugin : No plugin found (libnccl-net.so), using internal implementation'
                 if loaded else 'NET/Plugin: Loaded net plugin AWS Libfabric (v8)')
            want = 'plugin-skew'
        else:
            continue
        rc, doc, err = test_catalog.explain(line('node1', a) + line('node2', b))
        rules = [f['rule'] for f in doc or []]
        case(rc == 1 and want in rules, f'{fam} ({first}..{last}) differing across hosts: {want}: '
             f'{fmt}', (rc, rules, a, b))
    return done()


if __name__ == '__main__':
    sys.exit(main())
