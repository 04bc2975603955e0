/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance harness: every case runs in fresh processes that load the
 * built plugin as NCCL does (tools/netload.h). Two-sided cases fork a
 * receiver (listens, accepts) and a sender (connects), joined by a
 * socketpair that carries the handle and barriers, optionally each in its
 * own network namespace. The plugin's log is captured through the logger
 * the side passes to init, so cases assert on the diagnosis text. */
#ifndef DIAG_TESTS_API_HARNESS_H
#define DIAG_TESTS_API_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "tap.h"
#include "tools/netload.h"

enum { ROLE_RECV = 0, ROLE_SEND = 1, ROLE_SINGLE = 2 };

struct side {
  int role;
  int ctl; /* socketpair to the other side (-1 for single cases) */
  int abi; /* the table this side binds: --abi, or the case's choice */
  struct netload nl;
  int loaded;
  int dev; /* device both sides use */
};

enum { T_TCP = 1, T_IB = 2, T_ANY = 3 };

struct api_case {
  const char *name;
  void (*run)(struct side *s);
  int two_sided;
  int needs_root; /* skipped with a reason when not root */
  int core;       /* part of the short suite run for every ABI version */
  int timeout_s;
  int transports; /* T_TCP, T_IB or both (0 = both) */
  int netns_only; /* needs the two-namespace-host placement */
  int one_host;   /* only in the one-host placement (it picks other fixture hosts) */
  int soft_only;  /* softverbs only: fixture hosts, injected faults, or 2 GiB of memory */
  int abi_only;   /* only in the run for this table (the case picks each side's table) */
};

/* Placement: namespaces for the receiver and sender (NULL = current). */
extern const char *netns_recv, *netns_send;
extern int abi_version;
extern int transport_ib; /* the suite runs over RDMA devices (softverbs) */
extern int real_verbs;   /* ... over the system's libibverbs and real devices */

/* Environment for one side (KEY=VALUE), applied before the plugin loads. */
void side_env_add(int role, const char *kv);

/* Loads the plugin and calls init with the capturing logger. */
int side_open(struct side *s);
void side_close(struct side *s);

/* Captured plugin log. */
int log_count(int level, const char *needle);
const char *log_find(int level, const char *needle);
void log_dump(void);
void log_clear(void);
/* Whether needle occurs within the first `within` characters of a captured
 * WARN: a diagnosis must lead with its specific cause. */
int warn_leads_with(const char *warn, const char *needle, size_t within);
/* Every WARN a case's plugin logged must fit one NCCL line (checked after
 * each case); the suite prints their length distribution at the end. */
void warn_stats_begin(void);
void warn_stats_print(void);

/* Control channel between the two sides. */
void ctl_send(struct side *s, const void *buf, size_t len);
void ctl_recv(struct side *s, void *buf, size_t len);
void ctl_sync(struct side *s);
void ctl_send_int(struct side *s, long long v);
long long ctl_recv_int(struct side *s);

/* Listener side: listen on s->dev, ship the handle, accept to completion.
 * Sender side: receive the handle, connect to completion. 0 on success. */
int pair_recv(struct side *s, void **rc);
int pair_send(struct side *s, void **sc);
/* Both in one call, by role. */
int pair_open(struct side *s, void **comm);

/* Moves one message: the sender fills it with a pattern for (seed, size),
 * the receiver checks every byte. Returns the ncclResult_t of the first
 * failing call, or -1 for a data mismatch, 0 on success. */
int xfer_one(struct side *s, void *comm, size_t size, size_t cap, unsigned seed);
/* Drives one request to completion (bounded), returning test()'s result. */
int wait_req(struct side *s, void *req, int *size, int timeout_ms);
int wait_req_sizes(struct side *s, void *req, int *sizes, int n, int timeout_ms);

void fill_pattern(uint8_t *p, size_t n, unsigned seed);
size_t check_pattern(const uint8_t *p, size_t n,
                     unsigned seed); /* index of the first bad byte, or n */

long long ms_now(void);
int is_root(void);
/* Runs a shell command (for ip netns/link setup inside a case's private
 * namespace); returns its exit status. */
int shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Moves this process into a fresh network namespace (and UTS namespace
 * with the given hostname when not NULL). */
int private_netns(const char *hostname);
/* Only a fresh UTS namespace with this host name. */
int private_uts(const char *hostname);

int run_case(const struct api_case *c);

#endif
