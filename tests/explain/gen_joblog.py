#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a healthy job log the way a large NCCL 2.21 job prints it with
NCCL_DEBUG=INFO: NODES hosts x 8 ranks, every rank's init lines (bootstrap,
plugin, IB devices, rings and trees, channels, Init COMPLETE and its
timings) interleaved phase by phase across ranks, with a training loop's
output in between. About 144 lines per rank: 1,024 nodes give 1.18 M lines.
Usage: gen_joblog.py NODES [LINES]  (LINES: repeat the training output
until the log has about that many lines, for the scaling curve)."""
import sys


def rank_phases(node, local, nranks, nnodes):
    host = f'gpu-node{node:04d}'
    pid = 100000 + local
    rank = node * 8 + local
    ip = f'10.{(node >> 8) & 255}.{node & 255}.{10 + local // 8}'
    p = f'{host}:{pid}:{pid} [{local}] NCCL INFO '
    t = f'{host}:{pid}:{pid + 91} [{local}] NCCL INFO '
    out = [[
        p + 'cudaDriverVersion 12040',
        p + f'Bootstrap : Using eth0:{ip}<0>',
        p + 'NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation',
    ]]
    if rank == 0:
        out[0].append('NCCL version 2.21.5+cuda12.4')
    out.append([
        t + 'NCCL_IB_HCA set to mlx5_0,mlx5_1,mlx5_2,mlx5_3',
        t + 'NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:' + ip + '<0>',
        t + 'Using non-device net plugin version 0',
        t + 'Using network IB',
        t + f'ncclCommInitRank comm 0x55d0c{rank:06x} rank {rank} nranks {nranks} cudaDev {local} nvmlDev {local} busId {local + 1}8000 commId 0x7e1f2a9b3c4d5e6f - Init START',
        t + 'Setting affinity for GPU %d to ffff,ffffffff' % local,
        t + 'NVLS multicast support is not available on dev %d' % local,
        t + f'comm 0x55d0c{rank:06x} rank {rank} nRanks {nranks} nNodes {nnodes} localRanks 8 localRank {local} MNNVL 0',
    ])
    chans = []
    for c in range(32):
        nxt = (rank + 1) % nranks
        via = 'via P2P/IPC' if nxt // 8 == node else f'[send] via NET/IB/{local // 2}'
        chans.append(t + f'Channel {c:02d}/0 : {rank}[{local}] -> {nxt}[{nxt % 8}] {via}')
    for c in range(32):
        prv = (rank - 1) % nranks
        via = 'via P2P/IPC' if prv // 8 == node else f'[receive] via NET/IB/{local // 2}'
        chans.append(t + f'Channel {c:02d}/0 : {prv}[{prv % 8}] -> {rank}[{local}] {via}')
    out.append(chans)
    out.append([t + f'Ring {c:02d} : {(rank - 1) % nranks} -> {rank} -> {(rank + 1) % nranks}'
                for c in range(32)] + [t + f'Trees [{c}] {rank + 1 if rank + 1 < nranks else -1}/-1/-1->{rank}->{rank - 1}'
                for c in range(32)])
    out.append([
        t + 'Connected all rings',
        t + 'Connected all trees',
        t + 'threadThresholds 8/8/64 | 65536/8/64 | 512 | 512',
        t + '32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer',
        t + 'TUNER/Plugin: Plugin load returned 2 : libnccl-tuner.so: cannot open shared object file: No such file or directory : when loading libnccl-tuner.so',
        t + 'TUNER/Plugin: Using internal tuner plugin.',
        t + 'ncclCommInitRank comm 0x55d0c%06x rank %d nranks %d cudaDev %d nvmlDev %d busId %d8000 commId 0x7e1f2a9b3c4d5e6f - Init COMPLETE' % (rank, rank, nranks, local, local, local + 1),
        t + 'Init timings - ncclCommInitRank: rank %d nranks %d total 2.41 (kernels 0.19, alloc 0.05, bootstrap 1.62, allgathers 0.08, topo 0.22, graphs 0.01, connections 0.21, rest 0.03)' % (rank, nranks),
    ])
    return out


def main():
    nnodes = int(sys.argv[1])
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    nranks = nnodes * 8
    w = sys.stdout.write
    n = 0
    ranks = [(node, local) for node in range(nnodes) for local in range(8)]
    phases = None
    for k in range(5):
        for node, local in ranks:
            ph = rank_phases(node, local, nranks, nnodes)[k]
            for line in ph:
                w(line + '\n')
            n += len(ph)
        w(f'[2026-11-28 10:0{k}:00] init phase {k} done on all ranks\n')
        n += 1
    step = 0
    while n < want:
        for node in range(0, nnodes):
            w(f'[rank{node * 8}]: step {step} loss {2.5 - step * 1e-6:.6f} lr 3.0e-4 tokens/s 412345 mem 61.2GB\n')
            n += 1
            if n >= want:
                break
        step += 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
