#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NCCL's configuration files and misspelt NCCL_* names, through the CLI.
doctor reads what NCCL reads: NCCL_CONF_FILE, else ~/.nccl.conf, then
/etc/nccl.conf (in a private mount namespace), the environment winning;
a name nothing reads gets one warning with the closest known name, and so
does a line with spaces around '='. The plugin itself WARNs once per such
name at init (selftest shows its log).

usage: test_cli_conf.py NCCL_NET_DIAG"""
import os
import shutil
import subprocess
import sys
import tempfile

diag = sys.argv[1]
n = failed = 0


def check(ok, what, why=''):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    if not ok:
        failed += 1
        for line in str(why).splitlines()[-25:]:
            print(f'# {line}')


def run(args, prefix=(), **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith('NCCL_') or
         k == 'NCCL_DIAG_PLUGIN_PATH'}
    e.update(env)
    r = subprocess.run(list(prefix) + [diag] + args, capture_output=True, text=True, env=e,
                       timeout=120, stdin=subprocess.DEVNULL)
    return r, ' '.join((r.stdout + r.stderr).split())


tmp = tempfile.mkdtemp(prefix='cli-conf-')
try:
    conf = os.path.join(tmp, 'job.conf')
    with open(conf, 'w') as f:
        f.write('# a comment=ignored\nNCCL_SOCKET_IFNAM=eth0\nNCCL_IB_HCA = mlx5_0\n'
                'NCCL_IB_TIMEOUT=22\n')
    r, out = run(['doctor'], NCCL_CONF_FILE=conf)
    check(r.returncode == 0 and f'NCCL_SOCKET_IFNAM (set in {conf} line 2) is not a variable'
          in out and 'did you mean NCCL_SOCKET_IFNAME?' in out,
          'doctor: a misspelt name in NCCL_CONF_FILE is a warning with its line and the closest '
          'name', out)
    check("the line 'NCCL_IB_HCA = mlx5_0' sets 'NCCL_IB_HCA ', not NCCL_IB_HCA" in out,
          'doctor: spaces around = in a config file: NCCL ignores the line, and doctor says so', out)
    check(f"NCCL's config files: {conf} (3 settings)" in out and 'NCCL_IB_TIMEOUT=22' in out,
          'doctor: names the file read and evaluates its settings', out)
    check(out.count('is not a variable') == 1,
          'doctor: one warning per misspelt name', out)

    r, out = run(['doctor'], NCCL_CONF_FILE=conf, NCCL_IB_TIMEOUT='19')
    check('NCCL_IB_TIMEOUT=19' in out and 'NCCL_IB_TIMEOUT=22' not in out,
          'doctor: the environment wins over the config file, as in NCCL', out)

    home = os.path.join(tmp, 'home')
    os.makedirs(home)
    with open(os.path.join(home, '.nccl.conf'), 'w') as f:
        f.write('NCCL_DIAG_FALLBAK=1\n')
    r, out = run(['doctor'], HOME=home)
    check('NCCL_DIAG_FALLBAK (set in' in out and 'did you mean NCCL_DIAG_FALLBACK?' in out,
          "doctor: ~/.nccl.conf is read, and this plugin's own names are matched too", out)
    r, out = run(['doctor'], HOME=home, NCCL_CONF_FILE=conf)
    check('NCCL_DIAG_FALLBAK' not in out and 'NCCL_SOCKET_IFNAM' in out,
          'doctor: NCCL_CONF_FILE replaces ~/.nccl.conf, as in NCCL', out)

    r, out = run(['doctor'], NCCL_SOCKET_IFNAM='eth0', NCCL_PROTOO='Simple')
    check('NCCL_SOCKET_IFNAM is not a variable' in out and 'export NCCL_SOCKET_IFNAME=eth0' in out
          and 'did you mean NCCL_PROTO?' in out,
          'doctor: a misspelt name in the environment: a warning and the export to use', out)

    r, out = run(['selftest', '--size', '64K', '--iters', '1'], NCCL_DIAG_FALLBAK='1')
    warns = [x for x in r.stderr.splitlines() if x.startswith('WARN') and 'NCCL_DIAG_FALLBAK' in x]
    check(len(warns) == 1 and 'did you mean NCCL_DIAG_FALLBACK?' in warns[0],
          'the plugin WARNs once at init for a name nothing reads, with the closest name',
          r.stderr)

    # A name with a terminal escape in it: said, escaped, never obeyed.
    r, out = run(['selftest', '--size', '64K', '--iters', '1'], **{'NCCL_IB_HC\x1b[2J': '1'})
    warns = [x for x in r.stderr.splitlines() if x.startswith('WARN') and 'NCCL_IB_HC' in x]
    check(len(warns) == 1 and '\\x1b[2J' in warns[0] and '\x1b' not in r.stderr,
          'the plugin escapes the control bytes of a misspelt name in its WARN', r.stderr)

    # /etc/nccl.conf, in a private mount namespace over an overlay of /etc.
    up, work = os.path.join(tmp, 'up'), os.path.join(tmp, 'work')
    os.makedirs(up)
    os.makedirs(work)
    with open(os.path.join(up, 'nccl.conf'), 'w') as f:
        f.write('NCCL_IB_TIMEOUT=23\nNCCL_NET_GDR_LEVL=PHB\n')
    shell = (f'mount -t overlay overlay -o lowerdir=/etc,upperdir={up},workdir={work} /etc '
             '&& exec "$0" "$@"')
    probe = subprocess.run(['unshare', '-m', 'sh', '-c', shell, 'true'], capture_output=True)
    if probe.returncode:
        check(True, '/etc/nccl.conf # SKIP no private mount namespace with an overlay here')
    else:
        r, out = run(['doctor'], prefix=['unshare', '-m', 'sh', '-c', shell], NCCL_CONF_FILE=conf)
        check('NCCL_IB_TIMEOUT=22' in out and 'did you mean NCCL_NET_GDR_LEVEL?' in out
              and '/etc/nccl.conf (2 settings)' in out,
              'doctor: /etc/nccl.conf is read after NCCL_CONF_FILE, which wins', out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f'1..{n}')
sys.exit(1 if failed else 0)
