/* SPDX-License-Identifier: Apache-2.0 */
/* What discovery notes and what the decisions find wrong: the records
 * every pass of topo/ appends to (topo/internal.h), kept apart from the
 * passes so that none of them calls back into its orchestrator. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "topo/internal.h"

void *topo_grow(void *array, int n, size_t size) {
  char *grown = realloc(array, (size_t)(n + 1) * size);
  if (grown) memset(grown + (size_t)n * size, 0, size);
  return grown;
}

void topo_note(struct topo_host *h, const char *fmt, ...) {
  char text[TOPO_NOTE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  INFO(LOG_NET, "%s", text);
  if (h->nnote == TOPO_MAX_NOTES) return;
  /* Out of memory, the note is only logged: it is something tolerated. */
  char **grown = topo_grow(h->notes, h->nnote, sizeof(*grown));
  if (!grown) return;
  h->notes = grown;
  if ((h->notes[h->nnote] = strdup(text))) h->nnote++;
}

struct topo_issue *topo_issue(struct topo_choice *c, enum topo_severity sev, const char *fmt, ...) {
  if (sev == TOPO_ERROR) c->nerror++;
  struct topo_issue *grown = topo_grow(c->issues, c->nissue, sizeof(*grown));
  if (grown) c->issues = grown;
  char *text = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&text, fmt, ap) < 0) text = NULL;
  va_end(ap);
  if (!grown || !text) {
    free(text);
    c->nissue_lost++;
    return NULL;
  }
  struct topo_issue *i = &c->issues[c->nissue++];
  i->severity = sev;
  i->text = text;
  return i;
}

void topo_issue_warn(struct topo_choice *c, struct topo_issue *i, const char *fmt, ...) {
  if (!i) return;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&i->warn, fmt, ap) < 0) i->warn = NULL, c->nissue_lost++;
  va_end(ap);
}

void topo_issue_fix(struct topo_choice *c, struct topo_issue *i, const char *fmt, ...) {
  if (!i) return;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&i->fix, fmt, ap) < 0) i->fix = NULL, c->nissue_lost++;
  va_end(ap);
}
