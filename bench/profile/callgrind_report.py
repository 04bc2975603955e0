#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads callgrind files of nccl-net-bench ranks, each run collecting only
inside the bench's calls of one entry of a transport (isend, irecv or
test: --toggle-collect) and prints, per entry, the transport's own
instructions per call (its code, not the verbs provider's or libc's) and
all instructions per call, for the plugin and NCCL's IB transport.
  callgrind_report.py 'plugin-ENTRY=FILE' 'nccl-ib-ENTRY=FILE'...
Own instructions per call do not depend on how long a call spins, unlike a
round trip's total (a test() that finds nothing is counted as one call)."""
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
    if not args:
        sys.exit(__doc__)
    own, calls, incl = {}, {}, {}
    for arg in args:
        label, path = arg.split('=', 1)
        who, entry = label.rsplit('-', 1)
        c, i = entry_calls(path).get(entry, (0, 0))
        if not c:
            continue  # the bench's parent process
        key = (who, entry)
        calls[key] = calls.get(key, 0) + c
        incl[key] = incl.get(key, 0) + i
        own[key] = own.get(key, 0) + own_cost(path)
    print(f'{"":8}{"own instructions per call":>36}   {"all instructions per call":>32}')
    print(f'{"entry":8}{"plugin":>12}{"NCCL IB":>12}{"ratio":>12}   {"plugin":>10}{"NCCL IB":>11}{"ratio":>11}')
    for entry in ('isend', 'irecv', 'test'):
        p, n = ('plugin', entry), ('nccl-ib', entry)
        if p not in calls or n not in calls:
            continue
        po, no = own[p] / calls[p], own[n] / calls[n]
        pi, ni = incl[p] / calls[p], incl[n] / calls[n]
        print(f'{entry:8}{po:>12.0f}{no:>12.0f}{po / no:>11.2f}x   {pi:>10.0f}{ni:>11.0f}{pi / ni:>10.2f}x')


if __name__ == '__main__':
    main()
