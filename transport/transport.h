/* SPDX-License-Identifier: Apache-2.0 */
/* What the transports share: the device view, the comm and request bases
 * the API dispatches through, and the hand-off from connection setup (a
 * control socket plus data sockets, and both hello records) to a transport.
 *
 * Connection setup is three non-blocking state machines, each with an enum
 * of named stages and a *_stage_name() for its logs:
 *   connect     connect.h: the listener's addresses, then RDMA setup or
 *               the data sockets
 *   accept      listen.h: the connector's hello and our answer, then RDMA
 *               setup or the data sockets
 *   RDMA setup  ib/setup/ib_setup.h: INFO and STATUS records on the control
 *               socket; pending, RDMA up, fall back to TCP, or failed
 * The hello and the RDMA setup records are framed records, read and
 * written by record_io.h.
 *
 * Every object handed to NCCL starts with an object tag, checked on every
 * entry, so a comm used after close or passed to the wrong call is named in
 * a WARN instead of corrupting memory.
 *
 * Errors: inside transport/ a function returns 0 or a positive errno (a
 * why-buffer, char *why and size_t cap, carries the words), a step of a
 * state machine an enum progress (common/progress.h) or its own outcome
 * enum, and the function that detects a failure logs it once.
 * ncclResult_t appears only at the ops boundary: the transport_comm_ops
 * functions and transport_listen, _accept, _connect and _close_listen,
 * which map errnos with transport_result(). */
#ifndef DIAG_TRANSPORT_TRANSPORT_H
#define DIAG_TRANSPORT_TRANSPORT_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/addr.h"
#include "plugin/abi/nccl_common.h"
#include "topo/netif.h"
#include "topo/topo.h"
#include "transport/hello.h"
#include "transport/liveness.h"
#include "transport/prefs.h"
#include "transport/run/stats.h"

#define TRANSPORT_MAX_DEVS 64
#define TRANSPORT_MAX_DATA_SOCKS 64

enum transport_obj {
  OBJ_LISTEN = 0x4c495354,
  OBJ_SEND = 0x53454e44,
  OBJ_RECV = 0x52454356,
  OBJ_MR = 0x4d524d52,
  OBJ_REQ = 0x52455155,
  OBJ_CONNECTING = 0x434f4e4e,
  OBJ_CTX = 0x43545854,
  OBJ_DEAD = 0x44454144,
};

/* A device as NCCL sees it. TCP devices are interfaces; RDMA devices (added
 * by the IB transport) are ports, and still carry the interface their
 * control connections use. */
struct transport_dev {
  int index;
  char name[64];
  bool is_ib;
  int netif; /* index into the host's netif list */
  char ifname[IF_NAMESIZE];
  struct ipaddr addr;   /* the interface address we listen on */
  const char *pci_path; /* "" when virtual; the host owns the string */
  uint64_t guid;
  int speed_mbps;
  int port;
  void *ib; /* transport/ib's per-port state */
};

/* The host's network view, built once at init (transport/host.c). */
struct transport_host {
  struct netif_list ifs;
  struct netif_choice choice;
  int ndev, cap_devs;
  struct transport_dev *devs; /* ndev of them, allocated for what the host has */
  char why_none[1024];        /* when ndev == 0: why, and what to set */
};

const struct transport_host *transport_host(void);
/* The same, to fill while it is built (host.c; host_devs.c keeps it). */
struct transport_host *transport_host_edit(void);
/* Builds it (once per process; later calls return at once). */
void transport_host_init(void);
/* While building: room for n devices (at most TRANSPORT_MAX_DEVS), in
 * place of an empty device list. 0 or ENOMEM (logged). */
int transport_host_reserve(struct transport_host *h, int n);
/* While building: the next device, zeroed, with its index and PCI path
 * set; NULL when the reserved room is used up. */
struct transport_dev *transport_host_add_dev(struct transport_host *h, const char *pci_path);

/* What the plugin asks of a device, whatever its transport
 * (transport/dev_query.c). */
#define TRANSPORT_MAX_RECVS 8 /* the most grouped receives of any transport */
const char *transport_dev_kind(const struct transport_dev *d); /* "RDMA" or "TCP" */
int transport_dev_ptr_support(const struct transport_dev *d);  /* NCCL_PTR_* bits */
int transport_dev_max_recvs(const struct transport_dev *d);
bool transport_dev_is_down(const struct transport_dev *d); /* a port error, none active since */
enum topo_ll transport_dev_ll(const struct transport_dev *d);
/* Its rail and plane from the topology, -1 when unknown. */
void transport_dev_rail_plane(const struct transport_dev *d, int *rail, int *plane);
/* Tells the member ports of a virtual device about each other. */
void transport_dev_fuse(const struct transport_dev *const *devs, int n);

