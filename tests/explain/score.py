#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Scores `nccl-net-diag explain` on the corpus cases taken from public
threads (expect.json with "source"): a case is right when the exit status
and every expected finding match, as test_corpus.py checks them. Prints
the score per category, for the cases the rules were tuned on and for the
held-out ones ("heldout": true), and each miss.
Usage: score.py NCCL_NET_DIAG CORPUS_DIR [--synthetic]
(--synthetic also scores the cases written by hand, with no "source")."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_corpus  # noqa: E402


def judge(path):
    with open(os.path.join(path, 'expect.json')) as fh:
        exp = json.load(fh)
    logs = sorted(glob.glob(os.path.join(path, exp.get('files', '*.log'))))
    rc, out, _ = test_corpus.explain(['--json'] + logs)
    try:
        doc = json.loads(out)['findings']
    except (ValueError, KeyError, TypeError):
        doc = []
    why = []
    if rc != exp['exit']:
        why.append(f'exit {rc}, want {exp["exit"]}')
    for want in exp.get('findings', []):
        if '' not in [test_corpus.matches(f, want, exp.get('any_rule', ())) for f in doc]:
            why.append(f'no {want.get("rule") or exp.get("any_rule")} finding as expected')
    if 'count' in exp and len(doc) != exp['count']:
        why.append(f'{len(doc)} findings, want {exp["count"]}')
    for rule in exp.get('absent', []):
        if any(f['rule'] == rule for f in doc):
            why.append(f'{rule} fired')
    for s in exp.get('no_cause', []):
        if any(s in f['cause'] for f in doc):
            why.append(f'a cause says "{s}"')
    got = [(f['rule'], f['confidence']) for f in doc]
    return exp, why, got


def main():
    test_corpus.TOOL = sys.argv[1]
    score = {}
    misses = []
    for path in sorted(glob.glob(os.path.join(sys.argv[2], '*', 'expect.json'))):
        path = os.path.dirname(path)
        with open(os.path.join(path, 'expect.json')) as fh:
            if 'source' not in json.load(fh) and '--synthetic' not in sys.argv[3:]:
                continue
        exp, why, got = judge(path)
        key = (exp.get('category', '?'), 'held-out' if exp.get('heldout') else 'tuned')
        s = score.setdefault(key, [0, 0])
        s[0] += not why
        s[1] += 1
        if why:
            misses.append(f'{key[1]:8} {os.path.basename(path)}: {"; ".join(why)} (got {got})')
    print(f'{"category":12} {"tuned":>8} {"held-out":>9}')
    tot = {'tuned': [0, 0], 'held-out': [0, 0]}
    for cat in sorted({k[0] for k in score}):
        cells = []
        for part in ('tuned', 'held-out'):
            r, n = score.get((cat, part), [0, 0])
            tot[part][0] += r
            tot[part][1] += n
            cells.append(f'{r}/{n}' if n else '-')
        print(f'{cat:12} {cells[0]:>8} {cells[1]:>9}')
    print(f'{"all":12} {tot["tuned"][0]}/{tot["tuned"][1]:<5} {tot["held-out"][0]}/{tot["held-out"][1]:>6}')
    for m in misses:
        print('miss', m)
    return 0


if __name__ == '__main__':
    sys.exit(main())
