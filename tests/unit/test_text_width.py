#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Text reports fit a terminal: every line of `params` and of `doctor` on
each fixture host is at most 100 columns (a single word longer than a line
stays whole), has no trailing spaces, and table columns do not run into
each other (each row of a table has as many fields as its header).
Also explain's report on every log of its corpus. The width is the
terminal's: COLUMNS=100 here; on a pseudo-terminal of 60 columns the lines
fit 60; piped with neither, no line is broken (grep sees whole lines).
usage: test_text_width.py NCCL_NET_DIAG HOSTS_DIR EXPLAIN_CORPUS_DIR"""
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

tool, hosts, corpus = sys.argv[1], sys.argv[2], sys.argv[3]
n = failed = 0


def check(ok, what):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    failed += 0 if ok else 1


def bad_lines(text):
    out = []
    for line in text.splitlines():
        if line != line.rstrip():
            out.append(f'trailing spaces: {line!r}')
        elif len(line) > 100 and len(line.split()) > 1 and \
                len(line.strip()) - len(line.split()[-1]) < 100 - (len(line) - len(line.lstrip())):
            out.append(f'{len(line)} columns: {line[:120]!r}')
    return out


def table_rows(text):
    """Rows under each header line of capitals that do not match it."""
    bad, header = [], None
    for line in text.splitlines():
        if re.match(r'^  [A-Z:]+ +[A-Z]', line):
            header = [m.start() for m in re.finditer(r'(?<= )[A-Z][A-Z:]*|^  [A-Z]', line)]
            continue
        if header and line.startswith('  ') and ': ' in line[:30]:
            header = None  # a sentence after the table ("  main interface: ...")
        if header and line.startswith('  ') and not line.startswith('   ') and len(line) > header[-1]:
            # every column but the last starts after a space, at its header
            cols = [line[h - 1] == ' ' or h == 2 for h in header[1:]]
            if not all(cols):
                bad.append(line[:120])
        elif not line.startswith(' '):
            header = None
    return bad


def env_for(host):
    e = {k: v for k, v in os.environ.items() if not k.startswith(('NCCL_', 'HWLOC_'))}
    e['HWLOC_COMPONENTS'] = '-pci'
    e['COLUMNS'] = '100'
    if host:
        e['NCCL_DIAG_SYSFS_ROOT'] = os.path.join(hosts, host, 'sysfs')
        e['HWLOC_XMLFILE'] = os.path.join(hosts, host, 'topo.xml')
    return e


r = subprocess.run([tool, 'params'], capture_output=True, text=True, timeout=60, env=env_for(None))
check(r.returncode == 0 and not bad_lines(r.stdout), f'params: {bad_lines(r.stdout)[:2]}')
for host in sorted(os.listdir(hosts)):
    if not os.path.isdir(os.path.join(hosts, host, 'sysfs')):
        continue
    r = subprocess.run([tool, 'doctor', '--pid1-environ', '/dev/null'], capture_output=True,
                       text=True, timeout=60, env=env_for(host))
    bad = bad_lines(r.stdout) + [f'column overflow: {x!r}' for x in table_rows(r.stdout)]
    check(r.stdout and not bad, f'doctor on {host}: {bad[:2]}')
logs = sorted(os.path.join(r, f) for r, _, fs in os.walk(corpus) for f in fs if f.endswith('.log'))
bad = []
for log in logs:
    r = subprocess.run([tool, 'explain', log], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, COLUMNS='100'))
    bad += [f'{os.path.relpath(log, corpus)}: {x}' for x in bad_lines(r.stdout)]
check(logs and not bad, f'explain on {len(logs)} logs of its corpus: {bad[:2]}')

# The terminal's own width, and none when piped.
host = next(h for h in sorted(os.listdir(hosts)) if os.path.isdir(os.path.join(hosts, h, 'sysfs')))
args = [tool, 'doctor', '--pid1-environ', '/dev/null']
e = env_for(host)
del e['COLUMNS']
piped = subprocess.run(args, capture_output=True, text=True, timeout=60, env=e).stdout
longest = max(len(x) for x in piped.splitlines())
check(longest > 100 and not any(x.startswith(' ' * 17) and x.strip() and not x.strip()[0].isupper()
                                and len(x) < 30 for x in piped.splitlines()),
      f'doctor piped, no COLUMNS: lines are not broken (longest {longest} columns)')
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 60, 0, 0))
p = subprocess.Popen(args, stdout=slave, stderr=subprocess.DEVNULL, env=e, close_fds=True)
os.close(slave)
chunks = []
while True:
    try:
        data = os.read(master, 65536)
    except OSError:
        break
    if not data:
        break
    chunks.append(data)
p.wait(timeout=60)
tty = b''.join(chunks).decode(errors='replace').replace('\r\n', '\n')
wide = [x for x in tty.splitlines() if len(x) > 60 and len(x.split()) > 1]
check(tty and not wide, f'doctor on a 60-column terminal: lines fit 60 columns: {wide[:2]}')
print(f'1..{n}')
sys.exit(1 if failed else 0)
