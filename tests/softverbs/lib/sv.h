/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: private declarations shared by the library's files.
 *
 * The library stands in for libibverbs in tests. Objects handed to the
 * application are the public structs of <infiniband/verbs.h> (the ABI),
 * each the first member of a private struct. */
#ifndef SV_H
#define SV_H

#include <infiniband/verbs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define SV_EXPORT __attribute__((visibility("default")))

enum {
  SV_MAX_PORTS = 8,
  SV_MAX_SGE = 30,
  SV_MAX_WR = 32768,
  SV_MAX_RD_ATOM = 16,
  SV_MAX_CQE = 4194303,
  SV_QP_SLOTS = 256, /* QPs per listener: the QPN's low 8 bits */
  /* Work-queue geometry as mlx5 computes it (sv_caps.c). */
  SV_SQ_DESC_MAX = 1024, /* largest send WQE (the firmware's max_wqe_sz_sq) */
  SV_RQ_DESC_MAX = 512,  /* largest receive WQE */
  SV_SQ_OVERHEAD = 192,  /* an RC send WQE's control part, sized for its largest opcode */
  SV_SEND_BB = 64,       /* send WQE building block */
  SV_SEND_WQEBB_MAX = SV_MAX_WR,
};

/* ---- util (sv_util.c) ---- */
uint64_t sv_now_ns(void);
void sv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *sv_env(const char *name);
/* sv_counters.c: payload bytes posted on a port */
void sv_count_tx(const char *dev, int port, uint64_t bytes, bool is_read);
/* The port's hw_counters a lossy path moves, by their mlx5 names. */
enum sv_hw {
  SV_HW_OUT_OF_SEQUENCE, /* responder: a request past the expected PSN */
  SV_HW_DUPLICATE,       /* responder: a request already executed */
  SV_HW_SEQ_NAK,         /* requester: a sequence-error NAK received */
  SV_HW_ACK_TIMEOUT,     /* requester: the local ACK timer expired */
  SV_HW_COUNT
};
void sv_count_hw(const char *dev, int port, enum sv_hw which);
/* With SOFTVERBS_HW_COUNTERS=1, writes the counters into the sysfs root's
 * ports/<n>/hw_counters, as the kernel shows them (at most every 100 ms). */
void sv_counters_flush(void);
unsigned long long softverbs_port_tx_bytes(const char *dev, int port);
unsigned long long softverbs_port_reads(const char *dev, int port);
long sv_env_long(const char *name, long def, long min, long max);
double sv_env_double(const char *name, double def);
int sv_parse_errno(const char *s);
int sv_read_text(const char *path, char *buf, size_t len);
int sv_parse_gid(const char *text, union ibv_gid *gid);
bool sv_gid_is_zero(const union ibv_gid *gid);
bool sv_gid_to_addr(const union ibv_gid *gid, struct sockaddr_storage *ss);
int sv_qp_state_parse(const char *s);
int sv_wc_status_parse(const char *s);
const char *sv_qp_state_name(int state);
bool sv_sq_free_on_ack(void); /* SOFTVERBS_SQ_FREE=ack: the relaxed, rxe-like rule */

/* ---- fixture devices (sv_fixture.c) ---- */
struct sv_gid {
  union ibv_gid gid;
  int type;            /* IBV_GID_TYPE_*; -1: the type file reads as EINVAL */
  bool gid_unreadable; /* the gids/<i> file itself reads as EINVAL */
  char ndev[IF_NAMESIZE];
};

struct sv_port {
  uint8_t num, link_layer, state, phys_state;
  uint16_t lid, sm_lid;
  uint8_t lmc, width, speed;
  uint32_t cap_flags;
  enum ibv_mtu active_mtu;
  int ngids;
  struct sv_gid *gids;
  int npkeys;
  uint16_t *pkeys;
  char netdev[IF_NAMESIZE];      /* RoCE: its GIDs' netdev; IB: its IPoIB netdev */
  struct sockaddr_storage ipoib; /* IB: that netdev's address in ifaddrs */
  _Atomic bool is_cut;           /* "down:" in SOFTVERBS_PORT_EVENTS: its link carries nothing */
};

struct sv_device {
  struct ibv_device ibdev; /* first: what the application sees */
  atomic_int refs;
  int index;
  char root[PATH_MAX]; /* the fixture's sysfs root */
  uint64_t node_guid, sys_image_guid;
  char fw_ver[64];
  uint32_t vendor_id, vendor_part_id;
  int nports;
  struct sv_port ports[SV_MAX_PORTS];
};

const char *sv_sysfs_root(void);
int sv_fixture_scan(const char *root, struct sv_device ***devs, int *n);
void sv_device_put(struct sv_device *d);
struct sv_port *sv_device_port(struct sv_device *d, int port);
bool sv_port_is_down(struct sv_device *d, struct sv_port *p);

