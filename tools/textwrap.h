/* SPDX-License-Identifier: Apache-2.0 */
/* Text reports for a terminal: lines of at most TEXT_WRAP columns. */
#ifndef TOOLS_TEXTWRAP_H
#define TOOLS_TEXTWRAP_H

#include <stdio.h>

#define TEXT_WRAP 100

/* Writes text to f with every line of more than TEXT_WRAP columns broken
 * at spaces, each continuation indented 4 past its line's own indent, and
 * no trailing spaces. A word longer than a line stays whole. */
void text_wrap_write(FILE *f, const char *text);

/* A buffer a report is printed into, then written wrapped: open returns
 * the FILE to print into (f itself if memory is short). */
struct text_wrap {
  FILE *out, *mem;
  char *buf;
  size_t len;
};
FILE *text_wrap_open(struct text_wrap *w, FILE *f);
void text_wrap_close(struct text_wrap *w);

/* Columns sized by their content, so none runs into the next: fit every
 * row (the header too), then print them. The last cell is not padded. */
#define TEXT_COLS_MAX 12
struct text_cols {
  int n;
  int w[TEXT_COLS_MAX];
};
void text_cols_fit(struct text_cols *c, int n, const char *const *cells);
/* "  " then the cells; returns the columns written. */
int text_cols_print(FILE *f, const struct text_cols *c, const char *const *cells);

#endif
