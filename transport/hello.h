/* SPDX-License-Identifier: Apache-2.0 */
/* The hello record: the first thing each side sends on a control connection.
 * It is versioned and length-checked (a 12-byte header, then TLV fields), so
 * a newer peer can add fields and an older one skips them. Both sides
 * compare the two records before any data path is set up, and name every
 * field that differs. */
#ifndef DIAG_TRANSPORT_HELLO_H
#define DIAG_TRANSPORT_HELLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HELLO_MAGIC 0x6f6c6568u /* "helo" */
#define HELLO_VERSION 1
#define HELLO_HDR_LEN 12
#define HELLO_MAX_BODY 4096
#define HELLO_MAX_KNOBS 16

/* HELLO_REFUSE: a listener's answer to a connection it will not take,
 * sent before it closes the socket so the connector fails at once with the
 * reason (hello_encode_refusal); an older connector reads an unknown kind
 * and gives up on that address, as it did on the closed socket. */
enum hello_kind { HELLO_CONNECT = 1, HELLO_ACCEPT = 2, HELLO_REFUSE = 3 };
#define HELLO_REASON_MAX 480

struct hello_knob {
  char name[40];
  char value[96];
};

/* The RDMA identity of a side's device; present only on RDMA devices. */
struct hello_ib {
  bool is_present;
  char dev[32];
  int port;
  int link_layer; /* 1 InfiniBand, 2 Ethernet (RoCE) */
  int gid_index;
  uint8_t gid[16];
  int gid_type; /* 0 IB, 1 RoCE v1, 2 RoCE v2 */
  int mtu;      /* active MTU in bytes */
  int lid;
  int pkey_index;
  char netdev[16];
  char subnet[48];
  bool is_off_plane; /* the sender's own layout sets this device apart */
};

/* RDMA details in fields of their own, after the fixed block: a peer that
 * does not know a field skips it, and a field a peer did not send reads as
 * unknown (0, ""). Filled by the IB transport. */
enum hello_gid_state {
  HELLO_GID_UNKNOWN = 0,
  HELLO_GID_POPULATED = 1,
  HELLO_GID_EMPTY = 2,   /* an entry of the table that holds no GID */
  HELLO_GID_MISSING = 3, /* an index past the end of the table */
};
#define HELLO_MAX_ALTS 12
struct hello_alt {
  int port;
  int gid_index;
  int gid_type; /* as hello_ib's: 0 IB, 1 RoCE v1, 2 RoCE v2 */
  uint8_t gid[16];
};
/* A port the sender could carry a connection on (hello_ports.c): each of
 * its RDMA devices, with the GIDs a RoCE pair could use, so that both sides
 * can choose another port or NIC that reaches when NCCL's pair cannot
 * (ib_repair.h). */
#define HELLO_MAX_PORTS 16
#define HELLO_MAX_PORT_GIDS 4
struct hello_port_gid {
  int gid_index;
  int gid_type; /* 1 RoCE v1, 2 RoCE v2 */
  uint8_t gid[16];
};
struct hello_port {
  char dev[32];
  int port;
  int mtu;
  int rail, plane;   /* NCCL_IB_HCA's rail and plane fields, -1 unknown */
  int prefix;        /* of the port's subnet (its GID's address), -1 unknown */
  bool is_off_plane; /* the host's layout sets it apart (a storage NIC) */
  bool has_gdr;      /* GPUDirect RDMA works on it */
  char netdev[16];
  int ngids;
  struct hello_port_gid gids[HELLO_MAX_PORT_GIDS];
};
struct hello_rdma {
  int gid_state;        /* of the GID index in use: enum hello_gid_state */
  char gid_usable[200]; /* the port's usable entries: "6 RoCE v1 10.0.0.7, 7 RoCE v2 10.0.0.7" */
  bool has_pkey;
  int pkey; /* the P_Key at ib.pkey_index (NCCL_IB_PKEY): 0 none there */
  /* The devices the sender offers NCCL (sent by RDMA and TCP hosts alike): */
  bool has_devs;
  bool is_rdma_host; /* they are RDMA ports, not TCP interfaces */
  int ndevs;
  char devs[256]; /* their names, comma separated (cut when long) */
  /* Enhanced connection establishment: what the device's queue pairs offer
   * (ibv_query_ece), sent when NCCL_IB_ECE_ENABLE and the device has it. */
  bool has_ece;
  uint32_t ece_vendor, ece_options, ece_comp_mask;
  /* The other GIDs of the port in use that could carry the pair when the
   * chosen one cannot (ib_repair.c), and this side's NCCL_DIAG_REPAIR. A
   * peer that leaves the field out (an older release, or
   * NCCL_DIAG_REPAIR=off) offers none: the pair is not repaired. */
  bool has_alts;
  int repair_mode; /* REPAIR_AUTO or REPAIR_WARN (common/knobs.h) */
  int nalts;
  struct hello_alt alts[HELLO_MAX_ALTS];
  /* The ports of the fused NIC (makeVDevice) this side stripes each
   * message over; 0 (an older peer, or a single port): it does not. */
  int stripe_ports;
  /* Every port the sender offers NCCL; absent (older peers, or
   * NCCL_DIAG_REPAIR=off): no other port to move to. */
  bool has_ports;
  int nports;
  struct hello_port ports[HELLO_MAX_PORTS];
};

