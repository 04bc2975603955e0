#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile host on the job's network, for attack.py: it knows an address
and a port and nothing else (no handle, no token). For --seconds it keeps
--conns connections open to the port (reopening those the port closes), a
quarter of them sending well-formed liveness checks with guessed tokens or
listen preambles with guessed nonces, and one sending frames as fast as the
port takes them. Prints one JSON line: connections opened, the most held at
once, and every byte the port sent back (a stranger must get none)."""
import argparse
import errno
import json
import os
import random
import resource
import selectors
import socket
import struct
import sys
import time

LIVE_MAGIC = 0x706c7664


def live_frame():
    # magic, version, type PING, pad, seq, a guessed token, pad: 24 bytes
    return struct.pack('<IBBHIQI', LIVE_MAGIC, 1, 1, 0, random.getrandbits(32),
                       random.getrandbits(64), 0)


DIAG_MAGIC = 0x67616964


def preamble():
    # magic, version, role CTRL, index, a guessed nonce, a connection id: 24 bytes
    return struct.pack('<IBBHQQ', DIAG_MAGIC, 1, 1, 0, random.getrandbits(64),
                       random.getrandbits(64))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--host', required=True)
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--conns', type=int, default=5000)
    ap.add_argument('--seconds', type=float, default=5)
    ap.add_argument('--talk', default='live',
                    help='live: liveness checks; nonce: listen preambles; silent: nothing')
    ap.add_argument('--forbid', action='append', default=[],
                    help='text that must not come back (counted in "forbidden")')
    a = ap.parse_args()
    want = a.conns + 64
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    sel = selectors.DefaultSelector()
    socks = {}
    stats = {'opened': 0, 'held_max': 0, 'bytes_back': 0, 'refused': 0, 'sample': '',
             'forbidden': 0}
    forbid = [f.encode() for f in a.forbid]
    first = {'live': live_frame, 'nonce': preamble}.get(a.talk)
    end = time.monotonic() + a.seconds
    hot = None

    def open_one(talk):
        s = socket.socket(socket.AF_INET6 if ':' in a.host else socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((a.host, a.port))
        except BlockingIOError:
            pass
        except OSError:
            stats['refused'] += 1
            s.close()
            return None
        socks[s] = talk
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        return s

    def close_one(s):
        sel.unregister(s)
        del socks[s]
        s.close()

    while time.monotonic() < end:
        while len(socks) < a.conns:
            talk = first is not None and len(socks) % 4 == 0
            if open_one(talk) is None:
                break
        if hot is None or hot not in socks:
            hot = open_one(a.talk == 'live')
        stats['held_max'] = max(stats['held_max'], len(socks))
        for key, ev in sel.select(0.05):
            s = key.fileobj
            if s not in socks:
                continue
            if ev & selectors.EVENT_WRITE:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    close_one(s)
                    continue
                stats['opened'] += 1
                talk = socks[s]
                socks[s] = 'up'
                sel.modify(s, selectors.EVENT_READ)
                if talk is True:
                    try:
                        s.send(first())
                    except OSError:
                        close_one(s)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b''
            if data:
                stats['bytes_back'] += len(data)
                stats['forbidden'] += sum(1 for f in forbid if f in data)
                if not stats['sample']:
                    stats['sample'] = data[:64].hex()
            else:
                close_one(s)
        if a.talk == 'live' and hot in socks and socks[hot] == 'up':  # full rate: as much as the port takes
            try:
                hot.send(live_frame() * 64)
            except BlockingIOError:
                pass
            except OSError as e:
                if e.errno != errno.EAGAIN:
                    close_one(hot)
    for s in list(socks):
        s.close()
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
