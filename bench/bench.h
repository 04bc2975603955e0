/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-bench: the plugin driven through its exported ABI the way NCCL's
 * proxy drives it, beside a raw TCP baseline with the same pattern and,
 * with --compare, a second plugin driven the same way, in one run.
 *
 * Process layout: a parent that plans, relays and reports, and two worker
 * processes (rank 0 and rank 1), each holding every engine: the plugin and
 * the compared plugin (loaded with netload, as NCCL loads them) and plain
 * sockets. The parent sends a command to both workers, they run it against
 * each other and answer with timings; nothing is timed in the parent. For
 * each comm count the workers open that many comms of every engine, report
 * what that cost (threads, descriptors, memory), run every mode, and close
 * them again. */
#ifndef DIAG_BENCH_H
#define DIAG_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "tools/proc_usage.h"

#define BENCH_MAX_WINDOW 8      /* NCCL_STEPS: requests in flight per connection */
#define BENCH_MAX_COMMS 8192    /* per direction; arrays are sized by the block's count */
#define BENCH_MAX_COMM_COUNTS 8 /* entries of --comms */
#define BENCH_MAX_SOCKS 8       /* raw baseline sockets per comm */
#define BENCH_HANDLE_LEN 128    /* NCCL_NET_HANDLE_MAXSIZE */
#define BENCH_MAX_SIZES 40
#define BENCH_MAX_SHAPES 6
#define RAW_MAX_THREADS 64 /* a baseline shape of more threads per rank is not run */

enum bench_engine { ENGINE_PLUGIN, ENGINE_RAW, ENGINE_COMPARE, ENGINE_COUNT };
enum bench_mode { MODE_UNI, MODE_BIDIR, MODE_LAT, MODE_COUNT };
enum bench_op { OP_LISTEN = 1, OP_CONNECT, OP_RUN, OP_QUIT };

/* How the raw baseline moves a message: over `nsocks` sockets, one thread
 * each (the caller's thread serves the first), which sleeps in send/recv or
 * spins on them (MSG_DONTWAIT and sched_yield); or (event) one socket per
 * comm, every comm of the rank on one thread that waits in epoll, as a
 * plain-socket program with many connections would be written. */
struct raw_shape {
  int nsocks;
  bool is_spinning;
  bool is_shared; /* latency: both directions on one connection */
  bool is_event;
};

/* Parent -> worker. One fixed-size record; OP_CONNECT is followed by the
 * peer's handles (struct bench_offer, then its handle arrays). */
struct bench_cmd {
  int op;
  int engine;
  int mode;
  int ncomms;
  int window;
  struct raw_shape shape;
  uint64_t raw_min_stripe;
  uint64_t size;
  uint64_t warm, iters; /* messages per comm and direction */
  uint32_t run_id;      /* salts the stamps, so stale data is caught */
  bool is_corrupting;   /* test hook: damage one received message */
  int idle_us;          /* experiment: sleep this long instead of sched_yield() */
  /* OP_LISTEN: the comms of this block (closing the previous block's), and
   * how much buffer to prepare */
  int max_window;
  uint64_t max_size, max_mem;
  bool is_one_way; /* only rank 0 -> rank 1 comms: the block runs no mode that needs the others */
};

/* What a worker offers its peer at OP_LISTEN: this record, then ncomms
 * plugin handles and, with a compared plugin, ncomms of its handles. */
struct bench_offer {
  int ncomms;
  bool has_compare;
  struct sockaddr_storage raw_addr;
  socklen_t raw_len;
};

struct bench_handles {
  struct bench_offer o;
  uint8_t *plugin, *compare; /* ncomms x BENCH_HANDLE_LEN each */
};

/* Worker -> parent, followed by `nlat` int64 nanosecond values (message
 * lifetimes for bandwidth runs, round trips for latency runs). */
struct bench_res {
  int status;   /* 0, or the errno it failed with (err says why) */
  bool is_skip; /* the failure means nothing to measure here: a skip */
  char err[768];
  /* receive side, CLOCK_MONOTONIC: the steady-state window of this run */
  int64_t t0_ns, t_end_ns;
  uint64_t timed_msgs; /* received messages that completed in (t0, t_end] */
  uint64_t moved;      /* payload bytes this process sent or received, warm-up included */
  int64_t cpu_ns;      /* user+system CPU of the whole process over the run */
  int64_t cpu_drv_ns;  /* of the thread that called isend/irecv/test */
  int64_t cpu_cmd_ns;  /* of the process from "go" to this answer (checks included) */
  int threads;         /* the process's threads at the end of the run */
  struct proc_usage usage[ENGINE_COUNT]; /* OP_CONNECT: what each engine's comms added */
  uint32_t nlat;
};

