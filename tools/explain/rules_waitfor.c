/* SPDX-License-Identifier: Apache-2.0 */
/* The wait-for graph of a hang: each stalled rank's "stall:" WARN (the
 * plugin's run-time verdict, transport/run/stall.c) names the process it
 * waits on and how that one is; followed rank to rank, the edges end at
 * the root: a process that does not answer, a caller that posted nothing,
 * a path that moves no bytes, or an RDMA port that is down. Works with only some ranks' logs: a
 * chain that leaves the logs ends at the last process named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

#define WF_MAX 256
#define WF_HOPS 16

enum wf_kind {
  WF_SILENT,
  WF_IDLE,
  WF_LINK,
  WF_WAITS,
  WF_OTHER,
  WF_SELF_IDLE,
  WF_PORT,
  WF_SELF_PORT
};

struct wf_edge {
  char host[EXPLAIN_HOST_MAX], to_host[EXPLAIN_HOST_MAX], to_addr[96];
  long pid, to_pid;
  enum wf_kind kind;
  const struct rec *r;
  /* a rank that took its busy peer's root says which: pid, address, kind */
  long told_pid;
  char told_ip[48];
  enum wf_kind told_kind; /* WF_OTHER: none */
  char port[64];          /* WF_SELF_PORT: "mlx5_0 port 1" */
};

bool waitfor_match(const struct rec *r) {
  return r->is_diag && r->level == REC_WARN && !strncmp(r->text, "stall: ", 7);
}

/* "<host> pid <n> (<addr>)" at p. */
static bool parse_target(const char *p, struct wf_edge *e) {
  const char *sp = strstr(p, " pid ");
  if (!sp || sp == p || (size_t)(sp - p) >= sizeof(e->to_host)) return false;
  snprintf(e->to_host, sizeof(e->to_host), "%.*s", (int)(sp - p), p);
  char *end;
  e->to_pid = strtol(sp + 5, &end, 10);
  if (end == sp + 5) return false;
  const char *open = strstr(end, " ("), *close = open ? strchr(open, ')') : NULL;
  if (open == end && close)
    snprintf(e->to_addr, sizeof(e->to_addr), "%.*s", (int)(close - open - 2), open + 2);
  return true;
}

/* "the root is pid 9 at 10.0.0.3: ..." or "... at fd00::3: ...": the
 * address ends at the first ": " (an IPv6 address has colons of its own). */
static bool told_at(const char *t, struct wf_edge *e) {
  int n = 0;
  if (sscanf(t, "the root is pid %ld at %n", &e->told_pid, &n) != 1 || !n) return false;
  const char *end = strstr(t + n, ": ");
  if (!end || end == t + n || (size_t)(end - t - n) >= sizeof(e->told_ip)) return false;
  snprintf(e->told_ip, sizeof(e->told_ip), "%.*s", (int)(end - t - n), t + n);
  return true;
}

static bool parse_edge(const struct rec *r, struct wf_edge *e) {
  memset(e, 0, sizeof(*e));
  snprintf(e->host, sizeof(e->host), "%s", r->host);
  e->pid = r->pid;
  e->r = r;
  const char *t = r->text + 7;
  /* "this host's RDMA port mlx5_0 port 1 is down ..." or "this host's
   * interface eth0 has no carrier ...": the root is this process's link */
  bool is_port =
    !strncmp(t, "this host's RDMA port ", 22) || !strncmp(t, "this host's interface ", 22);
  if (is_port) {
    const char *w = t + 12, *end = strstr(w, " is down");
    const char *nc = strstr(w, " has no carrier");
    if (nc && (!end || nc < end)) end = nc;
    if (end && (size_t)(end - w) < sizeof(e->port))
      snprintf(e->port, sizeof(e->port), "%.*s", (int)(end - w), w);
  }
  if (!strncmp(t, "this process ", 13) || is_port) {
    e->kind = is_port ? WF_SELF_PORT : WF_SELF_IDLE;
    snprintf(e->to_host, sizeof(e->to_host), "%s", r->host);
    e->to_pid = r->pid;
    return r->pid > 0;
  }
  /* "the root is pid 9 at 10.0.0.3: ... (this rank is waiting on b pid 7 (...), which is busy
   * itself ...)": a rank that took its busy peer's root; its edge is to that peer. */
  const char *via = !strncmp(t, "the root is ", 12) ? strstr(t, "waiting on ") : NULL;
  const char *lead = via                                                  ? via + 11
                     : !strncmp(t, "waiting on ", 11)                     ? t + 11
                     : !strncmp(t, "the path between this host and ", 31) ? t + 31
                                                                          : NULL;
  if (!lead || !parse_target(lead, e)) return false;
  e->told_kind = WF_OTHER;
  if (via && told_at(t, e))
    e->told_kind = strstr(t, "does not answer")                       ? WF_SILENT
                   : strstr(t, "caller has stopped")                  ? WF_IDLE
                   : strstr(t, "path to it moves no")                 ? WF_LINK
                   : strstr(t, "network link of its process is down") ? WF_PORT
                                                                      : WF_OTHER;
  e->kind = strstr(t, "whose RDMA port is down")   ? WF_PORT
            : strstr(t, "whose process ")          ? WF_SILENT
            : strstr(t, "whose caller has posted") ? WF_IDLE
            : lead == t + 31                       ? WF_LINK
            : strstr(t, "busy itself")             ? WF_WAITS
                                                   : WF_OTHER;
  return r->pid > 0;
}

