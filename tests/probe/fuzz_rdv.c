/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: one rendezvous message as rank 0 or a rank reads it from the
 * network (header, then the body by its type). A message that decodes must
 * re-encode and decode to the same fields, and every string it yields must
 * be printable (they end up in reports and JSON). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/probe/rdv_wire.h"

/* A field: one line of printable ASCII. */
static void printable(const char *s) {
  for (; *s; s++)
    if (*s < 0x20 || *s > 0x7e) abort();
}

/* A list of lines (the plugin's WARNs): each printable. */
static void lines(const char *s) {
  for (; *s; s++)
    if ((*s < 0x20 || *s > 0x7e) && *s != '\n') abort();
}

static void facts_strings(const struct probe_facts *f) {
  printable(f->host), printable(f->nccl_path), printable(f->plugin_version);
  printable(f->sock_ifs), printable(f->sock_err), printable(f->no_dev);
  for (int i = 0; i < f->env.n; i++) printable(f->env.v[i].name), printable(f->env.v[i].value);
  for (int i = 0; i < f->nif; i++) printable(f->ifs[i].name), printable(f->ifs[i].addr);
  for (int i = 0; i < f->nrdma; i++) printable(f->rdma[i].name), printable(f->rdma[i].gid);
  for (int i = 0; i < f->nissue; i++) printable(f->issues[i].text);
  for (int i = 0; i < f->nrec; i++) printable(f->recs[i].value);
}

/* Decodes, re-encodes, decodes again: the two decodings must agree. */
static void facts_case(const uint8_t *body, uint32_t len) {
  static struct probe_facts f, g;
  char why[256];
  if (wire_dec_facts(body, len, &f, why, sizeof(why))) return;
  facts_strings(&f);
  struct wire_buf b = {0};
  if (wire_enc_facts(&b, &f) == 0) {
    if (wire_dec_facts(b.p + WIRE_HDR_LEN, (uint32_t)(b.len - WIRE_HDR_LEN), &g, why, sizeof(why)))
      abort();
    if (g.rank != f.rank || strcmp(g.host, f.host) || g.env.n != f.env.n || g.nrdma != f.nrdma ||
        g.ndev != f.ndev)
      abort();
    probe_facts_free(&g);
  }
  wb_free(&b);
  probe_facts_free(&f);
}

static void small_case(int type, const uint8_t *body, uint32_t len) {
  char why[256];
  struct wire_buf b = {0};
  if (type == W_HELLO) {
    struct wire_hello h, h2;
    if (wire_dec_hello(body, len, &h, why, sizeof(why))) return;
    printable(h.job), printable(h.host), printable(h.version);
    if (wire_enc_hello(&b, &h) ||
        wire_dec_hello(b.p + WIRE_HDR_LEN, (uint32_t)(b.len - WIRE_HDR_LEN), &h2, why,
                       sizeof(why)) ||
        h2.rank != h.rank || h2.world != h.world || strcmp(h2.host, h.host) ||
        h2.secret != h.secret || !h2.has_secret)
      abort();
  } else if (type == W_TASK) {
    struct wire_task t, t2;
    if (wire_dec_task(body, len, &t, why, sizeof(why))) return;
    printable(t.peer_host);
    if (wire_enc_task(&b, &t) ||
        wire_dec_task(b.p + WIRE_HDR_LEN, (uint32_t)(b.len - WIRE_HDR_LEN), &t2, why,
                      sizeof(why)) ||
        t2.bytes != t.bytes || t2.peer != t.peer)
      abort();
  } else if (type == W_HANDLE || type == W_PEER_HANDLE) {
    struct wire_handle h;
    if (!wire_dec_handle(body, len, &h, why, sizeof(why)) && h.len > WIRE_HANDLE_MAX) abort();
  } else if (type == W_RESULT) {
    static struct wire_result r;
    if (!wire_dec_result(body, len, &r, why, sizeof(why))) printable(r.error), lines(r.warns);
  } else {
    struct wire_note n;
    if (!wire_dec_note(body, len, &n, why, sizeof(why))) printable(n.text);
  }
  wb_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < WIRE_HDR_LEN) return 0;
  int type;
  uint32_t len;
  char why[256];
  if (wire_decode_header(data, &type, &len, why, sizeof(why))) return 0;
  if (len > size - WIRE_HDR_LEN) len = (uint32_t)(size - WIRE_HDR_LEN);
  /* The body in its own allocation, so any overread is caught. */
  uint8_t *body = malloc(len ? len : 1);
  memcpy(body, data + WIRE_HDR_LEN, len);
  if (type == W_FACTS) facts_case(body, len);
  else small_case(type, body, len);
  free(body);
  return 0;
}
