/* SPDX-License-Identifier: Apache-2.0 */
/* Socket errors: connects refused, timed out or aborted, and connections
 * the peer closed. Both are usually what one side sees of the other
 * side's failure, so the rules look for the host behind the address and
 * for that host's own first error. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

/* 2.27+: "connect to A returned E, retrying (k/n) ..." / "... exceeded error
 * retry count after N attempts" / "connect to A failed : E";
 * 2.24-2.26: "connect returned E, exceeded error retry count (N)";
 * up to 2.26: "Connect to A failed : E"; 2.23: "Connect to A returned
 * R(E) errno N(E)"; up to 2.23: "Call to connect returned E, retrying",
 * "exceeded retries (N)" (refused), "exceeded timeouts (N)" (timed out). */
bool connfail_parse(const char *t, struct connfail *c) {
  const char *p;
  long v;
  memset(c, 0, sizeof(*c));
  if (!strstr(t, "onnect")) return false;
  if ((p = text_after(t, "onnect to "))) {
    text_token(p, ",", c->addr, sizeof(c->addr));
    const char *e;
    if ((e = text_after(p, " returned ")) && text_long(e, &v)) c->err = (int)v; /* 2.23 poll */
    else if (e) c->err = text_errno(e);
    else if ((e = text_after(p, " failed : "))) c->err = text_errno(e);
    else if ((e = text_after(p, " failed with error "))) c->err = text_errno(e);
  } else if ((p = text_after(t, "connect returned "))) c->err = text_errno(p);
  else if ((p = text_after(t, "Call to connect failed : "))) c->err = text_errno(p); /* 2.0-2.3 */
  else if (strstr(t, "Connect: exceeded retries") || strstr(t, "onnect: exceeded retries"))
    c->err = ECONNREFUSED;
  else if (strstr(t, "onnect: exceeded timeouts")) c->err = ETIMEDOUT;
  c->is_retry = strstr(t, "retrying") != NULL;
  return c->err != 0;
}

bool connect_match(const struct rec *r) {
  struct connfail c;
  return !r->is_diag && connfail_parse(r->text, &c);
}

static const char *addrs_of_hosts(const struct corr *c, char *buf, size_t cap) {
  buf[0] = 0;
  for (int i = 0; i < c->nhosts && strlen(buf) + 80 < cap; i++)
    if (c->hosts[i].boot_ip[0])
      snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s %s %s", buf[0] ? ", " : "",
               c->hosts[i].name, c->hosts[i].boot_if, c->hosts[i].boot_ip);
  return buf;
}

/* The address belongs to a host of these logs: which of its interfaces,
 * and whether that host failed first. */
static struct finding *owned(const struct explain_ctx *cx, const struct rec *r, const char *what,
                             const char *ip, const struct corr_host *owner, const char *iface,
                             bool is_refused) {
  struct finding *f = finding_new(cx->out, "connect", CONF_MEDIUM);
  if (!f) return NULL;
  finding_host(f, owner->name);
  if (iface && owner->boot_if[0] && strcmp(iface, owner->boot_if)) {
    finding_cause(
      f,
      "%s: %s is %s of %s, one of several interfaces it offers NCCL's sockets on, and it is not reachable from %s, which reaches %s on %s (%s)",
      what, ip, iface, owner->name, r->host, owner->name, owner->boot_if, owner->boot_ip);
    finding_fix(
      f,
      "pin the interface every host shares on every node: NCCL_SOCKET_IFNAME=%s (and GLOO_SOCKET_IFNAME=%s for PyTorch)",
      owner->boot_if, owner->boot_if);
    finding_export(f, "NCCL_SOCKET_IFNAME=%s", owner->boot_if);
  } else if (owner->first_warn && strcmp(owner->name, r->host)) {
    finding_cause(f, "%s because %s failed first: \"%.300s\"", what, owner->name,
                  owner->first_warn->text);
    finding_fix(f,
                "fix %s's own error (quoted); the connect errors of its peers are its consequence",
                owner->name);
    finding_evidence(f, owner->first_warn);
  } else {
    if (is_refused)
      finding_cause(
        f,
        "%s: nothing listened on %s of %s: its NCCL process had exited or not reached that point, or a firewall rejects the port",
        what, ip, owner->name);
    else
      finding_cause(
        f, "%s: %s's address %s does not answer from %s (routing, or a firewall that drops)", what,
        owner->name, ip, r->host);
    finding_fix(
      f,
      "check that the process on %s is alive and its log's end; test the path with nc -zv %s <port> from %s and allow NCCL's ephemeral ports between the hosts",
      owner->name, ip, r->host);
  }
  return f;
}