/* ---- fabric: interface addresses, wire mode, LIDs (sv_fabric.c) ---- */
void sv_port_find_ipoib(const char *root, const char *devname, struct sv_port *p);
bool sv_port_wants_net(struct sv_port *p);
int sv_fabric_lid(uint16_t lid, struct sockaddr_storage *out);

/* ---- context, PD, MR ---- */
struct sv_conn;
struct sv_aev;
struct sv_qp;

struct sv_listener {
  int kind; /* first, SV_EV_LISTENER: epoll data points here */
  struct sv_listener *next;
  int fd;
  uint16_t port;
  int used, next_slot;
  struct sv_qp *slot[SV_QP_SLOTS];
};

enum { SV_EV_WAKE = 1, SV_EV_LISTENER, SV_EV_CONN };

struct sv_ctx {
  struct ibv_context ibctx;
  struct sv_device *dev;
  bool net[SV_MAX_PORTS + 1]; /* per port: real sockets between hosts, else loopback */
  int wake_kind;              /* SV_EV_WAKE: epoll data for wakefd points here */
  pthread_mutex_t qp_lock;    /* QP list and listeners; the progress thread holds it per batch */
  struct sv_qp *qps;
  struct sv_listener *listeners;
  pthread_rwlock_t mr_lock;
  struct sv_mr **mrs;
  uint32_t mr_cap, mr_next;
  uint8_t mr_gen;
  int async_wfd;
  pthread_t thread;
  int epfd, wakefd;
  atomic_bool stop;
  pthread_mutex_t ev_lock; /* the async event queue; a leaf lock */
  struct sv_aev *ev_head, *ev_tail;
  pthread_mutex_t grave_lock;
  struct sv_conn *grave;   /* killed connections, freed by the progress thread */
  struct sv_conn *pending; /* accepted, hello not yet read (progress thread only) */
};

struct sv_pd {
  struct ibv_pd ibpd;
  atomic_int refs;
};

struct sv_mr {
  struct ibv_mr ibmr;
  uint64_t iova;
  int access;
  uint32_t index;
};

static inline struct sv_ctx *sv_ctx_of(struct ibv_context *c) { return (struct sv_ctx *)c; }

int sv_mr_check(struct sv_ctx *ctx, struct ibv_pd *pd, uint32_t key, uint64_t addr, uint64_t len,
                int access, void **host);
void sv_ctx_wake(struct sv_ctx *ctx);
/* element: the CQ or QP; for a port or device event, the port number
 * cast to a pointer. */
void sv_async_raise(struct sv_ctx *ctx, enum ibv_event_type type, void *element);
uint32_t sv_async_forget(struct sv_ctx *ctx, void *element, const uint32_t *reported);
void sv_async_free_all(struct sv_ctx *ctx);
void sv_wait_acks(struct sv_ctx *ctx, pthread_mutex_t *mu, pthread_cond_t *cond,
                  const uint32_t *done, uint32_t want, const uint32_t *done2, uint32_t want2,
                  const char *what);

/* ---- CQ (sv_cq.c) ---- */
/* Where a completion came from. Polling it releases its work queue's slots:
 * a send completion every WR up to `upto`, a receive completion one. */
struct sv_cqe_src {
  struct sv_qp *qp;
  uint32_t upto;
  bool is_send;
};

struct sv_cq {
  struct ibv_cq ibcq;
  pthread_mutex_t lock;
  struct ibv_wc *ring;
  struct sv_cqe_src *src;
  int cap, head, count;
  atomic_bool overrun; /* the CQ is in error: nothing more is written */
  int armed;           /* 0, or 1 + solicited_only */
  atomic_int refs;
  uint32_t async_reported; /* CQ_ERR events handed out (ctx->ev_lock) */
  uint32_t comp_reported;  /* completion events handed out (ibcq.mutex) */
};

struct sv_chan {
  struct ibv_comp_channel ch;
  int wfd;
};

void sv_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, bool solicited,
                const struct sv_cqe_src *src);
void sv_cq_push_error(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st,
                      const struct sv_cqe_src *src);
void sv_cq_clean(struct ibv_cq *cq, struct sv_qp *qp);
bool sv_cq_in_error(struct ibv_cq *cq);
void sv_chan_notify(struct ibv_comp_channel *ch, struct ibv_cq *cq);

/* ---- QP ---- */
struct sv_swqe {
  uint64_t wr_id;
  uint32_t psn, len, rkey;
  uint64_t raddr;
  __be32 imm;
  uint8_t op;
  bool signaled, solicited, is_inline;
  int status; /* a local error found when it was to be sent */
  int nsge;
  struct ibv_sge *sge;
  uint8_t *inl;
};

