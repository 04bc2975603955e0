/* SPDX-License-Identifier: Apache-2.0 */
/* Socket helpers: everything non-blocking and close-on-exec, TCP_NODELAY on,
 * SIGPIPE never raised. Functions return 0 or a positive errno. */
#ifndef DIAG_TRANSPORT_SOCK_H
#define DIAG_TRANSPORT_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Listening on the wildcard address of family (AF_INET6 is dual-stack),
 * on a port the kernel picks. */
int sock_listen(int family, int *fd, uint16_t *port);
/* Starts a connect: 0 = connected, EINPROGRESS = poll with sock_connect_done,
 * else the errno. *fd is valid unless an error is returned. */
int sock_connect_start(const struct sockaddr *addr, socklen_t len, int *fd);
/* 0 = connected, EINPROGRESS = not yet, else the connect's errno. */
int sock_connect_done(int fd);
void sock_tune(int fd);
/* 1 when a connected socket's two ends are on this host (a loopback
 * address, or the same address at both ends): the kernel then moves its
 * bytes by copying through the loopback device, never a NIC. */
int sock_same_host(int fd);

/* One non-blocking step. Returns bytes moved (>= 0), or -errno; EAGAIN means
 * no progress. For recv, 0 bytes with len > 0 means the peer closed:
 * returned as -EPIPE so callers handle one "closed" case. */
ssize_t sock_send(int fd, const void *buf, size_t len);
ssize_t sock_sendv(int fd, const struct iovec *iov, int iovcnt);
ssize_t sock_recv(int fd, void *buf, size_t len);

/* A sentence about an errno from socket()/accept(): for EMFILE/ENFILE it
 * names the current descriptor count and limit and what to raise. */
void sock_errno_advice(int err, char *buf, size_t cap);
/* Whether a connect error is worth retrying (refused, unreachable, ...). */
int sock_err_retryable(int err);

/* "ECONNREFUSED" etc. for log lines. */
const char *errno_name(int err);

int64_t now_ns(void);

#endif
