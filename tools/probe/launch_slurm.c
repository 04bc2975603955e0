/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's host list syntax: comma-separated entries, each a name with
 * bracketed ranges ("node[01-04,07]", "rack[1-2]-n[3,5]"); commas inside
 * brackets do not separate entries, and zero padding is kept as written.
 * Only the first host is needed (rank 0 runs there with srun's default
 * block distribution), so the first value of every bracket is taken, and
 * the rest of the list is still checked so a typo is reported. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/probe/launch.h"

/* Checks one bracket body "01-04,07" and copies its first value. */
static int first_of_range(const char *body, size_t n, char *out, size_t cap, char *why,
                          size_t whycap) {
  size_t i = 0, first_len = 0;
  int have_first = 0;
  while (i < n) {
    size_t lo = i;
    while (i < n && isdigit((unsigned char)body[i])) i++;
    if (i == lo) {
      snprintf(why, whycap, "'%.*s' is not a number range like 01-04,07", (int)n, body);
      return EINVAL;
    }
    if (!have_first) first_len = i - lo, have_first = 1;
    if (i < n && body[i] == '-') {
      size_t hi = ++i;
      while (i < n && isdigit((unsigned char)body[i])) i++;
      if (i == hi) {
        snprintf(why, whycap, "'%.*s' has a range without an end", (int)n, body);
        return EINVAL;
      }
    }
    if (i < n && body[i] != ',') {
      snprintf(why, whycap, "'%.*s' has '%c' where ',' or '-' belongs", (int)n, body, body[i]);
      return EINVAL;
    }
    if (i < n) i++;
  }
  if (first_len >= cap) {
    snprintf(why, whycap, "host name too long");
    return EINVAL;
  }
  memcpy(out, body, first_len);
  out[first_len] = 0;
  return 0;
}

/* Parses the entry starting at *pos; writes its first host when want. */
static int entry(const char *list, size_t *pos, char *out, size_t cap, int want, char *why,
                 size_t whycap) {
  size_t o = 0, i = *pos;
  while (list[i] && list[i] != ',') {
    if (list[i] == ']') {
      snprintf(why, whycap, "unmatched ']' at offset %zu", i);
      return EINVAL;
    }
    if (list[i] == '[') {
      const char *close = strchr(list + i, ']');
      const char *nested = strchr(list + i + 1, '[');
      if (!close || (nested && nested < close)) {
        snprintf(why, whycap, "unclosed '[' at offset %zu", i);
        return EINVAL;
      }
      char first[32];
      size_t n = (size_t)(close - list) - i - 1;
      if (first_of_range(list + i + 1, n, first, sizeof(first), why, whycap)) return EINVAL;
      if (want && o + strlen(first) < cap) o += (size_t)snprintf(out + o, cap - o, "%s", first);
      i = (size_t)(close - list) + 1;
      continue;
    }
    if (isspace((unsigned char)list[i])) {
      snprintf(why, whycap, "space at offset %zu", i);
      return EINVAL;
    }
    if (want && o + 1 < cap) out[o++] = list[i];
    i++;
  }
  if (want) out[o < cap ? o : cap - 1] = 0;
  if (i == *pos) {
    snprintf(why, whycap, "empty entry at offset %zu", i);
    return EINVAL;
  }
  *pos = list[i] ? i + 1 : i;
  if (list[i] == ',' && !list[i + 1]) {
    snprintf(why, whycap, "trailing ','");
    return EINVAL;
  }
  return 0;
}

int slurm_first_node(const char *list, char *out, size_t cap, char *why, size_t whycap) {
  if (!list || !*list) {
    snprintf(why, whycap, "the node list is empty");
    return EINVAL;
  }
  size_t pos = 0;
  int first = 1;
  while (list[pos]) {
    if (entry(list, &pos, out, cap, first, why, whycap)) return EINVAL;
    first = 0;
  }
  return 0;
}