/* --- worker.c ---------------------------------------------------------- */
struct worker_cfg {
  int rank;
  int fd;              /* to the parent */
  const char *plugin;  /* path or NULL */
  const char *compare; /* the compared plugin's path, or NULL */
  int abi;             /* 0 = newest */
  int dev;             /* -1 = first */
  const char *fuse;    /* "0,1": fuse these devices (makeVDevice) and use the result */
  const char *netns;   /* NULL = stay */
  const char *ifname;  /* NCCL_SOCKET_IFNAME for the plugin */
  const char *addr;    /* the raw baseline's address */
  bool is_rdma_only;   /* insist on an RDMA device (skip otherwise) */
  int cpu;             /* >= 0: pin the whole rank to this CPU */
  bool is_verbose;
};
/* Runs in the forked child; returns its exit status. */
int worker_main(const struct worker_cfg *cfg);

/* --- per-engine drivers (drv_plugin.c, drv_raw.c) ------------------------ */
/* One direction of one comm in one run: its buffers and its record. */
struct stream {
  bool is_send;
  int comm;
  int peer_rank, my_rank;
  uint8_t *pool; /* window slots of `size` bytes */
  int64_t *done_ns;
  bool has_failed; /* verification: the first failure is described in err */
  char err[512];
};

struct run_ctx {
  const struct bench_cmd *cmd;
  struct stream *streams;
  int nstreams;
  int64_t *lats; /* out: latencies */
  uint32_t nlat;
  int64_t cpu_drv_ns;
  char err[768];
};

/* --- verify.c ----------------------------------------------------------- */
uint64_t pattern_key(int sender_rank, int comm, int slot);
void pattern_fill(uint8_t *buf, size_t size, uint64_t key);
/* Stamps the first/last word of a message if they lie in [off, off+len):
 * each sender of a stripe stamps only its own bytes. */
void pattern_stamp(uint8_t *buf, size_t size, uint32_t run_id, uint64_t seq, size_t off,
                   size_t len);
/* 1 = intact. Checks the stamps and a few sampled words; full = every word.
 * On failure *bad_off is the first wrong byte offset. */
int pattern_check(const uint8_t *buf, size_t size, uint64_t key, uint32_t run_id, uint64_t seq,
                  bool is_full, size_t *bad_off);
/* For streams: check one completed message and record the first failure. */
void stream_check(struct stream *s, const struct bench_cmd *cmd, uint64_t m, bool is_full);

/* --- stats.c ------------------------------------------------------------ */
/* This process's threads, open descriptors and resident memory now (after
 * returning freed heap pages: what is held, not the peak). */
int64_t proc_cpu_ns(void);
int64_t thread_cpu_ns(void);
int64_t host_busy_ns(bool has_irq_time);
double median(const double *v, int n);
/* Sorts v in place; nearest-rank percentile, p in (0, 1]. */
int64_t percentile(int64_t *v, size_t n, double p);
/* Latencies of the timed receive messages of a stream (lifetime from the
 * moment its slot was free, i.e. when NCCL would post it). */
size_t stream_lat(const struct stream *s, uint64_t warm, uint64_t total, int window, int64_t *out);
/* Fills t0/t_end/timed_msgs from the receive streams. */
void stream_window(const struct stream *s, int n, uint64_t warm, uint64_t total,
                   struct bench_res *res);

/* --- io helpers (worker.c) ---------------------------------------------- */
/* All of buf, or the errno of the failed read or write (EPIPE: the other
 * end closed). */
int io_write(int fd, const void *buf, size_t len);
int io_read(int fd, void *buf, size_t len);
/* struct bench_handles over a pipe: the offer, then its arrays. The
 * reader allocates h->plugin (h->compare points into it). 0 or an errno:
 * io_read's, EPROTO for an offer out of range, ENOMEM. */
int handles_write(int fd, const struct bench_handles *h);
int handles_read(int fd, struct bench_handles *h);

#endif
