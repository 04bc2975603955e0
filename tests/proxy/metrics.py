#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NCCL_DIAG_METRICS through the exported ABI: two ranks of the proxy
driver move data; each process's file is read back with a strict parser of
Prometheus' text exposition format (HELP and TYPE once, before the family's
samples; families contiguous; label escaping; no duplicate series; a
histogram's buckets cumulative up to +Inf = count), and the figures are
checked against each other: what one process sent is what the other
received. The host name carries a quote and a backslash (a UTS namespace),
so label escaping is exercised. Also: the end-of-job INFO summary, no file
with the variable unset, one WARN for a directory that cannot be written.

usage: metrics.py --driver PROXY_DRIVER --plugin LIBNCCL_NET_DIAG.so [--transport tcp|ib]"""
import argparse
import glob
import os
import re
import stat
import subprocess
import sys
import shutil
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures'))
from taplib import case, done  # noqa: E402

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*'
TYPES = ('counter', 'gauge', 'histogram', 'summary', 'untyped')


def parse_labels(text):
    """'{a="x",b="y\\"z"}' (without braces) -> dict; raises on any deviation."""
    labels, i = {}, 0
    while i < len(text):
        m = re.compile(LABEL + '=').match(text, i)
        if not m:
            raise ValueError(f'bad label name at {text[i:]!r}')
        name = m.group(0)[:-1]
        i = m.end()
        if i >= len(text) or text[i] != '"':
            raise ValueError(f'label {name}: value not quoted')
        i += 1
        val = []
        while True:
            if i >= len(text):
                raise ValueError(f'label {name}: unterminated value')
            c = text[i]
            if c == '\\':
                nxt = text[i + 1:i + 2]
                if nxt not in ('\\', '"', 'n'):
                    raise ValueError(f'label {name}: bad escape \\{nxt}')
                val.append('\n' if nxt == 'n' else nxt)
                i += 2
                continue
            if c == '"':
                i += 1
                break
            if c == '\n':
                raise ValueError(f'label {name}: raw newline')
            val.append(c)
            i += 1
        if name in labels:
            raise ValueError(f'label {name} twice')
        labels[name] = ''.join(val)
        if i < len(text):
            if text[i] != ',':
                raise ValueError(f'expected , at {text[i:]!r}')
            i += 1
    return labels


def split_sample(line):
    """name{labels} value -> (name, labels, float). Quotes inside label
    values may hold '}', so the closing brace is found by scanning."""
    m = re.compile(NAME).match(line)
    if not m:
        raise ValueError(f'bad metric name: {line!r}')
    name, i, labels = m.group(0), m.end(), {}
    if i < len(line) and line[i] == '{':
        j, inq = i + 1, False
        while j < len(line):
            if inq and line[j] == '\\':
                j += 2
                continue
            if line[j] == '"':
                inq = not inq
            elif line[j] == '}' and not inq:
                break
            j += 1
        if j >= len(line):
            raise ValueError(f'unterminated labels: {line!r}')
        labels = parse_labels(line[i + 1:j])
        i = j + 1
    rest = line[i:]
    if not rest.startswith(' '):
        raise ValueError(f'no space before value: {line!r}')
    parts = rest.split()
    if len(parts) not in (1, 2):
        raise ValueError(f'value then at most a timestamp: {line!r}')
    return name, labels, float(parts[0])


def family_of(name, types):
    for suffix in ('_bucket', '_sum', '_count'):
        base = name[:-len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ('histogram', 'summary'):
            return base
    return name


def parse(text):
    """-> {family: {'type', 'help', 'samples': [(name, labels, value)]}}; raises on a fault."""
    if not text.endswith('\n'):
        raise ValueError('last line not terminated')
    fams, types, seen, order, current = {}, {}, set(), [], None
    for n, line in enumerate(text.split('\n')[:-1], 1):
        if not line:
            continue
        if line.startswith('#'):
            m = re.fullmatch(r'# (HELP|TYPE) (' + NAME + r') (.*)', line)
            if not m:
                continue  # a plain comment
            kind, name, rest = m.groups()
            f = fams.setdefault(name, {'type': None, 'help': None, 'samples': []})
            if f['samples']:
                raise ValueError(f'line {n}: {kind} for {name} after its samples')
            key = kind.lower()
            if f[key] is not None:
                raise ValueError(f'line {n}: second {kind} for {name}')
            if kind == 'TYPE':
                if rest not in TYPES:
                    raise ValueError(f'line {n}: unknown type {rest}')
                types[name] = rest
            f[key] = rest
            continue
        name, labels, value = split_sample(line)
        fam = family_of(name, types)
        f = fams.get(fam)
        if not f or f['type'] is None or f['help'] is None:
            raise ValueError(f'line {n}: sample of {fam} before its HELP and TYPE')
        if current != fam:
            if fam in order:
                raise ValueError(f'line {n}: samples of {fam} not contiguous')
            order.append(fam)
            current = fam
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ValueError(f'line {n}: duplicate series {name}{labels}')
        seen.add(key)
        if f['type'] == 'counter' and value < 0:
            raise ValueError(f'line {n}: negative counter')
        f['samples'].append((name, labels, value))
    return fams


def check_histograms(fams):
    for fam, f in fams.items():
        if f['type'] != 'histogram':
            continue
        series = {}
        for name, labels, value in f['samples']:
            base = tuple(sorted((k, v) for k, v in labels.items() if k != 'le'))
            s = series.setdefault(base, {'buckets': [], 'count': None})
            if name == fam + '_bucket':
                s['buckets'].append((float(labels['le']), value))
            elif name == fam + '_count':
                s['count'] = value
        for base, s in series.items():
            les = [le for le, _ in s['buckets']]
            counts = [c for _, c in s['buckets']]
            if les != sorted(les) or les[-1] != float('inf'):
                raise ValueError(f'{fam}: buckets out of order or no +Inf')
            if counts != sorted(counts) or counts[-1] != s['count']:
                raise ValueError(f'{fam}: buckets not cumulative or +Inf != count')


def by_family(fams, name, direction):
    return sum(v for n, l, v in fams[name]['samples'] if l['direction'] == direction)


def run(args, env_extra, hostname=None, cwd=None):
    """Runs the driver, in a UTS namespace with hostname when given."""
    env = dict(os.environ, NCCL_DIAG_PLUGIN_PATH=args.plugin, PROXY_ECHO_LOG='1')
    if args.sysfs:
        env['NCCL_DIAG_SYSFS_ROOT'] = args.sysfs
    cmd = [args.driver, '--abi', '11', '--channels', '4', '--steps', '60', '--max-size', '1048576',
           '--label', 'metrics', '--transport', args.transport]
    for kv in env_extra:
        cmd += ['--env', kv]
    if hostname:
        # hostname(1) refuses such a name; the system call takes it
        set_name = 'import os, socket, sys; socket.sethostname(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])'
        cmd = ['unshare', '--uts', sys.executable, '-c', set_name, hostname] + cmd
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=cwd)


def check_files(d, out):
    files = sorted(glob.glob(os.path.join(d, '*')) + glob.glob(os.path.join(d, '.*')))
    proms = [f for f in files if re.fullmatch(r'nccl_diag_[A-Za-z0-9._-]+_\d+\.prom',
                                              os.path.basename(f))]
    case(len(proms) == 2 and len(files) == 2, 'one .prom file per process, no temporary left',
         f'{files}\n{out}')
    case(all(stat.S_IMODE(os.stat(f).st_mode) == 0o644 for f in proms), 'files are mode 0644')
    parsed = {}
    for f in proms:
        try:
            fams = parse(open(f).read())
            check_histograms(fams)
            parsed[f] = fams
            case(True, f'{os.path.basename(f)}: strict format parse')
        except ValueError as e:
            case(False, f'{os.path.basename(f)}: strict format parse', e)
    return parsed


def periodic_case(args):
    """While connections stay open (rank 1 closes 6.5 s after its data),
    the writer thread puts out a file on its own: seen open, with bytes."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NCCL_DIAG_PLUGIN_PATH=args.plugin)
        cmd = [args.driver, '--abi', '11', '--channels', '2', '--steps', '20', '--close-lag',
               '6500', '--env', 'NCCL_DIAG_METRICS=' + d, '--label', 'metrics-periodic']
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen, deadline = None, time.monotonic() + 30
        while p.poll() is None and time.monotonic() < deadline and not seen:
            for f in glob.glob(os.path.join(d, '*.prom')):
                try:
                    fams = parse(open(f).read())
                except (ValueError, OSError):
                    continue
                opened = [v for _, _, v in fams['nccl_diag_connection_open']['samples']]
                moved = by_family(fams, 'nccl_diag_connection_bytes_total', 'send')
                if opened and all(v == 1 for v in opened) and moved > 0:
                    seen = f
            time.sleep(0.1)
        rc = p.wait(timeout=60)
        case(rc == 0 and seen, 'while connections are open, the file is written every few '
             'seconds by the writer thread', f'rc {rc}, seen {seen}')


