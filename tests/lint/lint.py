#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Structural rules of CONTRIBUTING.md that a machine can check, as TAP.

usage: lint.py SOURCE_ROOT [CHECK ...]
Checks: format, spdx, layers, paths, sizes, names, returns, prefs, circles (all when
none is named).
Each check is one TAP case; its diagnostics name every offending file and
line, so a failure says what to change."""
import os
import re
import shutil
import subprocess
import sys

PRODUCT = ('common', 'plugin', 'transport', 'topo', 'tools', 'bench')
LAYER_ORDER = ['common', 'topo', 'transport', 'plugin']  # may include only lower or equal
FUNC_MAX = 80
FILE_MAX = 650  # "about 600": a file past this is split


def tracked(root):
    out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.split('\n')[:-1]
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(('.', 'build'))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


def sources(files, product_only=False):
    res = [f for f in files if f.endswith(('.c', '.h')) and os.path.exists(f)]
    if product_only:
        res = [f for f in res if f.split('/')[0] in PRODUCT]
    return res


def check_format(root, files):
    cf = shutil.which('clang-format')
    if not cf:
        return None, ['clang-format not installed']
    srcs = sources(files)
    bad = []
    for i in range(0, len(srcs), 50):
        r = subprocess.run([cf, '--dry-run', '--Werror'] + srcs[i:i + 50], cwd=root,
                           capture_output=True, text=True)
        for line in r.stderr.splitlines():
            if ': error:' in line or ': warning:' in line:
                bad.append(line.split(': ')[0])
    bad = sorted(set(bad))
    return not bad, [f'{b}: differs from .clang-format (clang-format -i {b.split(":")[0]})'
                     for b in bad]


def check_spdx(root, files):
    bad = []
    for f in files:
        if not f.endswith(('.c', '.h', '.py', '.sh')) and os.path.basename(f) != 'meson.build':
            continue
        if f.startswith('tests/fixtures/hosts/'):
            continue
        with open(os.path.join(root, f), errors='replace') as fh:
            head = fh.read(300)
        if 'SPDX-License-Identifier:' not in head:
            bad.append(f'{f}: no SPDX-License-Identifier line at the top')
    return not bad, bad


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check_layers(root, files):
    """Data flows one way: plugin -> transport -> topo, all on common/.
    tools/ and bench/ see the plugin only through plugin/abi (they load the
    .so as NCCL does)."""
    bad = []
    for f in sources(files, product_only=True):
        top = f.split('/')[0]
        with open(os.path.join(root, f), errors='replace') as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                itop = inc.split('/')[0]
                why = None
                if itop == 'plugin' and not inc.startswith('plugin/abi/') and top != 'plugin':
                    why = 'only plugin/ itself includes plugin/*.h other than plugin/abi/*'
                elif top == 'common' and itop in ('plugin', 'transport', 'topo'):
                    why = 'common/ includes nothing from plugin/, transport/ or topo/'
                elif top in LAYER_ORDER and itop in LAYER_ORDER and \
                        LAYER_ORDER.index(itop) > LAYER_ORDER.index(top) and itop != 'plugin':
                    why = f'{top}/ sits below {itop}/'
                if not why:
                    why = transport_part_why(f, inc)
                if why:
                    bad.append(f'{f}:{n}: includes "{inc}": {why}')
    bad += manager_names(root, files)
    return not bad, bad


# The connection manager reaches a transport through its setup-ops table
# (transport/setup_ops.h), as the data path does through transport_comm_ops.
MANAGER_FILES = ('transport/connect.c', 'transport/connect.h', 'transport/connect_data.c',
                 'transport/accept.c', 'transport/listen.c', 'transport/listen.h',
                 'transport/transport.c')
TRANSPORT_NAME = re.compile(r'\b(?:ib|tcp)_\w+|\bIB_[A-Z]\w*|"transport/(?:ib|tcp)/[^"]*"')


def manager_names(root, files):
    bad = []
    for f in sources(files, product_only=True):
        if f not in MANAGER_FILES:
            continue
        with open(os.path.join(root, f), errors='replace') as fh:
            text = fh.read()
        code = CODE_NOISE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text).split('\n')
        for n, line in enumerate(text.split('\n'), 1):
            hit = TRANSPORT_NAME.search(line if INCLUDE.match(line) else code[n - 1])
            if hit:
                bad.append(f'{f}:{n}: names {hit.group(0)}: the connection manager names no '
                           'transport; call it through its transport_setup_ops '
                           '(transport/setup_ops.h)')
    return bad


# transport/ib's sub-folders, lowest first: a file includes headers of its
# own sub-folder or lower ones only, so the parts build on each other one way.
IB_PARTS = ['dev', 'setup', 'data', 'diag', 'failover']


def transport_part_why(f, inc):
    """plugin/ asks transport/transport.h, never one transport's headers;
    inside transport/ib, includes follow IB_PARTS."""
    if f.startswith('plugin/') and inc.startswith(('transport/ib/', 'transport/tcp/')):
        return 'plugin/ names no transport: ask transport/transport.h (transport_dev_*)'
    fp, ip = f.split('/'), inc.split('/')
    if fp[:2] == ['transport', 'ib'] and ip[:2] == ['transport', 'ib'] and len(fp) > 3 and \
            len(ip) > 3 and fp[2] in IB_PARTS and ip[2] in IB_PARTS and \
            IB_PARTS.index(ip[2]) > IB_PARTS.index(fp[2]):
        return f'transport/ib/{fp[2]}/ sits below transport/ib/{ip[2]}/ ({" < ".join(IB_PARTS)})'
    return None


PATHLIKE = re.compile(r'(?<![\w./<$-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+\.(?:c|h|md|py|sh|map|build))\b')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def comment_texts(path, text):
    if path.endswith(('.c', '.h')):
        for m in COMMENT.finditer(text):
            yield text.count('\n', 0, m.start()) + 1, m.group(0)
    else:
        for n, line in enumerate(text.split('\n'), 1):
            i = line.find('#')
            if i >= 0 and not line.lstrip().startswith('#!'):
                yield n, line[i:]


def check_paths(root, files):
    """Every file a comment names exists: as a path from the top, from the
    commenting file's folder, or (a bare name) in that folder."""
    names = set(files)
    basenames = {os.path.basename(f) for f in files}
    bad = []
    for f in files:
        if f.startswith('tests/fixtures/hosts/'):
            continue
        if not (f.endswith(('.c', '.h', '.py', '.sh')) or os.path.basename(f) == 'meson.build'):
            continue
        with open(os.path.join(root, f), errors='replace') as fh:
            text = fh.read()
        here = os.path.dirname(f)
        for line, comment in comment_texts(f, text):
            for m in PATHLIKE.finditer(comment):
                p = m.group(1)
                if p.startswith(('.', '/')) or '*' in p or p.count('.') > 1 and '/' not in p:
                    continue
                cands = [p, os.path.normpath(os.path.join(here, p))]
                if any(c in names for c in cands):
                    continue
                if '/' not in p and p in basenames:  # a sibling module named by its file
                    continue
                # a name a system or another project owns (verbs.h, net.cc)
                if '/' not in p and (p.endswith('.h') and p in SYSTEM_HEADERS):
                    continue
                if p.split('/')[0] in ('src', 'include', 'infiniband', 'linux', 'sys', 'ext-net',
                                       'providers', 'libibverbs', 'prov', 'misc', 'transport.cc'):
                    continue
                bad.append(f'{f}:{line + comment[:m.start()].count(chr(10))}: names "{p}", '
                           'which does not exist')
    return not bad, bad


