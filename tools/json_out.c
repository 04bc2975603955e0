/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/json_out.h"

#include <math.h>
#include <string.h>

#include "common/json_escape.h"
#include "common/strutil.h"

/* common/json_escape.h says how. */
static void escaped(FILE *f, const char *s) {
  fputc('"', f);
  char out[8];
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    p += json_escape_char(p, out);
    fputs(out, f);
  }
  fputc('"', f);
}

static void sep(struct json *j, const char *key) {
  if (!j->first[j->depth]) fputc(',', j->f);
  if (j->flat[j->depth]) {
    if (!j->first[j->depth]) fputc(' ', j->f);
  } else {
    fprintf(j->f, "\n%*s", 2 * j->depth, "");
  }
  j->first[j->depth] = 0;
  if (!key) return;
  escaped(j->f, key);
  fputs(": ", j->f);
}

void json_begin(struct json *j, FILE *f) {
  memset(j, 0, sizeof(*j));
  j->f = f;
  j->first[0] = 1;
  fputc('{', f);
  j->depth = 1;
  j->first[1] = 1;
}

void json_end(struct json *j) {
  fputs("\n}\n", j->f);
  j->depth = 0;
}

static void open_(struct json *j, const char *key, char c, int is_flat) {
  sep(j, key);
  fputc(c, j->f);
  if (j->depth < 15) j->depth++;
  j->first[j->depth] = 1;
  j->flat[j->depth] = is_flat;
}

static void close_(struct json *j, char c) {
  int is_inline = j->first[j->depth] || j->flat[j->depth];
  if (j->depth > 0) j->depth--;
  if (!is_inline) fprintf(j->f, "\n%*s", 2 * j->depth, "");
  fputc(c, j->f);
}

void json_obj(struct json *j, const char *key) { open_(j, key, '{', 0); }
void json_arr(struct json *j, const char *key) { open_(j, key, '[', 0); }
void json_arr_flat(struct json *j, const char *key) { open_(j, key, '[', 1); }
void json_close_obj(struct json *j) { close_(j, '}'); }
void json_close_arr(struct json *j) { close_(j, ']'); }

void json_str(struct json *j, const char *key, const char *v) {
  sep(j, key);
  if (v) escaped(j->f, v);
  else fputs("null", j->f);
}

void json_int(struct json *j, const char *key, long long v) {
  sep(j, key);
  fprintf(j->f, "%lld", v);
}

void json_num(struct json *j, const char *key, double v, int decimals) {
  sep(j, key);
  if (isfinite(v)) fprintf(j->f, "%.*f", decimals, v);
  else fputs("null", j->f);
}

void json_sig(struct json *j, const char *key, double v) {
  sep(j, key);
  if (isfinite(v)) fprintf(j->f, "%.6g", v);
  else fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, int v) {
  sep(j, key);
  fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key) {
  sep(j, key);
  fputs("null", j->f);
}
