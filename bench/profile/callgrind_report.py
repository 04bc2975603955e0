#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads callgrind files of nccl-net-bench ranks collected only inside the
bench's calls of a plugin's isend/irecv/test (--toggle-collect) and prints,
per rank, each call's count and instructions per call (with what it calls:
the verbs provider, libc), and the transport's own instructions per round
trip.
  callgrind_report.py --messages N 'LABEL=FILE'...
N: round trips of the run (warm-up and measured)."""
import re
import subprocess
import sys

LINE = re.compile(r'^\s*([\d,]+) \([^)]*\)\s+(?:([*<>])\s+)?(.*?):(.*?)(?: \((\d[\d,]*)x\))?(?: \[(.*)\])?\s*$')
ENTRY = {'isend': 'netload_isend', 'irecv': 'netload_irecv', 'test': 'netload_test'}
OWN = ('libnccl-net-diag.so', 'libnccl.so.2', 'libnccl-net-ncclib.so')


def annotate(path, *args):
    return subprocess.run(['callgrind_annotate', '--auto=no', *args, path], capture_output=True,
                          text=True, check=True).stdout.splitlines()


def num(s):
    return int(s.replace(',', ''))


def is_own(m):
    """A transport's function: by its object, or (annotate leaves the object
    out of some call lines) any callee that is not the bench's own."""
    if m.group(6):
        return m.group(6).rsplit('/', 1)[-1] in OWN
    return not m.group(4).startswith('netload_')


def entry_calls(path):
    """{isend: (calls, inclusive)}: the plugin function each bench entry calls."""
    out, cur = {}, None
    for line in annotate(path, '--inclusive=yes', '--tree=calling', '--threshold=100'):
        m = LINE.match(line)
        if not m:
            continue
        if m.group(2) == '*':
            cur = next((k for k, v in ENTRY.items() if m.group(4) == v), None)
        elif m.group(2) == '>' and cur and m.group(5) and is_own(m):
            c, i = out.get(cur, (0, 0))
            out[cur] = (c + num(m.group(5)), i + num(m.group(1)))
    return out


def own_cost(path):
    total = 0
    for line in annotate(path, '--inclusive=no', '--threshold=100'):
        m = LINE.match(line)
        if m and m.group(6) and is_own(m):
            total += num(m.group(1))
    return total


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[0] != '--messages':
        sys.exit(__doc__)
    msgs = int(args[1])
    own = {}
    for arg in args[2:]:
        label, path = arg.split('=', 1)
        calls = entry_calls(path)
        if not calls:
            continue  # the bench's parent process
        text = ', '.join(f'{k} {c} calls x {i / c:.0f}' for k, (c, i) in sorted(calls.items()))
        mine = own_cost(path)
        own.setdefault(label.split()[0], []).append(mine / msgs)
        print(f'{label}: {text} instructions; its own code {mine / msgs:.0f} per round trip '
              '(spinning included: varies with timing)')
    if 'plugin' in own and 'nccl-ib' in own:
        print('plugin / NCCL IB, own instructions per round trip (both ranks, spinning included): '
              f'{sum(own["plugin"]) / sum(own["nccl-ib"]):.2f}')


if __name__ == '__main__':
    main()
