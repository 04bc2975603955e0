/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/explain/facts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/errno_names.h"
#include "common/strutil.h"

const char *text_after(const char *s, const char *needle) {
  const char *p = s ? strstr(s, needle) : NULL;
  return p ? p + strlen(needle) : NULL;
}

size_t text_token(const char *p, const char *stops, char *out, size_t cap) {
  size_t n = 0;
  if (!cap) return 0;
  out[0] = 0;
  if (!p) return 0;
  while (p[n] && p[n] != ' ' && p[n] != '\t' && !strchr(stops, p[n])) n++;
  if (n >= cap) n = cap - 1;
  memcpy(out, p, n);
  out[n] = 0;
  return n;
}

bool text_long(const char *p, long *v) {
  if (!p) return false;
  bool is_neg = *p == '-';
  if (is_neg) p++;
  if (*p < '0' || *p > '9') return false;
  long n = 0;
  for (int k = 0; *p >= '0' && *p <= '9' && k < 18; p++, k++) n = n * 10 + (*p - '0');
  *v = is_neg ? -n : n;
  return true;
}

/* An errno NCCL's network code reports, by name or in glibc's wording (the
 * logs come from glibc hosts): common/errno_names.c. */
int text_errno(const char *p) {
  if (!p) return 0;
  /* "Too many open files in system" before "Too many open files". */
  int best = 0;
  size_t best_len = 0;
  for (size_t i = 0; i < errno_nnames; i++) {
    const struct errno_name *e = &errno_names[i];
    size_t n = strlen(e->words), m = strlen(e->name);
    if (!strncmp(p, e->words, n) && n > best_len) best = e->err, best_len = n;
    if (!strncmp(p, e->name, m) && (p[m] < 'A' || p[m] > 'Z') && m > best_len)
      best = e->err, best_len = m;
  }
  return best;
}

const char *errno_label(int err, char *buf, size_t cap) {
  const struct errno_name *e = errno_find(err);
  if (e) return e->name;
  snprintf(buf, cap, "errno %d", err);
  return buf;
}

const char *errno_words(int err) {
  const struct errno_name *e = errno_find(err);
  return e ? e->words : "";
}

void text_ip_of(const char *addr, char *ip, size_t cap) {
  if (!cap) return;
  ip[0] = 0;
  if (!addr) return;
  if (*addr == '[') addr++;
  size_t n = 0;
  while (addr[n] && !strchr("<]%> ,", addr[n])) n++;
  if (n >= cap) n = cap - 1;
  memcpy(ip, addr, n);
  ip[n] = 0;
}

void text_clean(const char *in, char *out, size_t cap) {
  size_t o = 0;
  if (!cap) return;
  for (const unsigned char *p = (const unsigned char *)in; *p && o + 1 < cap;) {
    int n = utf8_len(p);
    if (n == 1 && (*p < 0x20 || *p == 0x7f)) n = 0;
    if (!n) {
      out[o++] = *p == '\t' ? ' ' : '?';
      p++;
      continue;
    }
    if (o + (size_t)n >= cap) break;
    memcpy(out + o, p, (size_t)n);
    o += (size_t)n, p += n;
  }
  out[o] = 0;
}

bool log_gid_parse(const char *s, struct log_gid *g) {
  char tok[64];
  if (!text_token(s, ",;)(<>", tok, sizeof(tok))) return false;
  return inet_pton(AF_INET6, tok, g->b) == 1;
}

bool log_gid_after(const char *s, const char *label, struct log_gid *g) {
  for (const char *p = s; p && (p = strstr(p, label)); p++)
    if (log_gid_parse(p + strlen(label), g)) return true;
  return false;
}

static bool hex_word(const char **p, unsigned long long *v) {
  unsigned long long n = 0;
  int k = 0;
  for (;; (*p)++, k++) {
    char c = **p;
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) break;
    if (k == 16) return false;
    n = n << 4 | (unsigned)d;
  }
  *v = n;
  return k > 0;
}

bool log_gid_parse_nccl(const char *s, struct log_gid *g) {
  unsigned long long spn, iid;
  if (*s == '(') s++;
  if (!hex_word(&s, &spn) || *s++ != '/' || !hex_word(&s, &iid)) return false;
  for (int i = 0; i < 8; i++) g->b[i] = (unsigned char)(spn >> (8 * i));
  for (int i = 0; i < 8; i++) g->b[8 + i] = (unsigned char)(iid >> (8 * i));
  return true;
}

bool log_gid_is_zero(const struct log_gid *g) {
  for (int i = 0; i < 16; i++)
    if (g->b[i]) return false;
  return true;
}

bool log_gid_is_link_local(const struct log_gid *g) {
  static const unsigned char ll[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};
  return !memcmp(g->b, ll, 8);
}

bool log_gid_is_v4(const struct log_gid *g) {
  static const unsigned char v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return !memcmp(g->b, v4, 12);
}

void log_gid_text(const struct log_gid *g, char *buf, size_t cap) {
  char t[INET6_ADDRSTRLEN];
  if (!inet_ntop(AF_INET6, g->b, t, sizeof(t))) t[0] = 0;
  scopy(buf, cap, t);
}

void log_gid_subnet(const struct log_gid *g, char *buf, size_t cap) {
  if (log_gid_is_v4(g)) {
    snprintf(buf, cap, "%u.%u.%u.0/24", g->b[12], g->b[13], g->b[14]);
    return;
  }
  struct log_gid p = *g;
  memset(p.b + 8, 0, 8);
  char t[INET6_ADDRSTRLEN];
  log_gid_text(&p, t, sizeof(t));
  snprintf(buf, cap, "%s/64", t);
}

bool log_gid_same_subnet(const struct log_gid *a, const struct log_gid *b) {
  if (log_gid_is_v4(a) != log_gid_is_v4(b)) return false;
  return log_gid_is_v4(a) ? !memcmp(a->b, b->b, 15) : !memcmp(a->b, b->b, 8);
}

bool log_gid_v4(const struct log_gid *g, char *ip, size_t cap) {
  if (!log_gid_is_v4(g)) return false;
  snprintf(ip, cap, "%u.%u.%u.%u", g->b[12], g->b[13], g->b[14], g->b[15]);
  return true;
}
