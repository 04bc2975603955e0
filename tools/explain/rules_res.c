/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes and resources: a message larger than the receive posted for it
 * (ranks that disagree on sizes or on size-changing settings), and file
 * descriptors or accept resources that ran out. */
#include <string.h>

#include "tools/explain/rules.h"

bool truncated_match(const struct rec *r) {
  return strstr(r->text, "message truncated") && strstr(r->text, "instead of");
}

/* The settings that change message sizes, as each host's log shows them. */
static bool size_settings_split(const struct corr *c, char *buf, size_t cap, const struct rec **ev,
                                int nev) {
  static const char *const keys[] = {"NCCL_PROTO", "NCCL_ALGO", "NCCL_BUFFSIZE", "NCCL_LL_BUFFSIZE",
                                     "NCCL_LL128_BUFFSIZE"};
  bool is_diff = false;
  buf[0] = 0;
  for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
    const char *first = NULL;
    bool differs = false, any = false;
    for (int i = 0; i < c->nhosts; i++) {
      if (!c->hosts[i].nenv) continue;
      const char *v = corr_env(&c->hosts[i], keys[k]);
      v = v ? v : "(unset)";
      any |= strcmp(v, "(unset)") != 0;
      if (!first) first = v;
      else if (strcmp(first, v)) differs = true;
    }
    if (!differs || !any) continue;
    is_diff = true;
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%s:", len ? "; " : "", keys[k]);
    for (int i = 0, n = 0; i < c->nhosts && strlen(buf) + 80 < cap; i++) {
      if (!c->hosts[i].nenv) continue;
      const char *v = corr_env(&c->hosts[i], keys[k]);
      snprintf(buf + strlen(buf), cap - strlen(buf), " %s on %s", v ? v : "unset",
               c->hosts[i].name);
      for (int e = 0; v && e < c->hosts[i].nenv && n < nev; e++)
        if (!strcmp(c->hosts[i].env[e].key, keys[k])) ev[n++] = c->hosts[i].env[e].rec;
    }
  }
  return is_diff;
}

void truncated_build(const struct explain_ctx *cx, const struct hits *h) {
  const struct rec *r = h->v[0];
  long got = 0, want = 0;
  text_long(text_after(r->text, "receiving "), &got);
  text_long(text_after(r->text, "instead of "), &want);
  char peer[80] = "", diff[768];
  text_token(text_after(r->text, "peer "), "", peer, sizeof(peer));
  const struct rec *ev[8] = {0};
  struct finding *f;
  if (size_settings_split(cx->corr, diff, sizeof(diff), ev, 8)) {
    if (!(f = finding_new(cx->out, "truncated", CONF_HIGH))) return;
    finding_cause(
      f,
      "a message of %ld bytes from %s arrived at %s for a receive of %ld bytes because the ranks differ in settings that change message sizes (%s)",
      got, peer, r->host, want, diff);
    finding_fix(
      f,
      "set NCCL_PROTO, NCCL_ALGO and the buffer sizes identically on every rank, or unset them everywhere");
  } else if (rules_version_split(cx->corr, diff, sizeof(diff)) &&
             rules_consequence(
               cx, "version-skew", r,
               "it shows as truncated messages (the versions size their messages differently)")) {
    for (size_t i = 1; i < h->n; i++) rules_consequence(cx, "version-skew", h->v[i], NULL);
    return;
  } else if (rules_version_split(cx->corr, diff, sizeof(diff))) {
    if (!(f = finding_new(cx->out, "truncated", CONF_HIGH))) return;
    finding_cause(
      f,
      "a message of %ld bytes from %s arrived at %s for a receive of %ld bytes because the hosts run different NCCL versions (%s), which size their messages differently",
      got, peer, r->host, want, diff);
    finding_fix(f, "install one NCCL version on every node");
    rules_add_version_evidence(cx->corr, f);
  } else {
    if (!(f = finding_new(cx->out, "truncated", CONF_MEDIUM))) return;
    finding_cause(
      f,
      "a message of %ld bytes from %s arrived at %s for a receive of %ld bytes: the ranks posted different sizes, because they run different collectives or shapes at that point, or differ in NCCL_PROTO, NCCL_ALGO or NCCL_BUFFSIZE (not shown in these logs)",
      got, peer, r->host, want);
    finding_fix(
      f,
      "set the same NCCL_PROTO, NCCL_ALGO and NCCL_BUFFSIZE on every rank (or none); check that every rank calls the same collectives with the same sizes (TORCH_DISTRIBUTED_DEBUG=DETAIL)");
  }
  for (int i = 0; i < 8; i++) finding_evidence(f, ev[i]);
  for (size_t i = 0; i < h->n; i++) finding_evidence(f, h->v[i]);
}

bool resource_match(const struct rec *r) {
  const char *t = r->text;
  return strstr(t, "Too many open files") ||
         (strstr(t, "ccept") && strstr(t, "Resource temporarily unavailable"));
}

void resource_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[3] = {0};
  for (size_t i = 0; i < h->n; i++) {
    const struct rec *r = h->v[i];
    int k = strstr(r->text, "open files in system")  ? 1
            : strstr(r->text, "Too many open files") ? 0
                                                     : 2;
    struct finding *f = groups[k];
    if (!f) {
      if (!(f = groups[k] = finding_new(cx->out, "resources", k == 2 ? CONF_MEDIUM : CONF_HIGH)))
        return;
      if (k == 0) {
        finding_cause(
          f,
          "processes ran out of file descriptors (EMFILE, Too many open files): NCCL opens sockets for every peer, channel and proxy connection, more with many ranks per node");
        finding_fix(
          f,
          "raise the per-process limit where the job starts: ulimit -n 1048576 (containers: --ulimit nofile=1048576:1048576; systemd units: LimitNOFILE)");
      } else if (k == 1) {
        finding_cause(
          f, "the system ran out of file descriptors (ENFILE, Too many open files in system)");
        finding_fix(
          f,
          "raise the system-wide limit: sysctl -w fs.file-max=4194304 (and fs.nr_open), and look for a process that leaks descriptors");
      } else {
        finding_cause(
          f,
          "NCCL's proxy service could not accept a local connection (EAGAIN, Resource temporarily unavailable): a resource ran out, usually file descriptors or the listen backlog with many ranks per node");
        finding_fix(
          f,
          "raise ulimit -n and net.core.somaxconn on the host; if it persists, check that every rank issues matching sends and receives and sets its CUDA device before creating the communicator");
      }
    }
    finding_evidence(f, r);
  }
}
