/* SPDX-License-Identifier: Apache-2.0 */
/* The tools' one JSON writer (doctor, explain, params, probe, the bench):
 * keys and values with the commas between them, two spaces of indent per
 * level, strings escaped. */
#ifndef DIAG_TOOLS_JSON_OUT_H
#define DIAG_TOOLS_JSON_OUT_H

#include <stdio.h>

struct json {
  FILE *f;
  int depth;
  int first[16]; /* no member written yet at this depth */
  int flat[16];  /* this depth's members on one line */
};

void json_begin(struct json *j, FILE *f);
void json_end(struct json *j); /* the closing newline */
/* key NULL inside an array. */
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
/* An array of plain values on one line: [1, 2, 3]. */
void json_arr_flat(struct json *j, const char *key);
void json_close_obj(struct json *j);
void json_close_arr(struct json *j);
void json_str(struct json *j, const char *key, const char *v); /* NULL -> null */
void json_int(struct json *j, const char *key, long long v);
/* NaN and the infinities are written as null. */
void json_num(struct json *j, const char *key, double v, int decimals);
/* Six significant digits, the form of a measurement ("4.52312", "1.2e-05"). */
void json_sig(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);

#endif
