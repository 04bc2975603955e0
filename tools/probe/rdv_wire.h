/* SPDX-License-Identifier: Apache-2.0 */
/* The rendezvous protocol between every rank and rank 0.
 *
 * A message is a 12-byte header (magic "NDPR", protocol version u16, type
 * u16, body length u32, all little-endian like every other record of the
 * project: transport/wire.h) and a body of fields: tag u16,
 * length u32, value. A field may hold a group of fields (an interface, an
 * RDMA port); groups nest at most WIRE_MAX_DEPTH deep. Integers are fixed
 * width; strings carry no NUL and are printable ASCII or newlines once decoded
 * (other bytes become '?', since they end up in reports). Unknown tags are
 * skipped; a field longer than its destination, a group that overruns its
 * parent or a body above WIRE_MAX_BODY makes the message malformed.
 * Decoders take bytes from the network, so they check every length. */
#ifndef DIAG_TOOLS_PROBE_RDV_WIRE_H
#define DIAG_TOOLS_PROBE_RDV_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/probe/probe.h"

#define WIRE_MAGIC 0x4e445052u /* "NDPR" */
#define WIRE_VERSION 2         /* 1: big-endian, before transport/wire.h was shared */
#define WIRE_HDR_LEN 12
#define WIRE_MAX_BODY (1u << 20)
#define WIRE_MAX_DEPTH 3
#define WIRE_HANDLE_MAX 128 /* NCCL_NET_HANDLE_MAXSIZE */
#define WIRE_TEXT_MAX 4096

enum wire_type {
  W_HELLO = 1,   /* rank -> 0: who I am */
  W_WELCOME,     /* 0 -> rank: accepted */
  W_REFUSE,      /* 0 -> rank: not accepted, and why */
  W_FACTS,       /* rank -> 0: my host's facts */
  W_TASK,        /* 0 -> rank: test one device with one peer */
  W_HANDLE,      /* rank -> 0: my listen handle for the task */
  W_PEER_HANDLE, /* 0 -> rank: the peer's listen handle */
  W_RESULT,      /* rank -> 0: what my side of the task saw */
  W_ABORT,       /* 0 -> rank: give up the task */
  W_BYE,         /* 0 -> rank: the probe is over */
  W_TYPE_END
};

const char *wire_type_name(int type);

/* ------------------------------------------------------------- encoding */

struct wire_buf {
  uint8_t *p;
  size_t len, cap;
  int failed; /* out of memory or above WIRE_MAX_BODY: the message is dropped */
};

/* Starts a message of type t (header reserved). */
void wb_begin(struct wire_buf *b, int type);
/* Fills the header; returns the whole message's length, 0 if failed. */
size_t wb_finish(struct wire_buf *b);
void wb_free(struct wire_buf *b);
void wb_u32(struct wire_buf *b, uint16_t tag, uint32_t v);
void wb_u64(struct wire_buf *b, uint16_t tag, uint64_t v);
void wb_i32(struct wire_buf *b, uint16_t tag, int32_t v);
void wb_str(struct wire_buf *b, uint16_t tag, const char *s);
void wb_bytes(struct wire_buf *b, uint16_t tag, const void *p, size_t n);
/* A group: wb_group_begin returns its offset, wb_group_end closes it. */
size_t wb_group_begin(struct wire_buf *b, uint16_t tag);
void wb_group_end(struct wire_buf *b, size_t at);

/* ------------------------------------------------------------- decoding */

/* 0, or EPROTO (not this protocol), EPROTONOSUPPORT (another version),
 * EMSGSIZE (body too long), EBADMSG (unknown type), with why set. */
int wire_decode_header(const uint8_t *hdr, int *type, uint32_t *len, char *why, size_t cap);

struct wire_rd {
  const uint8_t *p;
  size_t len, off;
  int depth;
};