HW_COUNTERS = {'out_of_seq_request': 7, 'local_ack_timeout_err': 3, 'np_cnp_sent': 11}


def ib_main(args):
    """Over softverbs: the fixture host's sysfs copied, with hw_counters under
    every port as the kernel has them (rdma-core's names), then the same
    checks plus the ports' counters in the file."""
    with tempfile.TemporaryDirectory() as root:
        sysfs = os.path.join(root, 'sysfs')
        shutil.copytree(os.environ['NCCL_DIAG_SYSFS_ROOT'], sysfs, symlinks=True)
        for port in glob.glob(os.path.join(sysfs, 'class/infiniband/*/ports/*')):
            os.makedirs(os.path.join(port, 'hw_counters'), exist_ok=True)
            for name, v in HW_COUNTERS.items():
                with open(os.path.join(port, 'hw_counters', name), 'w') as f:
                    f.write(f'{v}\n')
        args.sysfs = sysfs
        with tempfile.TemporaryDirectory() as d:
            r = run(args, ['NCCL_DIAG_METRICS=' + d], hostname='we"ird\\host')
            out = r.stdout + r.stderr
            case(r.returncode == 0, 'driver moved and checked its data over RDMA', out[-3000:])
            parsed = check_files(d, out)
            for f, fams in parsed.items():
                hw = fams.get('nccl_diag_rdma_port_hw_counter_total', {'samples': []})['samples']
                got = {l['counter']: v for _, l, v in hw}
                devs = {l['device'] for _, l, _ in hw}
                case(got == HW_COUNTERS and len(devs) >= 1,
                     f'{os.path.basename(f)}: the RDMA port\'s hw_counters, each once', hw)
                kinds = {l['transport'] for _, l, _ in
                         fams['nccl_diag_connection_bytes_total']['samples']}
                case(kinds == {'ib'}, 'every connection is ib', kinds)
    return done()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--driver', required=True)
    ap.add_argument('--plugin', required=True)
    ap.add_argument('--transport', default='tcp', choices=('tcp', 'ib'))
    args = ap.parse_args()
    args.driver, args.plugin = os.path.abspath(args.driver), os.path.abspath(args.plugin)
    args.sysfs = None
    if args.transport == 'ib':
        return ib_main(args)
    host = 'we"ird\\host'
    with tempfile.TemporaryDirectory() as d:
        r = run(args, ['NCCL_DIAG_METRICS=' + d], hostname=host)
        out = r.stdout + r.stderr
        case(r.returncode == 0, 'driver moved and checked its data', out[-3000:])
        parsed = check_files(d, out)
        if len(parsed) == 2:
            (fa, a), (fb, b) = parsed.items()
            fam = 'nccl_diag_connection_bytes_total'
            sa, rb = by_family(a, fam, 'send'), by_family(b, fam, 'recv')
            sb, ra = by_family(b, fam, 'send'), by_family(a, fam, 'recv')
            case(sa == rb and sb == ra and sa > 0 and sb > 0,
                 'bytes one process sent are the bytes the other received', f'{sa} {rb} {sb} {ra}')
            hosts = {l['peer_host'] for _, l, _ in a[fam]['samples']}
            case(hosts == {host}, 'peer host label unescapes to the host name', hosts)
            kinds = {l['transport'] for _, l, _ in a[fam]['samples']}
            case(kinds == {args.transport}, f'every connection is {args.transport}', kinds)
            done_fam = a['nccl_diag_connection_completions_total']['samples']
            hist = a['nccl_diag_connection_completion_latency_seconds']['samples']
            counts = {l['conn']: v for n, l, v in hist if n.endswith('_count')}
            # one request in 16 is timed (transport/run/stats.h)
            case(all(0 < counts[l['conn']] <= v for _, l, v in done_fam) and len(done_fam) == 8,
                 'latency histogram of 8 connections samples their completions',
                 f'{counts} {done_fam}')
            if args.transport == 'tcp':
                rtts = a['nccl_diag_connection_tcp_rtt_seconds']['samples']
                case(len(rtts) == 8 and all(v > 0 for _, _, v in rtts),
                     'every TCP connection carries its sockets\' TCP_INFO round trip', rtts)
            openv = [v for _, _, v in a['nccl_diag_connection_open']['samples']]
            case(openv == [0] * 8, 'after the close every connection reads closed', openv)
            slow = [v for _, _, v in a.get('nccl_diag_connection_slow', {}).get('samples', [])]
            case(slow == [0] * 8, 'a clean run names no connection a slow link', slow)
        summ = [ln for ln in out.splitlines() if 'run summary: 8 connections (4 send, 4 receive)'
                in ln]
        case(len(summ) == 2, 'one end-of-job summary per process', out[-3000:])
        case(all('slow links named: 0' in ln for ln in summ), 'the summary counts no slow link',
             summ)
    if args.transport != 'tcp':
        return done()  # the cases below do not depend on the transport
    periodic_case(args)
    with tempfile.TemporaryDirectory() as d:
        r = run(args, [], cwd=d)
        case(r.returncode == 0 and os.listdir(d) == [], 'NCCL_DIAG_METRICS unset: no file')
    with tempfile.TemporaryDirectory() as d:
        missing = os.path.join(d, 'no-such-dir')
        r = run(args, ['NCCL_DIAG_METRICS=' + missing])
        out = r.stdout + r.stderr
        warns = [ln for ln in out.splitlines() if 'WARN' in ln and 'metrics file' in ln]
        case(len(warns) == 2 and all(missing in w and 'NCCL_DIAG_METRICS' in w for w in warns),
             'unwritable directory: one WARN per process naming it and the fix', out[-3000:])
    return done()


if __name__ == '__main__':
    sys.exit(main())
