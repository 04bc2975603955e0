/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag explain: reads NCCL logs (the built-in IB and Socket
 * transports, NCCL 2.12 to 2.30, this plugin's NET/diag lines, whole job
 * logs with tracebacks) and names the cause and the fix of what failed.
 *
 * Pipeline: lines -> records (parse.c, input.c) -> per-host facts
 * (correlate.c) -> rules, one per failure signature (rules.c and the
 * rules_*.c files) -> findings (finding.c) -> text or JSON (report.c). */
#ifndef DIAG_TOOLS_EXPLAIN_EXPLAIN_H
#define DIAG_TOOLS_EXPLAIN_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define EXPLAIN_HOST_MAX 64
/* NCCL formats a log line into 1024 bytes; job output can be longer. */
#define EXPLAIN_LINE_MAX 4096

enum rec_level { REC_TEXT, REC_INFO, REC_WARN, REC_TRACE };

/* One kept line. NCCL prints "host:pid:tid [N]": N is the CUDA device of
 * the thread (what users often call the local rank). */
enum ts_kind { TS_NONE, TS_DATE, TS_MONTHDAY, TS_CLOCK };
/* The time at the start of a line, before NCCL's prefix (timestamp.c). */
enum ts_kind log_timestamp(const char *line, double *t);

struct rec {
  size_t idx; /* its index in the logset */
  int file, lineno;
  char host[EXPLAIN_HOST_MAX]; /* "" when neither the line nor its file names one */
  long pid, tid;
  int dev;      /* -1 when absent */
  char src[64]; /* "misc/ibvwrap.cc" of a WARN; "" when absent */
  int srcline;  /* 0 when absent */
  enum rec_level level;
  bool is_diag;         /* a NET/diag line of this plugin */
  bool has_prefix;      /* host:pid:tid was found */
  enum ts_kind ts_kind; /* the line's own time (timestamp.c); TS_NONE: none */
  double ts;            /* seconds, comparable between lines of one ts_kind */
  char *raw;            /* the line as read, owned */
  const char *text;     /* the message after the prefix (and after "NET/diag "), inside raw */
};

/* Parses one line (NUL-terminated, no newline) in place: r->raw = line. */
void explain_parse_line(char *line, struct rec *r);
/* Lines without an NCCL prefix are kept only when a rule could use them
 * (an error text after "Last error:", a traceback's NCCL error). */
bool explain_rec_relevant(const struct rec *r);

struct logfile {
  char *name;
  char host[EXPLAIN_HOST_MAX]; /* the only host of its prefixed lines, or "" */
  long nlines;
};

struct logset {
  struct logfile *files;
  int nfiles;
  struct rec *recs;
  size_t nrecs, cap;
  size_t bytes;   /* text kept */
  bool is_capped; /* stopped keeping lines at the memory cap */
  /* Lines that say NCCL INFO or WARN in a form the reader does not know:
   * how many, and where the first one is. */
  long nunread;
  int unread_file, unread_lineno;
  char unread_first[160];
  /* Hosts seen in INFO lines that carry no state (a hash set), and how
   * many such lines were counted but not kept (input_inert.c). */
  char (*hostset)[EXPLAIN_HOST_MAX];
  size_t nhostset, caphostset;
  long ninert;
  /* The previous and this line as read: a terminal's wrap joins them. */
  size_t prev_len, cur_len;
  bool is_prev_last, is_cur_last; /* the line is (part of) the last kept record */
};

/* An INFO line no rule reads, of a host already known: counted and
 * dropped (true). */
bool logset_drop_inert(struct logset *ls, const struct rec *r);
/* 0, or an errno with the reason in why (unreadable, a directory). */
int logset_read_path(struct logset *ls, const char *path, char *why, size_t cap);
/* Adds a buffer as one file (the fuzz target and the unit tests use it). */
int logset_read_buffer(struct logset *ls, const char *name, const char *data, size_t len);
/* After the last file: lines without a host take their file's only host. */
void logset_finish(struct logset *ls);
/* Hosts that share a hostname but bootstrap from different addresses
 * become "name/address" (logset_finish calls it). */
void logset_split_hosts(struct logset *ls);
void logset_free(struct logset *ls);
/* "node-a.log:12" */
void rec_where(const struct logset *ls, const struct rec *r, char *buf, size_t cap);

/* --- findings ----------------------------------------------------------- */

enum confidence { CONF_LOW, CONF_MEDIUM, CONF_HIGH };

#define FINDING_EVIDENCE_MAX 6
#define FINDING_HOSTS_MAX 24
#define FINDING_EXPORTS_MAX 3

struct finding {
  const char *rule;
  enum confidence conf; /* CONF_LOW: no confident cause (what is known, what to run) */
  char cause[1200];
  char fix[1200];
  char exports[FINDING_EXPORTS_MAX][160]; /* "NCCL_CROSS_NIC=0" */
  int nexports;
  const struct rec *ev[FINDING_EVIDENCE_MAX];
  int nev;
  long nev_more; /* matching lines not quoted */
  char hosts[FINDING_HOSTS_MAX][EXPLAIN_HOST_MAX];
  int nhosts, nhosts_more;
  const struct rec **covered; /* every line this finding accounts for */
  size_t ncovered, capcovered;
  int order; /* rule table index, for a stable sort */
  struct findings *set;
};

/* Findings live at fixed addresses: a rule keeps pointers to its groups
 * while it adds more. */
struct findings {
  struct finding **v;
  int n, cap;
  struct finding **cover_of; /* by record index: the first finding that accounts for it */
  size_t ncover_of;
};

struct finding *finding_new(struct findings *fs, const char *rule, enum confidence conf);
void finding_cause(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void finding_fix(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void finding_export(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Quotes the line (up to FINDING_EVIDENCE_MAX, one per host first) and
 * names its host. */
void finding_evidence(struct finding *f, const struct rec *r);
void finding_host(struct finding *f, const char *host);
/* Control bytes become '?' (the fields quote untrusted log text). */
void finding_strip_controls(char *s);
/* The number of hosts among the finding's lines. */
int finding_count_hosts(const struct finding *f);
/* The finding that accounts for this line first, or NULL. */
struct finding *findings_covering(const struct findings *fs, const struct rec *r);
void findings_sort(struct findings *fs);
void findings_free(struct findings *fs);

/* --- output ------------------------------------------------------------- */

struct corr;
void report_text(FILE *out, const struct logset *ls, const struct corr *c,
                 const struct findings *fs, bool all_evidence);
void report_json(FILE *out, const struct logset *ls, const struct corr *c,
                 const struct findings *fs);

/* Runs every rule over a read logset: 0 or ENOMEM. */
int explain_analyse(const struct logset *ls, struct corr *c, struct findings *fs);

#endif
