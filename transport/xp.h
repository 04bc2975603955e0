/* What the transports share: the device view, the comm and request bases
 * the API dispatches through, and the hand-off from connection setup (a
 * control socket plus data sockets, and both hello records) to a transport.
 *
 * Every object handed to NCCL starts with an object tag, checked on every
 * entry, so a comm used after close or passed to the wrong call is named in
 * a WARN instead of corrupting memory. */
#ifndef DIAG_TRANSPORT_XP_H
#define DIAG_TRANSPORT_XP_H

#include <limits.h>
#include <net/if.h>
#include <stdint.h>

#include "plugin/abi/nccl_common.h"
#include "topo/addr.h"
#include "topo/netif.h"
#include "transport/hello.h"

#define XP_MAX_DEVS 64
#define XP_MAX_DATA_SOCKS 64

enum xp_obj {
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
struct xp_dev {
  int index;
  char name[64];
  int is_ib;
  int netif;                 /* index into the host's netif list */
  char ifname[IF_NAMESIZE];
  struct ipaddr addr;        /* the interface address we listen on */
  char pci_path[PATH_MAX];   /* "" when virtual */
  uint64_t guid;
  int speed_mbps;
  int port;
  void *ib;                  /* transport/ib's per-port state */
};

/* The host's network view, built once at init (plugin/devices.c). */
struct xp_host {
  struct netif_list ifs;
  struct netif_choice choice;
  int ndev;
  struct xp_dev dev[XP_MAX_DEVS];
  char why_none[1024]; /* when ndev == 0: why, and what to set */
};

const struct xp_host *xp_host(void);
/* Builds it (once per process; later calls return at once). */
void xp_host_init(void);

/* The other side of a connection, for every message about it. */
struct xp_peer {
  struct hello hello;   /* its hello record */
  char addr[80];        /* "10.0.0.7<46417>" */
  char desc[160];       /* "host-b (10.0.0.7<46417>, eth0)" */
};

struct xp_comm;

struct xp_comm_ops {
  const char *name; /* "tcp" or "ib" */
  ncclResult_t (*reg_mr)(struct xp_comm *c, void *data, size_t size, int type, void **mhandle);
  ncclResult_t (*reg_mr_dmabuf)(struct xp_comm *c, void *data, size_t size, int type,
                                uint64_t offset, int fd, void **mhandle);
  ncclResult_t (*dereg_mr)(struct xp_comm *c, void *mhandle);
  ncclResult_t (*isend)(struct xp_comm *c, void *data, size_t size, int tag, void *mhandle,
                        void **request);
  ncclResult_t (*irecv)(struct xp_comm *c, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **request);
  ncclResult_t (*iflush)(struct xp_comm *c, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*close)(struct xp_comm *c);
};

struct xp_comm {
  uint32_t obj; /* OBJ_SEND or OBJ_RECV */
  const struct xp_comm_ops *ops;
  const struct xp_dev *dev;
  struct xp_peer peer;
  struct hello mine;
  int max_recvs;
};

struct xp_req {
  uint32_t obj; /* OBJ_REQ while in use */
  struct xp_comm *comm;
};

/* What connection setup hands a transport: sockets it now owns. */
struct xp_setup {
  const struct xp_dev *dev;
  int send_side;
  int ctrl_fd;
  int ndata;
  int data_fds[XP_MAX_DATA_SOCKS];
  int nthreads;
  struct xp_peer peer;
  struct hello mine;
};

/* TCP comm from a completed setup; takes ownership of the sockets. */
ncclResult_t tcp_comm_create(struct xp_setup *s, struct xp_comm **out);

/* Connection setup (transport/listen.c, accept.c, connect.c). */
ncclResult_t xp_listen(const struct xp_dev *dev, void *handle, void **listen_comm);
ncclResult_t xp_accept(void *listen_comm, void **recv_comm);
ncclResult_t xp_close_listen(void *listen_comm);
ncclResult_t xp_connect(const struct xp_dev *dev, int traffic_class, void *handle,
                        void **send_comm);

/* The hand-off every finished setup builds: sockets stay as given (ndata 0,
 * nthreads 0) for the caller to add. */
void xp_setup_init(struct xp_setup *s, const struct xp_dev *dev, int send_side, int ctrl_fd,
                   const struct hello *mine, const struct hello *peer, const char *peer_addr);

/* "host-b (10.0.0.7<46417>, eth0)" from a hello and a socket address. */
void xp_peer_describe(struct xp_peer *p, const struct hello *h, const char *addr);

/* Sockets per connection and helper threads, from the knobs (NCCL's
 * meaning: threads x sockets-per-thread, at most 64 sockets). */
void xp_socket_shape(int *nsocks, int *nthreads);

#endif
