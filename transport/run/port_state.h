/* SPDX-License-Identifier: Apache-2.0 */
/* This process's RDMA ports that went down while the job ran, for the
 * readers that must not blame anything else for what a flap did: the
 * stall verdict (a port that is down is the root of every stall behind
 * it), the slow-link and lossy-port judges (a span that held a flap shows
 * a flap's figures, not a slow path's), and the answers to peers'
 * liveness checks, which carry it so that the peers' verdicts and judges
 * know it too (waitfor.h's RUN_PORT_* bits). */
#ifndef DIAG_TRANSPORT_RUN_PORT_STATE_H
#define DIAG_TRANSPORT_RUN_PORT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* From the port's events (transport/ib's flap tracking); deadline_ns:
 * how long its queue pairs outlast a silent link. */
void run_port_down(const char *dev, int port, int64_t now, int64_t deadline_ns);
/* The moment the spell it ends began: 0 when the port was not down (an up
 * event without a down one seen by this process). */
int64_t run_port_up(const char *dev, int port, int64_t now);
/* Whether that port is down now. */
bool run_port_is_down(const char *dev, int port);

/* A port of this process that is down now (the one down longest). */
struct run_port_down_view {
  char words[80]; /* "mlx5_0 port 1" */
  int64_t since_ns, deadline_ns;
};
bool run_port_down_now(struct run_port_down_view *out);
/* The last moment a port of this process was down (now while one is); 0
 * when none ever was. */
int64_t run_port_last_down_ns(int64_t now);

/* An RDMA port's link rate now (sysfs "rate": "100 Gb/sec (4X EDR)"), in
 * Gb/s, its text into text when given; 0 when it cannot be read. */
double run_port_rate(const char *dev, int port, char *text, size_t cap);

/* A TCP connection's interface, read now (one ioctl): true when it is
 * down or has no carrier, with how in words ("has no carrier (...)");
 * false when up or unknown (not an interface of this namespace). */
bool run_iface_down(const char *ifname, char *how, size_t cap);

/* The word this process's liveness answers carry (RUN_PORT_*): 0 when no
 * port of it went down in the last RUN_PORT_TELL_SEC. */
uint32_t run_port_answer(int64_t now);
/* From a peer's answer word heard at `at`: whether its port is down now,
 * for how long (seconds), and the last moment it was down (0: never, or
 * longer ago than that word tells). */
bool run_port_word_down(uint32_t word, int *secs);
int64_t run_port_word_last_down_ns(uint32_t word, int64_t at);

#endif