SYSTEM_HEADERS = {'verbs.h', 'hwloc.h', 'nccl.h', 'net.h', 'err.h', 'common.h', 'pthread.h',
                  'stdatomic.h', 'net_device.h', 'socket.h', 'poll.h', 'epoll.h'}

FUNC_START = re.compile(r'^[A-Za-z_][^;()]*\b([A-Za-z_][A-Za-z0-9_]*)\s*\([^;]*$')


def functions(text):
    """Top-level function definitions of a clang-formatted file: a line at
    column 0 that opens a signature, the body's '{' ending a line, and the
    closing '}' alone at column 0."""
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        m = FUNC_START.match(lines[i])
        if not m or lines[i].startswith(('static const', 'typedef', '#', 'struct', 'enum')) and \
                '(' not in lines[i].split('=')[0]:
            i += 1
            continue
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith('{') and ';' not in lines[j]:
            j += 1
        if j >= len(lines) or ';' in lines[j] and not lines[j].rstrip().endswith('{') or \
                '=' in lines[i].split('(')[0]:
            i += 1
            continue
        k = j + 1
        while k < len(lines) and lines[k] != '}':
            k += 1
        if k < len(lines) and lines[k] == '}':
            yield m.group(1), i + 1, k - i + 1
            i = k + 1
        else:
            i += 1


