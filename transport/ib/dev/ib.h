/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA transport, over RC queue pairs.
 *
 * Data protocol (receiver-driven, as NCCL's own IB transport):
 *  - irecv(n buffers) takes FIFO slot seq % IB_SLOTS, posts a receive for the
 *    immediate on QP seq % nqps (on every QP with NCCL_IB_SPLIT_DATA_ON_QPS=1),
 *    and RDMA-writes n clear-to-send entries (address, rkey, capacity, tag,
 *    idx = seq + 1) into the sender's FIFO, always on QP 0.
 *  - isend polls its FIFO slot for idx == seq + 1 and for a free entry with
 *    its tag (else *request = NULL, NCCL retries), checks the size against
 *    the capacity, and when all n sends of the slot are there posts on the
 *    message's QP (or a 128-byte-aligned part on each QP when split) one
 *    signaled write-with-immediate that carries the data itself for n == 1
 *    (imm = size), or, for n > 1 and for large messages under adaptive
 *    routing, RDMA writes of the data first and then the write-with-immediate
 *    (for n > 1 it carries the n sizes into the receiver's completion record
 *    for the slot). RC delivers in order, so the immediate's completion on
 *    the receiver means every byte has landed.
 * Every post on a QP ends with a signaled work request, and the receiver's
 * CTS writes are signaled every IB_CTS_SIGNAL_EVERY on their QP: a send
 * queue drains only through signaled completions of its own QP (mlx5).
 *
 * Connection setup runs on the shared TCP control connection after the
 * hello (ib_setup.c): compatibility check, QPs to INIT, INFO records, RTR and
 * RTS, STATUS records; both sides decide from the pair of STATUS records
 * whether the connection is RDMA or falls back to TCP (NCCL_DIAG_FALLBACK). */
#ifndef DIAG_TRANSPORT_IB_H
#define DIAG_TRANSPORT_IB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/wcstatus.h"
#include "topo/topo.h"
#include "transport/ib/dev/ib_verbs.h"
#include "transport/transport.h"

#define IB_SLOTS 64    /* FIFO slots; > the 32 requests in flight */
#define IB_MAX_RECVS 8 /* grouped receives per irecv */
#define IB_MAX_REQS NCCL_NET_MAX_REQUESTS
#define IB_CTS_SIGNAL_EVERY 16
#define IB_MAX_QPS 32            /* = IBREC_MAX_QPS, the most a setup record carries */
#define IB_IMM_ABORT 0xffffffffu /* the sender gave up: read its reason on the control socket */

/* One clear-to-send entry; idx is written last and read first. */
struct ib_cts {
  uint64_t addr;
  uint32_t rkey;
  uint32_t size;
  int32_t tag;
  uint32_t nreqs;
  uint32_t pad;
  uint32_t idx; /* read with an acquire load: the peer's NIC writes it */
} __attribute__((aligned(32)));

_Static_assert(sizeof(struct ib_cts) == 32, "a CTS entry is 32 bytes");

/* A fused NIC (makeVDevice) stripes each message over its member ports
 * (ib_stripe.c): a CTS entry then carries the receive buffer's key on each
 * of the receiver's ports, in the 32 bytes before it (so idx stays last). */
#define IB_MAX_STRIPE 8
struct ib_cts_keys {
  uint32_t rkeys[IB_MAX_STRIPE];
} __attribute__((aligned(32)));
_Static_assert(sizeof(struct ib_cts_keys) == 32, "a striped CTS entry is 64 bytes");
/* Entry i of a slot in a FIFO of entries w units wide (1, or 2 striped). */
static inline struct ib_cts *ib_cts_at(struct ib_cts *fifo, int slot, int i, int w) {
  return &fifo[(slot * IB_MAX_RECVS + i) * w + (w - 1)];
}
static inline struct ib_cts_keys *ib_cts_keys_of(struct ib_cts *e) {
  return (struct ib_cts_keys *)(void *)(e - 1);
}

/* A fatal asynchronous event (ib_fatal.c): the device, or one of its
 * completion queues or queue pairs, can no longer be trusted. */
enum ib_fatal_kind { IB_FATAL_DEVICE, IB_FATAL_CQ, IB_FATAL_QP };
struct ib_fatal_rec {
  enum ib_fatal_kind kind;
  const void *obj; /* the CQ or QP (compared, never dereferenced) */
  uint32_t qpn;
  unsigned gen;  /* the device's fatal generation it raised */
  int64_t at_ns; /* when it was seen */
  char what[80];
};
#define IB_MAX_FATALS 16

/* An opened RDMA port (one NCCL device), shared by all its comms. */
struct ib_dev {
  const struct topo_dev *td; /* the topology's view: names, GID, subnet, MTU */
  const struct verbs_ops *v;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_device_attr attr;
  int ptr_support;      /* NCCL_PTR_HOST | CUDA (peer memory) | DMABUF */
  pthread_mutex_t lock; /* MR cache */
  struct ib_mr_entry *mrs;
  int nmr, cap_mr;
  pthread_t async_tid;
  bool is_async_started;
  char label[80]; /* "mlx5_2 port 1" */
  /* The chosen GID entry as the kernel holds it now, re-read for every new
   * connection (under lock): the address behind it may have changed since
   * the topology was read. Unset while it still equals td->gid. */
  bool has_gid_now;
  uint8_t gid_now[16];
  char subnet_now[64];
  bool is_ro;   /* registrations ask for PCIe relaxed ordering (atomic: cleared if refused) */
  bool has_ece; /* its queue pairs offer enhanced connection establishment (ib_ece.c) */
  uint32_t ece_vendor, ece_options, ece_comp_mask;
  int mtu;              /* the port's active MTU as verbs report it, bytes */
  bool is_grh_required; /* the port's IBV_QPF_GRH_REQUIRED */
  int port_down;        /* a port error was seen and no port active since (atomic) */
  int port_down_said;   /* its WARN is out, by the event thread or a failed completion (atomic) */
  int flap_failed;      /* connections on it that failed while it was down (atomic) */
  unsigned fatal_gen;   /* fatal events so far (atomic); their records under lock */
  struct ib_fatal_rec fatals[IB_MAX_FATALS];
  int nfatal;
  /* The ports of the virtual NIC (makeVDevice) this port was fused into,
   * itself included: where its connections may move (ib_failover.c). */
  int nmembers;
  struct ib_dev *members[IB_MAX_STRIPE];
};

/* The plugin-wide RDMA state: the verbs library and the opened devices. */
struct ib_state {
  struct verbs_ops v;
  bool is_loaded;
  char why_none[1024];  /* no RDMA device: why, and what to do */
  bool has_warned_none; /* a WARN has said why_none already */
  int ndev;
  struct ib_dev *devs; /* the ports opened, room for every chosen one */
};

const struct ib_state *ib_state(void);
/* Opens verbs and every chosen port (once per process); fills the transport devices.
 * Returns how many RDMA devices it added. */
int ib_host_init(struct transport_host *host);
/* NCCL_PTR_* bits an RDMA device supports. */
int ib_ptr_support(const struct transport_dev *x);
/* The RDMA identity of an RDMA device, for the hello (no-op for TCP):
 * ib_hello.c. */
void ib_fill_hello(const struct transport_dev *x, struct hello *h);
/* The local GID and its subnet ("10.0.0.0/24", or "" unknown) as the last
 * hello announced them: a GID whose address changed is re-read there. */
const uint8_t *ib_dev_gid(const struct ib_dev *d, char *subnet, size_t cap);
/* Whether the port is down: its PORT_ERR event was read, or verbs no
 * longer report it active (after an error completion, the event may still
 * be queued for the event thread). */
bool ib_dev_check_port(struct ib_dev *d);
/* Whether the port is active, said nowhere: for a port looked at as a
 * place to move to, not one a connection runs on. */
bool ib_dev_port_is_up(struct ib_dev *d);
/* makeVDevice fused these ports into one virtual NIC: each learns the
 * others (NCCL_IB_RESILIENCY_PORT_FAILOVER moves connections between them). */
void ib_dev_fuse(const struct transport_dev *const *devs, int n);
/* The ports of d's fused NIC a connection on d offers to stripe each
 * message over, in its hello (0: none; transport/ib/setup/ib_stripe.c). */
static inline int ib_stripe_offer(const struct ib_dev *d) {
  return d->nmembers < 2 ? 0 : d->nmembers;
}
/* Re-reads the GID in use; a changed address is taken and said once. */
void ib_dev_refresh_gid(struct ib_dev *d);
/* "host-b (10.0.0.7)": a peer by host name and address, since containers
 * often share host names. */
void ib_peer_name(const struct hello *peer, char *buf, size_t cap);

/* ---- what the parts above dev/ do for it (ib_hooks.c) ---- */
/* dev/ and setup/ sit below failover/ and diag/ and call them only through
 * these, set once at init by the RDMA transport (transport/ib/ib_ops.c)
 * before any device opens. Until then each does the least: nothing, or the
 * errno's text for a failed RTR. */
struct ib_hooks {
  /* From the event thread: ib_fatal.c, ib_flap.c. */
  void (*fatal_note)(struct ib_dev *d, const struct ibv_async_event *ev, const char *what);
  void (*port_down)(struct ib_dev *d);
  void (*port_up)(struct ib_dev *d, int port);
  /* A failed RTR in words (ib_diag_rtr, ib_diag.c). */
  void (*rtr_why)(const struct ib_dev *d, const struct hello *peer, int err, char *out, size_t cap);
};
void ib_hooks_set(const struct ib_hooks *h);
const struct ib_hooks *ib_hooks(void);

/* ---- fatal asynchronous events (ib_fatal.c) ---- */
/* From the device's event thread: a device-fatal event (WARN here) or a
 * fatal CQ or QP event is recorded, unless NCCL_IB_RETURN_ASYNC_EVENTS=0;
 * the connections it affects fail at their next call. */
void ib_fatal_note(struct ib_dev *d, const struct ibv_async_event *ev, const char *what);
/* transport/ib/failover/ib_flap.c, from the event thread: the port went down; the port
 * is active again, said with how long it was down against its QPs'
 * deadline (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT). */
void ib_flap_down(struct ib_dev *d);
void ib_flap_up(struct ib_dev *d, int port);
/* Seconds this process's queue pairs outlast a silent link (NCCL_IB_TIMEOUT,
 * NCCL_IB_RETRY_CNT). */
double ib_qp_deadline_s(void);

struct ibrec; /* transport/ib/setup/ib_wire.h */

/* ---- enhanced connection establishment (ib_ece.c) ---- */
/* At open: whether the device's queue pairs offer ECE, and which options. */
void ib_ece_probe(struct ib_dev *d);
/* The device's options into the hello (nothing when it has none). */
void ib_ece_fill_hello(const struct ib_dev *d, struct hello_rdma *r);
/* Whether a connector waits for the acceptor's STATUS before its RTR, to
 * take the options the acceptor's queue pairs settled on (as NCCL's
 * connector does): both devices offer ECE and the acceptor speaks it. */
bool ib_ece_waits(const struct ib_dev *d, const struct hello *peer, const struct ibrec *peer_info);
/* Before RTR: gives q the acceptor's settled options (settled non-NULL
 * with has_ece), or else the peer's offer, when both sides offer ECE; a
 * refusal is said (INFO) and the queue pair connects without them. */
struct ib_qp;
void ib_ece_apply(const struct ib_dev *d, struct ib_qp *q, const struct hello *peer,
                  const struct ibrec *settled);
/* After RTS on an acceptor: what q settled on, into r's ECE fields (unset
 * when either side has no ECE or the device cannot say). */
void ib_ece_settled(const struct ib_dev *d, struct ib_qp *q, const struct hello *peer,
                    struct ibrec *r);

/* ---- GPUDirect RDMA (ib_gdr.c) ---- */
/* Whether a peer-memory client is loaded; why says which, or what was
 * looked for. */
bool ib_gdr_peermem(char *why, size_t cap);
/* Whether the device registers dma-buf memory; why says what was found. */
bool ib_gdr_dmabuf(const struct verbs_ops *v, struct ibv_pd *pd, const char *dev, char *why,
                   size_t cap);
/* Whether a receive connection gets a flush queue pair: GPU memory reaches
 * the NIC through peer memory or dma-buf (NCCL flushes in both cases)
 * unless NCCL_GDR_FLUSH_DISABLE; NCCL_DIAG_FORCE_FLUSH forces it. */
bool ib_gdr_wants_flush(int ptr_support, bool is_disabled, bool is_forced);
bool ib_dev_wants_flush(const struct ib_dev *d);
/* Once per process, on a host with GPUs whose opened ports all lack both:
 * one WARN with each probe's finding, the consequence and the fix. */
void ib_gdr_report(const struct ib_state *st);

/* ---- the verbs steps of init, for a report (ib_probe.c) ---- */
struct ib_probe_port {
  int dev; /* index into the choice's devices */
  bool is_open;
  int err;
  char why[600]; /* when not open */
  bool has_dmabuf;
  char dmabuf[300];
};

struct ib_probe {
  struct verbs_ops v;
  bool is_loaded;
  char why[1024]; /* the library or its device list failed: why */
  int nport, nopen;
  struct ib_probe_port ports[TOPO_MAX_DEVS]; /* one per chosen port */
  bool has_peermem;
  char peermem[600];
};

/* Loads verbs and opens, queries and closes every chosen port: 0, or an
 * errno with why filled (no library, no device list). */
int ib_probe_ports(const struct topo_choice *c, struct ib_probe *pr);
/* "cannot open mlx5_2: No such file or directory (in a container, pass ...)"
 * (ib_dev.c: opening a port fails with it too) */
void ib_open_failure(const char *dev, int err, char *why, size_t cap);

/* ---- memory registration (ib_mr.c) ---- */
struct ib_mr_entry {
  uintptr_t addr;
  size_t len;
  struct ibv_mr *mr;
  int refs;
};

struct ib_mh {
  uint32_t obj; /* OBJ_MR */
  struct ib_dev *dev;
  struct ibv_mr *mr;
  uintptr_t addr; /* the caller's range */
  size_t len;
  bool is_gpu; /* registered as GPU memory (NCCL_PTR_CUDA) */
  /* On a fused port: the range registered on each member port too (as
   * dev->members[]), so a striped connection has a key on every port. */
  int nmembers;
  struct ibv_mr *mrs[IB_MAX_STRIPE];
};
/* mh's key on member port m of its device (its own registration when the
 * device is not fused). */
static inline struct ibv_mr *ib_mh_mr(const struct ib_mh *mh, int m) {
  return m < mh->nmembers && mh->mrs[m] ? mh->mrs[m] : mh->mr;
}

/* Whether registrations of NCCL's buffers ask for PCIe relaxed ordering:
 * NCCL_IB_PCI_RELAXED_ORDERING (1 or 2, NCCL's default 2) and a libibverbs
 * with ibv_reg_mr_iova2 (IBVERBS_1.8), as NCCL decides it. */
bool ib_mr_relaxed_ordering(const struct verbs_ops *v);
/* Whether the device can register memory of this NCCL_PTR_* type (a WARN
 * says why not). */
bool ib_mr_type_ok(const struct ib_dev *d, int type);
/* Registers the caller's buffer (a dma-buf when dmabuf_fd >= 0): 0, or an
 * errno (logged). */
int ib_mr_reg(struct ib_dev *d, void *data, size_t size, int dmabuf_fd, uint64_t offset,
              bool is_gpu, struct ib_mh **out);
/* mh is a live registration of d: 0, or the errno of the deregistration
 * (logged). */
int ib_mr_dereg(struct ib_dev *d, struct ib_mh *mh);
/* Registers an internal buffer outside the cache (FIFO, records). */
struct ibv_mr *ib_mr_plain(struct ib_dev *d, void *p, size_t len, int access, const char *what);

/* ---- queue pairs (ib_qp.c) ---- */
struct ib_qp {
  struct ibv_qp *qp;
  enum ibv_qp_state state;
  const struct ib_dev *dev;
  char peer[64]; /* for log lines */
};

struct ib_path { /* what RTR needs about the remote side */
  uint32_t qpn;
  int mtu;        /* path MTU, bytes (min of both sides) */
  bool is_global; /* GRH: RoCE, or IB across subnets */
  uint8_t dgid[16];
  int sgid_index;
  int dlid;
  int sl, tc;
};

/* What both ends contribute to the path (ib_path.c). */
struct ib_path_ends {
  bool is_roce;
  int local_mtu, remote_mtu; /* active MTUs, bytes (0 unknown) */
  const uint8_t *local_gid, *remote_gid;
  int local_gid_index, remote_lid;
  bool is_grh_required; /* the local port's IBV_QPF_GRH_REQUIRED */
  int sl, tc;
};
/* How the path is addressed, for the log. */
enum ib_grh {
  IB_GRH_ROCE,                 /* always global */
  IB_GRH_NONE,                 /* InfiniBand, same subnet: by LID */
  IB_GRH_PORT_REQUIRES,        /* same subnet, the port requires a GRH */
  IB_GRH_OTHER_SUBNET,         /* through a router: GRH, DLID = the remote FLID */
  IB_GRH_OTHER_SUBNET_NO_FLID, /* GRH, but the remote GID has no FLID: DLID = its LID */
};
/* Fills p (all but qpn) as NCCL addresses an RTR: MTU, GRH, DLID, SL, TC. */
enum ib_grh ib_path_address(const struct ib_path_ends *e, struct ib_path *p);
/* The flush queue pair's loopback path to its own port (local's GID, LID
 * and flags at both ends), addressed as a data queue pair's: NCCL's flush
 * QP goes through the same RTR, so a port that requires a GRH gets one. */
enum ib_grh ib_path_self(const struct ib_path_ends *local, struct ib_path *p);

/* Each returns 0 or the errno, with the cause and the fix in why (for RTR
 * the full diagnosis, ib_diag.c), and logs nothing but the transition
 * itself (INFO + event, with its attributes, time and result): the caller
 * reports the failure once. */
int ib_qp_create(struct ib_qp *q, struct ib_dev *d, struct ibv_cq *cq, int send_wr, int recv_wr,
                 const char *peer, char *why, size_t cap);
int ib_qp_init(struct ib_qp *q, int access, char *why, size_t cap);
int ib_qp_rtr(struct ib_qp *q, const struct ib_path *p, const struct hello *peer, char *why,
              size_t cap);
int ib_qp_rts(struct ib_qp *q, char *why, size_t cap);
void ib_qp_destroy(struct ib_qp *q);

/* ---- pre-RTR checks (ib_compat.c, ib_route.c) and diagnoses (ib_diag.c) ---- */

/* Whether the local device and the peer's (from its hello) can talk:
 * 0 = yes (notes may carry a warning: an MTU mismatch, or a remote GID on a
 * subnet no route of the GID's netdev leads to, which RTR will settle),
 * EHOSTUNREACH = no, with the cause and the fix in why. */
int ib_compat_check(const struct ib_dev *d, const struct hello *mine, const struct hello *peer,
                    char *why, size_t cap, char *notes, size_t ncap);
/* After every queue pair of a connection reached RTR: withdraws the subnet
 * warning of ib_compat_check when there was one (the kernel found the peer). */
void ib_compat_rtr_ok(const struct ib_dev *d, const struct hello *peer, const char *peer_desc);
/* Whether the routing table has a route through netdev to the remote GID's
 * address (a connected subnet, or *via_gateway), none (the peer would be
 * sought on-link there), or this namespace cannot tell. */
enum ib_route { IB_ROUTE_NONE, IB_ROUTE_FOUND, IB_ROUTE_UNKNOWN };
enum ib_route ib_route_through(const char *netdev, const uint8_t *rgid, bool *via_gateway);
/* Text for a failed RTR, for one WARN: the specific cause and its fix
 * first when the plugin knows it (a pair on one host, a link-local GID, a
 * cross-rail pair, a device of another plane, what the errno alone says),
 * then both GIDs in short; the generic causes only without a specific one.
 * The long form goes to an INFO line and the event file. */
void ib_diag_rtr(const struct ib_dev *d, const struct hello *peer, int err, char *out, size_t cap);
/* The long form of a failed path: both GIDs with index, type, netdev,
 * subnet and host; the local ports on the remote's subnet; the ib_write_bw
 * commands that confirm the path. */
void ib_diag_path_details(const struct ib_dev *d, const struct hello *peer, char *out, size_t cap);
/* The port of this host whose GID table holds gid (the remote end of a pair
 * is a NIC of this host), -1 when none does. */
int ib_local_port_of(const uint8_t *gid);
/* What the plugin knows about a failed completion beyond the completion. */
struct ib_wc_context {
  const char *what;        /* "the RDMA write of a message" */
  bool is_first;           /* no completion had succeeded yet on this connection */
  enum wc_memory mem;      /* the local buffer's memory, as its registration said */
  const char *first_error; /* the connection's first error, for a flushed one */
  bool is_port_down;       /* the port is down now (ib_dev_check_port) */
  /* the peer's port as its liveness answers say: down for peer_port_s
   * seconds now, or back peer_port_s ago; neither when not lately */
  bool is_peer_down, is_peer_back;
  int peer_port_s;
  uint32_t write_bytes;  /* a failed message write: its largest message, bytes; else 0 */
  uint32_t max_ok_bytes; /* the largest message write the peer acknowledged so far */
  /* Non-NULL: with the port down, the text ends with this (a setting that
   * would have kept the connection, or ""), without the status's generic
   * causes. */
  const char *advice;
};
/* Text for a failed completion: for a first write never acknowledged
 * whose cause the plugin knows (a pair on one host, link-local GIDs, a
 * cross-rail pair), that cause and its fix first; then the valid wc fields,
 * what the status means, its cause and fix (common/wcstatus.h, as
 * nccl-net-diag explain words them, refined by the context), and for a
 * retry error the path in short and the NCCL_IB_GID_INDEX advice. */
void ib_diag_wc(const struct ib_dev *d, const struct hello *peer, const struct ibv_wc *wc,
                const struct ib_wc_context *cx, char *out, size_t cap);

/* ---- what the two hosts offer (ib_peer.c) ---- */
/* Compares the devices both hosts offer NCCL, once their hellos are in: a
 * WARN once per peer host when the counts differ (NCCL may hang) or one
 * side has RDMA and the other does not (TCP speed). */
void ib_peer_check(const struct transport_dev *dev, const struct hello *mine,
                   const struct hello *peer);

/* ---- setup (ib_setup.c) and comms (ib_comm.c) ---- */
struct ib_setup;

/* Starts the RDMA setup stage of a connection whose hello exchange is done;
 * NULL when either side has no RDMA device (then the connection is TCP). */
struct ib_setup *ib_setup_new(const struct transport_dev *dev, bool is_send, int ctrl_fd,
                              const struct hello *mine, const struct hello *peer,
                              const char *peer_desc, int traffic_class);
/* What a step of RDMA setup returns: common/progress.h's meanings, with
 * the two ways it can finish. */
enum ib_setup_result {
  IB_SETUP_PENDING,   /* call again: waiting for the peer or the socket */
  IB_SETUP_RDMA_UP,   /* ib_comm_create takes it from here */
  IB_SETUP_FALL_BACK, /* both sides agreed on TCP: the data sockets come next */
  IB_SETUP_FAILED,    /* logged by the step that failed */
};
/* Runs the setup's stages as far as the control socket allows. */
enum ib_setup_result ib_setup_progress(struct ib_setup *s);
/* Builds the comm from a ready setup (takes ownership of it, and of the
 * control socket): 0 or an errno (logged). */
int ib_comm_create(struct ib_setup *s, struct transport_setup *x, struct transport_comm **out);
void ib_setup_free(struct ib_setup *s);

#endif
