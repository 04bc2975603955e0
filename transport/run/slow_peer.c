/* SPDX-License-Identifier: Apache-2.0 */
/* See slow_peer.h. */
#include "transport/run/slow_peer.h"

#include <stdlib.h>

#include "transport/run/slow.h"
#include "transport/run/waitfor.h"

#define HEARD_MAX 256 /* peers whose checks named a path at once; the oldest goes */

struct named {
  uint64_t token;
  uint16_t flags;
};

struct heard {
  uint32_t tok32;
  uint16_t flags;
  int64_t ns;
};

static struct named *named;
static int nnamed, cap_named;
static struct heard heard[HEARD_MAX];
static int nheard;

static uint16_t flags_of(const struct slow_sample *x) {
  int pct = (int)(x->ratio * 100 + 0.5);
  if (pct > 0x7f) pct = 0x7f;
  unsigned ev = (unsigned)x->ev;
  return (uint16_t)(RUN_FLAG_SLOW | (x->i->is_send ? RUN_FLAG_SLOW_SEND : 0) |
                    (ev & 0xfu) << RUN_FLAG_SLOW_EV_SHIFT |
                    (unsigned)pct << RUN_FLAG_SLOW_PCT_SHIFT);
}

void slow_peer_publish(const struct slow_sample *s, int n) {
  nnamed = 0;
  for (int k = 0; k < n; k++) {
    if (!s[k].is_named || !s[k].i->peer_token) continue;
    if (nnamed == cap_named) {
      int cap = cap_named ? cap_named * 2 : 16;
      struct named *v = realloc(named, (size_t)cap * sizeof(*v));
      if (!v) return; /* the peers are not told; our own WARN stands */
      named = v;
      cap_named = cap;
    }
    named[nnamed++] = (struct named){s[k].i->peer_token, flags_of(&s[k])};
  }
}

uint16_t run_slow_peer_flags(uint64_t peer_token) {
  uint16_t best = 0;
  for (int k = 0; k < nnamed; k++) /* the lowest ratio, when several go to one peer */
    if (named[k].token == peer_token &&
        (!best || named[k].flags >> RUN_FLAG_SLOW_PCT_SHIFT < best >> RUN_FLAG_SLOW_PCT_SHIFT))
      best = named[k].flags;
  return best;
}

void run_slow_peer_heard(uint32_t tok32, uint16_t flags, int64_t now) {
  if (!(flags & RUN_FLAG_SLOW) || !tok32) return;
  int k = 0, oldest = 0;
  for (; k < nheard && heard[k].tok32 != tok32; k++)
    if (heard[k].ns < heard[oldest].ns) oldest = k;
  if (k == nheard) k = nheard < HEARD_MAX ? nheard++ : oldest;
  heard[k] = (struct heard){tok32, flags, now};
}

bool slow_peer_names(const struct run_conn_info *i, int64_t now, uint16_t *flags) {
  const int64_t fresh = (int64_t)RUN_SLOW_SPAN * RUN_SLOW_WINDOW_SEC * 1000000000LL;
  for (int k = 0; k < nheard; k++) {
    const struct heard *h = &heard[k];
    if (h->tok32 != (uint32_t)i->peer_token || now - h->ns > fresh) continue;
    /* its send is our receive, and its receive our send */
    if (!(h->flags & RUN_FLAG_SLOW_SEND) != i->is_send) continue;
    *flags = h->flags;
    return true;
  }
  return false;
}
