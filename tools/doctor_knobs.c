/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: NCCL_* values judged the way their readers parse
 * them. NCCL 2.28.9 reads an integer setting with strtoll(value, NULL, 0)
 * and keeps whatever number leads the text ("banana" is 0, "3x" is 3; only
 * an overflow falls back to its default, src/misc/param.cc); it compares
 * NCCL_SOCKET_FAMILY and NCCL_IB_ADDR_FAMILY with "AF_INET" and "AF_INET6"
 * exactly (anything else: any family, and AF_INET). This plugin refuses a
 * value outside its accepted set and uses its default. A value either of
 * them will not take as written is an error, named with what each does. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/knobs.h"
#include "tools/doctor.h"

static bool is_nccl_own(const struct knob_def *k) {
  return !strncmp(k->name, "NCCL_", 5) && strncmp(k->name, "NCCL_DIAG_", 10);
}

/* What NCCL does with text; false when it takes it as written. */
static bool nccl_reading(const struct knob_def *k, const char *text, char *buf, size_t cap) {
  buf[0] = 0;
  if (!is_nccl_own(k)) return false;
  if (k->type == KT_INT || k->type == KT_BOOL) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 0);
    if (errno) {
      snprintf(buf, cap, "NCCL 2.28.9 cannot read it and uses its own default");
      return true;
    }
    while (*end == ' ' || *end == '\t') end++;
    if (!*end) return false;
    snprintf(buf, cap, "NCCL 2.28.9 reads it as %lld", v);
    return true;
  }
  if (k->type != KT_ENUM || !strcmp(text, "AF_INET") || !strcmp(text, "AF_INET6")) return false;
  if (!strcmp(k->name, "NCCL_SOCKET_FAMILY"))
    snprintf(buf, cap, "NCCL ignores it and takes interfaces of any address family");
  else if (!strcmp(k->name, "NCCL_IB_ADDR_FAMILY"))
    snprintf(buf, cap, "NCCL's built-in IB transport uses AF_INET");
  else return false;
  return true;
}

/* "an integer in 1..31", "one of AF_INET, AF_INET6" */
static void accepted(const struct knob_def *k, char *buf, size_t cap) {
  if (k->type == KT_INT) {
    snprintf(buf, cap, "an integer in %" PRId64 "..%" PRId64, k->min, k->max);
    return;
  }
  if (k->type == KT_BOOL) {
    snprintf(buf, cap, "0 or 1");
    return;
  }
  int n = snprintf(buf, cap, "one of");
  for (int j = 0; k->choices && k->choices[j] && n > 0 && (size_t)n < cap; j++)
    n += snprintf(buf + n, cap - (size_t)n, "%s %s", j ? "," : "", k->choices[j]);
}

static void check_one(struct doctor *d, const struct knob_def *k, const char *text) {
  if (k->type == KT_STR) return;
  char why[160] = "", nccl[160], plugin[160] = "", ok[200], fix[300];
  bool is_bad = knob_parse(k, text, NULL, why, sizeof(why)) != 0;
  bool is_nccl_bad = nccl_reading(k, text, nccl, sizeof(nccl));
  if (!is_bad && !is_nccl_bad) return;
  if (is_bad && k->def) snprintf(plugin, sizeof(plugin), "this plugin uses its default %s", k->def);
  else if (is_bad) snprintf(plugin, sizeof(plugin), "this plugin treats it as unset");
  else snprintf(plugin, sizeof(plugin), "this plugin takes it as %s", text);
  accepted(k, ok, sizeof(ok));
  snprintf(fix, sizeof(fix), "export %s=<%s>, or unset it", k->name, ok);
  doctor_finding(d, TOPO_ERROR, fix, "%s=\"%s\" is not a valid value (%s): %s%s%s", k->name, text,
                 is_bad ? why : "NCCL does not accept it as written", is_nccl_bad ? nccl : "",
                 is_nccl_bad ? "; " : "", plugin);
}

/* A folder or file named by a setting that does not exist: everything
 * read from it would be missing, which reads as something else entirely
 * ("no RDMA driver loaded"). */
static void check_path(struct doctor *d, const char *name, const char *what) {
  const char *v = getenv(name);
  struct stat st;
  if (!v || !*v || !strcmp(v, "live") || !stat(v, &st)) return;
  char fix[300];
  snprintf(fix, sizeof(fix), "unset %s, or point it at %s", name, what);
  doctor_finding(d, TOPO_ERROR, fix,
                 "%s=%s does not exist (%s): the plugin reads %s from it, so it sees none", name, v,
                 strerror(errno), what);
}

/* NCCL's network settings this plugin ignores or clamps, where set: a note
 * with what happens instead (params lists them all). */
static void check_nccl_states(struct doctor *d) {
  int n;
  const struct nccl_knob *t = nccl_knobs(&n);
  for (int i = 0; i < n; i++) {
    const char *v = getenv(t[i].name);
    if (!v || !*v || t[i].state == NK_HONOURED) continue;
    doctor_finding(d, TOPO_NOTE, NULL, "%s=%s is %s by this plugin: %s", t[i].name, v,
                   nccl_knob_state_name(t[i].state), t[i].why);
  }
}

void doctor_check_knobs(struct doctor *d) {
  check_nccl_states(d);
  for (int i = 0; i < K_COUNT; i++) {
    const struct knob_def *k = knob_def((enum knob_id)i);
    const char *text = getenv(k->name);
    if (text && *text) check_one(d, k, text); /* NCCL and the plugin ignore an empty value */
  }
  check_path(d, "NCCL_DIAG_SYSFS_ROOT", "a copy of a host's /sys (RDMA devices, their ports)");
  check_path(d, "NCCL_DIAG_IFADDRS", "a file listing a host's interfaces");
}
