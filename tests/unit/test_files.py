#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Files the plugin and the tools write, at a path someone else could have
prepared: the event file (NCCL_DIAG_LOG_FILE) and --json=FILE. A new file
is private (0600); a symbolic link planted at the path is not followed, the
file it points to is left untouched, and the message says why and what to
do; a FIFO there does not hang the process. And a setting's raw bytes
reach the log escaped: a newline in them forges no second WARN line, an
escape code reaches no terminal."""
import os
import stat
import subprocess
import sys
import tempfile

diag = sys.argv[1]
n = failed = 0


def check(ok, what):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    failed += 0 if ok else 1


def run(args, env=None, timeout=60):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([diag] + args, capture_output=True, text=True, env=e, timeout=timeout,
                          stdin=subprocess.DEVNULL)


os.umask(0o022)
with tempfile.TemporaryDirectory() as d:
    victim = os.path.join(d, 'victim')
    with open(victim, 'w') as f:
        f.write('precious\n')
    link = os.path.join(d, 'link')
    os.symlink(victim, link)

    # the event file
    ev = os.path.join(d, 'ev-%p.jsonl')
    r = run(['selftest'], {'NCCL_DIAG_LOG_FILE': ev})
    made = [x for x in os.listdir(d) if x.startswith('ev-')]
    check(made, f'selftest wrote an event file: {made}')
    if made:
        mode = stat.S_IMODE(os.stat(os.path.join(d, made[0])).st_mode)
        check(mode == 0o600, f'the new event file is 0600 whatever the umask, got {oct(mode)}')
    r = run(['selftest'], {'NCCL_DIAG_LOG_FILE': link})
    check(open(victim).read() == 'precious\n', 'a symbolic link as the event file is not followed')
    check('symbolic link' in r.stdout + r.stderr and 'directory only you can write' in
          r.stdout + r.stderr, 'the WARN says it is a symbolic link and what to do: ' +
          (r.stdout + r.stderr)[-300:])
    fifo = os.path.join(d, 'fifo')
    os.mkfifo(fifo)
    try:
        r = run(['selftest'], {'NCCL_DIAG_LOG_FILE': fifo}, timeout=30)
        check('not a regular file' in r.stdout + r.stderr, 'a FIFO is refused by name')
    except subprocess.TimeoutExpired:
        check(False, 'a FIFO as the event file hangs the process')

    # --json=FILE
    out = os.path.join(d, 'params.json')
    r = run(['params', f'--json={out}'])
    check(r.returncode == 0 and os.path.exists(out), f'params --json=FILE writes it: {r.stderr}')
    if os.path.exists(out):
        mode = stat.S_IMODE(os.stat(out).st_mode)
        check(mode == 0o600, f'the new JSON file is 0600, got {oct(mode)}')
    r = run(['params', f'--json={link}'])
    check(r.returncode != 0 and open(victim).read() == 'precious\n',
          f'--json through a symbolic link is refused, the target untouched (exit {r.returncode})')
    check('symbolic link' in r.stderr, f'and said: {r.stderr.strip()[:300]}')

# a bad setting's raw bytes in the log
r = run(['selftest'], {'NCCL_DIAG_PEER_TIMEOUT_SEC': '5x\nWARN forged \x1b[31m', 'NCCL_DEBUG': 'INFO'})
out = r.stdout + r.stderr
forged = [line for line in out.splitlines() if 'forged' in line]
check(forged and all('is not valid' in line for line in forged),
      f'the bad value is named on its own line, no forged one: {forged[:3]}')
check('\x1b' not in out, 'no escape byte reaches the output')

print(f'1..{n}')
sys.exit(1 if failed else 0)
