/* SPDX-License-Identifier: Apache-2.0 */
/* The rendezvous protocol: every message survives a round trip, and every
 * malformed one is refused with a reason, never read past its end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tools/probe/rdv_wire.h"
#include "unit.h"

static const uint8_t *body_of(const struct wire_buf *b, int *type, uint32_t *len) {
  char why[256];
  CHECK(wire_decode_header(b->p, type, len, why, sizeof(why)) == 0, "%s", why);
  CHECK(*len == b->len - WIRE_HDR_LEN, "length %u of %zu", *len, b->len);
  return b->p + WIRE_HDR_LEN;
}

static void t_small(void) {
  struct wire_buf b = {0};
  int type;
  uint32_t len;
  char why[256];
  struct wire_hello h = {.world = 16, .rank = 3, .local_rank = 0}, h2;
  strcpy(h.job, "torchrun:abc"), strcpy(h.host, "node03"), strcpy(h.version, "0.1.0");
  CHECK(wire_enc_hello(&b, &h) == 0, "encode hello");
  const uint8_t *body = body_of(&b, &type, &len);
  CHECK(type == W_HELLO && wire_dec_hello(body, len, &h2, why, sizeof(why)) == 0, "%s", why);
  CHECK(h2.world == 16 && h2.rank == 3 && !strcmp(h2.host, "node03") && !strcmp(h2.job, h.job),
        "hello fields");
  struct wire_task t = {.step = 9,
                        .peer = 2,
                        .dev = 1,
                        .first = 1,
                        .bytes = 1ull << 36,
                        .pings = 20,
                        .timeout_ms = 60000},
                   t2;
  strcpy(t.peer_host, "node02");
  CHECK(wire_enc_task(&b, &t) == 0, "encode task");
  body = body_of(&b, &type, &len);
  CHECK(wire_dec_task(body, len, &t2, why, sizeof(why)) == 0 && t2.bytes == t.bytes &&
          t2.peer == 2 && t2.first == 1 && !strcmp(t2.peer_host, "node02"),
        "task: %s", why);
  struct wire_handle hd = {.step = 9, .len = WIRE_HANDLE_MAX}, hd2;
  for (int i = 0; i < WIRE_HANDLE_MAX; i++) hd.handle[i] = (uint8_t)(i * 7);
  CHECK(wire_enc_handle(&b, W_PEER_HANDLE, &hd) == 0, "encode handle");
  body = body_of(&b, &type, &len);
  CHECK(type == W_PEER_HANDLE && wire_dec_handle(body, len, &hd2, why, sizeof(why)) == 0 &&
          !memcmp(hd.handle, hd2.handle, WIRE_HANDLE_MAX),
        "handle");
  struct wire_result r = {.step = 9, .ok_recv = 1, .recv_bytes = 64 << 20, .recv_ns = 31000000},
                     *r2 = malloc(sizeof(*r2));
  strcpy(r.warns, "line one\nline two with \x1b[31m escape");
  strcpy(r.cause, "no_answer");
  r.stall = 65536;
  CHECK(wire_enc_result(&b, &r) == 0, "encode result");
  body = body_of(&b, &type, &len);
  CHECK(wire_dec_result(body, len, r2, why, sizeof(why)) == 0 && r2->recv_ns == r.recv_ns, "%s",
        why);
  CHECK(!strchr(r2->warns, '\x1b') && strchr(r2->warns, '\n'),
        "control bytes become '?', newlines stay: %s", r2->warns);
  CHECK(!strcmp(r2->cause, "no_answer") && r2->stall == 65536,
        "the plugin's cause code and the stalled size travel: %s %d", r2->cause, r2->stall);
  free(r2);
  wb_free(&b);
}

static void t_facts(void) {
  struct probe_facts f = {.rank = 2, .local_rank = 0, .nccl_code = 22809, .abi_mask = 0x1fe0}, g;
  strcpy(f.host, "node02"), strcpy(f.transport, "RDMA"), strcpy(f.sock_ifs, "bond0");
  struct probe_var vars[2] = {{"NCCL_PROTO", "Simple"}, {"NCCL_IB_HCA", "=mlx5_2"}};
  f.env.n = 2, f.env.v = vars;
  f.nrdma = 2;
  strcpy(f.rdma[1].name, "mlx5_3"), f.rdma[1].gid_index = 3, f.rdma[1].pkey = 0xffff;
  f.rdma[1].qos_state = 2, f.rdma[1].qos_prio = 0, f.rdma[1].qos_pfc = 8,
  f.rdma[1].qos_fix_tc = 106;
  strcpy(f.rdma[1].qos, "trust dscp, PFC on 3, ECN on 3");
  strcpy(f.rdma[1].qos_tc, "NCCL_IB_TC=0 (DSCP 0)");
  f.ndev = 1, strcpy(f.devs[0].name, "mlx5_2:1");
  f.nissue = 1, f.issues[0].sev = 2, strcpy(f.issues[0].text, "no usable interface");
  f.nrec = 1, strcpy(f.recs[0].name, "NCCL_SOCKET_IFNAME"), strcpy(f.recs[0].value, "=bond0");
  struct wire_buf b = {0};
  char why[256];
  CHECK(wire_enc_facts(&b, &f) == 0, "encode facts");
  int type;
  uint32_t len;
  const uint8_t *body = body_of(&b, &type, &len);
  CHECK(wire_dec_facts(body, len, &g, why, sizeof(why)) == 0, "%s", why);
  CHECK(g.rank == 2 && !strcmp(g.host, "node02") && g.nccl_code == 22809 && g.abi_mask == 0x1fe0,
        "scalars");
  CHECK(g.env.n == 2 && !strcmp(probe_env_get(&g.env, "NCCL_PROTO"), "Simple"), "environment");
  CHECK(g.nrdma == 2 && g.rdma[1].gid_index == 3 && g.rdma[1].pkey == 0xffff, "RDMA ports");
  CHECK(g.rdma[1].qos_state == 2 && g.rdma[1].qos_pfc == 8 && g.rdma[1].qos_fix_tc == 106 &&
          !g.rdma[1].qos_lossless && !strcmp(g.rdma[1].qos, "trust dscp, PFC on 3, ECN on 3") &&
          !strcmp(g.rdma[1].qos_tc, "NCCL_IB_TC=0 (DSCP 0)"),
        "RoCE QoS travels");
  CHECK(g.rdma[0].qos_state == 0, "a port without QoS (as an older probe sends it): not reported");
  CHECK(g.ndev == 1 && g.nissue == 1 && g.issues[0].sev == 2 && g.nrec == 1, "lists");
  /* Every truncation of the body is refused (or decodes a prefix), never overread. */
  for (uint32_t cut = 0; cut < len; cut++) {
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, body, cut);
    struct probe_facts h;
    if (wire_dec_facts(copy, cut, &h, why, sizeof(why)) == 0) probe_facts_free(&h);
    free(copy);
  }
  probe_facts_free(&g);
  wb_free(&b);
}

