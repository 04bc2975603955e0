/* SPDX-License-Identifier: Apache-2.0 */
/* Data verification. Every slot of a stream is pre-filled (untimed) with a
 * pattern keyed by (sending rank, comm, slot); at post time the sender
 * stamps the first and last word with (run, message number). A receiver
 * checks the stamps and a few sampled words of every message as it
 * completes (a handful of loads, so the timed loop barely notices), and
 * every word of the last window of messages after the timed loop, when
 * the receive buffers were poisoned before the run. */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return x;
}

uint64_t pattern_key(int sender_rank, int comm, int slot) {
  return mix(((uint64_t)(sender_rank + 1) << 48) ^ ((uint64_t)(comm + 1) << 24) ^
             (uint64_t)(slot + 1));
}

static inline uint64_t pattern_word(uint64_t key, size_t w) {
  return key ^ (w * 0x9e3779b97f4a7c15ULL);
}

static uint64_t stamp(uint32_t run_id, uint64_t seq) {
  return mix(((uint64_t)run_id << 40) ^ seq ^ 0x5a17ULL);
}

void pattern_fill(uint8_t *buf, size_t size, uint64_t key) {
  uint64_t *w = (uint64_t *)buf;
  for (size_t i = 0; i < size / 8; i++) w[i] = pattern_word(key, i);
}

void pattern_stamp(uint8_t *buf, size_t size, uint32_t run_id, uint64_t seq, size_t off,
                   size_t len) {
  uint64_t *w = (uint64_t *)buf;
  size_t n = size / 8;
  if (!n) return;
  uint64_t s = stamp(run_id, seq);
  if (off == 0) w[0] = s;
  if (n > 1 && off + len == size) w[n - 1] = ~s;
}

static int word_ok(const uint64_t *w, size_t n, size_t i, uint64_t key, uint64_t s) {
  uint64_t want = i == 0 ? s : (i == n - 1 ? ~s : pattern_word(key, i));
  return w[i] == want;
}

int pattern_check(const uint8_t *buf, size_t size, uint64_t key, uint32_t run_id, uint64_t seq,
                  bool is_full, size_t *bad_off) {
  const uint64_t *w = (const uint64_t *)buf;
  size_t n = size / 8;
  if (!n) return 1;
  uint64_t s = stamp(run_id, seq);
  if (is_full) {
    for (size_t i = 0; i < n; i++)
      if (!word_ok(w, n, i, key, s)) {
        *bad_off = i * 8;
        return 0;
      }
    return 1;
  }
  size_t probe[4] = {0, n - 1, mix(seq) % n, mix(seq ^ 0xabcdef) % n};
  for (int k = 0; k < 4; k++)
    if (!word_ok(w, n, probe[k], key, s)) {
      *bad_off = probe[k] * 8;
      return 0;
    }
  return 1;
}

void stream_check(struct stream *s, const struct bench_cmd *cmd, uint64_t m, bool is_full) {
  if (s->has_failed) return;
  int slot = (int)(m % (uint64_t)cmd->window);
  uint8_t *buf = s->pool + (size_t)slot * cmd->size;
  size_t off = 0;
  if (cmd->is_corrupting && m + 1 == cmd->warm + cmd->iters && is_full)
    buf[cmd->size / 2] ^= 0x40; /* the smoke test's proof that a bad byte is caught */
  if (pattern_check(buf, cmd->size, pattern_key(s->peer_rank, s->comm, slot), cmd->run_id, m,
                    is_full, &off))
    return;
  s->has_failed = true;
  snprintf(s->err, sizeof(s->err),
           "DATA MISMATCH: comm %d, message %llu of %llu (%llu bytes, from rank %d): byte %zu "
           "is wrong (%s check)",
           s->comm, (unsigned long long)m, (unsigned long long)(cmd->warm + cmd->iters),
           (unsigned long long)cmd->size, s->peer_rank, off, is_full ? "full" : "sampled");
}
