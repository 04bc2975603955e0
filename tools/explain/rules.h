/* SPDX-License-Identifier: Apache-2.0 */
/* The knowledge base: one rule per failure signature. A rule's match picks
 * the lines that are evidence for it (NULL: it reads the per-host facts
 * only); its build turns all of them, across files and hosts, into
 * findings with cause, fix and confidence. The table order is the order of
 * precedence: root causes before their consequences. */
#ifndef DIAG_TOOLS_EXPLAIN_RULES_H
#define DIAG_TOOLS_EXPLAIN_RULES_H

#include "tools/explain/correlate.h"
#include "tools/explain/explain.h"

struct hits {
  const struct rec **v;
  size_t n, cap;
};

struct explain_ctx {
  const struct logset *ls;
  const struct corr *corr;
  struct findings *out;
};

struct rule {
  const char *id;
  const char *signature; /* what it recognises, in words */
  bool (*match)(const struct rec *r);
  void (*build)(const struct explain_ctx *cx, const struct hits *h);
  const char *versions; /* the NCCL releases whose messages it reads */
};

extern const struct rule explain_rules[];
extern const size_t explain_nrules;
const struct rule *explain_rule(const char *id);

/* --- parsed failure lines, shared by the rules and the unit tests ------- */

/* A failed ibv_modify_qp: 2.24+ names dev, states and GIDs; 2.19-2.23 say
 * "failed with error <text> errno <n>"; up to 2.18 only the text. */
struct mqp {
  int err;
  bool is_retry; /* an INFO "retrying k/n" line, not the final failure */
  char dev[32];
  int port;
  char cur[12], next[12]; /* "" when not printed */
  int gid_index;          /* -1: not printed */
  struct log_gid lgid, rgid;
  bool has_lgid, has_rgid;
};
bool mqp_parse(const char *text, struct mqp *m);

/* A completion with error, every format from "with error 12, opcode 0"
 * (2.12-2.19) to "status=IBV_WC_RETRY_EXC_ERR(12) opcode=..." (2.28+). */
struct wcerr {
  int status;
  long vendor;
  char peer[64]; /* "10.0.0.2<4242>" */
  char hca[32];
  struct log_gid lgid, rgid;
  bool has_lgid, has_rgid;
};
bool wcerr_parse(const char *text, struct wcerr *w);

/* A socket connect that failed or is retried (errno), every 2.12-2.30 form. */
struct connfail {
  int err;
  char addr[80]; /* "10.0.0.2<4242>"; "" when the message has none */
  bool is_retry;
};
bool connfail_parse(const char *text, struct connfail *c);

/* --- helpers for rule builders ------------------------------------------ */

/* The hosts' values through get() (NULL where unknown), split into the
 * majority and the odd ones (corr_split); the number of distinct values. */
int rules_split_by(const struct corr *c, const char *(*get)(const struct corr_host *), bool *is_odd,
                   char *buf, size_t cap);
/* A host's NCCL version; NULL when its log has none. */
const char *rules_version_of(const struct corr_host *h);
/* "2.19.3" is older than major.minor; false when unknown. */
bool rules_version_before(const char *version, int major, int minor);
/* The hosts' NCCL versions differ (text in buf); false when they agree. */
bool rules_version_split(const struct corr *c, char *buf, size_t cap);
/* Adds the version lines of every host to f (as evidence of a skew). */
void rules_add_version_evidence(const struct corr *c, struct finding *f);
/* When an earlier rule's finding is the root of this line (the version
 * skew behind a garbage address): adds the line to it with a note on how it
 * shows, and returns true; false when that rule found nothing. */
bool rules_consequence(const struct explain_ctx *cx, const char *rule, const struct rec *r,
                       const char *note);
/* An interface other hosts cannot reach: loopback, a container bridge or
 * veth, a link-local address. */
bool rules_iface_is_local(const char *iface, const char *ip);
/* The interface the other hosts use for bootstrap, when they agree. */
const char *rules_common_iface(const struct corr *c, const char *except_host);

/* --- the rules, by area (rules_*.c) --------------------------------------- */

bool waitfor_match(const struct rec *r);
void waitfor_build(const struct explain_ctx *cx, const struct hits *h);
/* The plugin's slow-link lines: one finding per path, from either end. */
bool slow_match(const struct rec *r);
void slow_build(const struct explain_ctx *cx, const struct hits *h);

bool gid_match(const struct rec *r);
void gid_build(const struct explain_ctx *cx, const struct hits *h);
bool rtr_match(const struct rec *r);
void rtr_build(const struct explain_ctx *cx, const struct hits *h);
bool wc_match(const struct rec *r);
void wc_build(const struct explain_ctx *cx, const struct hits *h);
bool async_match(const struct rec *r);
bool failover_match(const struct rec *r);
/* The plugin's port-down and port-return lines and the failures they caused. */
bool flap_match(const struct rec *r);
void flap_build(const struct explain_ctx *cx, const struct hits *h);
void failover_build(const struct explain_ctx *cx, const struct hits *h);
void async_build(const struct explain_ctx *cx, const struct hits *h);
void mtu_build(const struct explain_ctx *cx, const struct hits *h);
/* A completion error that follows a port error on its host or its peer's:
 * joins that finding (true), or false. */
bool async_port_consequence(const struct explain_ctx *cx, const struct rec *r,
                            const char *peer_host);