static const struct wf_edge *edge_of(const struct wf_edge *v, int n, const char *host, long pid,
                                     enum wf_kind not_kind) {
  for (int i = 0; i < n; i++)
    if (v[i].pid == pid && !strcmp(v[i].host, host) && v[i].kind != not_kind &&
        v[i].kind != WF_SELF_PORT) /* a root's own line, no edge: own_port reads it */
      return &v[i];
  return NULL;
}

struct wf_root {
  char key[300];
  char cause[700], fix[400];
  struct finding *f;
};

/* A process root's key: its pid, the same whether a waiter named it (with
 * its host name) or a rank passed it along (with its address only). */
static void root_key(const struct wf_edge *e, struct wf_root *out) {
  snprintf(out->key, sizeof(out->key), "root %ld", e->to_pid);
}

/* The root a rank took from its busy peer, when the chain leaves the logs. */
static void told_root(const struct wf_edge *told, struct wf_root *out) {
  static const char *const how[] = {
    [WF_SILENT] = "its process does not answer (stopped, frozen, dead or cut off)",
    [WF_IDLE] = "its caller posted nothing to the network (it did not enter the collective)",
    [WF_LINK] = "the path to it moves no bytes while both ends post",
    [WF_PORT] = "a network link of its process is down (an RDMA port or an interface)"};
  snprintf(out->key, sizeof(out->key), "root %ld", told->told_pid);
  snprintf(out->cause, sizeof(out->cause),
           "the hang's root is pid %ld at %s, as the stalled ranks passed it along (its own "
           "log and its waiters' are not among these): %s",
           told->told_pid, told->told_ip, how[told->told_kind]);
  if (told->told_kind == WF_PORT)
    snprintf(out->fix, sizeof(out->fix),
             "on %s, the port or interface pid %ld's log names (its stall WARN): its cable, "
             "transceiver and switch port (ibstat, ip link, dmesg); add that host's log",
             told->told_ip, told->told_pid);
  else
    snprintf(out->fix, sizeof(out->fix),
             "on %s: ps -o stat,cmd -p %ld, then py-spy dump --pid %ld; add that host's log",
             told->told_ip, told->told_pid, told->told_pid);
}

/* The RDMA port of e's target that is down: its own line, when here. */
static const struct wf_edge *own_port(const struct wf_edge *v, int n, const struct wf_edge *e) {
  for (int i = 0; i < n; i++)
    if (v[i].kind == WF_SELF_PORT && v[i].pid == e->to_pid && !strcmp(v[i].host, e->to_host))
      return &v[i];
  return NULL;
}

static void port_root(const struct wf_edge *e, const struct wf_edge *own, struct wf_root *out) {
  root_key(e, out);
  snprintf(out->cause, sizeof(out->cause),
           "the hang's root is %s of %s pid %ld%s%s%s that is down: nothing moves through it "
           "until the link is back, and every rank that talks to that process over it waits",
           own && own->port[0] ? own->port : "a network link", e->to_host, e->to_pid,
           e->to_addr[0] ? " (" : "", e->to_addr, e->to_addr[0] ? ")" : "");
  const char *ifname = own && !strncmp(own->port, "interface ", 10) ? own->port + 10 : NULL;
  if (ifname)
    snprintf(out->fix, sizeof(out->fix),
             "bring that link back on %s (ip link show %s, ethtool %s, then its cable, "
             "transceiver and switch port): TCP resends once it is back, within "
             "NCCL_DIAG_PEER_TIMEOUT_SEC of the peers' liveness checks",
             e->to_host, ifname, ifname);
  else
    snprintf(out->fix, sizeof(out->fix),
             "bring that link back on %s (ibstat, ip link, dmesg; its cable, transceiver and "
             "switch port): RDMA queue pairs outlast NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT of it, "
             "a longer spell fails the connections that had messages in flight",
             e->to_host);
}

