/* SPDX-License-Identifier: Apache-2.0 */
/* The calls dev/ and setup/ make upward, set once at init (ib.h). */
#include <stdio.h>
#include <string.h>

#include "transport/ib/dev/ib.h"

static void no_fatal_note(struct ib_dev *d, const struct ibv_async_event *ev, const char *what) {
  (void)d, (void)ev, (void)what;
}
static void no_port_down(struct ib_dev *d) { (void)d; }
static void no_port_up(struct ib_dev *d, int port) { (void)d, (void)port; }
static void errno_only(const struct ib_dev *d, const struct hello *peer, int err, char *out,
                       size_t cap) {
  (void)d, (void)peer;
  snprintf(out, cap, "%s", strerror(err));
}

static struct ib_hooks hooks = {no_fatal_note, no_port_down, no_port_up, errno_only};

void ib_hooks_set(const struct ib_hooks *h) {
  if (h->fatal_note) hooks.fatal_note = h->fatal_note;
  if (h->port_down) hooks.port_down = h->port_down;
  if (h->port_up) hooks.port_up = h->port_up;
  if (h->rtr_why) hooks.rtr_why = h->rtr_why;
}

const struct ib_hooks *ib_hooks(void) { return &hooks; }
