/* SPDX-License-Identifier: Apache-2.0 */
/* Interface choice and names: the bootstrap (and Socket transport) on an
 * interface other hosts cannot reach; NCCL_SOCKET_IFNAME naming nothing on
 * a host; a peer address of a garbage family (the bytes of a handle laid
 * out by another NCCL version, or an empty address). */
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

enum if_kind { IF_OK, IF_LOOPBACK, IF_BRIDGE, IF_VETH, IF_LINK_LOCAL, IF_IB_LL, IF_COUNT };

static enum if_kind if_kind(const char *iface, const char *ip) {
  bool is_ll = !strncmp(ip, "169.254.", 8) || !strncmp(ip, "fe80", 4);
  if (!strncmp(iface, "lo", 2) || !strncmp(ip, "127.", 4) || !strcmp(ip, "::1")) return IF_LOOPBACK;
  if (!strncmp(iface, "docker", 6) || !strncmp(iface, "virbr", 5) || !strncmp(iface, "br-", 3))
    return IF_BRIDGE; /* br-<id>: a docker user-defined network */
  if (!strncmp(iface, "veth", 4)) return IF_VETH;
  if (is_ll && !strncmp(iface, "ib", 2)) return IF_IB_LL;
  return is_ll ? IF_LINK_LOCAL : IF_OK;
}

bool rules_iface_is_local(const char *iface, const char *ip) { return if_kind(iface, ip) != IF_OK; }

const char *rules_common_iface(const struct corr *c, const char *except_host) {
  const char *name = NULL;
  for (int i = 0; i < c->nhosts; i++) {
    const struct corr_host *h = &c->hosts[i];
    if (!h->boot_if[0] || (except_host && !strcmp(h->name, except_host))) continue;
    if (if_kind(h->boot_if, h->boot_ip) != IF_OK) return NULL;
    if (name && strcmp(name, h->boot_if)) return NULL;
    name = h->boot_if;
  }
  return name;
}

bool ifname_match(const struct rec *r) {
  const char *t = r->text;
  return strstr(t, "no socket interface found") || strstr(t, "NET/Socket : no interface found") ||
         strstr(t, "No IP interface found") || strstr(t, "No usable listening interface found");
}

void ifname_build(const struct explain_ctx *cx, const struct hits *h) {
  for (int i = 0; i < cx->corr->nhosts; i++) {
    const struct corr_host *ch = &cx->corr->hosts[i];
    const char *set = corr_env(ch, "NCCL_SOCKET_IFNAME"),
               *other = rules_common_iface(cx->corr, ch->name);
    struct finding *f = NULL;
    for (size_t k = 0; k < h->n; k++) {
      if (strcmp(h->v[k]->host, ch->name)) continue;
      if (!f && !(f = finding_new(cx->out, "ifname", set ? CONF_HIGH : CONF_MEDIUM))) return;
      finding_evidence(f, h->v[k]);
    }
    if (!f) continue;
    char others[96] = "";
    if (other) snprintf(others, sizeof(others), " (the other hosts use %s)", other);
    if (set && set[0] == '^') {
      /* an exclusion list: the user's filter removed what the host has */
      finding_cause(
        f,
        "NCCL_SOCKET_IFNAME=%s excludes, %s, every interface NCCL would use on %s (%s; lo and docker* are skipped anyway), so it has no address to bootstrap or connect from: the filter, not the host, leaves none%s",
        set, set[1] == '=' ? "by exact name" : "by prefix", ch->name,
        set[1] == '=' ? "'^=' removes the interfaces of exactly those names"
                      : "each name after the ^ removes every interface it prefixes",
        others);
      finding_fix(
        f,
        "name the interface to use instead of excluding (NCCL_SOCKET_IFNAME=%s; ip -br addr on %s lists them), or remove from the list the prefix that matches it",
        other ? other : "<interface on every node>", ch->name);
      if (other) finding_export(f, "NCCL_SOCKET_IFNAME=%s", other);
    } else if (set && set[0] == '=') {
      finding_cause(
        f,
        "NCCL_SOCKET_IFNAME=%s asks for exactly that name (the '=' turns off prefix matching) and %s has no interface of that name%s",
        set, ch->name, others);
      finding_fix(
        f,
        "use the exact name on %s (ip -br addr), or drop the '=' to match by prefix (NCCL_SOCKET_IFNAME=%s)",
        ch->name, set + 1);
    } else if (set && other && strcmp(other, set)) {
      finding_cause(
        f,
        "no interface on %s matches NCCL_SOCKET_IFNAME=%s%s, so NCCL has no address to bootstrap or connect from",
        ch->name, set, others);
      finding_fix(
        f,
        "name the interface the other hosts use on every node (NCCL_SOCKET_IFNAME=%s), or where names differ per node list them all or set it per node in /etc/nccl.conf; ip -br addr on %s shows what exists",
        other, ch->name);
      finding_export(f, "NCCL_SOCKET_IFNAME=%s", other);
    } else if (set) {
      finding_cause(
        f,
        "no interface on %s matches NCCL_SOCKET_IFNAME=%s%s, so NCCL has no address to bootstrap or connect from",
        ch->name, set, others);
      finding_fix(
        f,
        "find the interface name on %s (ip -br addr) and list every node's name, NCCL_SOCKET_IFNAME=%s,<name on %s> (prefixes match), or set it per node in /etc/nccl.conf",
        ch->name, set, ch->name);
    } else {
      finding_cause(
        f,
        "NCCL found no usable interface on %s (none up and running with an IPv4 or IPv6 address it accepts)%s",
        ch->name, others);
      finding_fix(
        f,
        "check ip -br addr on %s and set NCCL_SOCKET_IFNAME to the interface that carries the hosts' network%s%s",
        ch->name, other ? ", as the others do: " : "", other ? other : "");
      if (other) finding_export(f, "NCCL_SOCKET_IFNAME=%s", other);
    }
    const struct rec *env = NULL;
    for (int k = 0; k < ch->nenv && !env; k++)
      if (!strcmp(ch->env[k].key, "NCCL_SOCKET_IFNAME")) env = ch->env[k].rec;
    finding_evidence(f, env);
  }
}

