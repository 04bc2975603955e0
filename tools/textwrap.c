/* SPDX-License-Identifier: Apache-2.0 */
/* See textwrap.h. */
#include "tools/textwrap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int text_wrap_columns(FILE *f) {
  const char *env = getenv("COLUMNS");
  if (env && atoi(env) >= 40) return atoi(env);
  struct winsize ws;
  if (isatty(fileno(f)) && !ioctl(fileno(f), TIOCGWINSZ, &ws) && ws.ws_col >= 40) return ws.ws_col;
  return 0;
}

/* One line (no newline) of len bytes, wrapped. */
static void wrap_line(FILE *f, const char *s, size_t len, size_t wrap) {
  while (len && s[len - 1] == ' ') len--;
  if (!wrap) {
    fprintf(f, "%.*s\n", (int)len, s);
    return;
  }
  size_t indent = strspn(s, " ");
  if (indent > len) indent = len;
  size_t cont = indent + 4 < wrap / 2 ? indent + 4 : indent;
  bool is_first = true;
  while (len || is_first) {
    size_t room = wrap - (is_first ? 0 : cont);
    size_t cut = len;
    if (len > room) {
      size_t at = room;
      while (at > 0 && s[at] != ' ') at--;
      if (at == 0 || (is_first && at <= indent)) { /* one long word: keep it whole */
        at = room;
        while (at < len && s[at] != ' ') at++;
      }
      cut = at;
    }
    size_t end = cut;
    while (end && s[end - 1] == ' ') end--;
    if (!is_first) fprintf(f, "%*s", (int)cont, "");
    fprintf(f, "%.*s\n", (int)end, s);
    while (cut < len && s[cut] == ' ') cut++;
    s += cut, len -= cut;
    is_first = false;
  }
}

void text_wrap_write(FILE *f, const char *text, int cols) {
  while (*text) {
    size_t len = strcspn(text, "\n");
    wrap_line(f, text, len, cols > 0 ? (size_t)cols : 0);
    text += len;
    if (*text == '\n') text++;
  }
}

FILE *text_wrap_open(struct text_wrap *w, FILE *f) {
  memset(w, 0, sizeof(*w));
  w->out = f;
  w->cols = text_wrap_columns(f);
  w->mem = open_memstream(&w->buf, &w->len);
  return w->mem ? w->mem : f;
}

void text_wrap_close(struct text_wrap *w) {
  if (!w->mem) return;
  fclose(w->mem);
  text_wrap_write(w->out, w->buf ? w->buf : "", w->cols);
  free(w->buf);
  w->mem = NULL;
}

void text_cols_fit(struct text_cols *c, int n, const char *const *cells) {
  if (n > TEXT_COLS_MAX) n = TEXT_COLS_MAX;
  if (n > c->n) c->n = n;
  for (int i = 0; i < n; i++) {
    int len = (int)strlen(cells[i]);
    if (len > c->w[i]) c->w[i] = len;
  }
}

int text_cols_print(FILE *f, const struct text_cols *c, const char *const *cells) {
  int col = fprintf(f, "  ");
  for (int i = 0; i < c->n; i++)
    col += i + 1 < c->n ? fprintf(f, "%-*s ", c->w[i], cells[i]) : fprintf(f, "%s", cells[i]);
  return col;
}
