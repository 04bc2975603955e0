#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every JSON document the tools write, from real runs, against
docs/json-schemas.json: doctor on fixture hosts, explain on logs of the
explain corpus, params, probe as a one-rank job, a small loopback bench run and the
plugin's event file of that run. Each says its schema name and the tool
version; docs/json.md names every schema and every top-level field; the
validator itself fails a document with a field removed or renamed. TAP.
Usage: test_json_schemas.py NCCL_NET_DIAG NCCL_NET_BENCH PLUGIN_SO SOURCE_ROOT"""
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

DIAG, BENCH, PLUGIN, ROOT = sys.argv[1:5]
HOSTS = os.path.join(ROOT, 'tests', 'fixtures', 'hosts')
CORPUS = os.path.join(ROOT, 'tests', 'explain', 'corpus')
n = failed = 0

TYPES = {'string': (str,), 'integer': (int,), 'number': (int, float), 'boolean': (bool,),
         'array': (list,), 'object': (dict,), 'null': (type(None),)}


def check(ok, what, detail=None):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    if not ok:
        failed += 1
        if detail is not None:
            print('# ' + str(detail)[:3000].replace('\n', '\n# '))


def is_type(v, name):
    if isinstance(v, bool) and name in ('integer', 'number'):
        return False
    return isinstance(v, TYPES[name])


def validate(v, s, path='$'):
    """The subset of JSON Schema that docs/json-schemas.json uses; a list of errors."""
    errs = []
    types = s.get('type')
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(is_type(v, t) for t in types):
            return [f'{path}: {type(v).__name__} {json.dumps(v)[:60]}, want {"|".join(types)}']
    if 'const' in s and v != s['const']:
        errs.append(f'{path}: {v!r}, want {s["const"]!r}')
    if 'enum' in s and v not in s['enum']:
        errs.append(f'{path}: {v!r} is not one of {s["enum"]}')
    if 'pattern' in s and isinstance(v, str):
        import re
        if not re.search(s['pattern'], v):
            errs.append(f'{path}: {v!r} does not match {s["pattern"]}')
    if isinstance(v, dict):
        errs += [f'{path}: no field "{k}"' for k in s.get('required', []) if k not in v]
        props = s.get('properties', {})
        for k, x in v.items():
            if k in props:
                errs += validate(x, props[k], f'{path}.{k}')
            elif 'additionalProperties' in s:
                errs += validate(x, s['additionalProperties'], f'{path}.{k}')
    if isinstance(v, list) and 'items' in s:
        for i, x in enumerate(v):
            errs += validate(x, s['items'], f'{path}[{i}]')
    return errs


with open(os.path.join(ROOT, 'docs', 'json-schemas.json')) as f:
    SCHEMAS = json.load(f)['schemas']
with open(os.path.join(ROOT, 'docs', 'json.md')) as f:
    DOC = f.read()
VERSION = subprocess.run([DIAG, '--version'], capture_output=True, text=True).stdout.split()[-1]


def conforms(doc, name, what):
    """doc validates as schema name, and carries that name and the tool's version."""
    if not isinstance(doc, dict):
        return check(False, f'{what}: a JSON object', doc)
    errs = validate(doc, SCHEMAS[name])
    check(not errs, f'{what}: valid {name}', errs[:10])
    check(doc.get('schema') == name and doc.get('version') == VERSION,
          f'{what}: says schema {name} and version {VERSION}',
          (doc.get('schema'), doc.get('version')))


def load(text, what):
    try:
        return json.loads(text)
    except ValueError as e:
        return f'{what} is not JSON: {e}: {text[:300]!r}'


def load_file(path, what, r):
    """The document a run r wrote to path, or why there is none."""
    try:
        with open(path) as f:
            return load(f.read(), f'{what} --json')
    except OSError as e:
        return f'{what} wrote no JSON ({e}); exit {r.returncode}: {r.stderr[-500:]}'


