/* SPDX-License-Identifier: Apache-2.0 */
/* Text reports for a terminal: lines as wide as the terminal; whole lines
 * when piped, so grep sees each on one line. */
#ifndef TOOLS_TEXTWRAP_H
#define TOOLS_TEXTWRAP_H

#include <stdio.h>

/* The columns to wrap text for f at: COLUMNS when set (40 or more, as for
 * ls), else the terminal's width (TIOCGWINSZ) when f is a terminal, else 0:
 * no wrapping. */
int text_wrap_columns(FILE *f);

/* Writes text to f with every line of more than cols columns (0: none)
 * broken at spaces, each continuation indented 4 past its line's own
 * indent, and no trailing spaces. A word longer than a line stays whole. */
void text_wrap_write(FILE *f, const char *text, int cols);

/* A buffer a report is printed into, then written wrapped: open returns
 * the FILE to print into (f itself if memory is short). */
struct text_wrap {
  FILE *out, *mem;
  char *buf;
  size_t len;
  int cols; /* text_wrap_columns(out) */
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