/* Follows e to its root; writes the root's words into out. */
static void follow(const struct wf_edge *v, int n, const struct wf_edge *e, struct wf_root *out) {
  const struct wf_edge *told = NULL;
  bool is_jumped = false;
  for (int hop = 0; hop < WF_HOPS; hop++) {
    const struct wf_edge *next = edge_of(v, n, e->to_host, e->to_pid, WF_SELF_IDLE);
    bool is_self_idle = false; /* the process's own line: its peers wait on it, idle */
    for (int i = 0; i < n; i++)
      is_self_idle |=
        v[i].kind == WF_SELF_IDLE && v[i].pid == e->to_pid && !strcmp(v[i].host, e->to_host);
    const struct wf_edge *own = own_port(v, n, e);
    if (e->kind == WF_PORT || e->kind == WF_SELF_PORT || own) {
      port_root(e, own ? own : e->kind == WF_SELF_PORT ? e : NULL, out);
      return;
    }
    if (e->kind == WF_IDLE || is_self_idle) {
      root_key(e, out);
      snprintf(out->cause, sizeof(out->cause),
               "the hang's root is %s pid %ld%s%s%s: its process runs but its caller posted "
               "nothing to the network, so it did not enter the collective the other ranks wait "
               "in",
               e->to_host, e->to_pid, e->to_addr[0] ? " (" : "", e->to_addr,
               e->to_addr[0] ? ")" : "");
      snprintf(out->fix, sizeof(out->fix), "look at its stack with py-spy dump --pid %ld on %s",
               e->to_pid, e->to_host);
      return;
    }
    bool is_mutual = next && next->to_pid == e->pid && !strcmp(next->to_host, e->host) &&
                     (next->kind == WF_SILENT || next->kind == WF_LINK);
    if (e->kind == WF_LINK || (e->kind == WF_SILENT && is_mutual)) {
      /* Both ends ran to say the other is unreachable or moves nothing. */
      bool lo = e->pid < e->to_pid;
      snprintf(out->key, sizeof(out->key), "link %s %ld %s %ld", lo ? e->host : e->to_host,
               lo ? e->pid : e->to_pid, lo ? e->to_host : e->host, lo ? e->to_pid : e->pid);
      snprintf(out->cause, sizeof(out->cause),
               "the hang's root is the network path between %s pid %ld and %s pid %ld (%s): "
               "both processes run and post, and no bytes move between them",
               e->host, e->pid, e->to_host, e->to_pid, e->to_addr[0] ? e->to_addr : "its address");
      snprintf(out->fix, sizeof(out->fix),
               "check that path on both hosts: ping between them, the interfaces' error "
               "counters, firewall rules (nft list ruleset, iptables -S)");
      return;
    }
    if (e->kind == WF_SILENT) {
      root_key(e, out);
      snprintf(out->cause, sizeof(out->cause),
               "the hang's root is %s pid %ld%s%s%s: its process stopped answering (stopped, "
               "frozen or dead, or its host cut off), and the other ranks wait on it",
               e->to_host, e->to_pid, e->to_addr[0] ? " (" : "", e->to_addr,
               e->to_addr[0] ? ")" : "");
      snprintf(out->fix, sizeof(out->fix),
               "on %s run ps -o stat,cmd -p %ld (T = stopped: kill -CONT %ld; gone = it died, "
               "see its log and the kernel's, dmesg)",
               e->to_host, e->to_pid, e->to_pid);
      return;
    }
    if (e->told_kind != WF_OTHER) told = e;
    if (!next && told && !is_jumped) { /* the told root's own lines, when here, say more */
      for (int i = 0; i < n && !next; i++)
        if (v[i].pid == told->told_pid) next = &v[i];
      is_jumped = true;
    }
    if (!next) break;
    e = next;
  }
  if (told) { /* the chain leaves these logs; the ranks passed the root along */
    told_root(told, out);
    return;
  }
  snprintf(out->key, sizeof(out->key), "end %s %ld", e->to_host, e->to_pid);
  snprintf(out->cause, sizeof(out->cause),
           "ranks wait in a chain that ends, as far as these logs show, at %s pid %ld: it answers "
           "and is busy itself, and its log is not among these (or says nothing of a stall)",
           e->to_host, e->to_pid);
  snprintf(out->fix, sizeof(out->fix),
           "add the log of %s pid %ld (and of the ranks it talks to), or look at its stack with "
           "py-spy dump --pid %ld",
           e->to_host, e->to_pid, e->to_pid);
}

void waitfor_build(const struct explain_ctx *cx, const struct hits *h) {
  struct wf_edge *v = calloc(WF_MAX, sizeof(*v));
  struct wf_root *roots = calloc(WF_MAX, sizeof(*roots));
  int n = 0, nroots = 0;
  for (size_t i = 0; v && roots && i < h->n && n < WF_MAX; i++)
    if (parse_edge(h->v[i], &v[n])) n++;
  for (int i = 0; v && roots && i < n; i++) {
    struct wf_root r = {0};
    follow(v, n, &v[i], &r);
    int k = 0;
    while (k < nroots && strcmp(roots[k].key, r.key)) k++;
    if (k == nroots) {
      if (!(r.f = finding_new(cx->out, "wait-for", CONF_HIGH))) break;
      finding_cause(r.f, "%s", r.cause);
      finding_fix(r.f, "%s", r.fix);
      roots[nroots++] = r;
    }
    finding_evidence(roots[k].f, v[i].r);
  }
  free(v);
  free(roots);
}
