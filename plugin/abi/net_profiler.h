/* SPDX-License-Identifier: Apache-2.0 */
/* Network events a net plugin reports to NCCL's profiler (NCCL 2.23+):
 * the profFunction of init (v10+) is called with a per-request handle NCCL
 * passed to isend/irecv, a plugin id (transport type | layout version) and
 * a descriptor whose layout that version names. Values as NCCL 2.28 and
 * 2.30 define them in their plugin profiler headers (the IB and socket
 * descriptors at version 1). */
#ifndef DIAG_ABI_NET_PROFILER_H
#define DIAG_ABI_NET_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#define NCCL_PROFILER_NET_VER_BITS 16
#define NCCL_PROFILER_NET_VER_MASK (~0U >> NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_MASK (~0U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_IB (1U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_SOCK (2U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_IB_VER 1
#define NCCL_PROFILER_NET_SOCKET_VER 1

/* The callback's type argument. */
enum {
  ncclProfilerNetEventStart = 0,
  ncclProfilerNetEventStop = 1,
  ncclProfilerNetEventUpdate = 2,
  ncclProfilerNetEventUpdateAndStop = 3,
};

enum { ncclProfileQp = 1 << 0 };     /* the IB descriptor's type */
enum { ncclProfileSocket = 1 << 0 }; /* the socket descriptor's type */

/* One work request on one queue pair. */
typedef struct {
  uint8_t type; /* ncclProfileQp */
  union {
    struct {
      int device;     /* the plugin's device index */
      uint64_t wr_id; /* the work request's id */
      int opcode;     /* its ibv_wr_opcode */
      int qpNum;      /* the queue pair's number */
      size_t length;  /* bytes the work request moves */
    } qp;
  };
} ncclProfilerNetIbDescr_v1_t;

/* One transfer on one socket. */
typedef struct {
  uint8_t type; /* ncclProfileSocket */
  union {
    struct {
      int fd;
      int op; /* 0 send, 1 receive */
      size_t length;
    } sock;
  };
} ncclProfilerNetSockDescr_v1_t;

#endif