/* No host of these logs uses the address. */
static struct finding *unowned(const struct explain_ctx *cx, const struct rec *r, const char *what,
                               const char *ip) {
  const char *common = rules_common_iface(cx->corr, NULL);
  char known[512];
  struct finding *f;
  /* "no host uses it" says something only when the logs hold the peers */
  if (ip[0] && cx->corr->nhosts >= 2 && addrs_of_hosts(cx->corr, known, sizeof(known))[0]) {
    if (!(f = finding_new(cx->out, "connect", CONF_MEDIUM))) return NULL;
    finding_cause(
      f,
      "%s: %s is not the address any host in these logs bootstraps on (%s), so a peer advertised an interface %s cannot reach: the hosts choose their interfaces differently (NCCL_SOCKET_IFNAME not the same on every node)",
      what, ip, known, r->host);
    finding_fix(
      f,
      "set the same NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME for PyTorch) on every node, naming the interface all hosts share%s%s",
      common ? ": " : "", common ? common : "");
    if (common) finding_export(f, "NCCL_SOCKET_IFNAME=%s", common);
    return f;
  }
  if (!(f = finding_new(cx->out, "connect", CONF_LOW))) return NULL;
  bool is_refused = strstr(what, "ECONNREFUSED") || strstr(what, "ECONNABORTED");
  finding_cause(
    f, "no confident cause: %s: %s, or the peer advertised an address this host cannot reach", what,
    is_refused
      ? "nothing listened there (the peer exited or had not started), a firewall rejects it"
      : "no route to the address or no answer from it (the peer's host down, a firewall that drops)");
  finding_fix(
    f,
    "collect every host's log with NCCL_DEBUG=INFO (its 'Bootstrap : Using' line says which host owns %s), check that host is alive, test with nc -zv %s <port> from %s, and pin one interface with NCCL_SOCKET_IFNAME on every node",
    ip[0] ? ip : "the address", ip[0] ? ip : "<address>",
    r->host[0] ? r->host : "the failing host");
  const struct corr_host *h = corr_find(cx->corr, r->host);
  if (h && !strncmp(h->boot_if, "ib", 2)) {
    size_t n = strlen(f->cause);
    snprintf(
      f->cause + n, sizeof(f->cause) - n,
      "; %s bootstraps on %s, an IPoIB interface, which NCCL prefers by default: if IPoIB is not up between all nodes, its sockets cannot connect",
      h->name, h->boot_if);
  }
  return f;
}