static void t_malformed(void) {
  /* little-endian, as transport/wire.h: magic "NDPR" as a u32, version 2 */
  uint8_t hdr[WIRE_HDR_LEN] = {'R', 'P', 'D', 'N', 2, 0, W_HELLO, 0, 4, 0, 0, 0};
  int type;
  uint32_t len;
  char why[256];
  CHECK(wire_decode_header(hdr, &type, &len, why, sizeof(why)) == 0 && type == W_HELLO && len == 4,
        "%s", why);
  hdr[0] = 'G';
  CHECK(wire_decode_header(hdr, &type, &len, why, sizeof(why)) == EPROTO &&
          strstr(why, "not this probe's"),
        "a stranger's bytes: %s", why);
  hdr[0] = 'R', hdr[4] = 3;
  CHECK(wire_decode_header(hdr, &type, &len, why, sizeof(why)) == EPROTONOSUPPORT &&
          strstr(why, "same nccl-net-diag release"),
        "another version: %s", why);
  hdr[4] = 2, hdr[11] = 0x7f;
  CHECK(wire_decode_header(hdr, &type, &len, why, sizeof(why)) == EMSGSIZE, "too long: %s", why);
  hdr[11] = 0, hdr[6] = 99;
  CHECK(wire_decode_header(hdr, &type, &len, why, sizeof(why)) == EBADMSG, "type: %s", why);
  /* An earlier release's header, big-endian: named as another release. */
  uint8_t old[WIRE_HDR_LEN] = {'N', 'D', 'P', 'R', 0, 1, 0, W_HELLO, 0, 0, 0, 4};
  CHECK(wire_decode_header(old, &type, &len, why, sizeof(why)) == EPROTONOSUPPORT &&
          strstr(why, "same nccl-net-diag release"),
        "an earlier release's big-endian header: %s", why);
  /* A field whose length runs past the body, a string too long for its
   * destination, an integer of the wrong width. */
  uint8_t over[] = {5, 0, 200, 0, 0, 0, 'x'};
  struct wire_hello h;
  CHECK(wire_dec_hello(over, sizeof(over), &h, why, sizeof(why)) == EBADMSG, "overrun");
  struct wire_buf b = {0};
  wb_begin(&b, W_HELLO);
  wb_u32(&b, 3 /* rank */, 1);
  char big[300];
  memset(big, 'h', sizeof(big) - 1), big[sizeof(big) - 1] = 0;
  wb_str(&b, 5 /* host */, big);
  CHECK(wb_finish(&b) &&
          wire_dec_hello(b.p + WIRE_HDR_LEN, b.len - WIRE_HDR_LEN, &h, why, sizeof(why)) == EBADMSG,
        "a host name longer than the field is refused");
  wb_begin(&b, W_TASK);
  wb_bytes(&b, 7 /* step */, "abc", 3);
  struct wire_task t;
  CHECK(wb_finish(&b) &&
          wire_dec_task(b.p + WIRE_HDR_LEN, b.len - WIRE_HDR_LEN, &t, why, sizeof(why)) == EBADMSG,
        "a 3-byte integer is refused");
  wb_free(&b);
}

