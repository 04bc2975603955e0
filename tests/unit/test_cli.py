#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CLI convention over every command of nccl-net-diag and nccl-net-bench:
-h/--help prints usage on stdout and exits 0; --version works; an unknown
option is named in the first line on stderr with exit 2; a bad value names
the option and what it takes; help text fits 100 columns, no trailing
spaces."""
import subprocess
import sys

diag, bench = sys.argv[1], sys.argv[2]
n = failed = 0


def check(ok, what):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    failed += 0 if ok else 1


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=60)


commands = [([diag, c], f"nccl-net-diag {c}") for c in
            ("selftest", "params", "doctor", "explain", "probe")]
commands += [([diag], "nccl-net-diag"), ([bench], "nccl-net-bench")]
for argv, name in commands:
    for flag in ("-h", "--help"):
        r = run(*argv, flag)
        check(r.returncode == 0 and r.stdout.startswith("usage:") and not r.stderr,
              f"{name} {flag}: usage on stdout, exit 0 (exit {r.returncode}, stderr "
              f"{r.stderr[:80]!r})")
        long = [line for line in r.stdout.splitlines() if len(line) > 100 or line != line.rstrip()]
        check(not long, f"{name} {flag}: lines fit 100 columns, no trailing spaces: {long[:1]}")
    if name != "nccl-net-diag":
        r = run(*argv, "--frobnicate")
        first = r.stderr.splitlines()[0] if r.stderr else ""
        check(r.returncode == 2 and "unknown option '--frobnicate'" in first,
              f"{name} --frobnicate: named unknown in the first line, exit 2 ({r.returncode}: "
              f"{first!r})")
version = {}
for argv, name in (([diag], "nccl-net-diag"), ([bench], "nccl-net-bench")):
    r = run(*argv, "--version")
    version[name] = r.stdout.split()[-1] if r.stdout.split() else ""
    check(r.returncode == 0 and r.stdout.startswith(name + " "), f"{name} --version: {r.stdout!r}")
check(version["nccl-net-diag"] == version["nccl-net-bench"] != "", "one version for both tools")
for argv, what in (([diag, "probe", "--timeout", "abc"], "an integer from 5"),
                   ([diag, "selftest", "--iters", "x"], "an integer from 1"),
                   ([diag, "selftest", "--abi", "v12"], "5 to 12"),
                   ([bench, "--reps", "abc"], "bad value 'abc' for --reps")):
    r = run(*argv)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check(r.returncode == 2 and "bad value" in first and what in first,
          f"{' '.join(argv[1:])}: the option and its range named ({r.returncode}: {first!r})")
for argv in ([diag, "doctor", "--pid1-environ"], [diag, "probe", "--timeout"]):
    r = run(*argv)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check(r.returncode == 2 and "needs a value" in first, f"{' '.join(argv[1:])}: {first!r}")
print(f"1..{n}")
sys.exit(1 if failed else 0)
