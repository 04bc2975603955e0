/* SPDX-License-Identifier: Apache-2.0 */
/* The speed of a repaired pair against a healthy one, in one run between
 * the two namespace hosts of field story 5: the healthy pair is mlx5_3 to
 * mlx5_3 (one rail); the repaired one is NCCL's cross-rail choice, host-a's
 * mlx5_2 to host-b's mlx5_3, moved to mlx5_3 on host-a. Rounds alternate
 * between the two so that load on this machine falls on both alike; every
 * message's bytes are checked. Each pair's best round counts: a round the
 * machine's other work stalls says nothing of the path. The ratios are
 * printed; the check is loose (not several times slower), as these
 * machines are shared and noisy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "common/clock.h"

#define ROUNDS 5

/* n messages of size one after the other on one registered buffer:
 * microseconds, or -1 on a failed or wrong transfer. */
static long long stream(struct side *s, void *comm, size_t size, int n, unsigned seed) {
  uint8_t *buf = malloc(size);
  void *mh = NULL;
  if (!buf || netload_reg_mr(&s->nl, comm, buf, size, NCCL_PTR_HOST, &mh)) {
    free(buf);
    return -1;
  }
  if (s->role == ROLE_SEND) fill_pattern(buf, size, seed);
  long long t0 = clock_mono_ns(), res = 0;
  for (int i = 0; i < n && !res; i++) {
    void *req = NULL;
    int got = -1, tag = 7, r;
    size_t cap = size;
    if (s->role == ROLE_SEND) {
      long long end = ms_now() + 20000;
      do r = netload_isend(&s->nl, comm, buf, size, tag, mh, &req);
      while (!r && !req && ms_now() < end);
    } else r = netload_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req);
    if (r || !req || wait_req(s, req, &got, 60000) || (size_t)got != size) res = -1;
    else if (s->role == ROLE_RECV && check_pattern(buf, size, seed) != size) res = -1;
  }
  long long us = (clock_mono_ns() - t0) / 1000;
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
  return res ? -1 : us;
}

static int open_on(struct side *s, int recv_dev, int send_dev, void **comm) {
  s->dev = s->role == ROLE_RECV ? recv_dev : send_dev;
  return pair_open(s, comm);
}

static void close_comm(struct side *s, void *comm) {
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

void case_repair_speed(struct side *s) {
  if (is_root()) private_uts(s->role == ROLE_RECV ? "host-a" : "host-b");
  void *healthy = NULL, *repaired = NULL;
  if (side_open(s) || open_on(s, 1, 1, &healthy) || open_on(s, 0, 1, &repaired)) return;
  CHECK(log_find(NCCL_LOG_WARN, "Repaired, not moved to TCP"), "the second pair is repaired");
  long long bw[2] = {0, 0}, lat[2] = {0, 0};
  for (int round = 0; round < ROUNDS; round++)
    for (int j = 0; j < 2; j++) {
      int k = (j + round) % 2; /* each goes first in every other round */
      void *c = k ? repaired : healthy;
      ctl_sync(s);
      long long b = stream(s, c, 1 << 20, 64, (unsigned)(round * 2 + k + 1));
      ctl_sync(s);
      long long l = stream(s, c, 8, 400, (unsigned)(round * 2 + k + 101));
      CHECK(b > 0 && l > 0, "round %d, %s pair: every byte arrives", round,
            k ? "repaired" : "healthy");
      if (b > 0 && (!bw[k] || b < bw[k])) bw[k] = b;
      if (l > 0 && (!lat[k] || l < lat[k])) lat[k] = l;
    }
  if (bw[0] > 0 && bw[1] > 0 && lat[0] > 0 && lat[1] > 0) {
    double bw_ratio = (double)bw[0] / (double)bw[1], lat_ratio = (double)lat[0] / (double)lat[1];
    double gbs = 64.0 * (1 << 20) / ((double)bw[1] * 1e3);
    printf("#   %s: repaired/healthy bandwidth (1 MiB x 64, best of %d) %.2f (repaired %.2f GB/s), "
           "8-byte message rate %.2f (repaired %.1f us per message)\n",
           s->role == ROLE_RECV ? "receiver" : "sender", ROUNDS, bw_ratio, gbs, lat_ratio,
           (double)lat[1] / 400.0);
    CHECK(bw_ratio > 0.5 && lat_ratio > 0.5,
          "the repaired pair is at least half as fast: %.2f, %.2f", bw_ratio, lat_ratio);
  }
  ctl_sync(s);
  close_comm(s, repaired);
  close_comm(s, healthy);
  side_close(s);
}