/* The field reader's results are named (never -1), each errno says which
 * fault. */
static void t_fields(void) {
  uint8_t two[] = {1, 0, 4, 0, 0, 0, 7, 0, 0, 0, 2, 0, 2, 0, 0, 0, 'h', 'i'};
  struct wire_rd rd, v;
  uint16_t tag;
  uint32_t u;
  char s[3], tiny[2];
  wire_rd_init(&rd, two, sizeof(two));
  CHECK(wire_next(&rd, &tag, &v) == WIRE_FIELD && tag == 1 && !wire_u32(&v, &u) && u == 7,
        "a u32 field");
  CHECK(wire_u64(&v, &(uint64_t){0}) == EBADMSG, "a u32 read as a u64: EBADMSG");
  CHECK(wire_next(&rd, &tag, &v) == WIRE_FIELD && tag == 2 && !wire_str(&v, s, sizeof(s)) &&
          !strcmp(s, "hi"),
        "a string field");
  CHECK(wire_str(&v, tiny, sizeof(tiny)) == EMSGSIZE, "a string longer than its room: EMSGSIZE");
  CHECK(wire_next(&rd, &tag, &v) == WIRE_END, "the end");
  wire_rd_init(&rd, two, 5);
  CHECK(wire_next(&rd, &tag, &v) == WIRE_MALFORMED, "a field header cut short");
  wire_rd_init(&rd, two, 9);
  CHECK(wire_next(&rd, &tag, &v) == WIRE_MALFORMED, "a value that runs past the message");
  /* groups nested one deeper than allowed */
  uint8_t deep[6 * (WIRE_MAX_DEPTH + 1)];
  for (int i = 0; i <= WIRE_MAX_DEPTH; i++) {
    uint32_t rest = (uint32_t)(6 * (WIRE_MAX_DEPTH - i));
    uint8_t *f = deep + 6 * i;
    f[0] = 9, f[1] = 0, f[2] = (uint8_t)rest, f[3] = 0, f[4] = 0, f[5] = 0;
  }
  wire_rd_init(&rd, deep, sizeof(deep));
  enum wire_field r = WIRE_FIELD;
  struct wire_rd in = rd;
  for (int i = 0; i <= WIRE_MAX_DEPTH && r == WIRE_FIELD; i++) {
    r = wire_next(&in, &tag, &v);
    in = v;
  }
  CHECK(r == WIRE_MALFORMED, "groups %d deep: %d", WIRE_MAX_DEPTH + 1, (int)r);
}

void wire_cases(void) {
  TAP_CASE("rendezvous messages round-trip; control bytes never reach a report", t_small);
  TAP_CASE("host facts round-trip; truncated facts never overread", t_facts);
  TAP_CASE("malformed headers and fields are refused with the reason", t_malformed);
  TAP_CASE("the field reader: named results, an errno per fault", t_fields);
}