def clean_env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith(('NCCL_', 'HWLOC_'))}
    e['HWLOC_COMPONENTS'] = '-pci'
    e['NCCL_DIAG_PLUGIN_PATH'] = PLUGIN
    e.update(extra)
    return e


def doctor_docs():
    docs = {}
    for host in ('roce-story5', 'vm-enp0s1', 'ib-hdr', 'container-partial-gids'):
        root = os.path.join(HOSTS, host)
        env = clean_env(NCCL_DIAG_SYSFS_ROOT=os.path.join(root, 'sysfs'),
                        HWLOC_XMLFILE=os.path.join(root, 'topo.xml'))
        r = subprocess.run([DIAG, 'doctor', '--json', '--pid1-environ', '/dev/null'], env=env,
                           capture_output=True, text=True, timeout=60)
        docs[host] = load(r.stdout, f'doctor on {host}')
        conforms(docs[host], 'nccl-net-diag.doctor/1', f'doctor --json on {host}')
    # A user other than root cannot read PID 1's environment: pid1 is null.
    if os.geteuid() == 0 and shutil.which('setpriv'):
        r = subprocess.run(['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups',
                            DIAG, 'doctor', '--json'], env=clean_env(), capture_output=True,
                           text=True, timeout=60)
        doc = load(r.stdout, 'doctor as nobody')
        conforms(doc, 'nccl-net-diag.doctor/1', 'doctor --json as the user nobody')
        check(isinstance(doc, dict) and doc['env']['pid1'] is None and
              bool(doc['env']['pid1_error']),
              'doctor --json as nobody: pid1 null, pid1_error says why', str(doc)[:300])
    # A host that cannot be read still gets JSON, of its own schema.
    r = subprocess.run([DIAG, 'doctor', '--json', '--pid1-environ', '/dev/null'],
                       env=clean_env(NCCL_DIAG_IFADDRS='/nonexistent-ifaddrs'), capture_output=True,
                       text=True, timeout=60)
    doc = load(r.stdout, 'doctor on an unreadable host')
    conforms(doc, 'nccl-net-diag.doctor-failed/1', 'doctor --json when discovery fails')
    check(r.returncode == 1 and isinstance(doc, dict) and
          '/nonexistent-ifaddrs' in str(doc.get('error')),
          'doctor --json when discovery fails: exit 1, the file named', (r.returncode, doc))
    return docs


def explain_docs():
    for case in ('connect-refused', 'rtr-cross-subnet', 'input-debug-file',
                 'input-versions-unread'):
        d = os.path.join(CORPUS, case)
        if not os.path.isdir(d):
            check(False, f'explain corpus case {case} exists')
            continue
        logs = sorted(os.path.join(d, f) for f in os.listdir(d) if f != 'expect.json')
        r = subprocess.run([DIAG, 'explain', '--json'] + logs, env=clean_env(),
                           capture_output=True, text=True, timeout=60)
        doc = load(r.stdout, f'explain on {case}')
        conforms(doc, 'nccl-net-diag.explain/1', f'explain --json on {case}')
        if case == 'connect-refused':
            check(isinstance(doc, dict) and len(doc.get('findings', [])) > 0,
                  f'explain on {case}: findings were validated, not an empty list')


