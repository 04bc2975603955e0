/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/sock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"

int64_t now_ns(void) { return clock_mono_ns(); }

void sock_tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void sock_keepalive(int fd, int sec) {
  if (sec <= 0) return;
  int one = 1, idle = sec / 4 > 0 ? sec / 4 : 1, intvl = sec / 8 > 0 ? sec / 8 : 1, cnt = 6;
  unsigned user_ms = (unsigned)sec * 1000u; /* also bounds unacknowledged data */
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
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

/* Past this limit the descriptors are counted from /proc/self/fd instead of
 * probed one by one. */
#define PROBE_MAX 65536

/* This process's open descriptors below limit, needing none itself: an
 * open descriptor answers F_GETFD. */
static long probe_fds(rlim_t limit) {
  long n = 0;
  for (rlim_t fd = 0; fd < limit; fd++) n += fcntl((int)fd, F_GETFD) >= 0;
  return n;
}

/* The entries of /proc/self/fd, read with getdents64 on one descriptor
 * (counted out again): -1 with errno when it cannot be opened. */
static long list_fds(void) {
  int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -1;
  long n = 0;
  char buf[8192];
  for (;;) {
    long got = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      const struct dirent64 *d = (const struct dirent64 *)(buf + off);
      n += d->d_name[0] != '.';
      off += d->d_reclen;
    }
  }
  close(dfd);
  return n - 1;
}

long sock_count_fds(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl)) return -1;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= PROBE_MAX) return probe_fds(rl.rlim_cur);
  long n = list_fds();
  /* Out of descriptors to count with: every one below the limit is taken. */
  return n >= 0 || errno != EMFILE ? n : (long)rl.rlim_cur;
}

/* EMFILE: how many are open, the limits, what one connection costs, and
 * the change that helps: the soft limit while it is below the hard one,
 * else the hard limit where it is set. */
static void emfile_advice(int per_conn, char *buf, size_t cap) {
  struct rlimit rl = {0};
  getrlimit(RLIMIT_NOFILE, &rl);
  unsigned long long soft = rl.rlim_cur, hard = rl.rlim_max;
  size_t o = (size_t)snprintf(buf, cap,
                              "this process has %ld file descriptors open and may have %llu "
                              "(ulimit -n; hard limit %llu)",
                              sock_count_fds(), soft, hard);
  if (per_conn > 1 && o < cap)
    o += (size_t)snprintf(buf + o, cap - o,
                          "; each connection costs %d on each side (a control socket and "
                          "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = %d data sockets)",
                          per_conn, per_conn - 1);
  else if (per_conn == 1 && o < cap)
    o += (size_t)snprintf(buf + o, cap - o,
                          "; each connection costs 1 on each side (its control "
                          "socket)");
  if (o >= cap) return;
  if (soft < hard)
    snprintf(buf + o, cap - o,
             ": raise the soft limit where the job starts (ulimit -n %llu in its launch script)",
             hard);
  else
    snprintf(buf + o, cap - o,
             ": the soft limit already equals the hard one, so ulimit -n cannot raise it; raise "
             "the hard limit where it is set (LimitNOFILE= in the systemd unit that starts the "
             "job, nofile in /etc/security/limits.conf for login sessions, --ulimit "
             "nofile=1048576:1048576 for a container)");
}

void sock_fd_advice(int err, int per_conn, char *buf, size_t cap) {
  if (err == EMFILE) {
    emfile_advice(per_conn, buf, cap);
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

void sock_errno_advice(int err, char *buf, size_t cap) { sock_fd_advice(err, 0, buf, cap); }

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

int sock_local_mtu(int fd, char *ifname, size_t cap) {
  struct sockaddr_storage me;
  socklen_t ml = sizeof(me);
  struct ipaddr a, b;
  struct ifaddrs *all = NULL;
  int mtu = 0;
  if (cap) ifname[0] = 0;
  if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
      ipaddr_from_sockaddr(&a, (struct sockaddr *)&me, NULL) || getifaddrs(&all))
    return 0;
  ipaddr_unmap(&a);
  for (struct ifaddrs *i = all; i && !mtu; i = i->ifa_next) {
    if (!i->ifa_addr || ipaddr_from_sockaddr(&b, i->ifa_addr, NULL)) continue;
    if (a.family != b.family || memcmp(a.bytes, b.bytes, a.family == AF_INET ? 4 : 16)) continue;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) {
      mtu = ifr.ifr_mtu;
      if (cap) snprintf(ifname, cap, "%s", i->ifa_name);
    }
  }
  freeifaddrs(all);
  return mtu;
}