static struct finding *connect_finding(const struct explain_ctx *cx, const struct rec *r,
                                       const struct connfail *cf, const char *ip) {
  const struct corr_host *owner = corr_find_addr(cx->corr, ip);
  bool is_refused = cf->err == ECONNREFUSED || cf->err == ECONNABORTED;
  char what[200], lbl[24], note[160];
  snprintf(
    what, sizeof(what), "%s's connects to %s %s (%s)%s", r->host[0] ? r->host : "a host",
    cf->addr[0] ? cf->addr : "its peer", cf->err == ECONNREFUSED ? "were refused" : "failed",
    errno_label(cf->err, lbl, sizeof(lbl)),
    cf->err == ECONNABORTED
      ? " ('Software caused connection abort' is NCCL's follow-up error of a refused or timed-out first connect, fixed in 2.24)"
      : "");
  const char *iface = NULL;
  for (int a = 0; owner && a < owner->naddrs; a++)
    if (!strcmp(owner->addrs[a].ip, ip)) iface = owner->addrs[a].iface;
  /* an address on loopback, docker0, a veth: the interface finding's consequence */
  snprintf(note, sizeof(note), "it shows as connects that %s",
           is_refused ? "are refused" : "fail or time out");
  if ((!ip[0] || (iface && rules_iface_is_local(iface, ip))) &&
      rules_consequence(cx, "bootstrap-iface", r, note))
    return NULL;
  return owner ? owned(cx, r, what, ip, owner, iface, is_refused) : unowned(cx, r, what, ip);
}

void connect_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[16];
  char keys[16][80];
  int ngroups = 0;
  for (size_t i = 0; i < h->n; i++) {
    struct connfail cf;
    char ip[64], key[80];
    if (!connfail_parse(h->v[i]->text, &cf)) continue;
    text_ip_of(cf.addr, ip, sizeof(ip));
    bool is_refused = cf.err == ECONNREFUSED || cf.err == ECONNABORTED;
    snprintf(key, sizeof(key), "%d/%s", is_refused, ip);
    int g = 0;
    while (g < ngroups && strcmp(keys[g], key)) g++;
    if (g == ngroups && ngroups < 16) {
      groups[g] = connect_finding(cx, h->v[i], &cf, ip); /* NULL: joined an earlier finding */
      snprintf(keys[ngroups++], sizeof(keys[0]), "%s", key);
    }
    if (g < ngroups && groups[g]) finding_evidence(groups[g], h->v[i]);
    else if (g < ngroups) rules_consequence(cx, "bootstrap-iface", h->v[i], NULL);
  }
}

/* --- connection closed by the peer --------------------------------------- */

/* "socketProgress: Connection closed by remote peer node-b<4242>" (2.19+;
 * a host name when it resolves), "Net : Connection closed by remote peer
 * 10.0.0.2<4242>" (2.12), "Call to recv from A failed : Connection reset by peer". */
static bool closed_peer(const char *t, char *peer, size_t cap) {
  const char *p = text_after(t, "Connection closed by remote peer ");
  if (!p && strstr(t, "Connection reset by peer")) p = text_after(t, "recv from ");
  if (!p && strstr(t, "Connection reset by peer")) p = text_after(t, "send to ");
  if (p && text_token(p, "", peer, cap)) return true;
  if (!strstr(t, "Connection closed by remote peer")) return false;
  snprintf(peer, cap, "(a peer this NCCL version does not name)"); /* 2.4-2.9 */
  return true;
}

bool closed_match(const struct rec *r) {
  char peer[80];
  return !r->is_diag && r->level != REC_INFO && closed_peer(r->text, peer, sizeof(peer));
}