def params_doc():
    r = subprocess.run([DIAG, 'params', '--json'], env=clean_env(NCCL_IB_TIMEOUT='20'),
                       capture_output=True, text=True, timeout=60)
    doc = load(r.stdout, 'params --json')
    conforms(doc, 'nccl-net-diag.params/1', 'params --json')
    knobs = {k.get('name'): k.get('value') for k in doc.get('knobs', [])} \
        if isinstance(doc, dict) else {}
    check(knobs.get('NCCL_IB_TIMEOUT') == '20' and len(doc.get('agree', [])) > 20,
          'params --json: every knob with its value here, and the must-agree table',
          (knobs.get('NCCL_IB_TIMEOUT'), len(knobs)))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def probe_doc(tmp):
    path = os.path.join(tmp, 'probe.json')
    for _ in range(3):  # again on a port taken between free_port() and the probe's bind
        env = clean_env(RANK='0', WORLD_SIZE='1', LOCAL_RANK='0', MASTER_ADDR='127.0.0.1',
                        MASTER_PORT=str(free_port()), TMPDIR=tmp)
        r = subprocess.run([DIAG, 'probe', '--timeout', '10', '--bytes', '1M', f'--json={path}'],
                           env=env, capture_output=True, text=True, timeout=60)
        if 'Address already in use' not in r.stderr:
            break
    conforms(load_file(path, 'probe', r), 'nccl-net-diag.probe/1', 'probe --json, one rank')


def bench_and_events(tmp):
    path, events = os.path.join(tmp, 'bench.json'), os.path.join(tmp, 'events.jsonl')
    env = clean_env(NCCL_DIAG_LOG_FILE=events)
    r = subprocess.run([BENCH, '--sizes', '64K', '--modes', 'uni', '--reps', '1',
                        '--target-bytes', '1M', '--max-msgs', '50', '--no-baseline',
                        '--select-reps', '0', f'--json={path}'],
                       env=env, capture_output=True, text=True, timeout=120)
    conforms(load_file(path, 'bench', r), 'nccl-net-bench.run/1',
             'nccl-net-bench --json, loopback')
    try:
        with open(events) as f:
            lines = [load(line, 'an event line') for line in f if line.strip()]
    except OSError as e:
        lines = []
        check(False, f'the plugin wrote its event file: {e}')
    kinds = {e.get('event') for e in lines if isinstance(e, dict)}
    check(len(lines) >= 3 and {'init', 'census'} <= kinds,
          f'event file: {len(lines)} lines, init and census among them', sorted(map(str, kinds)))
    bad = [(i, e if not isinstance(e, dict) else validate(e, SCHEMAS['nccl-net-diag.event/1']))
           for i, e in enumerate(lines)]
    bad = [b for b in bad if b[1]]
    check(not bad, 'every event line is a valid nccl-net-diag.event/1', bad[:5])
    check(all(isinstance(e, dict) and e.get('version') == VERSION for e in lines),
          f'every event line carries version {VERSION}')


def validator_catches(doc):
    """A field removed or renamed at the top and inside an array's items fails validation."""
    s = SCHEMAS['nccl-net-diag.doctor/1']
    for what, edit in (('top-level "transport" removed', lambda d: d.pop('transport')),
                       ('top-level "schema" renamed', lambda d: d.__setitem__('kind',
                                                                              d.pop('schema'))),
                       ('"gid_index" renamed in devices[0]',
                        lambda d: d['devices'][0].__setitem__('gid', d['devices'][0].pop(
                            'gid_index'))),
                       ('"exit_status" a string', lambda d: d.__setitem__('exit_status', '0'))):
        d = copy.deepcopy(doc)
        edit(d)
        check(validate(d, s), f'the validator fails doctor --json with {what}')


def documented():
    for name, s in SCHEMAS.items():
        missing = [k for k in s.get('properties', {}) if f'`{k}`' not in DOC]
        check(name in DOC and not missing,
              f'docs/json.md names {name} and each of its top-level fields', missing)
        check({'schema', 'version'} <= set(s.get('required', [])),
              f'{name}: schema and version are required fields')


with tempfile.TemporaryDirectory() as tmp:
    docs = doctor_docs()
    explain_docs()
    params_doc()
    probe_doc(tmp)
    bench_and_events(tmp)
    if isinstance(docs.get('roce-story5'), dict) and docs['roce-story5'].get('devices'):
        validator_catches(docs['roce-story5'])
    else:
        check(False, 'a doctor document with devices to mutate')
    documented()
print(f'1..{n}')
sys.exit(1 if failed else 0)
