#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every CUDA runtime error of the toolkit's catalogue
(tools/explain/cuda_errors.c, made by gen_cuda_catalog.py from the CUDA
headers and the runtime's own texts) read as users paste it: PyTorch's
"RuntimeError: CUDA error: <text>", a bare "<name>", and NCCL's
"Cuda failure <n> '<text>'" WARN. explain must exit 1 with a finding (never
2, "no NCCL output", and never 0), and a bare one must be the cuda rule's.
TAP. Usage: test_cuda_catalog.py NCCL_NET_DIAG CUDA_ERRORS_C"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
from taplib import case, done  # noqa: E402


def explain(tool, text):
    p = subprocess.run([tool, 'explain', '--json', '-'], input=text.encode(), capture_output=True,
                       timeout=60)
    try:
        doc = json.loads(p.stdout)['findings']
    except (ValueError, KeyError):
        doc = []
    return p.returncode, doc


def main():
    tool, table = sys.argv[1], sys.argv[2]
    errors = re.findall(r'\{(\d+),\s*"(cudaError\w+)",\s*"((?:[^"\\]|\\.)*)"\s*\}',
                        open(table).read())
    case(len(errors) > 100, f'the catalogue has the toolkit\'s errors ({len(errors)})')
    for num, name, text in errors:
        text = text.replace('\\"', '"').replace('\\\\', '\\')
        for form, line in (('PyTorch', f'RuntimeError: CUDA error: {text}'), ('bare name', name),
                           ('NCCL WARN', f'h1:1:2 [0] enqueue.cc:1 NCCL WARN Cuda failure {num} \'{text}\'')):
            rc, doc = explain(tool, line + '\n')
            rules = [f['rule'] for f in doc]
            ok = rc == 1 and doc and (form == 'NCCL WARN' or 'cuda' in rules)
            case(ok, f'{name} ({num}) as {form}: exit 1 with a finding', (rc, rules, line))
    return done()


if __name__ == '__main__':
    sys.exit(main())