bool gdr_match(const struct rec *r);
void gdr_build(const struct explain_ctx *cx, const struct hits *h);
bool ibfallback_match(const struct rec *r);
void ibfallback_build(const struct explain_ctx *cx, const struct hits *h);
void devset_build(const struct explain_ctx *cx, const struct hits *h);

bool ifname_match(const struct rec *r);
void ifname_build(const struct explain_ctx *cx, const struct hits *h);
void bootif_build(const struct explain_ctx *cx, const struct hits *h);
bool family_match(const struct rec *r);
void family_build(const struct explain_ctx *cx, const struct hits *h);

bool connect_match(const struct rec *r);
void connect_build(const struct explain_ctx *cx, const struct hits *h);
bool truncated_match(const struct rec *r);
void truncated_build(const struct explain_ctx *cx, const struct hits *h);
bool resource_match(const struct rec *r);
void resource_build(const struct explain_ctx *cx, const struct hits *h);
bool closed_match(const struct rec *r);
void closed_build(const struct explain_ctx *cx, const struct hits *h);

bool shm_match(const struct rec *r);
void shm_build(const struct explain_ctx *cx, const struct hits *h);
bool memlock_match(const struct rec *r);
void memlock_build(const struct explain_ctx *cx, const struct hits *h);
bool rank_match(const struct rec *r);
void rank_build(const struct explain_ctx *cx, const struct hits *h);
bool wrongtype_match(const struct rec *r);
void wrongtype_build(const struct explain_ctx *cx, const struct hits *h);
bool cuda_match(const struct rec *r);
void cuda_build(const struct explain_ctx *cx, const struct hits *h);
/* Adds to f's fix what CUDA's catalogue says of the error the line names. */
void cuda_hint(struct finding *f, const struct rec *first);
bool sockcreate_match(const struct rec *r);
void sockcreate_build(const struct explain_ctx *cx, const struct hits *h);
bool netplug_match(const struct rec *r);
void netplug_build(const struct explain_ctx *cx, const struct hits *h);
bool ofi_match(const struct rec *r);
void ofi_build(const struct explain_ctx *cx, const struct hits *h);
bool oldgid_match(const struct rec *r);
void oldgid_build(const struct explain_ctx *cx, const struct hits *h);

void version_build(const struct explain_ctx *cx, const struct hits *h);
void plugin_build(const struct explain_ctx *cx, const struct hits *h);
void settings_build(const struct explain_ctx *cx, const struct hits *h);
void network_build(const struct explain_ctx *cx, const struct hits *h);
bool repair_match(const struct rec *r);
void repair_build(const struct explain_ctx *cx, const struct hits *h);
bool diag_match(const struct rec *r);
void diag_build(const struct explain_ctx *cx, const struct hits *h);
/* PyTorch's flight recorder analyzer: the rank behind, the collective that diverged. */
bool frtrace_relevant(const char *text);
bool frtrace_match(const struct rec *r);
void frtrace_build(const struct explain_ctx *cx, const struct hits *h);
/* NCCL's RAS client report (ncclras, 2.24+): dead processes, missing ranks, ranks behind. */
bool ras_relevant(const char *text);
bool ras_match(const struct rec *r);
void ras_build(const struct explain_ctx *cx, const struct hits *h);
/* PyTorch's dump signal lines: the rank whose last enqueued collective is behind. */
bool behind_match(const struct rec *r);
void behind_build(const struct explain_ctx *cx, const struct hits *h);
bool watchdog_match(const struct rec *r);
void watchdog_build(const struct explain_ctx *cx, const struct hits *h);
/* A WARN, an NCCL error text, or NCCL's return trace from a failed init
 * (rules_nccl_error.c). */
bool unknown_match(const struct rec *r);
bool rules_failed_init_trace(const char *text);
void unknown_build(const struct explain_ctx *cx, const struct hits *h);

/* Launchers: torchrun, Slurm, Open MPI, Ray, a process's crash report. */
bool launch_match(const struct rec *r);
void launch_build(const struct explain_ctx *cx, const struct hits *h);
/* A launcher line, or a field line of a launcher's block (kept by the reader). */
bool launch_relevant(const char *text);

/* nccl-tests: a table row, its wrong values and bus bandwidths (GB/s). */
struct nt_row {
  double bytes;
  double busbw[2]; /* out of place, in place */
  long wrong;
};
bool nccltests_row(const char *text, struct nt_row *row);
bool nccltests_relevant(const char *text);
bool nccltests_match(const struct rec *r);
void nccltests_build(const struct explain_ctx *cx, const struct hits *h);
struct nt_summary {
  bool has;
  long rows, wrong;
  double avg_busbw; /* -1: not printed */
  double max_busbw;
};
bool nccltests_summary(const struct logset *ls, struct nt_summary *s);
/* The links a multi-host run had (NCCL's NET speed lines): the most any
 * host has together, in GB/s; false with fewer than two hosts or none. */
struct nt_link {
  int hosts, links;
  double gbs;
  bool is_ib;
};
bool nccltests_link(const struct logset *ls, struct nt_link *l);
/* A line of NCCL, CUDA, nccl-tests or a launcher: what makes the input
 * something this tool reads (exit 2 only when no line is). */
bool explain_rec_known(const struct rec *r);

#endif