void wire_rd_init(struct wire_rd *r, const uint8_t *p, size_t len);
/* What reading the next field came to. */
enum wire_field {
  WIRE_END,       /* no more fields */
  WIRE_FIELD,     /* tag and value set */
  WIRE_MALFORMED, /* a field runs past the message or nests too deep */
};
enum wire_field wire_next(struct wire_rd *r, uint16_t *tag, struct wire_rd *val);
/* A number field: 0, or EBADMSG when its size is not the number's. */
int wire_u32(const struct wire_rd *v, uint32_t *out);
int wire_u64(const struct wire_rd *v, uint64_t *out);
int wire_i32(const struct wire_rd *v, int32_t *out);
/* Copies a string field, printable ASCII (a newline becomes a space: no
 * field can start a line of a report); 0, or EMSGSIZE when it does not fit
 * in cap. */
int wire_str(const struct wire_rd *v, char *out, size_t cap);
/* The same for a list of lines (the plugin's WARNs): newlines kept, each
 * line printable. */
int wire_lines(const struct wire_rd *v, char *out, size_t cap);
/* Allocates the string (at most WIRE_TEXT_MAX); NULL on error. */
char *wire_strdup(const struct wire_rd *v);

/* ------------------------------------------------------------- messages */

struct wire_hello {
  uint32_t proto_min; /* reserved: the oldest protocol this rank speaks */
  char job[128];
  int32_t world, rank, local_rank;
  char host[PROBE_HOST_MAX];
  char version[32];
  /* The job's rendezvous secret (rdv_secret.h); absent from older probes. */
  bool has_secret;
  uint64_t secret;
};

struct wire_task {
  uint32_t step;
  int32_t peer, dev, first; /* first: this side sends first and measures latency */
  char peer_host[PROBE_HOST_MAX];
  uint64_t bytes;
  uint32_t pings, timeout_ms;
};

struct wire_handle {
  uint32_t step;
  uint32_t len;
  uint8_t handle[WIRE_HANDLE_MAX];
};

/* One side's view of one task. */
struct wire_result {
  uint32_t step;
  int32_t ok_recv; /* the data this side received arrived intact */
  uint64_t recv_bytes, recv_ns;
  uint64_t lat_ns;  /* half the median round trip (the first side), 0 none */
  char error[1024]; /* what failed on this side, "" none */
  char warns[2048]; /* the plugin's WARN lines during the task */
  char cause[32];   /* the plugin's cause code of a failed connect ("no_answer"), "" none */
  int32_t stall;    /* large messages stalled while small ones passed (bytes of the large) */
};

/* W_WELCOME, W_REFUSE, W_ABORT and W_BYE carry a step, a number and a text. */
struct wire_note {
  uint32_t step;
  uint64_t value; /* W_WELCOME: ms left before rank 0 ends; W_BYE: exit status */
  char text[1024];
};

int wire_enc_hello(struct wire_buf *b, const struct wire_hello *h);
int wire_dec_hello(const uint8_t *body, size_t len, struct wire_hello *h, char *why, size_t cap);
int wire_enc_task(struct wire_buf *b, const struct wire_task *t);
int wire_dec_task(const uint8_t *body, size_t len, struct wire_task *t, char *why, size_t cap);
int wire_enc_handle(struct wire_buf *b, int type, const struct wire_handle *h);
int wire_dec_handle(const uint8_t *body, size_t len, struct wire_handle *h, char *why, size_t cap);
int wire_enc_result(struct wire_buf *b, const struct wire_result *r);
int wire_dec_result(const uint8_t *body, size_t len, struct wire_result *r, char *why, size_t cap);
int wire_enc_note(struct wire_buf *b, int type, const struct wire_note *n);
int wire_dec_note(const uint8_t *body, size_t len, struct wire_note *n, char *why, size_t cap);
/* The facts: the environment lists are allocated (probe_facts_free). */
int wire_enc_facts(struct wire_buf *b, const struct probe_facts *f);
int wire_dec_facts(const uint8_t *body, size_t len, struct probe_facts *f, char *why, size_t cap);

#endif
