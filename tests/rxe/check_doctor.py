#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares nccl-net-diag doctor's view of the RDMA ports with rdma-core's
ibv_devinfo -v on the same host: every port with its state, active MTU and
link layer, and every GID entry the kernel holds (index, value, type),
nothing more (an emptied entry is no GID). Prints TAP cases (unnumbered).
usage: check_doctor.py LABEL DOCTOR_JSON DEVINFO_TXT DOCTOR_TXT"""
import ipaddress
import json
import re
import sys


def devinfo_ports(text):
    ports, dev, port = {}, None, None
    for line in text.splitlines():
        s = line.strip()
        if m := re.match(r'hca_id:\s*(\S+)', s):
            dev = m.group(1)
        elif m := re.match(r'port:\s*(\d+)', s):
            port = {'gids': {}}
            ports[(dev, int(m.group(1)))] = port
        elif port is None:
            continue
        elif m := re.match(r'state:\s*PORT_(\w+)', s):
            port['state'] = m.group(1)
        elif m := re.match(r'active_mtu:\s*(\d+)', s):
            port['mtu'] = int(m.group(1))
        elif m := re.match(r'link_layer:\s*(\w+)', s):
            port['ll'] = {'Ethernet': 'RoCE', 'InfiniBand': 'IB'}.get(m.group(1), m.group(1))
        elif m := re.match(r'GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+)(?:,\s*(.*))?', s):
            port['gids'][int(m.group(1))] = (ipaddress.ip_address(m.group(2)), m.group(3) or '')
    return ports


def main():
    label, djson, dinfo, dtext = sys.argv[1:5]
    cases = []
    try:
        doc = json.load(open(djson))
    except (OSError, ValueError) as e:
        print(f"not ok - doctor --json ({label}) is not JSON: {e}")
        return 1
    ref = devinfo_ports(open(dinfo).read())
    mine = {(p['device'], p['port']): p for p in doc.get('ports', [])}
    cases.append((bool(ref), f"ibv_devinfo -v lists RDMA ports ({label})", [open(dinfo).read()[-500:]]))
    cases.append((set(ref) == set(mine), f"doctor lists the ports ibv_devinfo lists ({label})",
                   [f"ibv_devinfo: {sorted(ref)}", f"doctor: {sorted(mine)}"]))
    for key in sorted(set(ref) & set(mine)):
        r, m = ref[key], mine[key]
        name = f"{key[0]} port {key[1]}"
        diffs = []
        for what, a, b in (('state', r.get('state'), m.get('state')),
                           ('active MTU', r.get('mtu'), m.get('active_mtu')),
                           ('link layer', r.get('ll'), m.get('link_layer'))):
            if a != b:
                diffs.append(f"{what}: ibv_devinfo {a}, doctor {b}")
        cases.append((not diffs, f"{name}: state, active MTU and link layer as ibv_devinfo ({label})",
                      diffs))
        theirs = {i: g for i, g in r['gids'].items()}
        ours = {g['index']: (ipaddress.ip_address(g['gid']), g['type']) for g in m.get('gids', [])}
        diffs = [f"GID {i}: ibv_devinfo {theirs.get(i)}, doctor {ours.get(i)}"
                 for i in sorted(set(theirs) | set(ours)) if theirs.get(i) != ours.get(i)]
        cases.append((not diffs and theirs, f"{name}: the GID table as ibv_devinfo, "
                      f"{len(theirs)} entries, RoCE v2 only ({label})", diffs))
    text = open(dtext).read()
    cases.append(('verdict: RDMA' in text and doc.get('exit_status') == 0,
                  f"doctor's verdict is RDMA with exit status 0 ({label})",
                  [l for l in text.splitlines() if l.startswith('verdict') or 'rror' in l][:5]))
    bad = 0
    for ok, name, why in cases:
        print(f"{'ok' if ok else 'not ok'} - {name}")
        if not ok:
            bad += 1
            for w in why:
                print(f"#   {w}")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
