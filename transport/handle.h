/* SPDX-License-Identifier: Apache-2.0 */
/* The listen handle: at most 128 bytes that NCCL carries from the listener
 * to the connector. It names us (magic, protocol version), this listen (a
 * random nonce) and where we listen (every candidate address, the device's
 * own first). Bytes 24..31 stay zero on the wire: the connector keeps its
 * progress state there, because NCCL hands connect the same buffer on every
 * retry. */
#ifndef DIAG_TRANSPORT_HANDLE_H
#define DIAG_TRANSPORT_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/addr.h"
#include "plugin/abi/nccl_common.h"

#define DIAG_MAGIC 0x67616964u /* "diag" in little-endian bytes */
#define HANDLE_VERSION 1
#define HANDLE_STATE_OFF 24 /* after magic..dev (16 bytes) and the nonce */
#define HANDLE_HOST_LEN 16
#define HANDLE_MAX_CAND 8
#define HANDLE_IFNAME_LEN 16

enum { HANDLE_F_RDMA = 1, HANDLE_F_TRUNCATED = 2 };

struct handle_cand {
  struct ipaddr addr; /* with the listener's prefix length */
  uint16_t port;
  char ifname[HANDLE_IFNAME_LEN];
};

struct handle {
  uint8_t version;
  uint8_t flags;
  uint8_t nsocks;   /* data sockets the listener expects (NCCL: listener decides) */
  uint8_t nthreads; /* helper threads per connection */
  uint32_t dev;     /* listener's device index */
  uint64_t nonce;
  char host[HANDLE_HOST_LEN];
  int ncands;
  struct handle_cand cands[HANDLE_MAX_CAND];
};

/* Writes all 128 bytes (zeroing the unused tail); candidates that do not fit
 * are dropped and HANDLE_F_TRUNCATED is set. Returns how many were encoded. */
int handle_encode(const struct handle *h, uint8_t out[NCCL_NET_HANDLE_MAXSIZE]);

enum handle_err {
  HANDLE_OK = 0,
  HANDLE_BAD_MAGIC,   /* not ours: another plugin, or garbage */
  HANDLE_BAD_VERSION, /* ours, but a protocol this build does not speak */
  HANDLE_CORRUPT,     /* ours, but malformed */
};

/* Decodes and validates; on error why says what was wrong. */
enum handle_err handle_decode(const uint8_t in[NCCL_NET_HANDLE_MAXSIZE], struct handle *h,
                              char *why, size_t cap);

/* This host's name as a handle carries it: the short name, at most
 * HANDLE_HOST_LEN - 1 bytes. */
void handle_local_host(char host[HANDLE_HOST_LEN]);
/* Whether a handle's host name is this host's (compared as a handle
 * carries names, so a long name matches its own truncation). */
bool handle_host_is_local(const struct handle *h);

#endif
