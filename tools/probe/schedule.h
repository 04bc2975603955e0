/* SPDX-License-Identifier: Apache-2.0 */
/* Which pairs of hosts to test and in what rounds. A round is a set of
 * disjoint pairs, so every host is busy with one peer at a time and the
 * bandwidth measured is the pair's own. Every pair is tested in both
 * directions.
 *   all       every pair; the round-robin (circle) schedule: N-1 rounds for
 *             N even, N for N odd
 *   ring      host i with host i+1 (and the last with the first): 2 or 3 rounds
 *   sample:N  the ring plus N other pairs drawn at random (seeded)
 * Hosts are indices 0..n-1. */
#ifndef DIAG_TOOLS_PROBE_SCHEDULE_H
#define DIAG_TOOLS_PROBE_SCHEDULE_H

struct sched_pair {
  int a, b; /* a < b */
  int tag;  /* the caller's, kept through sched_rounds (a device to retest) */
};

struct sched {
  int npair;
  struct sched_pair *pairs; /* ordered by round */
  int nround;
  int *round_start; /* [nround + 1]: pairs of round r are [round_start[r], round_start[r+1]) */
};

/* 0 or ENOMEM. */
int sched_all(int n, struct sched *s);
int sched_ring(int n, struct sched *s);
int sched_sample(int n, int extra, unsigned seed, struct sched *s);
/* Any list of pairs (a < b, repeats allowed) into rounds, first fit. */
int sched_rounds(int n, const struct sched_pair *list, int count, struct sched *s);
void sched_free(struct sched *s);

#endif