struct sv_rwqe {
  uint64_t wr_id;
  int nsge;
  struct ibv_sge *sge;
};

struct sv_qp {
  struct ibv_qp ibqp;
  struct sv_ctx *ctx;
  struct sv_qp *next;
  pthread_mutex_t lock;        /* queues, state, connections */
  pthread_mutex_t modify_lock; /* one modify_qp at a time: RTR may wait on the network */
  struct sv_listener *lis;
  int slot;
  enum ibv_qp_state state;
  struct ibv_qp_attr attr;
  struct ibv_qp_cap cap;
  int sig_all;
  void *wqe_mem;
  struct sv_swqe *sq;
  /* Running counters (slot = n % size): head is the oldest WR not completed,
   * tx the next to send, max the furthest ever sent, tail the next free;
   * freed: slots below it are free again, which only a polled completion
   * does (for an unsignaled WR, a later signaled one's). */
  uint32_t sq_size, sq_head, sq_tx, sq_max, sq_tail;
  atomic_uint sq_freed;
  struct sv_rwqe *rq;
  uint32_t rq_size, rq_head, rq_tail;
  atomic_uint rq_freed;
  uint32_t events_reported; /* async events handed out (ctx->ev_lock) */
  /* ECE, as mlx5 keeps it: options given by ibv_set_ece before RTR, and
   * what RTR settled on (given & the device's own); query answers the
   * settled set once there is one, else the device's offer */
  bool has_ece_set, has_ece_settled;
  uint32_t ece_set, ece_settled;
  /* requester */
  struct sv_conn *out;
  uint32_t next_psn;
  uint64_t ack_ns; /* local ACK timeout; 0: none */
  uint64_t ack_deadline, rnr_until;
  int retries_left, rnr_left;
  /* responder */
  struct sv_conn *in;
  uint32_t epsn, ack_psn;
  bool nak_sent, ack_pending;
};

/* RTR with options given by ibv_set_ece: what they settle on (sv_hostcaps.c). */
void sv_ece_settle(struct sv_qp *qp);

static inline struct sv_swqe *sv_sq_at(struct sv_qp *qp, uint32_t n) {
  return &qp->sq[n % qp->sq_size];
}
static inline struct sv_rwqe *sv_rq_at(struct sv_qp *qp, uint32_t n) {
  return &qp->rq[n % qp->rq_size];
}

/* PSNs are 24 bits; the signed distance a - b. */
static inline int32_t sv_psn_diff(uint32_t a, uint32_t b) { return (int32_t)((a - b) << 8) >> 8; }

int sv_caps_size(struct ibv_qp_cap *cap); /* sv_caps.c: checks and rounds, as mlx5 */
struct sv_port *sv_qp_port(struct sv_qp *qp);
/* Whether qp's port link is down (a flap): what it sends is lost, what
 * comes to it is not taken. */
bool sv_qp_is_cut(struct sv_qp *qp);
void sv_qp_error(struct sv_qp *qp, int async_event);
void sv_qp_reset(struct sv_qp *qp);
void sv_qp_drive(struct sv_qp *qp);
uint64_t sv_qp_ack_timeout_ns(struct sv_qp *qp);
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int sv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* ---- RTR path resolution (sv_route.c, sv_netlink.c) ---- */
struct sv_path {
  int fd;          /* connected or connecting socket; -1: no wire (traffic times out) */
  bool connecting; /* the kernel is still connecting it */
};
int sv_route_resolve(struct sv_qp *qp, const struct ibv_qp_attr *attr, struct sv_path *path);
int sv_nl_neigh_valid(int ifindex, const struct sockaddr_storage *dst);

/* ---- wire (sv_wire.c) ---- */
enum sv_kind {
  SV_REQ_SEND = 1,
  SV_REQ_SEND_IMM,
  SV_REQ_WRITE,
  SV_REQ_WRITE_IMM,
  SV_REQ_READ,
  SV_RSP_ACK,
  SV_RSP_NAK,
  SV_RSP_READ,
};
enum sv_syndrome { SV_NAK_RNR = 1, SV_NAK_SEQ, SV_NAK_ACCESS, SV_NAK_INV_REQ, SV_NAK_OP_ERR };
enum { SV_MSG_SOLICITED = 1 };
enum { SV_HDR_LEN = 32, SV_HELLO_LEN = 64 };

struct sv_msg {
  uint8_t kind, flags, syndrome, rnr_timer;
  uint32_t psn, rkey, len;
  uint64_t raddr;
  __be32 imm;
};

