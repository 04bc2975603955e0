/* SPDX-License-Identifier: Apache-2.0 */
/* Writes one valid message of each rendezvous type as the fuzzer's seed
 * corpus (usage: mkseeds DIR). */
#include <stdio.h>
#include <string.h>

#include "tools/probe/rdv_wire.h"

static void put(const char *dir, const char *name, const struct wire_buf *b) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(b->p, 1, b->len, f);
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  struct wire_buf b = {0};
  struct wire_hello h = {.world = 4, .rank = 3, .local_rank = 0};
  strcpy(h.job, "torchrun:none"), strcpy(h.host, "node3"), strcpy(h.version, "0.1.0");
  wire_enc_hello(&b, &h), put(argv[1], "hello", &b);
  struct wire_task t = {.step = 4,
                        .peer = 1,
                        .dev = 0,
                        .first = 1,
                        .bytes = 64 << 20,
                        .pings = 20,
                        .timeout_ms = 60000};
  strcpy(t.peer_host, "node1");
  wire_enc_task(&b, &t), put(argv[1], "task", &b);
  struct wire_handle hd = {.step = 4, .len = 128};
  memset(hd.handle, 0x5a, sizeof(hd.handle));
  wire_enc_handle(&b, W_HANDLE, &hd), put(argv[1], "handle", &b);
  static struct wire_result r = {.step = 4, .ok_recv = 1, .recv_bytes = 1 << 20, .recv_ns = 900};
  strcpy(r.warns, "connect to 10.0.0.2<4000> failed: Connection refused");
  wire_enc_result(&b, &r), put(argv[1], "result", &b);
  struct wire_note n = {.step = 4, .value = 1000};
  strcpy(n.text, "the peer node1 gave up");
  wire_enc_note(&b, W_ABORT, &n), put(argv[1], "abort", &b);
  static struct probe_facts f = {.rank = 1,
                                 .nccl_code = 22809,
                                 .abi_mask = 0x1fe0,
                                 .ndev = 1,
                                 .nif = 1,
                                 .nrdma = 1,
                                 .nissue = 1,
                                 .nrec = 1};
  struct probe_var v = {"NCCL_PROTO", "Simple"};
  f.env.n = 1, f.env.v = &v;
  strcpy(f.host, "node1"), strcpy(f.transport, "RDMA"), strcpy(f.devs[0].name, "mlx5_2:1");
  strcpy(f.ifs[0].name, "bond0"), strcpy(f.ifs[0].addr, "10.0.0.6/24");
  strcpy(f.rdma[0].name, "mlx5_2"), strcpy(f.rdma[0].gid, "::ffff:10.1.2.6");
  strcpy(f.issues[0].text, "no usable socket interface");
  strcpy(f.recs[0].name, "NCCL_SOCKET_IFNAME"), strcpy(f.recs[0].value, "=bond0");
  wire_enc_facts(&b, &f), put(argv[1], "facts", &b);
  wb_free(&b);
  return 0;
}