static const char *if_words[IF_COUNT] = {
  "",
  "loopback, which no other host can reach",
  "a container bridge, which other hosts cannot reach",
  "one end of a container veth pair, which other hosts cannot reach",
  "a link-local address, which does not route between hosts",
  "IPoIB with only a link-local address (NCCL prefers ib* interfaces), which does not route between hosts",
};

static void bootif_text(const struct explain_ctx *cx, struct finding *f, enum if_kind k,
                        const struct corr_host *h, const char *iface, const char *ip) {
  const char *good = rules_common_iface(cx->corr, h->name);
  /* the Socket transport's extra interface: the host's own bootstrap one is good */
  if (!good && h->boot_if[0] && strcmp(h->boot_if, iface) &&
      if_kind(h->boot_if, h->boot_ip) == IF_OK)
    good = h->boot_if;
  finding_cause(f, "%s uses %s (%s) for NCCL's sockets: %s", h->name, iface, ip, if_words[k]);
  if (good) {
    finding_fix(f, "pin the interface the hosts share on every node: NCCL_SOCKET_IFNAME=%s", good);
    finding_export(f, "NCCL_SOCKET_IFNAME=%s", good);
  } else if (k == IF_IB_LL || k == IF_LINK_LOCAL) {
    finding_fix(
      f,
      "give %s a routable address on %s, or set NCCL_SOCKET_IFNAME to the interface that carries the hosts' network (ip -br addr)",
      iface, h->name);
  } else {
    finding_fix(
      f,
      "set NCCL_SOCKET_IFNAME to the interface that carries the hosts' network (ip -br addr), or exclude these with NCCL_SOCKET_IFNAME=^lo,docker,virbr,veth");
    finding_export(f, "NCCL_SOCKET_IFNAME=^lo,docker,virbr,veth");
  }
}

/* A multi-host job, or a host that reports an error: one host alone on
 * loopback is a normal single-node run. */
void bootif_build(const struct explain_ctx *cx, const struct hits *hits) {
  (void)hits;
  struct finding *groups[IF_COUNT] = {0};
  int nhosts[IF_COUNT] = {0};
  for (int i = 0; i < cx->corr->nhosts; i++) {
    const struct corr_host *h = &cx->corr->hosts[i];
    bool seen[IF_COUNT] = {0};
    /* NCCL_SOCKET_IFNAME=lo names loopback on purpose: a job meant for
     * more than this host (the log of one host alone cannot tell) */
    const char *want = corr_env(h, "NCCL_SOCKET_IFNAME");
    bool is_forced_lo = want && (!strncmp(want, "lo", 2) || !strncmp(want, "=lo", 3));
    if (cx->corr->nhosts < 2 && !h->nwarn && !is_forced_lo) continue;
    for (int a = 0; a < h->naddrs; a++) {
      const struct corr_addr *ad = &h->addrs[a];
      if (ad->rec != h->boot_rec && ad->rec != h->sock_rec) continue;
      enum if_kind k = if_kind(ad->iface, ad->ip);
      if (k == IF_OK) continue;
      if (!groups[k]) {
        enum confidence conf =
          k == IF_LOOPBACK && (cx->corr->nhosts > 1 || h->nwarn) ? CONF_HIGH : CONF_MEDIUM;
        if (!(groups[k] = finding_new(cx->out, "bootstrap-iface", conf))) return;
        bootif_text(cx, groups[k], k, h, ad->iface, ad->ip);
      }
      finding_evidence(groups[k], ad->rec);
      nhosts[k] += !seen[k];
      seen[k] = true;
    }
  }
  for (int k = 0; k < IF_COUNT; k++) {
    if (nhosts[k] < 2) continue;
    size_t n = strlen(groups[k]->cause);
    snprintf(groups[k]->cause + n, sizeof(groups[k]->cause) - n, " (the same on %d more host%s)",
             nhosts[k] - 1, nhosts[k] > 2 ? "s" : "");
  }
}

