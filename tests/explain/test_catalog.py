#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every NCCL WARN message of the catalogue (tools/explain/catalog.tsv, the
format strings of NCCL v2.4 to v2.30) that reports a failure a user causes
is recognised by `nccl-net-diag explain` as an error: the format becomes a
sample line, with NCCL's host:pid:tid prefix and bare as users paste it,
and explain must exit 1 with a finding, never 2 ("no NCCL output") or 0.
Where the catalogue names a rule, that rule must be the one that fires.
TAP. Usage: test_catalog.py NCCL_NET_DIAG CATALOG_TSV"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
from taplib import case, done  # noqa: E402

USER_CAUSABLE = {'shm', 'memlock', 'rank', 'transport', 'plugin', 'iface', 'socket', 'ib'}
CONV = re.compile(r'%[-+ #0]*(\*|\d+)?(\.(\*|\d+))?(hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcspn%])')


def sample(fmt):
    """The format with plausible values: what a log line of it looks like."""
    out, pos = [], 0
    for m in CONV.finditer(fmt):
        out.append(fmt[pos:m.start()])
        before, conv = fmt[:m.start()], m.group(5)
        if conv == '%':
            v = '%'
        elif conv in 'diouxX':
            v = '12' if conv in 'diu' else 'c'
        elif conv in 'eEfgG':
            v = '1.5'
        elif conv == 'p':
            v = '0x7f00'
        elif conv == 'c':
            v = 'x'
        elif re.search(r'(extend|segment|shared memory) $', before):
            v = '/dev/shm/nccl-AbCd12'
        elif before.endswith('Error while '):
            v = 'creating'
        elif re.search(r'(peer|[Cc]onnect to|from|to) $', before):
            v = '10.0.0.2<4242>'
        elif re.search(r'(failed|error|Error)\s*:?\s*$', before):
            v = 'No space left on device' if 'shm' in fmt or 'extend' in fmt else 'Connection refused'
        elif re.search(r'status=$', before):
            v = 'IBV_WC_RETRY_EXC_ERR'
        elif before.endswith('opcode='):
            v = 'IBV_WC_SEND'
        elif before == '':
            v = 'socketStartConnect'
        else:
            v = 'mlx5_0'
        out.append(v)
        pos = m.end()
    out.append(fmt[pos:])
    return ''.join(out).replace('\n', ' ')


def explain(text):
    p = subprocess.run([TOOL, 'explain', '--json', '-'], input=text.encode(), capture_output=True,
                       timeout=60)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p.returncode, doc, p.stderr.decode('utf-8', 'replace')


def main():
    global TOOL
    TOOL = sys.argv[1]
    rows = []
    with open(sys.argv[2]) as fh:
        for line in fh:
            if line.startswith('#') or not line.strip():
                continue
            cls, rule, first, last, path, fmt = line.rstrip('\n').split('\t')
            rows.append((cls, rule, first, last, path, fmt))
    case(len(rows) > 500 and {r[2] for r in rows} >= {'v2.4.2-1'} and any(
        r[3].startswith('v2.30') for r in rows), 'the catalogue spans NCCL 2.4 to 2.30',
         len(rows))
    checked = 0
    for cls, rule, first, last, path, fmt in rows:
        if cls not in USER_CAUSABLE:
            continue
        checked += 1
        text = sample(fmt)
        base = os.path.basename(path)
        for form, line in (('prefixed', f'node-a:100:200 [0] {base}:42 NCCL WARN {text}\n'),
                           ('bare', f'NCCL WARN {text}\n')):
            rc, doc, err = explain(line)
            rules = [f['rule'] for f in doc or []]
            ok = rc == 1 and bool(rules) and (rule == '-' or rule in rules)
            case(ok, f'{cls} {first}..{last} {path} ({form}): "{fmt[:70]}"'
                 + (f' -> {rule}' if rule != '-' else ''), (rc, rules, line, err[-300:]))
    case(checked > 300, 'the user-causable classes hold the bulk of the catalogue', checked)
    return done()


if __name__ == '__main__':
    sys.exit(main())
