#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NCCL's own binaries, from PyPI's nvidia-nccl-cu12 wheels (the
libnccl.so.2 PyTorch users run): which ncclNetPlugin_vN tables each
release's loader looks for (the strings of libnccl.so.2), checked against
the tables the built plugin exports (at least one must match) and, for the
releases whose source was read (tests/releases/releases.c), against that
table. Wheels are about 190-400 MB each, so a few releases are checked: one
per loader generation PyPI serves (2.21: v5-v8; 2.26: v6-v10, the new
loader; 2.28: v11; 2.30: v12) and every release past the source snapshot
(2.31, 2.32). NCCL_DIAG_WHEELS="2.27.7 2.29.3" names others. Wheels are
cached in ${XDG_CACHE_HOME:-~/.cache}/nccl-net-diag/wheels; a release PyPI
cannot serve (no network) is skipped. TAP.
From 2.28 on, NCCL's own loader functions (getNcclNet_vN, found in the
wheel's symbol table) also bind and drive each of our tables through
tests/api/nccl_adapters.sh, with the library unpacked for the run only.
Usage: wheels.py PLUGIN.so RELEASES_C [ADAPTERS_DRIVER ADAPTERS_SH]"""
import ctypes
import glob
import os
import re
import subprocess
import shutil
import sys
import tempfile
import zipfile

DEFAULT = '2.21.5 2.26.5 2.28.9 2.30.7 2.31.2 2.32.3'
n = 0


def case(status, what, detail=None):
    global n
    n += 1
    print(f'{status} {n} - {what}')
    if detail:
        print('# ' + str(detail)[:2000].replace('\n', '\n# '))


def cache_dir():
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    d = os.path.join(base, 'nccl-net-diag', 'wheels')
    os.makedirs(d, exist_ok=True)
    return d


OFFLINE = []  # the first reason PyPI was out of reach: no more tries


def wheel(version, d):
    """The cached wheel, downloaded once; None (and why) when PyPI cannot serve it."""
    pattern = os.path.join(d, f'nvidia_nccl_cu12-{version}-*.whl')
    found = glob.glob(pattern)
    if found:
        return found[0], None
    if OFFLINE:
        return None, OFFLINE[0]
    p = subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--no-cache-dir',
                        '--timeout', '20', '--retries', '1', '-d', d,
                        f'nvidia-nccl-cu12=={version}'], capture_output=True, text=True,
                       timeout=300)
    found = glob.glob(pattern)
    lines = (p.stderr or p.stdout).strip().splitlines() or ['no output']
    text = p.stdout + p.stderr
    if not found and any(w in text for w in ('Retrying', 'NewConnectionError', 'Could not fetch',
                                             'Failed to establish', 'Network is unreachable',
                                             'Temporary failure in name resolution')):
        OFFLINE.append('PyPI is out of reach: ' + lines[-1][:160])
    return (found[0], None) if found else (None, lines[-1][:200])


def tables_in(path):
    """The ncclNetPlugin_vN names in the wheel's libnccl.so.2, read in chunks."""
    found, tail = set(), b''
    with zipfile.ZipFile(path) as z:
        lib = next(m for m in z.namelist() if m.endswith('libnccl.so.2'))
        with z.open(lib) as f:
            while True:
                b = f.read(1 << 24)
                if not b:
                    break
                buf = tail + b
                found.update(int(m) for m in re.findall(rb'ncclNetPlugin_v(\d+)\b', buf))
                tail = buf[-64:]
    return found


def through_adapters(path, version, plugin, driver, script):
    """NCCL's own getNcclNet_vN of this release drive each table it knows (2.28+)."""
    if tuple(int(x) for x in version.split('.')[:2]) < (2, 28):
        return
    tmp = tempfile.mkdtemp(prefix='nccl-wheel-')
    try:
        lib = os.path.join(tmp, 'libnccl.so.2')
        with zipfile.ZipFile(path) as z, open(lib, 'wb') as out:
            member = next(m for m in z.namelist() if m.endswith('libnccl.so.2'))
            with z.open(member) as f:
                shutil.copyfileobj(f, out, 1 << 24)
        p = subprocess.run(['bash', script, driver, plugin, lib], capture_output=True, text=True,
                           timeout=300)
        lines = p.stdout.splitlines()
        oks = [ln for ln in lines if ln.startswith('ok ') and '# SKIP' not in ln]
        bad = [ln for ln in lines if ln.startswith('not ok')]
        tables = sorted(int(m) for ln in oks for m in re.findall(r'binds ncclNetPlugin_v(\d+)', ln))
        case('ok' if oks and not bad and p.returncode == 0 else 'not ok',
             f'NCCL {version}: its own adapters bind and drive v{",v".join(map(str, tables))} '
             'of this plugin (init, properties, a connection, a verified message)',
             None if oks and not bad else p.stdout[-1500:] + p.stderr[-500:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def exported(plugin):
    lib = ctypes.CDLL(plugin, mode=os.RTLD_LOCAL)
    out = set()
    for v in range(1, 20):
        try:
            getattr(lib, f'ncclNetPlugin_v{v}')
            out.add(v)
        except AttributeError:
            pass
    return out


def from_source(releases_c):
    """{"2.21": {8, 7, 6, 5}, ...}: the lookup order releases.c holds."""
    text = open(releases_c).read()
    macros = {m: {int(x) for x in re.findall(r'\d+', body)} - {0}
              for m, body in re.findall(r'#define (V\d+_UP)\s*\\?\s*\{([^}]*)\}', text)}
    return {minor: macros[m] for minor, m in re.findall(r'\{"(2\.\d+)", "[^"]+", (V\d+_UP)', text)}


def main():
    plugin, releases_c = sys.argv[1], sys.argv[2]
    driver, script = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)
    ours = exported(plugin)
    source = from_source(releases_c)
    d = cache_dir()
    for version in (os.environ.get('NCCL_DIAG_WHEELS') or DEFAULT).split():
        path, why = wheel(version, d)
        if not path:
            case('ok', f'NCCL {version}: nvidia-nccl-cu12 wheel # SKIP PyPI cannot serve it: {why}')
            continue
        wants = tables_in(path)
        both = sorted(wants & ours, reverse=True)
        case('ok' if both else 'not ok',
             f'NCCL {version} looks for v{",v".join(map(str, sorted(wants)))}; the plugin '
             + (f'exports v{both[0]} of them, which it binds' if both else 'exports none of them'),
             None if both else f'the plugin exports {sorted(ours)}')
        if driver:
            through_adapters(path, version, plugin, driver, script)
        minor = '.'.join(version.split('.')[:2])
        if minor in source:
            expect = {v for v in source[minor] if v >= 5}
            case('ok' if expect == {v for v in wants if v >= 5} else 'not ok',
                 f'NCCL {version}: its binary looks for the tables releases.c read from source',
                 None if expect == {v for v in wants if v >= 5} else
                 f'binary {sorted(wants)}, source {sorted(source[minor])}')
    print(f'1..{n}')


main()
