#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NCCL_NET_PLUGIN through the CLI, resolved as NCCL resolves it: the name
(diag), the file name (libnccl-net-diag.so), a path, a list, the loader's
search path. doctor names the file NCCL will load, its release and ABI
table, and makes a value that loads nothing an error; selftest loads that
same file, and FAILs when there is none. An install tree in the arm64
multiarch folder is found.

usage: test_cli_plugin.py NCCL_NET_DIAG PLUGIN_SO"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
from taplib import case as check, done  # noqa: E402

diag, plugin = sys.argv[1], os.path.realpath(sys.argv[2])
plugin_dir = os.path.dirname(plugin)


def run(args, binary=diag, **env):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith('NCCL_') and k != 'LD_LIBRARY_PATH'}
    e.update(env)
    r = subprocess.run([binary] + args, capture_output=True, text=True, env=e, timeout=120,
                       stdin=subprocess.DEVNULL)
    # Wrapped lines joined: the checks read words, not columns.
    return r, ' '.join((r.stdout + r.stderr).split()) + '\n' + r.stdout + r.stderr


def plugin_line(out):
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('  NCCL plugin'):
            more = [x.strip() for x in lines[i + 1:i + 4] if x.startswith('    ')]
            return ' '.join([line.split('NCCL plugin', 1)[1].strip()] + more)
    return ''


SELFTEST = ['selftest', '--size', '1M', '--iters', '2']
bad = '/opt/nowhere/libnccl-net-diag.so'

r, out = run(['doctor'], NCCL_NET_PLUGIN=bad)
check(r.returncode == 1 and f'NCCL_NET_PLUGIN={bad} loads nothing' in out
      and 'No such file or directory' in out and 'fix: set NCCL_NET_PLUGIN to the full path' in out,
      'doctor: a path that does not exist is an error naming the value, the cause and the fix', out)
r, out = run(SELFTEST, NCCL_NET_PLUGIN=bad)
check(r.returncode == 1 and bad in r.stderr and 'PASS' not in out and 'No such file' in r.stderr,
      'selftest: a path that does not exist FAILs (exit 1) instead of loading its own copy', out)

for value, label in (('diag', 'the name'), ('libnccl-net-diag.so', 'the file name'),
                     ('nothere,diag', 'a list whose first entry loads nothing')):
    r, out = run(['doctor'], NCCL_NET_PLUGIN=value, LD_LIBRARY_PATH=plugin_dir)
    line = plugin_line(out)
    check(r.returncode == 0 and line.startswith(f'{plugin} (libnccl-net-diag ')
          and 'ncclNetPlugin_v12' in line and f'NCCL_NET_PLUGIN={value}' in line,
          f'doctor: NCCL_NET_PLUGIN={value} ({label}) on the loader\'s path names the file, its '
          'release and table', f'{line!r}\n{out[-1500:]}')

r, out = run(['doctor'], NCCL_NET_PLUGIN=plugin)
check(r.returncode == 0 and 'note' in out and 'NCCL 2.21 and later take' in out
      and 'NCCL_NET_PLUGIN=diag' in out,
      'doctor: a path loads, with a note that NCCL before 2.21 takes only the name', out[-1500:])
r, out = run(['doctor'], NCCL_NET_PLUGIN='diag', LD_LIBRARY_PATH=plugin_dir)
check('NCCL 2.21 and later take' not in out, 'doctor: the name form gets no such note', out[-800:])

r, out = run(['doctor'], NCCL_NET_PLUGIN='diag')
check(r.returncode == 1 and 'libnccl-net-diag.so: cannot open shared object file' in out
      and 'LD_LIBRARY_PATH' in out,
      'doctor: NCCL_NET_PLUGIN=diag with no libnccl-net-diag.so on the loader\'s path is an error '
      'with both names tried and the fix', out[-1500:])
r, out = run(['doctor'], NCCL_NET_PLUGIN='libc.so.6')
check(r.returncode == 1 and 'exports no ncclNetPlugin table' in out,
      'doctor: a library that is not a network plugin is named as such', out[-1500:])
r, out = run(['doctor'])
check(r.returncode == 0 and 'NCCL_NET_PLUGIN is unset, so NCCL looks for libnccl-net.so'
      in plugin_line(out), 'doctor: unset, NCCL looks for libnccl-net.so: said, not an error',
      out[-1500:])

r, out = run(SELFTEST, NCCL_NET_PLUGIN='diag', LD_LIBRARY_PATH=plugin_dir)
check(r.returncode == 0 and f'plugin {plugin}, ABI v12' in out and 'result: PASS' in out,
      'selftest: NCCL_NET_PLUGIN=diag loads the file NCCL loads and passes', out[-1500:])
r, out = run(SELFTEST, NCCL_NET_PLUGIN='diag')
check(r.returncode == 1 and 'NCCL_NET_PLUGIN=diag loads nothing' in r.stderr,
      'selftest: NCCL_NET_PLUGIN=diag that the loader cannot find FAILs', out[-1500:])

# The same in doctor --json (validated against its schema by test_json_schemas.py).
r, _ = run(['doctor', '--json'], NCCL_NET_PLUGIN=bad)
np = json.loads(r.stdout).get('net_plugin', {}) if r.stdout.startswith('{') else {}
check(np.get('value') == bad and np.get('loads') is False and bad in (np.get('error') or ''),
      'doctor --json: net_plugin names the value and why it loads nothing', np)
r, _ = run(['doctor', '--json'], NCCL_NET_PLUGIN='diag', LD_LIBRARY_PATH=plugin_dir)
np = json.loads(r.stdout).get('net_plugin', {}) if r.stdout.startswith('{') else {}
check(np.get('file') == plugin and np.get('is_this_plugin') is True and np.get('abi') == 12
      and np.get('version'), 'doctor --json: net_plugin names the file, its release and table', np)

# A user install on arm64 (Grace, GH200): bin/ beside lib/aarch64-linux-gnu/.
tmp = tempfile.mkdtemp(prefix='cli-plugin-')
try:
    os.makedirs(os.path.join(tmp, 'bin'))
    os.makedirs(os.path.join(tmp, 'lib', 'aarch64-linux-gnu'))
    tool = shutil.copy(diag, os.path.join(tmp, 'bin'))
    so = shutil.copy(plugin, os.path.join(tmp, 'lib', 'aarch64-linux-gnu'))
    r, out = run(SELFTEST, binary=tool)
    check(r.returncode == 0 and f'plugin {so}' in out,
          'selftest of an install tree finds the plugin in lib/aarch64-linux-gnu', out[-1500:])
finally:
    shutil.rmtree(tmp, ignore_errors=True)

sys.exit(done())