bool family_match(const struct rec *r) {
  return strstr(r->text, "with family ") && strstr(r->text, "neither AF_INET");
}

static bool has_ifname_failure(const struct logset *ls) {
  for (size_t i = 0; i < ls->nrecs; i++)
    if (ifname_match(&ls->recs[i])) return true;
  return false;
}

/* The NCCL_SOCKET_IFNAME value a host's log shows, and its line. */
static const char *socket_ifname_set(const struct corr *c, const struct rec **rec) {
  for (int i = 0; i < c->nhosts; i++)
    for (int k = 0; k < c->hosts[i].nenv; k++)
      if (!strcmp(c->hosts[i].env[k].key, "NCCL_SOCKET_IFNAME")) {
        *rec = c->hosts[i].env[k].rec;
        return c->hosts[i].env[k].val;
      }
  return NULL;
}

void family_build(const struct explain_ctx *cx, const struct hits *h) {
  const char *ifset;
  const struct rec *ifrec = NULL;
  long family = 0;
  text_long(text_after(h->v[0]->text, "with family "), &family);
  char split[512];
  struct finding *f;
  char note[200];
  snprintf(
    note, sizeof(note),
    "it shows as a peer address of family %ld (\"neither AF_INET nor AF_INET6\"): the versions lay out their connection handles differently",
    family);
  bool is_skew = rules_version_split(cx->corr, split, sizeof(split));
  if (is_skew && rules_consequence(cx, "version-skew", h->v[0], note)) {
    for (size_t i = 1; i < h->n; i++) rules_consequence(cx, "version-skew", h->v[i], NULL);
    return;
  }
  if (is_skew) {
    if (!(f = finding_new(cx->out, "addr-family", CONF_HIGH))) return;
    finding_cause(
      f,
      "a peer's address arrived as garbage (family %ld, neither AF_INET nor AF_INET6) because the hosts run different NCCL versions (%s), which lay out their connection handles differently",
      family, split);
    finding_fix(
      f,
      "install one NCCL version on every node (check with python -c 'import torch; print(torch.cuda.nccl.version())' and pip list | grep nccl)");
    rules_add_version_evidence(cx->corr, f);
  } else if (has_ifname_failure(cx->ls)) {
    if (!(f = finding_new(cx->out, "addr-family", CONF_HIGH))) return;
    finding_cause(
      f,
      "a peer's address arrived empty (family %ld): a host found no interface matching NCCL_SOCKET_IFNAME and advertised no address (see the interface finding)",
      family);
    finding_fix(f, "set NCCL_SOCKET_IFNAME to an interface that exists on every node");
  } else if ((ifset = socket_ifname_set(cx->corr, &ifrec))) {
    if (!(f = finding_new(cx->out, "addr-family", CONF_MEDIUM))) return;
    finding_cause(
      f,
      "a peer's address arrived empty or as garbage (family %ld): NCCL_SOCKET_IFNAME=%s is set, and a host where no interface matches it advertises no address (NCCL before 2.28 does not always say so); different NCCL versions across nodes show the same way",
      family, ifset);
    finding_fix(
      f,
      "check that %s exists and has an address on every node (ip -br addr), or list every node's name in NCCL_SOCKET_IFNAME (prefixes match); then check that every node runs the same NCCL version",
      ifset);
    finding_evidence(f, ifrec);
  } else {
    if (!(f = finding_new(cx->out, "addr-family", CONF_MEDIUM))) return;
    finding_cause(
      f,
      "a peer's address arrived as garbage (family %ld, neither AF_INET nor AF_INET6): the peers disagree on the layout of NCCL's connection bytes, most often different NCCL versions or net plugins across nodes (the versions are not in these logs), less often a peer that advertised no address",
      family);
    finding_fix(
      f,
      "check the NCCL version on every node (python -c 'import torch; print(torch.cuda.nccl.version())'; NCCL_DEBUG=INFO prints it) and use one version and one NCCL_NET_PLUGIN everywhere");
  }
  for (size_t i = 0; i < h->n; i++) finding_evidence(f, h->v[i]);
}