/* The other side of a connection, for every message about it. A comm
 * keeps only this after setup; the hello records stay in the setup. */
struct transport_peer {
  char host[64];              /* its host name, from its hello */
  char addr[80];              /* "10.0.0.7<46417>" */
  char desc[160];             /* "host-b (10.0.0.7<46417>, eth0)" */
  struct liveness_who who;    /* its process, for liveness checks */
  struct sockaddr_storage sa; /* the control connection's remote address */
  socklen_t sa_len;           /* 0 when unknown */
};

/* The NCCL code for an errno, at the ops boundary. A failed comm keeps the
 * errno its first failure was classed with:
 *   ECONNRESET        the peer or the network ended the connection:
 *                     ncclRemoteError
 *   EMSGSIZE, ENOMSG  the ranks' calls disagree (a message larger than its
 *                     receive, a send that matches no receive):
 *                     ncclInvalidUsage
 *   anything else     a failure on this side: ncclSystemError
 * Connection setup fails with ncclSystemError, or ncclInvalidUsage for a
 * handle that is not ours. */
ncclResult_t transport_result(int err);

struct transport_comm;

struct transport_comm_ops {
  const char *name; /* "tcp" or "ib" */
  ncclResult_t (*reg_mr)(struct transport_comm *c, void *data, size_t size, int type,
                         void **mhandle);
  ncclResult_t (*reg_mr_dmabuf)(struct transport_comm *c, void *data, size_t size, int type,
                                uint64_t offset, int fd, void **mhandle);
  ncclResult_t (*dereg_mr)(struct transport_comm *c, void *mhandle);
  ncclResult_t (*isend)(struct transport_comm *c, void *data, size_t size, int tag, void *mhandle,
                        void **request);
  ncclResult_t (*irecv)(struct transport_comm *c, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **request);
  ncclResult_t (*iflush)(struct transport_comm *c, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*close)(struct transport_comm *c);
};

struct transport_comm {
  uint32_t obj; /* OBJ_SEND or OBJ_RECV */
  const struct transport_comm_ops *ops;
  const struct transport_dev *dev;
  struct transport_peer peer;
  int max_recvs;
  struct liveness_peer *live; /* the peer process's liveness (transport/liveness.h), or NULL */
  uint32_t run_id;            /* this process's number for it, from 1 (transport/run/conns.h) */
  struct run_stats stats;     /* its run-time figures, kept by the API's data calls */
};

struct prof_req;

struct transport_req {
  uint32_t obj;     /* OBJ_REQ while in use */
  bool is_counted;  /* a send or receive the run figures count (run/stats.h), not a flush */
  uint8_t posted_n; /* receive: its buffers; 0 for a send (in the padding: reqs stay small) */
  struct transport_comm *comm;
  struct prof_req *prof; /* NCCL profiler events of this request (transport/prof.h), or NULL */
};

/* What connection setup hands a transport: sockets it now owns, and both
 * hello records (the comm keeps what it needs of them). */
struct transport_setup {
  const struct transport_dev *dev;
  bool is_send;
  int ctrl_fd;
  int ndata;
  int data_fds[TRANSPORT_MAX_DATA_SOCKS];
  int nthreads;
  struct transport_peer peer;
  struct hello mine, peer_hello;
};

/* Connection setup, the ops boundary: listen.c, accept.c and connect.c. */
ncclResult_t transport_listen(const struct transport_dev *dev, void *handle, void **listen_comm);
ncclResult_t transport_accept(void *listen_comm, void **recv_comm);
ncclResult_t transport_close_listen(void *listen_comm);
ncclResult_t transport_connect(const struct transport_dev *dev, int traffic_class, void *handle,
                               void **send_comm);

/* transport.c. The hand-off every finished setup builds: sockets stay as
 * given (ndata 0, nthreads 0) for the caller to add. */
void transport_setup_init(struct transport_setup *s, const struct transport_dev *dev, bool is_send,
                          int ctrl_fd, const struct hello *mine, const struct hello *peer,
                          const char *peer_addr);

/* A comm handed to NCCL: the reference to its peer process's liveness
 * record is taken (comm->live), and given back when it closes. */
void transport_comm_watch(struct transport_comm *c);
ncclResult_t transport_comm_close(struct transport_comm *c);

/* "host-b (10.0.0.7<46417>, eth0)", the host and the process from a hello
 * and a socket address. */
void transport_peer_describe(struct transport_peer *p, const struct hello *h, const char *addr);

/* Sockets per connection and helper threads, from the knobs (NCCL's
 * meaning: threads x sockets-per-thread, at most 64 sockets). The threads
 * are how many of its device's shared helpers a connection's sockets are
 * spread over (transport/tcp/tcp.h), not threads of its own. */
void transport_socket_shape(int *nsocks, int *nthreads);

#endif
