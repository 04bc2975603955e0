#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The must-agree table through the CLI: for every entry that
`nccl-net-diag params --agree` lists, explain flags two hosts that differ in
it exactly when the table says every node must share it or it names each
node's hardware, and doctor --json labels it with the table's class."""
import json
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]
n = 0
failed = 0


def check(ok, what):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    failed += 0 if ok else 1


rows = subprocess.run([tool, "params", "--agree"], capture_output=True, text=True, check=True)
table = [line.split("\t") for line in rows.stdout.splitlines() if line]
check(len(table) > 20 and all(len(r) == 3 for r in table), "params --agree lists the table")
flagged = {"must agree", "per node"}
with tempfile.TemporaryDirectory() as d:
    for name, cls, _why in table:
        if "*" in name:
            continue
        logs = []
        for host, value in (("nodea", "1"), ("nodeb", "2"), ("nodec", "1")):
            p = os.path.join(d, f"{host}.log")
            with open(p, "w") as f:
                f.write(f"{host}:100:100 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n")
                f.write(f"{host}:100:100 [0] NCCL INFO {name} set by environment to {value}\n")
                f.write(f"{host}:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 3 - Init COMPLETE\n")
            logs.append(p)
        r = subprocess.run([tool, "explain", "--json"] + logs, capture_output=True, text=True)
        try:
            out = json.loads(r.stdout)
            found = out.get("findings", []) if isinstance(out, dict) else out
            rules = [f.get("rule") for f in found]
        except ValueError:
            rules = None
        want = cls in flagged
        check(rules is not None and ("settings-skew" in rules) == want,
              f"explain: {name} ({cls}) differing on one host {'is' if want else 'is not'} "
              f"flagged: {rules}")
        if name.startswith("NCCL_DIAG_") and cls == "ignored":
            continue  # test hooks that change what doctor discovers
        env = dict(os.environ, **{name: "1"})
        r = subprocess.run([tool, "doctor", "--json"], capture_output=True, text=True, env=env)
        try:
            got = json.loads(r.stdout)["env"]["agreement"].get(name)
        except (ValueError, KeyError, TypeError):
            got = None
        check(got == cls, f"doctor: {name} is labelled '{cls}': {got}")
print(f"1..{n}")
sys.exit(1 if failed else 0)
