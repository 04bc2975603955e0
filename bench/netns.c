/* SPDX-License-Identifier: Apache-2.0 */
/* Namespace hosts with the ip command (iproute2), so the setup is the one
 * an operator would type, and cleanup is one `ip netns del` per host
 * (deleting a namespace deletes its veth end, and with it the pair). */
#include "bench/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

static struct netns *active; /* what the signal handler removes */

/* Runs `ip args...`; returns 0 when it exited 0, ENOENT when there is no
 * ip command, EIO when it failed, or fork's errno. Only fork/exec/wait, so
 * the signal handler may use it too. */
static int ip_run(char *const argv[], bool is_quiet) {
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    if (is_quiet) {
      int nul = open("/dev/null", O_WRONLY);
      if (nul >= 0) dup2(nul, 1), dup2(nul, 2);
    }
    execvp("ip", argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st)) return EIO;
  return WEXITSTATUS(st) == 0 ? 0 : WEXITSTATUS(st) == 127 ? ENOENT : EIO;
}

static void del_ns(const char *name) {
  char *argv[] = {"ip", "netns", "del", (char *)name, NULL};
  ip_run(argv, true);
}

void netns_cleanup(struct netns *n) {
  if (!n || !n->is_created) return;
  del_ns(n->ns[0]);
  del_ns(n->ns[1]);
  n->is_created = false;
  active = NULL;
}

static void on_signal(int sig) {
  netns_cleanup(active);
  signal(sig, SIG_DFL);
  raise(sig);
}

static int ip_steps(struct netns *n) {
  char cidr[2][24];
  for (int i = 0; i < 2; i++) snprintf(cidr[i], sizeof(cidr[i]), "%s/24", n->addr[i]);
  char *steps[][10] = {
    {"ip", "netns", "add", n->ns[0], NULL},
    {"ip", "netns", "add", n->ns[1], NULL},
    {"ip", "link", "add", n->veth[0], "type", "veth", "peer", "name", n->veth[1], NULL},
    {"ip", "link", "set", n->veth[0], "netns", n->ns[0], NULL},
    {"ip", "link", "set", n->veth[1], "netns", n->ns[1], NULL},
    {"ip", "-n", n->ns[0], "addr", "add", cidr[0], "dev", n->veth[0], NULL},
    {"ip", "-n", n->ns[1], "addr", "add", cidr[1], "dev", n->veth[1], NULL},
    {"ip", "-n", n->ns[0], "link", "set", n->veth[0], "up", NULL},
    {"ip", "-n", n->ns[1], "link", "set", n->veth[1], "up", NULL},
    {"ip", "-n", n->ns[0], "link", "set", "lo", "up", NULL},
    {"ip", "-n", n->ns[1], "link", "set", "lo", "up", NULL},
  };
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    int rc = ip_run(steps[i], false);
    if (rc) return rc;
    if (i == 1) n->is_created = true; /* from here on there is something to remove */
  }
  return 0;
}

enum netns_outcome netns_setup(struct netns *n, char *why, size_t cap) {
  memset(n, 0, sizeof(*n));
  if (geteuid() != 0) {
    snprintf(why, cap, "namespace hosts need root (creating namespaces and a veth pair)");
    return NETNS_UNAVAILABLE;
  }
  char *probe[] = {"ip", "-V", NULL};
  if (ip_run(probe, true) != 0) {
    snprintf(why, cap, "the ip command (iproute2) is not installed");
    return NETNS_UNAVAILABLE;
  }
  int pid = (int)getpid();
  for (int i = 0; i < 2; i++) {
    snprintf(n->ns[i], sizeof(n->ns[i]), "nbench-%d-%c", pid, 'a' + i);
    snprintf(n->veth[i], sizeof(n->veth[i]), "nbv%d%c", pid % 10000000, 'a' + i);
    /* Each namespace has its own routes, so a fixed subnet cannot clash. */
    snprintf(n->addr[i], sizeof(n->addr[i]), "10.211.0.%d", i + 1);
  }
  active = n;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
  if (ip_steps(n)) {
    snprintf(why, cap, "setting up namespace hosts %s and %s failed (see the ip error above)",
             n->ns[0], n->ns[1]);
    netns_cleanup(n);
    return NETNS_FAILED;
  }
  return NETNS_READY;
}

int netns_enter(const char *name, char *err, size_t cap) {
  char path[96];
  snprintf(path, sizeof(path), "/var/run/netns/%s", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    int rc = errno;
    snprintf(err, cap, "cannot enter namespace %s: %s", name, strerror(rc));
    if (fd >= 0) close(fd);
    return rc;
  }
  close(fd);
  /* A private mount namespace with a fresh sysfs, which shows the
   * interfaces of the network namespace that mounts it. If that fails the
   * plugin still works; only sysfs facts (MTU, speed) read as unknown. */
  if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) == 0 &&
      umount2("/sys", MNT_DETACH) == 0)
    mount(name, "/sys", "sysfs", 0, NULL);
  return 0;
}
