/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: runs the plugin's topology code on this host (or a
 * fixture host under NCCL_DIAG_SYSFS_ROOT) and reports what NCCL should
 * use, what it should not and why, and what to export.
 *
 * Exit status: 0, 1 when something will break a multi-node run (an
 * NCCL_IB_HCA entry that matches nothing, a forced GID index that is
 * link-local, empty or missing, ports of two planes or link layers forced
 * together, no usable socket interface, a P_Key index without a key, RDMA
 * ports that cannot be opened here, a main interface with only a loopback or
 * link-local address, NCCL's own bootstrap choice on one), 2 on a usage
 * error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/version.h"
#include "tools/doctor.h"
#include "tools/doctor_plugin.h"
#include "tools/json_out.h"
#include "tools/opt.h"
#include "tools/tool.h"
#include "topo/gid.h"

extern char **environ;

static void env_add(struct doctor_env *e, const char *entry) {
  const char *eq = strchr(entry, '=');
  if (strncmp(entry, "NCCL_", 5) || !eq || e->nvar == DOCTOR_MAX_VARS) return;
  struct doctor_var *v = &e->vars[e->nvar];
  if ((size_t)(eq - entry) >= sizeof(v->name)) return;
  snprintf(v->name, sizeof(v->name), "%.*s", (int)(eq - entry), entry);
  scopy(v->value, sizeof(v->value), eq + 1);
  e->nvar++;
}

static void env_of_process(struct doctor_env *e) {
  e->nvar = 0;
  for (char **p = environ; p && *p; p++) env_add(e, *p);
}

/* /proc/1/environ: NUL-separated (a fixture's copy may use newlines). */
static int env_of_file(struct doctor_env *e, const char *path, char *why, size_t cap) {
  FILE *f = fopen(path, "re");
  if (!f) {
    int err = errno;
    snprintf(why, cap, "%s cannot be read: %s%s", path, strerror(err),
             err != EACCES ? ""
             : geteuid()   ? " (run as root to compare with PID 1's environment)"
                           : " (even as root: this container or a security module hides PID 1)");
    return err;
  }
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\n') buf[i] = 0;
  for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
    if (buf[i]) env_add(e, buf + i);
  return 0;
}

/* --pid1: the job PID 1 starts sees PID 1's NCCL_* values (a managed
 * platform may inject them there, unlike in a login shell): evaluate with
 * them. */
static void apply_pid1(const struct doctor_env *pid1) {
  for (int i = 0; i < pid1->nvar; i++) setenv(pid1->vars[i].name, pid1->vars[i].value, 1);
}

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-net-diag doctor [--json[=FILE]] [--pid1] [--pid1-environ FILE] [-v]\n"
             "  inspect this host (or another one from a copy of its sysfs: NCCL_DIAG_SYSFS_ROOT\n"
             "  and HWLOC_XMLFILE name it):\n"
             "  RDMA ports and GIDs, GPU-to-NIC distances, socket interfaces, NCCL_* settings of\n"
             "  this process and of PID 1, and the exports to use\n"
             "  --json[=FILE]        the same content as one JSON document, on stdout instead of\n"
             "                       the text, or in FILE ('-' is stdout)\n"
             "  --pid1               evaluate with PID 1's NCCL_* values (what a job started by\n"
             "                       PID 1 sees) instead of this shell's\n"
             "  --pid1-environ FILE  read PID 1's environment from FILE (default /proc/1/environ)\n"
             "  -v                   the plugin's log lines (INFO, WARN) on stderr\n"
             "  RDMA ports of this host are opened through NCCL_DIAG_IBVERBS_LIB (default\n"
             "  libibverbs.so.1), as the plugin does\n"
             "exit status: 0 usable, 1 something will break a multi-node run (RDMA ports that\n"
             "cannot be opened here included), 2 usage\n");
}

/* Discovery or the decisions failed: the reason on stderr and, with
 * --json, as a document of its own schema (a consumer always gets JSON). */
static int failed(const struct doctor *d, struct json_dest *json, const char *stage,
                  const char *why) {
  fprintf(stderr, "nccl-net-diag doctor: %s\n", why);
  if (!json->f) return 1;
  struct json w;
  json_begin(&w, json->f);
  json_str(&w, "schema", "nccl-net-diag.doctor-failed/1");
  json_str(&w, "tool", "nccl-net-diag doctor");
  json_str(&w, "version", DIAG_VERSION);
  json_str(&w, "host", d->hostname);
  json_str(&w, "stage", stage);
  json_str(&w, "error", why);
  json_int(&w, "exit_status", 1);
  json_end(&w);
  return 1;
}