def check_sizes(root, files):
    bad = []
    for f in sources(files, product_only=True):
        with open(os.path.join(root, f), errors='replace') as fh:
            text = fh.read()
        n = text.count('\n')
        if n > FILE_MAX:
            bad.append(f'{f}: {n} lines; split it by concern (at most about 600)')
        if f.endswith('.c'):
            for name, line, length in functions(text):
                if length > FUNC_MAX:
                    bad.append(f'{f}:{line}: {name}() is {length} lines (at most {FUNC_MAX})')
    return not bad, bad


KNOWN_NAME_FILES = ('common/knob_names.c', 'common/knobs.c', 'common/knobs_nccl.c')


def check_names(root, files):
    """Every NCCL_* variable the product reads is a name the misspelling
    check knows: otherwise the plugin and doctor warn about the project's
    own settings."""
    known = set()
    for f in KNOWN_NAME_FILES:
        with open(os.path.join(root, f), errors='replace') as fh:
            known |= set(re.findall(r'"(NCCL_[A-Z0-9_]+)"', fh.read()))
    bad = []
    for f in sources(files, product_only=True):
        if f in KNOWN_NAME_FILES:
            continue
        with open(os.path.join(root, f), errors='replace') as fh:
            for i, line in enumerate(fh, 1):  # a name as a call's first argument: a read
                for name in re.findall(r'\(\s*"(NCCL_[A-Z0-9_]*[A-Z0-9])"', line):
                    if name not in known:
                        bad.append(f'{f}:{i}: {name} is read but not in common/knob_names.c')
    return not bad, bad


NEG_RETURN = re.compile(r'\breturn\s+\(?-\s*(?:1\b|E[A-Z0-9]+\b)')


def check_returns(root, files):
    """The one error convention in tools/: 0 or a positive errno, a named
    enum for a progress step or a classification, a bool for a yes/no;
    never -1 or a negative errno."""
    bad = []
    for f in sources(files, product_only=True):
        if not f.startswith('tools/'):
            continue
        with open(os.path.join(root, f), errors='replace') as fh:
            text = COMMENT.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), fh.read())
        for n, line in enumerate(text.split('\n'), 1):
            if NEG_RETURN.search(line):
                bad.append(f'{f}:{n}: returns a negative value; return 0 or a positive errno '
                           '(a named enum for a step or a kind, a bool for yes/no)')
    return not bad, bad


KNOB_CALL = re.compile(r'\bknob_(?:int|str|enum|is_set|raw|def|load|parse|generation)\s*\(')
# The plugin layer loads the settings (api.c's init) but reads no value itself.
KNOB_READ = re.compile(r'\bknob_(?:int|str|enum|is_set|raw|def|parse)\s*\(')
PREFS_FILE = 'transport/prefs.c'


def check_prefs(root, files):
    """The transport and plugin layers read their settings in one place:
    transport/prefs.c fills struct transport_prefs, every other file of
    theirs reads that."""
    bad = []
    for f in sources(files, product_only=True):
        if f == PREFS_FILE or not f.startswith(('transport/', 'plugin/')):
            continue
        pattern = KNOB_CALL if f.startswith('transport/') else KNOB_READ
        with open(os.path.join(root, f), errors='replace') as fh:
            text = CODE_NOISE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), fh.read())
        for n, line in enumerate(text.split('\n'), 1):
            m = pattern.search(line)
            if m:
                bad.append(f'{f}:{n}: calls {m.group(0).rstrip("( ")}; read the setting from '
                           f'transport_prefs() and add it to struct transport_prefs ({PREFS_FILE})')
    return not bad, bad


