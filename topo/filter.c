/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_field(const char *s, size_t len, int *out) {
  char buf[16];
  if (len == 0) {
    *out = -1;
    return 0;
  }
  if (len >= sizeof(buf)) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno || *end || v < 0 || v > 65535) return -1;
  *out = (int)v;
  return 0;
}

static int parse_entry(const char *s, size_t len, struct filt_entry *e, char *why, int whylen) {
  const char *fields[4] = {s, NULL, NULL, NULL};
  size_t flen[4] = {len, 0, 0, 0};
  int nf = 1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != ':') continue;
    if (nf == 4) {
      snprintf(why, whylen, "entry '%.*s' has more than four ':' fields (name:port:rail:plane)",
               (int)len, s);
      return -1;
    }
    flen[nf - 1] = (size_t)(s + i - fields[nf - 1]);
    fields[nf] = s + i + 1;
    flen[nf] = (size_t)(s + len - fields[nf]);
    nf++;
  }
  if (flen[0] >= FILT_NAME_MAX) {
    snprintf(why, whylen, "name '%.*s' is longer than %d characters", (int)flen[0], fields[0],
             FILT_NAME_MAX - 1);
    return -1;
  }
  memset(e, 0, sizeof(*e));
  memcpy(e->name, fields[0], flen[0]);
  int *outs[3] = {&e->port, &e->rail, &e->plane};
  static const char *const what[3] = {"port", "rail", "plane"};
  for (int i = 0; i < 3; i++) {
    if (i + 1 >= nf) {
      *outs[i] = -1;
      continue;
    }
    if (parse_field(fields[i + 1], flen[i + 1], outs[i])) {
      snprintf(why, whylen, "%s '%.*s' in entry '%.*s' is not a number", what[i], (int)flen[i + 1],
               fields[i + 1], (int)len, s);
      return -1;
    }
  }
  return 0;
}

int filt_parse(const char *text, struct filt *f, char *why, int whylen) {
  memset(f, 0, sizeof(*f));
  if (!text) return 0;
  const char *p = text;
  while (*p == ' ') p++;
  if (*p == '^') {
    f->exclude = 1;
    p++;
  }
  if (*p == '=') {
    f->exact = 1;
    p++;
  }
  while (*p) {
    size_t len = strcspn(p, ",");
    /* Surrounding blanks are a typo, not part of a device name. */
    const char *s = p;
    size_t l = len;
    while (l && *s == ' ') s++, l--;
    while (l && s[l - 1] == ' ') l--;
    if (l) {
      if (f->n == FILT_MAX_ENTRIES) {
        snprintf(why, whylen, "more than %d entries", FILT_MAX_ENTRIES);
        return -1;
      }
      if (s[0] == '^' || s[0] == '=') {
        snprintf(why, whylen,
                 "'%c' in entry '%.*s' only has a meaning at the start of the whole list", s[0],
                 (int)l, s);
        return -1;
      }
      if (parse_entry(s, l, &f->e[f->n], why, whylen)) return -1;
      if (f->e[f->n].name[0] == 0) {
        snprintf(why, whylen, "entry '%.*s' has an empty name", (int)l, s);
        return -1;
      }
      f->n++;
    }
    p += len;
    if (*p == ',') p++;
  }
  return 0;
}

int filt_entry_matches(const struct filt *f, int i, const char *name, int port) {
  const struct filt_entry *e = &f->e[i];
  int name_ok = f->exact ? !strcmp(e->name, name) : !strncmp(e->name, name, strlen(e->name));
  if (!name_ok) return 0;
  return e->port == -1 || port == -1 || e->port == port;
}

int filt_select(struct filt *f, const char *name, int port) {
  int matched = 0;
  for (int i = 0; i < f->n; i++) {
    if (filt_entry_matches(f, i, name, port)) {
      f->e[i].hits++;
      matched = 1;
    }
  }
  return matched ^ f->exclude;
}
