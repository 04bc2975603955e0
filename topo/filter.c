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
  if (len >= sizeof(buf)) return EINVAL;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno || *end || v < 0 || v > 65535) return EINVAL;
  *out = (int)v;
  return 0;
}

static int parse_entry(const char *s, size_t len, struct filter_entry *e, char *why, size_t cap) {
  const char *fields[4] = {s, NULL, NULL, NULL};
  size_t flen[4] = {len, 0, 0, 0};
  int nf = 1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != ':') continue;
    if (nf == 4) {
      snprintf(why, cap, "entry '%.*s' has more than four ':' fields (name:port:rail:plane)",
               (int)len, s);
      return EINVAL;
    }
    flen[nf - 1] = (size_t)(s + i - fields[nf - 1]);
    fields[nf] = s + i + 1;
    flen[nf] = (size_t)(s + len - fields[nf]);
    nf++;
  }
  if (flen[0] >= FILTER_NAME_MAX) {
    snprintf(why, cap, "name '%.*s' is longer than %d characters", (int)flen[0], fields[0],
             FILTER_NAME_MAX - 1);
    return EINVAL;
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
      snprintf(why, cap, "%s '%.*s' in entry '%.*s' is not a number", what[i], (int)flen[i + 1],
               fields[i + 1], (int)len, s);
      return EINVAL;
    }
  }
  return 0;
}

int filter_parse(const char *text, struct filter *f, char *why, size_t cap) {
  memset(f, 0, sizeof(*f));
  if (!text) return 0;
  const char *p = text;
  while (*p == ' ') p++;
  if (*p == '^') {
    f->is_exclude = true;
    p++;
  }
  if (*p == '=') {
    f->is_exact = true;
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
      if (f->nentry == FILTER_MAX_ENTRIES) {
        snprintf(why, cap, "more than %d entries", FILTER_MAX_ENTRIES);
        return EINVAL;
      }
      if (s[0] == '^' || s[0] == '=') {
        snprintf(why, cap, "'%c' in entry '%.*s' only has a meaning at the start of the whole list",
                 s[0], (int)l, s);
        return EINVAL;
      }
      if (parse_entry(s, l, &f->entries[f->nentry], why, cap)) return EINVAL;
      if (f->entries[f->nentry].name[0] == 0) {
        snprintf(why, cap, "entry '%.*s' has an empty name", (int)l, s);
        return EINVAL;
      }
      f->nentry++;
    }
    p += len;
    if (*p == ',') p++;
  }
  return 0;
}

bool filter_entry_matches(const struct filter *f, int i, const char *name, int port) {
  const struct filter_entry *e = &f->entries[i];
  bool is_name_match =
    f->is_exact ? !strcmp(e->name, name) : !strncmp(e->name, name, strlen(e->name));
  if (!is_name_match) return false;
  return e->port == -1 || port == -1 || e->port == port;
}

bool filter_select(struct filter *f, const char *name, int port) {
  bool is_matched = false;
  for (int i = 0; i < f->nentry; i++) {
    if (filter_entry_matches(f, i, name, port)) {
      f->entries[i].hits++;
      is_matched = true;
    }
  }
  return is_matched != f->is_exclude;
}
