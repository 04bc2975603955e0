#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CLI convention over every command of nccl-net-diag and nccl-net-bench:
-h/--help prints usage on stdout and exits 0; --version works; an unknown
option is named in the first line on stderr with exit 2; a bad value names
the option and what it takes; help text fits 100 columns, no trailing
spaces. One --json[=FILE] rule over every command that writes JSON: --json
and --json=- on stdout, --json=FILE in FILE, an unwritable FILE named with
its cause (exit 2, before any work), "--json FILE" refused with the hint."""
import json
import os
import socket
import subprocess
import sys
import tempfile

diag, bench = sys.argv[1], sys.argv[2]
n = failed = 0


def check(ok, what):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    failed += 0 if ok else 1


def run(*args, env=None):
    for _ in range(3):
        if env and "MASTER_PORT" in env:
            env = dict(env, MASTER_PORT=str(free_port()))
        r = subprocess.run(list(args), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=60, env=env)
        if "Address already in use" not in r.stderr:  # a probe's port taken meanwhile
            break
    return r


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
                   ([bench, "--reps", "abc"], "bad value 'abc' for --reps"),
                   ([diag, "probe", "--bytes", "64Q"], "K = 1024"),
                   ([diag, "selftest", "--size", "1e3"], "K = 1024"),
                   ([bench, "--target-bytes", "-1M"], "bad value '-1M' for --target-bytes")):
    r = run(*argv)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check(r.returncode == 2 and "bad value" in first and what in first,
          f"{' '.join(argv[1:])}: the option and its range named ({r.returncode}: {first!r})")
for argv in ([diag, "doctor", "--pid1-environ"], [diag, "probe", "--timeout"]):
    r = run(*argv)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    check(r.returncode == 2 and "needs a value" in first, f"{' '.join(argv[1:])}: {first!r}")


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def json_of(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def json_rule(tmp):
    log = os.path.join(tmp, 'node-a.log')
    with open(log, 'w') as f:
        f.write("node-a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
                "node-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1 - Init COMPLETE\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith('NCCL_')}
    probe_env = dict(env, RANK='0', WORLD_SIZE='1', LOCAL_RANK='0', MASTER_ADDR='127.0.0.1',
                     MASTER_PORT='0', TMPDIR=tmp)  # run() gives each start a free port
    # (name, argv before --json, argv after, env, schema); bench only for the usage errors
    tools = [("doctor", [diag, "doctor"], ["--pid1-environ", "/dev/null"], env,
              "nccl-net-diag.doctor/1"),
             ("explain", [diag, "explain"], [log], env, "nccl-net-diag.explain/1"),
             ("params", [diag, "params"], [], env, "nccl-net-diag.params/1"),
             ("probe", [diag, "probe", "--timeout", "10", "--bytes", "1M"], [], probe_env,
              "nccl-net-diag.probe/1"),
             ("nccl-net-bench", [bench, "--sizes", "64K", "--modes", "uni", "--reps", "1",
                                 "--no-baseline"], [], env, None)]
    for name, pre, post, e, schema in tools:
        bad = os.path.join(tmp, "no-such-dir", "out.json")
        r = run(*pre, f"--json={bad}", *post, env=e)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        check(r.returncode == 2 and bad in first and "No such file or directory" in first,
              f"{name} --json=UNWRITABLE: exit 2, the file and the cause in the first line "
              f"({r.returncode}: {first!r})")
        r = run(*pre, "--json=", *post, env=e)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        check(r.returncode == 2 and "--json=FILE" in first,
              f"{name} --json= (no file): exit 2, says what it takes ({r.returncode}: {first!r})")
        if name != "explain":
            r = run(*pre, "--json", "out.json", *post, env=e)
            first = r.stderr.splitlines()[0] if r.stderr else ""
            check(r.returncode == 2 and "--json=out.json" in first,
                  f"{name} --json out.json: exit 2 with the --json=out.json hint "
                  f"({r.returncode}: {first!r})")
        if not schema:
            continue
        for flag in ("--json", "--json=-"):
            r = run(*pre, flag, *post, env=e)
            doc = json_of(r.stdout)
            check(r.returncode in (0, 1) and isinstance(doc, dict) and doc.get("schema") == schema,
                  f"{name} {flag}: {schema} on stdout (exit {r.returncode}, "
                  f"{r.stdout[:60]!r}, {r.stderr[:200]!r})")
        out = os.path.join(tmp, f"{name}.json")
        r = run(*pre, f"--json={out}", *post, env=e)
        try:
            with open(out) as f:
                doc = json_of(f.read())
        except OSError:
            doc = None
        check(r.returncode in (0, 1) and isinstance(doc, dict) and doc.get("schema") == schema and
              json_of(r.stdout) is None,
              f"{name} --json=FILE: {schema} in FILE, not on stdout (exit {r.returncode}, "
              f"{r.stderr[:200]!r})")


with tempfile.TemporaryDirectory() as tmp:
    os.chdir(tmp)  # a tool that took "--json out.json" its old way writes nothing here
    json_rule(tmp)

# Sizes in units a person reads, not counts of bytes.
r = run(diag, "selftest", "--size", "64M", "--iters", "1")
check(r.returncode == 0 and "1 x 64 MiB (8 in flight) sent and verified: 64 MiB in" in r.stdout and
      "maxP2pBytes 1 GiB" in r.stdout and "67108864" not in r.stdout,
      f"selftest says sizes in units: {r.stdout[-400:]!r}")
print(f"1..{n}")
sys.exit(1 if failed else 0)
