#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts test cases from meson testlog.json files: every TAP line of a TAP
test is one case; a test without TAP output counts as one case by its
result. Prints the failures, each with the first of its TAP diagnostic lines
(a CI log keeps only its tail) or a sanitizer's summary, and the build
folder it ran in, then one line: N passed, N failed[, N
skipped]."""
import json
import re
import sys

DIAG_LINES, DIAG_WIDTH = 8, 400
SANITIZER = re.compile(r'^SUMMARY: \w*Sanitizer: ')
TAP = re.compile(r'^(not ok|ok)\b\s*\d*\s*-?\s*(.*?)(\s*#\s*(SKIP|skip|TODO)\b.*)?$')


def checks_of(lines):
    """The failed checks among the lines printed before a failed case: each
    'check failed' line and the one after it (its message)."""
    out = []
    for i, l in enumerate(lines):
        if 'check failed' in l or 'died of signal' in l:
            out += [x[:DIAG_WIDTH] for x in lines[i:i + 2]]
        elif SANITIZER.match(l):
            out.append(l[:DIAG_WIDTH])
    return out[:DIAG_LINES]


def count(paths):
    passed = failed = skipped = 0
    failures = []
    for path in paths:
        where = path.split('/meson-logs/')[0].rsplit('/', 1)[-1]
        try:
            lines = open(path).read().splitlines()
        except OSError as e:
            failures.append(f"{path}: {e}")
            failed += 1
            continue
        for line in lines:
            if not line.strip():
                continue
            t = json.loads(line)
            name, result = t.get('name', '?'), t.get('result', '?')
            out = t.get('stdout', '') or ''
            cases = 0
            notes = None  # the diagnostics of the last failed case
            before = []  # '#' lines since the last result: a harness may print its checks first
            for l in out.splitlines():
                m = TAP.match(l.strip())
                if not m:
                    if notes is not None and l.startswith('#') and len(notes) < DIAG_LINES:
                        notes.append(l[:DIAG_WIDTH])
                    if l.startswith('#') or SANITIZER.match(l):
                        before.append(l)
                    continue
                notes = None
                cases += 1
                prior, before = before, []
                if m.group(4) and m.group(4).upper() == 'SKIP':
                    skipped += 1
                elif m.group(1) == 'ok':
                    passed += 1
                else:
                    failed += 1
                    notes = checks_of(prior)
                    if not notes:  # a sanitizer may write to stderr instead
                        notes = checks_of((t.get('stderr', '') or '').splitlines())
                    failures.append((f"{name} ({where}): {m.group(2)}", notes))
            # meson calls a TAP test that exits non-zero ERROR: its failed
            # cases already count; only a test that failed no case adds one.
            if cases and result in ('OK', 'SKIP', 'FAIL', 'ERROR', 'EXPECTEDFAIL'):
                if result in ('FAIL', 'ERROR') and not any(
                        (f[0] if isinstance(f, tuple) else f).startswith(name + ' (')
                        for f in failures):
                    failed += 1
                    failures.append(f"{name} ({where}): exited with an error after its cases")
                continue
            if result == 'OK':
                passed += 1
            elif result == 'SKIP':
                skipped += 1
            else:
                failed += 1
                failures.append(f"{name} ({where}): {result}")
    return passed, failed, skipped, failures


def main():
    args = sys.argv[1:]
    broken = []
    while args and args[0] == '--broken':
        broken.append(args[1])
        args = args[2:]
    passed, failed, skipped, failures = count(args)
    # A build or setup that failed ran none of its tests: each is a failure.
    failed += len(broken)
    failures += [f"{b}: did not build" for b in broken]
    for f in failures:
        text, notes = f if isinstance(f, tuple) else (f, [])
        print(f"FAILED: {text}")
        for n in notes:
            print(f"  {n}")
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
