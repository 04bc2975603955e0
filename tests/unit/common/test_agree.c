/* SPDX-License-Identifier: Apache-2.0 */
/* The must-agree table (common/agree.h) drives the plugin's handshake and
 * the probe alike: for every entry, two hellos that differ only in it are
 * told apart exactly when every rank must agree on it and both ends of a
 * connection see it, and the probe's verdict is the table's class. (explain
 * and doctor read it through the CLI: test_agree_cli.py.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/agree.h"
#include "tap.h"
#include "tools/probe/env_class.h"
#include "transport/hello.h"

static const char *info_value(const struct hello *h, const char *name) {
  for (int i = 0; i < h->ninfo; i++)
    if (!strcmp(h->info[i].name, name)) return h->info[i].value;
  return NULL;
}

static void handshake_entry(const struct agree_entry *e) {
  static struct hello a, b;
  setenv(e->name, "value-a", 1);
  hello_fill_local(&a, HELLO_CONNECT);
  setenv(e->name, "value-b", 1);
  hello_fill_local(&b, HELLO_CONNECT);
  unsetenv(e->name);
  char diff[2048];
  int n = hello_diff(&a, &b, diff, sizeof(diff));
  bool is_compared = e->cls == AGREE_MUST && e->is_in_handshake;
  CHECK((n > 0) == is_compared && (!is_compared || strstr(diff, e->name)),
        "%s (%s%s): the handshake %s a difference: %s", e->name, agree_class_name(e->cls),
        e->is_in_handshake ? ", in the handshake" : "", n ? "reports" : "does not report", diff);
  bool is_carried = !is_compared && (e->cls == AGREE_MUST || e->cls == AGREE_PER_HOST);
  if (is_carried)
    CHECK(info_value(&a, e->name) && !strcmp(info_value(&a, e->name), "value-a"),
          "%s rides in the hello to explain a failure", e->name);
}

static void probe_entry(const struct agree_entry *e) {
  enum env_class want = e->cls == AGREE_MUST       ? EC_MUST_AGREE
                        : e->cls == AGREE_PER_HOST ? EC_PER_HOST
                        : e->cls == AGREE_DIFFERS  ? EC_DIFFERS
                                                   : EC_IGNORE;
  const char *name = e->name;
  char concrete[64];
  if (strchr(name, '*')) { /* a name the pattern governs and nothing before it does */
    snprintf(concrete, sizeof(concrete), "%.*sTEST_ONLY", (int)(strlen(name) - 1), name);
    if (agree_lookup(concrete) != e) return;
    name = concrete;
  }
  CHECK(probe_env_class(name) == want, "%s: the probe's verdict is the table's (%s)", name,
        agree_class_name(e->cls));
}

static void every_entry(void) {
  size_t n;
  const struct agree_entry *t = agree_table(&n);
  CHECK(n > 20 && agree_lookup("NCCL_SOMETHING_NEW") == &t[n - 1], "a catch-all ends the table");
  for (size_t i = 0; i < n; i++) {
    CHECK(t[i].why && strlen(t[i].why) > 10, "%s has a justification", t[i].name);
    if (!strchr(t[i].name, '*')) handshake_entry(&t[i]);
    probe_entry(&t[i]);
  }
}

/* Facts read from NCCL's source that the table must keep. */
static void known_facts(void) {
  CHECK(agree_classify("NCCL_IB_TIMEOUT") == AGREE_LOCAL, "a QP timer may differ");
  CHECK(agree_classify("NCCL_NSOCKS_PERTHREAD") == AGREE_LOCAL,
        "the connector takes the listener's socket counts");
  CHECK(agree_classify("NCCL_IB_QPS_PER_CONNECTION") == AGREE_LOCAL, "both ends take the max");
  CHECK(agree_classify("NCCL_PROTO") == AGREE_MUST && agree_lookup("NCCL_PROTO")->changes_sizes,
        "NCCL_PROTO must agree and sizes messages");
  CHECK(agree_classify("NCCL_IB_SPLIT_DATA_ON_QPS") == AGREE_MUST,
        "the receiver counts completions by its own split setting");
  CHECK(agree_classify("NCCL_DEBUG_SUBSYS") == AGREE_IGNORE, "logging is never compared");
}

int main(void) {
  TAP_CASE("every entry: the handshake and the probe follow the table", every_entry);
  TAP_CASE("facts from NCCL's source", known_facts);
  return tap_done();
}
