/* SPDX-License-Identifier: Apache-2.0 */
/* Socket helpers: everything non-blocking and close-on-exec, TCP_NODELAY on,
 * SIGPIPE never raised. Functions return 0 or a positive errno and log
 * nothing: the caller knows which peer and which stage a socket serves, and
 * names them when it logs the failure. */
#ifndef DIAG_TRANSPORT_SOCK_H
#define DIAG_TRANSPORT_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "common/errno_names.h" /* errno_name(), which every socket message uses */

/* Listening on the wildcard address of family (AF_INET6 is dual-stack),
 * on a port the kernel picks. */
int sock_listen(int family, int *fd, uint16_t *port);
/* Starts a connect: 0 = connected, EINPROGRESS = poll with sock_connect_done,
 * else the errno. *fd is valid unless an error is returned. */
int sock_connect_start(const struct sockaddr *addr, socklen_t len, int *fd);
/* 0 = connected, EINPROGRESS = not yet, else the connect's errno. */
int sock_connect_done(int fd);
void sock_tune(int fd);
/* TCP keepalive and a user timeout of about SEC seconds (0: none): a
 * connection whose host stops answering fails with ETIMEDOUT in that time,
 * while a live host's kernel answers for a process that is only busy. */
void sock_keepalive(int fd, int sec);
/* Whether a connected socket's two ends are on this host (a loopback
 * address, or the same address at both ends): the kernel then moves its
 * bytes by copying through the loopback device, never a NIC. */
bool sock_same_host(int fd);
/* The MTU of this host's interface that holds a connected socket's local
 * address, its name into ifname (cap bytes, "" when not found); 0 when it
 * cannot be found (the address is on no interface this process sees). */
int sock_local_mtu(int fd, char *ifname, size_t cap);

/* One non-blocking step on a connected socket, its byte count in *moved
 * (always set). Returns 0 (bytes moved; at least one when len > 0), EAGAIN
 * (nothing moved now: call again), EPIPE (the peer closed the connection:
 * end of stream for recv, the kernel's EPIPE for send), or the errno. */
int sock_send(int fd, const void *buf, size_t len, size_t *moved);
int sock_sendv(int fd, const struct iovec *iov, int iovcnt, size_t *moved);
int sock_recv(int fd, void *buf, size_t len, size_t *moved);

/* A sentence about an errno from socket()/accept(): for EMFILE/ENFILE it
 * names the current descriptor count and limit and what to raise. */
void sock_errno_advice(int err, char *buf, size_t cap);
/* The same, with what one connection costs in descriptors (per_conn > 0)
 * and, for EMFILE, the limit to change: the soft limit, or where the hard
 * one is set when they are equal. */
void sock_fd_advice(int err, int per_conn, char *buf, size_t cap);
/* This process's open descriptors, counted without needing a free one;
 * -1 when they cannot be counted. */
long sock_count_fds(void);
/* Whether a connect error is worth retrying (refused, unreachable, ...). */
bool sock_err_retryable(int err);
/* Whether an error of socket()/connect() is this process's or this host's
 * own (out of descriptors or memory): no other address would fare better. */
bool sock_err_local(int err);

int64_t now_ns(void);

#endif