CIRCLE_SCOPE = ('tools/', 'bench/')  # where no two files may call each other round
CODE_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)
GLOBAL_DEF = re.compile(r'^(?!static\b|extern\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*'
                        r'(?:\([^;{]*\)\s*\{|(?:\[\])?\s*=)', re.M)


def call_graph(root, files):
    """file -> files whose global functions or tables it names (a call, or
    a function put in a table)."""
    text, owner = {}, {}
    for f in files:
        with open(os.path.join(root, f), errors='replace') as fh:
            text[f] = CODE_NOISE.sub(' ', fh.read())
        for m in GLOBAL_DEF.finditer(text[f]):
            owner.setdefault(m.group(1), f)
    return {f: {owner[w] for w in set(re.findall(r'\b[A-Za-z_]\w*\b', t))
                if w in owner and owner[w] != f} for f, t in text.items()}


def circles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# transport/: files of one folder may call each other round (one module's
# business); across folders the parts call one way, a lower part reaching a
# higher one only through a hook the higher one sets (transport/ib/dev/ib.h's
# struct ib_hooks). Circles not yet cut, each by the prefixes of its files:
TRANSPORT_CIRCLES_LEFT = (
    ('transport/liveness', 'transport/run/'),  # liveness checks and the run-time stall watch
    ('transport/ib/data/', 'transport/ib/failover/'),  # the data path and port fail-over
)


def circle_links(graph, comp):
    return "; ".join(f'{a} -> {b}' for a in comp for b in sorted(graph[a]) if b in comp)


def transport_circles(root, files):
    srcs = [f for f in sources(files) if f.endswith('.c') and f.startswith('transport/')]
    graph = call_graph(root, srcs)
    bad = []
    for comp in circles(graph):
        if len({os.path.dirname(f) for f in comp}) == 1:
            continue
        if any(all(f.startswith(left) for f in comp) for left in TRANSPORT_CIRCLES_LEFT):
            continue
        bad.append(f'{len(comp)} files of different folders call each other round: '
                   f'{circle_links(graph, comp)}; move what the lower one calls down to it, or '
                   'have the higher one hand it a function at init')
    return bad


def check_circles(root, files):
    """Files of tools/ and bench/ depend one way: no set of files calls each
    other round (shared helpers go in a file that calls none of its users).
    transport/'s folders too (transport_circles)."""
    srcs = [f for f in sources(files) if f.endswith('.c') and f.startswith(CIRCLE_SCOPE)]
    sys.setrecursionlimit(10000)
    graph = call_graph(root, srcs)
    bad = []
    for comp in circles(graph):
        bad.append(f'{len(comp)} files call each other round: {circle_links(graph, comp)}; move '
                   'what the others call into a file that calls none of them')
    bad += transport_circles(root, files)
    return not bad, bad


CHECKS = {
    'format': ('product and test code is formatted with .clang-format', check_format),
    'spdx': ('every source file carries an SPDX license line', check_spdx),
    'layers': ('includes follow the layers (common < topo < transport < plugin)', check_layers),
    'paths': ('every file a comment names exists', check_paths),
    'sizes': (f'product functions <= {FUNC_MAX} lines, files <= {FILE_MAX} lines', check_sizes),
    'names': ('every NCCL_* variable the product reads is a known name', check_names),
    'returns': ('no function in tools/ returns -1 or a negative errno', check_returns),
    'prefs': ('transport/ and plugin/ read settings only through transport/prefs.c', check_prefs),
    'circles': ('files of tools/ and bench/, and the folders of transport/, call one way',
                check_circles),
}


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    os.chdir(root)
    want = sys.argv[2:] or list(CHECKS)
    files = tracked(root)
    n = 0
    for name in want:
        desc, fn = CHECKS[name]
        n += 1
        ok, msgs = fn(root, files)
        for m in msgs[:200]:
            print(f'# {m}')
        if ok is None:
            print(f'ok {n} - {desc} # SKIP {msgs[0]}')
        else:
            print(f'{"ok" if ok else "not ok"} {n} - {desc}')
    print(f'1..{n}')


if __name__ == '__main__':
    main()
