#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One option convention (GNU's, getopt_long) over every command of
nccl-net-diag and nccl-net-bench: every option that takes a value takes it
as --opt=value and as --opt value; every option -h shows is one of them;
the man pages document exactly the options the tools take.

usage: test_cli_options.py NCCL_NET_DIAG NCCL_NET_BENCH SOURCE_ROOT"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
from taplib import case as check, done  # noqa: E402

diag, bench, root = sys.argv[1:4]


# Each option with a value, and a value it accepts.
VALUED = {
    'selftest': {'size': '1M', 'iters': '1', 'abi': '9', 'plugin': '/x.so'},
    'doctor': {'pid1-environ': '/x'},
    'params': {},
    'explain': {},
    'probe': {'timeout': '5', 'bytes': '1M', 'pings': '1', 'pairs': 'ring', 'all-pairs-max': '2',
              'seed': '1', 'slow-ratio': '0.5', 'rendezvous': 'h:1', 'job-id': 'x',
              'nccl-lib': '/x.so', 'plugin': '/x.so', 'abi': '9'},
    'bench': {'placement': 'loopback', 'transport': 'tcp', 'verbs-lib': 'x.so', 'modes': 'uni',
              'sizes': '4K', 'lat-sizes': '8', 'comms': '1', 'compare': '/x.so', 'window': '2',
              'reps': '2', 'target-bytes': '1M', 'max-msgs': '10', 'lat-iters': '10',
              'max-mem': '1G', 'raw-shapes': '1', 'raw-min-stripe': '64K', 'rank-env': '0:A=1',
              'svg': '/tmp/x.svg', 'select-reps': '1', 'driver-idle-us': '0', 'plugin': '/x.so',
              'abi': '9', 'dev': '0', 'fuse': '0,1'},
}
FLAGS = {'selftest': {'help', 'verbose'}, 'doctor': {'json', 'pid1', 'help', 'verbose'},
         'params': {'json', 'set', 'agree', 'help'},
         'explain': {'json', 'rules', 'help', 'verbose'}, 'probe': {'json', 'help', 'verbose'},
         'bench': {'json', 'help', 'verbose', 'version', 'no-baseline', 'lat-one-conn', 'pin',
                   'wait-quiet', 'corrupt', 'baseline', 'nccl-shape', 'targets'}}


def argv_of(cmd):
    return [bench] if cmd == 'bench' else [diag, cmd]


def run(args):
    e = {k: v for k, v in os.environ.items() if not k.startswith('NCCL_')}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=e,
                          stdin=subprocess.DEVNULL)


for cmd, valued in VALUED.items():
    for opt, value in valued.items():
        for form in ([f'--{opt}={value}'], [f'--{opt}', value]):
            r = run(argv_of(cmd) + form + ['--frobnicate'])
            first = r.stderr.splitlines()[0] if r.stderr else ''
            check(r.returncode == 2 and "unknown option '--frobnicate'" in first,
                  f'{cmd} {" ".join(form)}: taken, the next option reached', first)
    helptext = run(argv_of(cmd) + ['-h']).stdout
    shown = set(re.findall(r'(?<![\w-])--([a-z][a-z0-9-]*)', helptext))
    known = set(valued) | FLAGS[cmd]
    check(shown <= known, f'{cmd} -h shows only options it takes: {sorted(shown - known)}')
    check(set(valued) <= shown, f'{cmd} -h shows every option with a value: '
          f'{sorted(set(valued) - shown)}')

for page, cmds in (('nccl-net-diag.1', ['selftest', 'doctor', 'params', 'explain', 'probe']),
                   ('nccl-net-bench.1', ['bench'])):
    with open(os.path.join(root, 'packaging', 'man', page)) as f:
        text = f.read()
    documented = {d.replace('\\-', '-')
                  for d in re.findall(r'\\-\\-((?:[a-z0-9]|\\-)+)', text)}
    known = set()
    for c in cmds:
        known |= set(VALUED[c]) | FLAGS[c]
    wanted = known - {'corrupt'}  # a test hook, not for users
    check(documented <= known | {'version'}, f'{page} documents only options the tools take: '
          f'{sorted(documented - known - {"version"})}')
    check(wanted <= documented, f'{page} documents every option: {sorted(wanted - documented)}')

# The dependency step: the build's packages alone, or everything.
deps = os.path.join(root, '.ci', 'deps')
with open(deps) as f:
    script = f.read()
build = re.search(r'^build=\((.*?)^\)', script, re.S | re.M)
names = set(re.sub(r'#.*', '', build.group(1)).split()) if build else set()
check({'meson', 'ninja-build', 'gcc', 'libibverbs-dev', 'libhwloc-dev'} <= names
      and not names & {'clang', 'qemu-system-x86', 'lintian', 'openmpi-bin'},
      f'.ci/deps --build-only lists the build packages and no test tool: {sorted(names)}')
r = subprocess.run(['bash', deps, '--frobnicate'], capture_output=True, text=True, timeout=30)
check(r.returncode == 2 and "unknown option '--frobnicate'" in r.stderr,
      f'.ci/deps --frobnicate: refused, exit 2 ({r.returncode}: {r.stderr.strip()!r})')
sys.exit(done())
