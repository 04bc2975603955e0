/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/sock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "topo/addr.h"

int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sock_tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int sock_listen(int family, int *fd, uint16_t *port) {
  struct sockaddr_storage addr = {0};
  socklen_t len;
  int s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  if (family == AF_INET6) {
    int zero = 0;
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    ((struct sockaddr_in6 *)&addr)->sin6_family = AF_INET6;
    len = sizeof(struct sockaddr_in6);
  } else {
    ((struct sockaddr_in *)&addr)->sin_family = AF_INET;
    len = sizeof(struct sockaddr_in);
  }
  if (bind(s, (struct sockaddr *)&addr, len) != 0 || listen(s, 16384) != 0) {
    int err = errno;
    close(s);
    return err;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(s, (struct sockaddr *)&ss, &sl) != 0) {
    int err = errno;
    close(s);
    return err;
  }
  *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                        : ((struct sockaddr_in6 *)&ss)->sin6_port);
  *fd = s;
  return 0;
}

int sock_connect_start(const struct sockaddr *addr, socklen_t len, int *fd) {
  int s = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  sock_tune(s);
  *fd = s;
  if (connect(s, addr, len) == 0) return 0;
  int err = errno;
  if (err == EINPROGRESS || err == EINTR) return EINPROGRESS;
  close(s);
  *fd = -1;
  return err;
}

int sock_connect_done(int fd) {
  struct pollfd p = {fd, POLLOUT, 0};
  int r = poll(&p, 1, 0);
  if (r == 0) return EINPROGRESS;
  if (r < 0) return errno == EINTR ? EINPROGRESS : errno;
  int err = 0;
  socklen_t l = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0) return errno;
  return err;
}

/* EWOULDBLOCK and EINTR both mean "nothing moved, call again". */
static int step_result(ssize_t n, size_t *moved) {
  if (n >= 0) {
    *moved = (size_t)n;
    return 0;
  }
  int err = errno;
  *moved = 0;
  return err == EWOULDBLOCK || err == EINTR ? EAGAIN : err;
}

int sock_send(int fd, const void *buf, size_t len, size_t *moved) {
  return step_result(send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT), moved);
}

int sock_sendv(int fd, const struct iovec *iov, int iovcnt, size_t *moved) {
  struct msghdr m = {0};
  m.msg_iov = (struct iovec *)iov;
  m.msg_iovlen = (size_t)iovcnt;
  return step_result(sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT), moved);
}

int sock_recv(int fd, void *buf, size_t len, size_t *moved) {
  *moved = 0;
  if (len == 0) return 0;
  ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
  if (n == 0) return EPIPE; /* end of stream: the peer closed its side */
  return step_result(n, moved);
}

bool sock_err_retryable(int err) {
  switch (err) {
  case ECONNREFUSED:
  case ETIMEDOUT:
  case EHOSTUNREACH:
  case ENETUNREACH:
  case ECONNRESET:
  case ECONNABORTED:
  case EAGAIN:
  case EINTR:
  case EPIPE:
  case ENETDOWN:
  case EHOSTDOWN: return true;
  default: return false;
  }
}

bool sock_err_local(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/* This process's open descriptors: 0 and the count, or the errno. */
static int count_fds(int *n) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return errno;
  *n = 0;
  while (readdir(d)) (*n)++;
  closedir(d);
  *n -= 3; /* ".", ".." and the directory's own descriptor */
  return 0;
}

void sock_errno_advice(int err, char *buf, size_t cap) {
  if (err == EMFILE) {
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    int nfds = -1; /* printed as is when /proc cannot tell */
    (void)count_fds(&nfds);
    snprintf(buf, cap,
             "this process has %d file descriptors open and its limit (ulimit -n) is %llu "
             "(hard limit %llu): raise it (ulimit -n %llu, or --ulimit nofile= for containers) "
             "or use fewer sockets per connection (NCCL_NSOCKS_PERTHREAD, NCCL_SOCKET_NTHREADS)",
             nfds, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
             (unsigned long long)rl.rlim_max);
  } else if (err == ENFILE) {
    snprintf(buf, cap,
             "the system-wide file table is full (fs.file-max): raise it or close "
             "other processes' files");
  } else if (err == ENOBUFS || err == ENOMEM) {
    snprintf(buf, cap, "the kernel is out of socket memory");
  } else {
    buf[0] = 0;
  }
}

const char *errno_name(int err) {
  switch (err) {
  case 0: return "OK";
  case EPERM: return "EPERM";
  case ENOENT: return "ENOENT";
  case EINTR: return "EINTR";
  case EIO: return "EIO";
  case EBADF: return "EBADF";
  case EAGAIN: return "EAGAIN";
  case ENOMEM: return "ENOMEM";
  case EACCES: return "EACCES";
  case EFAULT: return "EFAULT";
  case EBUSY: return "EBUSY";
  case EEXIST: return "EEXIST";
  case ENODEV: return "ENODEV";
  case EINVAL: return "EINVAL";
  case ENFILE: return "ENFILE";
  case EMFILE: return "EMFILE";
  case ENOSPC: return "ENOSPC";
  case EPIPE: return "EPIPE";
  case ERANGE: return "ERANGE";
  case ENOSYS: return "ENOSYS";
  case EPROTO: return "EPROTO";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
  case EADDRINUSE: return "EADDRINUSE";
  case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
  case ENETDOWN: return "ENETDOWN";
  case ENETUNREACH: return "ENETUNREACH";
  case ECONNABORTED: return "ECONNABORTED";
  case ECONNRESET: return "ECONNRESET";
  case ENOBUFS: return "ENOBUFS";
  case ETIMEDOUT: return "ETIMEDOUT";
  case ECONNREFUSED: return "ECONNREFUSED";
  case EHOSTDOWN: return "EHOSTDOWN";
  case EHOSTUNREACH: return "EHOSTUNREACH";
  case EINPROGRESS: return "EINPROGRESS";
  case ENOTCONN: return "ENOTCONN";
  default: return "errno";
  }
}

bool sock_same_host(int fd) {
  struct sockaddr_storage me, peer;
  socklen_t ml = sizeof(me), pl = sizeof(peer);
  struct ipaddr a, b;
  if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
      getpeername(fd, (struct sockaddr *)&peer, &pl) ||
      ipaddr_from_sockaddr(&a, (struct sockaddr *)&me, NULL) ||
      ipaddr_from_sockaddr(&b, (struct sockaddr *)&peer, NULL))
    return false;
  return ipaddr_is_loopback(&b) || (a.family == b.family && !memcmp(a.bytes, b.bytes, 16));
}
