/* SPDX-License-Identifier: Apache-2.0 */
/* The DCB state of a fixture host: the text file class/net/<if>/x-diag-dcb
 * that stands in for DCB netlink (its format in topo/qos.h). Parsed with
 * every value range-checked: the file is hand-written. */
#include <errno.h>
#include <linux/dcbnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/qos.h"

static const char *const tsa_names[] = {"strict", "cbs", "ets"};

static int parse_tsa(const char *w, uint8_t *out) {
  for (size_t i = 0; i < sizeof(tsa_names) / sizeof(tsa_names[0]); i++)
    if (!strcmp(w, tsa_names[i])) return *out = (uint8_t)i, 0;
  if (!strcmp(w, "vendor")) return *out = QOS_TSA_VENDOR, 0;
  return EINVAL;
}

/* "n n n ..." of at most QOS_PRIOS values, each 0..max. */
static int parse_row(char *rest, uint8_t *row, long max) {
  int n = 0;
  for (char *w = strtok(rest, " \t"); w; w = strtok(NULL, " \t")) {
    char *end;
    long v = strtol(w, &end, 10);
    if (*end || v < 0 || v > max || n == QOS_PRIOS) return EINVAL;
    row[n++] = (uint8_t)v;
  }
  return 0;
}

static int parse_pfc(char *rest, struct topo_qos *q) {
  q->has_pfc = true;
  q->pfc_en = 0;
  for (char *w = strtok(rest, " \t"); w; w = strtok(NULL, " \t")) {
    char *end;
    long v = strtol(w, &end, 10);
    if (*end || v < 0 || v >= QOS_PRIOS) return EINVAL;
    q->pfc_en |= (uint8_t)(1u << v);
  }
  return 0;
}

static int parse_app(char *rest, struct topo_qos *q) {
  for (char *w = strtok(rest, " \t"); w; w = strtok(NULL, " \t")) {
    char *end;
    long dscp = strtol(w, &end, 10);
    if (*end != ':' || dscp < 0 || dscp >= QOS_DSCPS) return EINVAL;
    long prio = strtol(end + 1, &end, 10);
    if (*end || prio < 0 || prio >= QOS_PRIOS) return EINVAL;
    q->dscp_prio[dscp] = (uint8_t)prio;
    q->dscp_set |= 1ull << dscp;
  }
  return 0;
}

static const struct {
  const char *word;
  int flag;
} dcbx_words[] = {{"host", DCB_CAP_DCBX_HOST},
                  {"lld-managed", DCB_CAP_DCBX_LLD_MANAGED},
                  {"cee", DCB_CAP_DCBX_VER_CEE},
                  {"ieee", DCB_CAP_DCBX_VER_IEEE},
                  {"static", DCB_CAP_DCBX_STATIC}};

static int parse_dcbx(char *rest, struct topo_qos *q) {
  q->dcbx = 0;
  for (char *w = strtok(rest, " \t"); w; w = strtok(NULL, " \t")) {
    size_t i = 0, n = sizeof(dcbx_words) / sizeof(dcbx_words[0]);
    while (i < n && strcmp(w, dcbx_words[i].word)) i++;
    if (i == n) return EINVAL;
    q->dcbx |= dcbx_words[i].flag;
  }
  return 0;
}

void qos_dcbx_str(int dcbx, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; dcbx >= 0 && i < sizeof(dcbx_words) / sizeof(dcbx_words[0]) && o < cap; i++)
    if (dcbx & dcbx_words[i].flag)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", dcbx_words[i].word);
}

static int parse_line(char *line, struct topo_qos *q) {
  char *rest = line + strcspn(line, " \t");
  if (*rest) *rest++ = 0;
  if (!strcmp(line, "pfc-en")) return parse_pfc(rest, q);
  if (!strcmp(line, "app-dscp")) return parse_app(rest, q);
  if (!strcmp(line, "dcbx")) return parse_dcbx(rest, q);
  if (!strcmp(line, "prio-tc")) return q->has_ets = true, parse_row(rest, q->prio_tc, 7);
  if (!strcmp(line, "tc-bw")) return q->has_ets = true, parse_row(rest, q->tc_bw, 100);
  if (strcmp(line, "tc-tsa")) return EINVAL;
  q->has_ets = true;
  int n = 0;
  for (char *w = strtok(rest, " \t"); w; w = strtok(NULL, " \t"))
    if (n == QOS_PRIOS || parse_tsa(w, &q->tc_tsa[n++])) return EINVAL;
  return 0;
}

int topo_qos_text_parse(const char *text, struct topo_qos *q, char *why, size_t cap) {
  char buf[2048];
  scopy(buf, sizeof(buf), text);
  int lineno = 0;
  for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    line[strcspn(line, "#")] = 0;
    while (*line == ' ' || *line == '\t') line++;
    if (!*line) continue;
    if (!strcmp(line, "none")) return EOPNOTSUPP;
    char copy[512];
    scopy(copy, sizeof(copy), line);
    if (parse_line(line, q)) {
      snprintf(why, cap, "line %d \"%s\" is not a DCB setting this reader knows", lineno, copy);
      return EINVAL;
    }
  }
  return 0;
}
