/* SPDX-License-Identifier: Apache-2.0 */
/* What the check connection's own socket says about the path to a silent
 * peer (liveness.h). A stopped or frozen process's kernel still completes
 * handshakes and acknowledges our checks: only the answers are missing. A
 * path that drops everything (a blackhole, a cut cable, a host down)
 * leaves our checks unacknowledged and retransmitted, or our SYN
 * unanswered. Sampled by the liveness thread, only while the peer is
 * quiet; read by the stall check through atomics. */
#include <linux/tcp.h> /* tcpi_unacked, tcpi_backoff */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/liveness_int.h"

#define STATE_SYN_SENT 2 /* tcpi_state: the kernel's TCP_SYN_SENT (include/net/tcp_states.h) */

void live_path_sample(struct liveness_peer *p, int64_t now, int64_t interval_ns) {
  /* answered lately: nothing to explain, and no syscall on the healthy path */
  if (p->fd < 0 || now - atomic_load(&p->last_answer_ns) < 2 * interval_ns) return;
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (getsockopt(p->fd, IPPROTO_TCP, TCP_INFO, &ti, &len)) return;
  /* retransmitting now (the count resets on an ACK), or a SYN unanswered */
  bool is_dropping = ti.tcpi_retransmits > 0 || ti.tcpi_backoff > 0 ||
                     (ti.tcpi_state == STATE_SYN_SENT && ti.tcpi_total_retrans > 0);
  atomic_store(&p->path_unacked, ti.tcpi_unacked);
  atomic_store(&p->path_retrans, ti.tcpi_total_retrans);
  atomic_store(&p->path_is_syn, ti.tcpi_state == STATE_SYN_SENT);
  atomic_store(&p->path_drops, is_dropping);
}

bool liveness_peer_path(const struct liveness_peer *p, struct liveness_path *out) {
  memset(out, 0, sizeof(*out));
  if (!p) return false;
  out->unacked = atomic_load(&p->path_unacked);
  out->retrans = atomic_load(&p->path_retrans);
  out->is_syn = atomic_load(&p->path_is_syn);
  out->drops = atomic_load(&p->path_drops);
  return out->drops;
}