static struct finding *closed_finding(const struct explain_ctx *cx, const struct rec *r,
                                      const char *peer) {
  char ip[64], name[80];
  text_ip_of(peer, ip, sizeof(ip));
  text_token(peer, "<", name, sizeof(name));
  const struct corr_host *ph = corr_find_addr(cx->corr, ip);
  if (!ph) ph = corr_find(cx->corr, name);
  struct finding *f;
  const char *host = r->host[0] ? r->host : "a host";
  if (ph && ph->first_warn) {
    if (!(f = finding_new(cx->out, "closed-by-peer", CONF_HIGH))) return NULL;
    finding_cause(f, "%s only saw its connection closed by %s; %s failed first: \"%.300s\"", host,
                  ph->name, ph->name, ph->first_warn->text);
    finding_fix(
      f,
      "fix %s's own error (quoted, and explained in its own finding where one names it); the closed connections on its peers are its consequence",
      ph->name);
    finding_evidence(f, ph->first_warn);
  } else if (ph) {
    if (!(f = finding_new(cx->out, "closed-by-peer", CONF_LOW))) return NULL;
    finding_cause(
      f,
      "no confident cause: %s closed its connection to %s but %s's log shows no error: its process was ended from outside (the out-of-memory killer, the scheduler, a crash)",
      ph->name, host, ph->name);
    finding_fix(f,
                "check dmesg for oom-kill and the scheduler's log on %s, and that process's stderr",
                ph->name);
    finding_host(f, ph->name);
  } else {
    if (!(f = finding_new(cx->out, "closed-by-peer", CONF_LOW))) return NULL;
    finding_cause(
      f,
      "no confident cause: %s saw its connection closed by %s; the cause is in that peer's own log, which is not among these files",
      host, peer);
    finding_fix(
      f,
      "collect the log of %s (NCCL_DEBUG=INFO NCCL_DEBUG_FILE=/tmp/nccl.%%h.%%p) and run nccl-net-diag explain on all hosts' logs together",
      name);
  }
  return f;
}

/* Closed connections whose peer's own error already has a finding join it;
 * the note names the first host that only saw the close, and counts the rest. */
struct joined {
  struct finding *f;
  const char *host, *peer;
  const char *hosts[256]; /* the closing hosts, to count them */
  int nhosts;
};

static bool join_peer_finding(const struct explain_ctx *cx, const struct rec *r, const char *peer,
                              struct joined *js, int *njs) {
  char ip[64], name[80];
  text_ip_of(peer, ip, sizeof(ip));
  text_token(peer, "<", name, sizeof(name));
  const struct corr_host *ph = corr_find_addr(cx->corr, ip);
  if (!ph) ph = corr_find(cx->corr, name);
  struct finding *f = ph && ph->first_warn ? findings_covering(cx->out, ph->first_warn) : NULL;
  if (!f) return false;
  int j = 0;
  while (j < *njs && js[j].f != f) j++;
  if (j == *njs && *njs < 16)
    js[(*njs)++] = (struct joined){.f = f, .host = r->host, .peer = ph->name};
  finding_evidence(f, r);
  int k = 0;
  while (j < *njs && k < js[j].nhosts && k < 256 && strcmp(js[j].hosts[k], r->host)) k++;
  if (j < *njs && k == js[j].nhosts) {
    if (k < 256) js[j].hosts[k] = r->host;
    js[j].nhosts++;
  }
  return true;
}

void closed_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[16];
  char keys[16][80];
  struct joined js[16];
  int ngroups = 0, njs = 0;
  for (size_t i = 0; i < h->n; i++) {
    char peer[80], key[80];
    if (!closed_peer(h->v[i]->text, peer, sizeof(peer))) continue;
    if (join_peer_finding(cx, h->v[i], peer, js, &njs)) continue;
    text_token(peer, "<", key, sizeof(key));
    int g = 0;
    while (g < ngroups && strcmp(keys[g], key)) g++;
    if (g == ngroups && ngroups < 16) {
      if (!(groups[g] = closed_finding(cx, h->v[i], peer))) return;
      snprintf(keys[ngroups++], sizeof(keys[0]), "%s", key);
    }
    if (g < ngroups) finding_evidence(groups[g], h->v[i]);
  }
  for (int j = 0; j < njs; j++) {
    size_t n = strlen(js[j].f->cause);
    if (js[j].nhosts > 1)
      snprintf(js[j].f->cause + n, sizeof(js[j].f->cause) - n,
               "; %s and %d more hosts only saw their connections closed by the side that failed",
               js[j].host[0] ? js[j].host : "a host", js[j].nhosts - 1);
    else
      snprintf(js[j].f->cause + n, sizeof(js[j].f->cause) - n,
               "; %s only saw the connection closed by %s", js[j].host[0] ? js[j].host : "a host",
               js[j].peer);
  }
}