static int run(struct doctor *d, struct json_dest *json) {
  struct topo_host h;
  struct topo_choice c;
  char why[1200];
  int r = topo_discover(&h, TOPO_WANT_GPUS);
  if (r) {
    snprintf(why, sizeof(why),
             "this host's topology could not be discovered (sysfs root %s, interfaces from %s): "
             "%s",
             h.sysfs_root, h.ifs.source[0] ? h.ifs.source : knob_str(K_DIAG_IFADDRS), strerror(r));
    topo_host_free(&h);
    return failed(d, json, "discovery", why);
  }
  if (topo_decide(&h, NULL, &c)) {
    snprintf(why, sizeof(why), "%s", c.why_none);
    topo_host_free(&h);
    return failed(d, json, "decision", why);
  }
  if (tool_verbose) topo_report(&h, &c); /* -v: the lines the plugin logs */
  d->h = &h;
  d->c = &c;
  doctor_probe(d);
  doctor_check_knobs(d);
  doctor_check_plugin(d);
  doctor_check_names(d);
  doctor_check_qos(d);
  d->exit_status = doctor_count(d, TOPO_ERROR) ? 1 : 0;
  if (json->f) doctor_print_json(json->f, d);
  if (!json->f || json->f != stdout) doctor_print_text(stdout, d);
  doctor_qos_free(d);
  topo_choice_free(&c);
  topo_host_free(&h);
  return d->exit_status;
}

int cmd_doctor(int argc, char **argv) {
  static struct doctor d;
  struct json_dest json = {0};
  char why[512];
  bool is_pid1_used = false;
  const char *pid1_path = "/proc/1/environ";
  enum { O_JSON = 1, O_PID1, O_PID1_ENVIRON, O_VERBOSE, O_HELP };
  static const struct tool_opt opts[] = {{"json", 0, TOOL_OPT_OPTIONAL, O_JSON},
                                         {"pid1", 0, TOOL_OPT_FLAG, O_PID1},
                                         {"pid1-environ", 0, TOOL_OPT_VALUE, O_PID1_ENVIRON},
                                         {"verbose", 'v', TOOL_OPT_FLAG, O_VERBOSE},
                                         {"help", 'h', TOOL_OPT_FLAG, O_HELP},
                                         {NULL, 0, 0, 0}};
  struct tool_opts p;
  if (tool_opts_begin(&p, argc, argv, opts)) return tool_usage_error("doctor", "out of memory");
  int id;
  const char *v;
  while ((id = tool_opt_next(&p, &v, why, sizeof(why))) > 0) {
    if (id == O_JSON && tool_opt_json(&json, v, why, sizeof(why))) break;
    if (id == O_PID1) is_pid1_used = true;
    if (id == O_PID1_ENVIRON) pid1_path = v;
    if (id == O_VERBOSE) tool_verbose = 1;
    if (id == O_HELP) break;
  }
  if (id == TOOL_OPT_END) id = tool_opts_no_operands(&p, why, sizeof(why));
  tool_opts_end(&p);
  if (id == O_HELP) return usage(stdout), 0;
  if (id) return tool_usage_error("doctor", "%s", why);
  memset(&d, 0, sizeof(d));
  gethostname(d.hostname, sizeof(d.hostname) - 1);
  scopy(d.pid1_src, sizeof(d.pid1_src), pid1_path);
  d.has_pid1 = env_of_file(&d.pid1, pid1_path, d.pid1_why, sizeof(d.pid1_why)) == 0;
  env_of_process(&d.self);
  if (is_pid1_used && !d.has_pid1) {
    fprintf(stderr, "nccl-net-diag doctor: --pid1: %s\n", d.pid1_why);
    return 2;
  }
  if (is_pid1_used) {
    apply_pid1(&d.pid1);
    d.is_pid1_applied = true;
  }
  log_set_stderr_level(tool_verbose ? LOG_LEVEL_INFO : LOG_LEVEL_WARN);
  knob_load(1);
  if (json_dest_open(&json, why, sizeof(why))) return tool_usage_error("doctor", "%s", why);
  int rc = run(&d, &json);
  if (json_dest_close(&json, why, sizeof(why))) {
    fprintf(stderr, "nccl-net-diag doctor: %s\n", why);
    rc = rc ? rc : 1;
  }
  return rc;
}
