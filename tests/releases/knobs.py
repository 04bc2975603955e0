#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every setting NCCL 2.30.7's network transports read has a state in
`nccl-net-diag params --json` (honoured, clamped or ignored, with why), the
honoured ones are in the plugin's knob table, and doctor names an ignored one
that is set. The list below was read at v2.30.7-1 from the NCCL_PARAM and
ncclGetEnv calls of src/transport/net_ib/, src/transport/net_socket.cc,
src/misc/socket.cc, src/misc/ibvwrap.cc and src/misc/ibvsymbols.cc (GIN and
GDAKI device-side settings aside). TAP.
Usage: knobs.py NCCL_NET_DIAG HOSTS_DIR"""
import json
import os
import subprocess
import sys

NCCL_2_30_7 = '''
NCCL_COMM_ID NCCL_GDR_FLUSH_DISABLE NCCL_IBVERBS_LIB NCCL_IB_ADAPTIVE_ROUTING NCCL_IB_ADDR_FAMILY
NCCL_IB_ADDR_RANGE NCCL_IB_AR_THRESHOLD NCCL_IB_DATA_DIRECT NCCL_IB_DEVICE_PCI_ORDER NCCL_IB_DISABLE
NCCL_IB_ECE_ENABLE NCCL_IB_FIFO_TC NCCL_IB_GID_INDEX NCCL_IB_HCA NCCL_IB_MERGE_NICS NCCL_IB_MERGE_VFS
NCCL_IB_MQP_RETRY_ALL NCCL_IB_MQP_RETRY_CNT NCCL_IB_MQP_RETRY_SLEEP_MSEC NCCL_IB_OOO_RQ
NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_PKEY NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS
NCCL_IB_QPS_PER_CONNECTION NCCL_IB_QUERY_PORT_SPEED NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME
NCCL_IB_RESILIENCY_PORT_FAILOVER NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS
NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY NCCL_IB_RESILIENCY_PORT_RECOVERY
NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX
NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY NCCL_IB_RETRY_CNT NCCL_IB_RETURN_ASYNC_EVENTS
NCCL_IB_ROCE_VERSION_NUM NCCL_IB_ROUTABLE_FLID_GID_INDEX NCCL_IB_SL NCCL_IB_SPLIT_DATA_ON_QPS
NCCL_IB_SUBNET_AWARE_ROUTING NCCL_IB_SUBNET_PREFIX_LEN NCCL_IB_TC NCCL_IB_TIMEOUT NCCL_IB_USE_INLINE
NCCL_IB_WARN_RAIL_LOCAL NCCL_NSOCKS_PERTHREAD NCCL_SOCKET_FAMILY NCCL_SOCKET_IFNAME
NCCL_SOCKET_INLINE NCCL_SOCKET_MAGIC NCCL_SOCKET_MIN_TASKSIZE NCCL_SOCKET_NTHREADS
NCCL_SOCKET_POLL_TIMEOUT_MSEC NCCL_SOCKET_RCVBUF NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC
NCCL_SOCKET_SNDBUF
'''.split()

n = 0


def case(ok, what, detail=None):
    global n
    n += 1
    print(f'{"ok" if ok else "not ok"} {n} - {what}')
    if not ok and detail is not None:
        print('# ' + str(detail)[:3000].replace('\n', '\n# '))


def run(tool, args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(('NCCL_', 'HWLOC_'))}
    e.update(env or {})
    return subprocess.run([tool] + args, env=e, capture_output=True, text=True, timeout=60)


def main():
    tool, hosts = sys.argv[1], sys.argv[2]
    p = run(tool, ['params', '--json'])
    doc = json.loads(p.stdout)
    states = {k['name']: k for k in doc.get('nccl_knobs', [])}
    missing = [k for k in NCCL_2_30_7 if k not in states]
    case(not missing, 'params --json gives every NCCL 2.30.7 network setting a state', missing)
    bad = [k for k, v in states.items()
           if v['state'] not in ('honoured', 'clamped', 'ignored') or
           (v['state'] != 'honoured' and not v.get('why'))]
    case(not bad, 'each is honoured, or clamped or ignored with what happens instead', bad)
    table = {k['name'] for k in doc.get('knobs', [])}
    absent = [k for k, v in states.items() if v['state'] != 'ignored' and k not in table]
    case(not absent, 'the honoured and clamped ones are in the plugin\'s knob table', absent)
    own = [k for k in table if k.startswith('NCCL_') and not k.startswith('NCCL_DIAG_') and
           k not in states]
    case(not own, 'every NCCL setting the plugin reads is one NCCL 2.30.7 reads', own)
    p = run(tool, ['params', '--set', '--json'], {'NCCL_IB_USE_INLINE': '1'})
    got = json.loads(p.stdout).get('nccl_knobs', [])
    case([(k['name'], k['state'], k['value']) for k in got] ==
         [('NCCL_IB_USE_INLINE', 'ignored', '1')],
         'params --set --json: the ignored setting, its value and state', got)
    h = os.path.join(hosts, 'roce-story5')
    env = {'NCCL_DIAG_SYSFS_ROOT': os.path.join(h, 'sysfs'), 'HWLOC_COMPONENTS': '-pci',
           'HWLOC_XMLFILE': os.path.join(h, 'topo.xml'), 'NCCL_IB_OOO_RQ': '1'}
    p = run(tool, ['doctor', '--json', '--pid1-environ', '/dev/null'], env)
    notes = [x['text'] for x in json.loads(p.stdout).get('problems', [])
             if x['severity'] == 'note']
    case(any(t.startswith('NCCL_IB_OOO_RQ=1 is ignored by this plugin: ') for t in notes),
         'doctor: a set NCCL setting this plugin ignores is a note that says why', notes)
    print(f'1..{n}')


main()
