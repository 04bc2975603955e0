#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the catalogue of NCCL's WARN messages that `nccl-net-diag explain`
is tested against: for every release tag from v2.4 to v2.30 of a local NCCL
git repository, the format string of each WARN(...) call under src/, with
the file it is in and the first and last tag that have it. Only the format
strings are kept (as data), never code.

Each entry gets a class (what kind of failure it reports) and, where the
failure is one a user causes and can fix, the explain rule that must
recognise it. Output: tab-separated lines
  class  rule  first_tag  last_tag  file  format
with '-' for no rule, sorted by class and format.

With --info it catalogues, the same way, the INFO messages whose state
explain reads across hosts (version, net plugin, network, bootstrap and
socket addresses, RDMA devices, settings) or drops as stateless at scale
(channels, rings, trees, init progress and timings): tab-separated lines
  family  kind(state|inert)  first_tag  last_tag  file  format

Usage: gen_catalog.py NCCL_GIT_DIR > tools/explain/catalog.tsv
       gen_catalog.py --info NCCL_GIT_DIR > tools/explain/catalog_info.tsv"""
import re
import subprocess
import sys

TAG_RE = re.compile(r'^v2\.([4-9]|[12][0-9]|30)\.\d+-\d+$')

# (class, rule or None, pattern on the format string). First match wins;
# a rule is named only where the message alone identifies the cause.
CLASSES = [
    ('shm', 'shm', r'shared memory segment|failed to extend /dev/shm|failed to extend %s to|posix_fallocate'),
    ('shm', None, r'[Ss]hared memory|shm|/dev/shm|munmap|Could not map'),
    ('memlock', 'memlock', r'RLIMIT_MEMLOCK'),
    ('rank', 'invalid-rank', r'Invalid rank'),
    ('transport', 'transport-mismatch', r'wrong type %d != %d'),
    ('plugin', 'net-plugin-missing', r'Failed to initialize any NET plugin'),
    ('plugin', None, r'[Pp]lugin|dlopen|dlsym'),
    ('iface', 'ifname', r'no socket interface found|No usable listening interface|no interface found'),
    ('socket', 'socket-create', r'Socket creation (failed|error)'),
    ('socket', 'connect', r'[Cc]onnect to .* failed|Connection refused|[Cc]onnect.*timed out'),
    ('socket', 'closed-by-peer', r'Connection closed by remote peer'),
    ('socket', 'truncated', r'message truncated'),
    ('socket', 'addr-family', r'neither AF_INET'),
    ('socket', None, r'[Ss]ocket|[Cc]onnect|[Aa]ccept|[Ll]isten|[Bb]ind|poll|send|recv|[Bb]ootstrap|addr'),
    ('ib', 'completion', r'Got completion .*(error|status=%s)'),
    ('ib', 'async-event', r'async (error |fatal )?event'),
    ('ib', None, r'ibv_|NET/IB|IB|verbs|GID|gid|[Qq]ueue [Pp]air|\bQP\b|mlx5|RoCE|HCA|[Pp]ort'),
    ('cuda', None, r'[Cc]uda|CUDA|cu[A-Z][a-zA-Z]+|GPU|NVML|nvml|cuMem|[Dd]evice'),
    ('usage', None, r'[Ii]nvalid|must|should|not supported|unsupported|mismatch|too (many|large|small)|exceed|[Ee]nv|NCCL_'),
    ('internal', None, r'.'),
]

FMT_RE = re.compile(r'%[-+ #0]*(\*|\d+)?(\.(\*|\d+))?(hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspn%]')


def tags(repo):
    out = subprocess.run(['git', '-C', repo, 'tag'], capture_output=True, text=True,
                         check=True).stdout.split()
    def key(t):
        return [int(x) for x in re.findall(r'\d+', t)]
    return sorted((t for t in out if TAG_RE.match(t)), key=key)


def literal_format(call):
    """The format of WARN(<call>: string literals up to the first top-level
    comma; a macro name between literals ("Call to " name " failed")
    becomes %s."""
    i, parts = 0, []
    while i < len(call):
        c = call[i]
        if c == '"':
            j, buf = i + 1, []
            while j < len(call) and call[j] != '"':
                if call[j] == '\\' and j + 1 < len(call):
                    buf.append({'n': '', 't': ' ', '"': '"', '\\': '\\'}.get(call[j + 1], call[j + 1]))
                    j += 2
                    continue
                buf.append(call[j])
                j += 1
            parts.append(''.join(buf))
            i = j + 1
        elif c in ',)':
            break
        elif c.isalpha() or c == '_':
            j = i
            while j < len(call) and (call[j].isalnum() or call[j] == '_'):
                j += 1
            word = call[i:j]
            if word.startswith('PRI'):
                parts.append('%' + {'PRIu64': 'lu', 'PRIx64': 'lx', 'PRId64': 'ld'}.get(word, 'lu'))
            elif parts or call[j:].lstrip().startswith('"'):
                parts.append('%s')
            else:
                return None  # the format is a variable: nothing to catalogue
            i = j
        else:
            i += 1
    fmt = ''.join(parts).strip()
    return fmt or None


def warns(repo, tag):
    p = subprocess.run(['git', '-C', repo, 'grep', '-n', '-I', '-e', 'WARN(', tag, '--', 'src'],
                       capture_output=True, text=True)
    for line in p.stdout.splitlines():
        m = re.match(r'^[^:]+:([^:]+):\d+:(.*)$', line)
        if not m:
            continue
        path, code = m.group(1), m.group(2)
        k = code.find('WARN(')
        if k < 0 or (k and (code[k - 1].isalnum() or code[k - 1] == '_')):
            continue  # INFO_WARN(, a #define of WARN itself
        if code.lstrip().startswith(('#define', '//', '*')):
            continue
        fmt = literal_format(code[k + 5:])
        if fmt:
            yield path[len('src/'):] if path.startswith('src/') else path, fmt


# (family, kind, pattern on an INFO format). First match wins.
INFO_FAMILIES = [
    ('network', 'state', r'^Using network '),
    ('plugin', 'state', r'^NET/Plugin ?: ?(Loaded net plugin|No plugin found|Could not find|'
                        r'dlerror=.*No plugin found|Using internal)'),
    ('bootstrap', 'state', r'^Bootstrap ?: ?Using'),
    ('ib-devices', 'state', r'^NET/IB ?: ?(Using|No device found)'),
    ('socket-devices', 'state', r'^NET/Socket ?: ?Using'),
    ('setting', 'state', r'set by environment to'),
    ('timings', 'inert', r'^Init timings'),
    ('channels', 'inert', r'^(Channel |Ring |Rings |Trees |Tree |Pattern |Connected all |'
                          r'threadThresholds|P2P Chunksize|%d coll channels)'),
    ('init', 'inert', r'^(ncclCommInitRank(Config)? comm|comm %p rank|Setting affinity|'
                      r'cudaDriverVersion|NVLS multicast support)'),
]


def infos(repo, tag):
    p = subprocess.run(['git', '-C', repo, 'grep', '-n', '-I', '-e', 'INFO(', tag, '--', 'src'],
                       capture_output=True, text=True)
    for line in p.stdout.splitlines():
        m = re.match(r'^[^:]+:([^:]+):\d+:(.*)$', line)
        if not m:
            continue
        path, code = m.group(1), m.group(2)
        k = code.find('INFO(')
        if k < 0 or (k and (code[k - 1].isalnum() or code[k - 1] == '_')):
            continue
        comma = code.find(',', k)  # INFO(subsystems, format, ...)
        if comma < 0 or code.lstrip().startswith(('#define', '//', '*')):
            continue
        fmt = literal_format(code[comma + 1:].lstrip())
        if not fmt:
            continue
        for fam, kind, pat in INFO_FAMILIES:
            if re.search(pat, fmt):
                yield path[len('src/'):] if path.startswith('src/') else path, fmt, fam, kind
                break


def main_info(repo):
    seen = {}
    for tag in tags(repo):
        for path, fmt, fam, kind in infos(repo, tag):
            key = (fmt, path)
            if key not in seen:
                seen[key] = [fam, kind, tag, tag]
            else:
                seen[key][3] = tag
    rows = [(fam, kind, first, last, path, fmt.replace('\t', ' '))
            for (fmt, path), (fam, kind, first, last) in seen.items()]
    rows.sort(key=lambda r: (r[0], r[5], r[4]))
    print('# NCCL INFO format strings that carry state, v2.4 to v2.30, generated by')
    print('# tools/explain/gen_catalog.py --info; family, kind, first tag, last tag, file, format')
    for r in rows:
        print('\t'.join(r))


def classify(fmt):
    for cls, rule, pat in CLASSES:
        if re.search(pat, fmt):
            return cls, rule
    return 'internal', None


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--info':
        return main_info(sys.argv[2])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    repo = sys.argv[1]
    seen = {}
    for tag in tags(repo):
        for path, fmt in warns(repo, tag):
            key = (fmt, path)
            if key not in seen:
                seen[key] = [tag, tag]
            else:
                seen[key][1] = tag
    rows = []
    for (fmt, path), (first, last) in seen.items():
        cls, rule = classify(fmt)
        rows.append((cls, rule or '-', first, last, path, fmt.replace('\t', ' ')))
    rows.sort(key=lambda r: (r[0], r[5], r[4]))
    print('# NCCL WARN format strings, v2.4 to v2.30, generated by tools/explain/gen_catalog.py')
    print('# from the release tags of NVIDIA/nccl; class, rule (- none), first tag, last tag, file, format')
    for r in rows:
        print('\t'.join(r))


if __name__ == '__main__':
    main()