/* A listener address the connector tried before the one this hello went
 * to, and what happened: the listener learns which of its addresses other
 * hosts cannot reach. */
#define HELLO_MAX_TRIED 4
struct hello_tried {
  char addr[64];   /* as the connector tried it: "10.0.0.7<46417>" */
  char ifname[16]; /* the listener's interface with that address */
  int err;         /* the failure's errno; 0: no answer yet when another address worked */
  int ms;          /* how long its last attempt had run */
};

/* Where this side's process answers liveness checks (liveness.h): its
 * port (the address is the control connection's) and a token naming the
 * process. Absent from older peers and where the check cannot run. */
struct hello_live {
  bool is_present;
  uint16_t port;
  uint64_t token;
};

struct hello {
  int kind;
  char plugin_version[32];
  uint32_t nccl_version; /* 0 = not inside NCCL */
  char host[64];
  uint32_t pid;
  char transport[8]; /* what this side offers: "tcp" or "ib" */
  char dev[32];
  char ifname[16]; /* interface of the control connection */
  char addr[64];   /* its local address, as this side sees it */
  uint32_t if_mtu; /* MTU of the interface with that address; 0 unknown (older peers) */
  uint64_t nonce;
  uint64_t connid;
  uint16_t nsocks, nthreads;
  int nknobs; /* settings that must agree on every node */
  struct hello_knob knobs[HELLO_MAX_KNOBS];
  int ninfo; /* settings worth showing in a diagnosis */
  struct hello_knob info[HELLO_MAX_KNOBS];
  struct hello_ib ib;
  struct hello_rdma rdma; /* the GID and P_Key fields with ib, when ib.is_present */
  int ntried;             /* connector only */
  struct hello_tried tried[HELLO_MAX_TRIED];
  struct hello_live live;
};

/* Encodes header + body into out: 0 with the total length in *len, or
 * EMSGSIZE when it does not fit. */
int hello_encode(const struct hello *h, uint8_t *out, size_t cap, size_t *len);

/* Reads the 12-byte header: 0 with the record kind and the body's length,
 * or EPROTO with why. */
int hello_decode_header(const uint8_t *hdr, int *kind, uint32_t *body_len, char *why, size_t cap);
/* Decodes the body whose length the header gave: 0, or EPROTO with why. */
int hello_decode_body(const uint8_t *body, size_t len, struct hello *h, char *why, size_t cap);

/* A listener's refusal: who refused, and why, in words for the connector. */
struct hello_refusal {
  char host[64];
  char plugin_version[32];
  char reason[HELLO_REASON_MAX];
};

/* Encodes a refusal record: 0 with the total length in *len, or EMSGSIZE.
 * The reason is cut to HELLO_REASON_MAX - 1 bytes. It names neither the
 * host nor the version (older listeners sent both; they still decode). */
int hello_encode_refusal(const char *reason, uint8_t *out, size_t cap, size_t *len);
/* Decodes the body of a HELLO_REFUSE record: 0, or EPROTO with why. */
int hello_decode_refusal(const uint8_t *body, size_t len, struct hello_refusal *r, char *why,
                         size_t cap);

/* hello_ports.c: the ports field's value (its length, 0 when none fit in
 * cap), and its decoding (entries past HELLO_MAX_PORTS, or longer than this
 * version knows, are skipped). */
size_t hello_ports_encode(const struct hello_rdma *r, uint8_t *out, size_t cap);
void hello_ports_decode(const uint8_t *v, size_t len, struct hello_rdma *r);

/* Fills the fields every hello carries: versions, host, pid, knobs, and
 * this process's liveness endpoint (hello_local.c; it starts the liveness
 * check on first use). */
void hello_fill_local(struct hello *h, int kind);

/* Lists each field in which two records disagree, as
 * "NCCL version: 2.19.3 on a, 2.14.3 on b; NCCL_PROTO: unset on a, Simple on b".
 * Returns the number of differences. */
int hello_diff(const struct hello *mine, const struct hello *peer, char *buf, size_t cap);

/* "NCCL_SOCKET_IFNAME=bond0" from a record's info list, or "unset". */
const char *hello_info_value(const struct hello *h, const char *name);

#endif