struct sv_hello {
  uint32_t src_qpn, dst_qpn;
  union ibv_gid dgid, sgid;
  uint16_t dlid, slid;
};

struct sv_out {
  struct sv_out *next;
  bool is_req, started;
  int niov, cur;
  struct iovec iov[SV_MAX_SGE + 1];
  uint8_t hdr[SV_HELLO_LEN];
};

enum sv_conn_state { SV_CONNECTING, SV_HELLO, SV_UP };

struct sv_sink {
  struct iovec iov[SV_MAX_SGE];
  int niov, cur;
  size_t left;
  bool discard;
};

struct sv_conn {
  int kind; /* first, SV_EV_CONN: epoll data points here */
  struct sv_conn *next;
  struct sv_ctx *ctx;
  struct sv_qp *qp;
  int fd;
  bool outgoing; /* we are the requester on it */
  enum sv_conn_state state;
  atomic_bool dead;
  bool want_out, checked, in_payload, accepted;
  struct sv_hello hello; /* what the requester sent (incoming connections) */
  uint8_t *ibuf;
  size_t ipos, ilen, hgot, progress;
  uint8_t hdr[SV_HELLO_LEN];
  struct sv_msg msg; /* the message being received */
  struct sv_sink sink;
  struct sv_out *oq, *oq_tail;
  size_t oq_bytes;
};

void sv_msg_encode(const struct sv_msg *m, uint8_t *b);
int sv_msg_decode(const uint8_t *b, struct sv_msg *m);
void sv_hello_encode(const struct sv_hello *h, uint8_t *b);
int sv_hello_decode(const uint8_t *b, struct sv_hello *h);
struct sv_out *sv_out_new(const struct sv_msg *m, bool is_req);
void sv_out_add(struct sv_out *o, void *p, size_t len);
struct sv_conn *sv_conn_new(struct sv_ctx *ctx, int fd, bool outgoing);
void sv_conn_queue(struct sv_conn *c, struct sv_out *o);
int sv_conn_flush(struct sv_conn *c);
void sv_conn_drop_unstarted(struct sv_conn *c);
void sv_conn_kill(struct sv_conn *c);
void sv_conn_free(struct sv_conn *c);
int sv_conn_input(struct sv_conn *c);
void sv_sink_set(struct sv_sink *s, size_t len, bool discard);
void sv_sink_add(struct sv_sink *s, void *p, size_t len);

/* ---- requester and responder (sv_req.c, sv_resp.c) ---- */
void sv_req_push(struct sv_qp *qp);
void sv_req_tick(struct sv_qp *qp, uint64_t now);
void sv_req_on_msg(struct sv_conn *c);
void sv_req_on_payload(struct sv_conn *c);
void sv_req_flush_sq(struct sv_qp *qp, enum ibv_wc_status st);
void sv_req_alive(struct sv_qp *qp);
void sv_resp_on_msg(struct sv_conn *c);
void sv_resp_on_payload(struct sv_conn *c);
void sv_resp_flush_ack(struct sv_qp *qp);
void sv_resp_flush_rq(struct sv_qp *qp);
void sv_resp_alive(struct sv_qp *qp);

/* ---- progress thread (sv_progress.c) ---- */
int sv_progress_start(struct sv_ctx *ctx);
void sv_progress_stop(struct sv_ctx *ctx);
int sv_conn_watch(struct sv_conn *c);
int sv_listener_new(struct sv_ctx *ctx, struct sv_listener **out);

/* ---- fault hooks (sv_fault.c) ---- */
int sv_fault_nodev(void);
bool sv_fault_port_down(const char *dev, int port);
int sv_fault_open(const char *dev); /* 0, or the errno ibv_open_device fails with */
int sv_fault_modify(const char *dev, int to_state);
enum ibv_wc_status sv_fault_wc(const char *dev);
bool sv_fault_drops(const char *dev, uint32_t len);              /* SOFTVERBS_DROP_ABOVE */
bool sv_fault_loses(const char *dev, const union ibv_gid *dgid); /* SOFTVERBS_LOSS */
uint32_t sv_vendor_err(enum ibv_wc_status st);

/* ---- dma-buf, fork, port and device events (sv_hostcaps.c) ---- */
void sv_hostcaps_open(struct sv_ctx *ctx);
void sv_hostcaps_close(struct sv_ctx *ctx);
/* false: SOFTVERBS_NO_RELAXED_ORDERING refuses IBV_ACCESS_RELAXED_ORDERING. */
bool sv_hostcaps_access_ok(unsigned access);
/* The active MTU SOFTVERBS_ACTIVE_MTU sets for the port, else mtu. */
enum ibv_mtu sv_hostcaps_active_mtu(const char *dev, int port, enum ibv_mtu mtu);

#endif
