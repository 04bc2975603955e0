/* SPDX-License-Identifier: Apache-2.0 */
/* Writes valid encodings of each wire format as seed corpora, so the
 * fuzzers start from records that pass the magic checks. */
#include <stdio.h>
#include <string.h>

#include "transport/frame.h"
#include "transport/handle.h"
#include "transport/hello.h"
#include "transport/ib/setup/ib_wire.h"

static void put(const char *dir, const char *name, const void *p, size_t n) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(p, 1, n, f);
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  char d[1024];
  struct handle h = {0};
  h.version = HANDLE_VERSION, h.nonce = 0x1122334455667788ULL, h.nsocks = 2, h.nthreads = 2;
  strcpy(h.host, "host-a");
  ipaddr_parse(&h.cands[0].addr, "10.0.0.5/24"), h.cands[0].port = 4000,
                                                 strcpy(h.cands[0].ifname, "bond0");
  ipaddr_parse(&h.cands[1].addr, "fd00::5/64"), h.cands[1].port = 4000,
                                                strcpy(h.cands[1].ifname, "eth1");
  h.ncands = 2;
  uint8_t hb[NCCL_NET_HANDLE_MAXSIZE];
  handle_encode(&h, hb);
  snprintf(d, sizeof(d), "%s/handle", argv[1]);
  put(d, "two-candidates", hb, sizeof(hb));

  struct hello m;
  memset(&m, 0, sizeof(m));
  m.kind = HELLO_CONNECT, m.nccl_version = 22809, m.pid = 4242;
  strcpy(m.plugin_version, "0.1.0");
  m.live.is_present = 1, m.live.port = 41000, m.live.token = 0x0102030405060708ULL;
  m.nonce = 7, m.connid = 9, m.nsocks = 2;
  strcpy(m.host, "host-a"), strcpy(m.dev, "eth0"), strcpy(m.transport, "tcp");
  m.nknobs = 1, strcpy(m.knobs[0].name, "NCCL_PROTO"), strcpy(m.knobs[0].value, "Simple");
  m.ib.is_present = 1, strcpy(m.ib.dev, "mlx5_2"), m.ib.port = 1, m.ib.gid_index = 3,
  m.ib.mtu = 4096;
  m.rdma.has_alts = 1, m.rdma.nalts = 2; /* the GIDs a repair could use */
  m.rdma.alts[0].port = m.rdma.alts[1].port = 1;
  m.rdma.alts[0].gid_index = 2, m.rdma.alts[0].gid_type = 1;
  m.rdma.alts[1].gid_index = 3, m.rdma.alts[1].gid_type = 2;
  m.rdma.stripe_ports = 2;                 /* a fused NIC's ports */
  m.rdma.has_ports = 1, m.rdma.nports = 2; /* the ports a repair could move to */
  strcpy(m.rdma.ports[0].dev, "mlx5_2"), strcpy(m.rdma.ports[1].dev, "mlx5_3");
  for (int i = 0; i < 2; i++) {
    struct hello_port *p = &m.rdma.ports[i];
    p->port = 1, p->mtu = 4096, p->rail = i, p->plane = -1, p->prefix = 24, p->has_gdr = 1;
    p->ngids = 1, p->gids[0].gid_index = 3, p->gids[0].gid_type = 2;
  }
  static uint8_t out[HELLO_HDR_LEN + HELLO_MAX_BODY];
  size_t n;
  if (hello_encode(&m, out, sizeof(out), &n)) return 1;
  snprintf(d, sizeof(d), "%s/hello", argv[1]);
  put(d, "connect", out, n);
  if (hello_encode_refusal("no listen on port 4000 has nonce 0x0000000000000007", out, sizeof(out),
                           &n) == 0)
    put(d, "refuse", out, n);

  uint8_t f[MSG_HDR_LEN];
  struct preamble p = {ROLE_DATA, 3, 7, 9};
  preamble_encode(&p, f);
  snprintf(d, sizeof(d), "%s/frame", argv[1]);
  put(d, "preamble", f, PREAMBLE_LEN);
  struct msg_hdr mh = {0, 17, 3, 131072, 1 << 20};
  msg_hdr_encode(&mh, f);
  put(d, "striped", f, MSG_HDR_LEN);
  mh.flags = MSG_F_ABORT, mh.size = 20;
  msg_hdr_encode(&mh, f);
  put(d, "abort", f, MSG_HDR_LEN);

  struct ibrec r = {
    IBREC_INFO,       1, 2, {0x101, 0x102}, 0x7f0000001000ULL, 0x55, 0, 0, 4096, 0, 0, 8,
    IBREC_F_FALLBACK, ""};
  static uint8_t rb[IBREC_HDR_LEN + IBREC_MAX_BODY];
  if (ibrec_encode(&r, rb, sizeof(rb), &n)) return 1;
  snprintf(d, sizeof(d), "%s/ibrec", argv[1]);
  put(d, "info", rb, n);
  r.flags |= IBREC_F_STRIPE, r.nports = 2; /* a fused NIC: its ports after the ECE trailer */
  r.ports[0] = (struct ibrec_port){{0xfe, 0x80}, 1, 4096, 0x55};
  r.ports[1] = (struct ibrec_port){{0xfe, 0x80, 1}, 2, 1024, 0x77};
  if (ibrec_encode(&r, rb, sizeof(rb), &n)) return 1;
  put(d, "info-striped", rb, n);
  struct ibrec st = {IBREC_STATUS, 0, 0, {0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, "RTR failed: no route"};
  if (ibrec_encode(&st, rb, sizeof(rb), &n)) return 1;
  put(d, "status", rb, n);
  st.is_ok = 1, st.has_ece = true, st.ece_vendor = 0x02c9, st.ece_options = 0x1;
  if (ibrec_encode(&st, rb, sizeof(rb), &n)) return 1;
  put(d, "status-ece", rb, n);

  struct ib_fo_msg fo = {.kind = IB_FO_ACK,
                         .qpn = 0x1234,
                         .mtu = 4096,
                         .addr = 0x7f0000002000ULL,
                         .rkey = 0x66,
                         .npending = 3,
                         .pending = {5, 6, 9}};
  snprintf(fo.port, sizeof(fo.port), "mlx5_1 port 1");
  snprintf(fo.text, sizeof(fo.text), "mlx5_0 port 1 went down during the transfer");
  /* fuzz_ibfo: one byte for the piece size (8 bytes), then the body. */
  rb[0] = 7;
  if (ib_fo_encode(&fo, rb + 1, sizeof(rb) - 1, &n)) return 1;
  snprintf(d, sizeof(d), "%s/ibfo", argv[1]);
  put(d, "ack", rb, n + 1);
  fo.kind = IB_FO_GO, fo.npending = 0, fo.text[0] = 0, fo.port[0] = 0;
  if (ib_fo_encode(&fo, rb + 1, sizeof(rb) - 1, &n)) return 1;
  put(d, "go", rb, n + 1);
  return 0;
}
