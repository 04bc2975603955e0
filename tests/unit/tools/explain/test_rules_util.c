/* SPDX-License-Identifier: Apache-2.0 */
/* tools/explain/rules_util.c and rules_nccl_error.c: the helpers every
 * rule builder shares, which call no rule. */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "tools/explain/rules.h"

static void versions(void) {
  static const struct {
    const char *v;
    int major, minor;
    bool before;
  } cases[] = {
    {"2.19.3", 2, 21, true},  {"2.21.0", 2, 21, false}, {"2.9.6", 2, 10, true},
    {"2.30.1", 2, 28, false}, {"3.0.0", 2, 30, false},  {"1.3", 2, 4, true},
    {NULL, 2, 21, false},     {"", 2, 21, false},       {"x.y", 2, 21, false},
    {"2", 2, 21, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bool got = rules_version_before(cases[i].v, cases[i].major, cases[i].minor);
    CHECK(got == cases[i].before, "'%s' before %d.%d: %d, want %d",
          cases[i].v ? cases[i].v : "(null)", cases[i].major, cases[i].minor, got, cases[i].before);
  }
}

static void init_traces(void) {
  CHECK(rules_failed_init_trace("node-a:1:2 [0] NCCL INFO group.cc:64 -> 2 [Async thread]"),
        "a failed init's trace");
  CHECK(rules_failed_init_trace("init.cc:1 group.cc:421 -> 5"), "group.cc with a code");
  CHECK(!rules_failed_init_trace("transport.cc:55 -> 0"), "a zero code is no failure");
  CHECK(!rules_failed_init_trace("graph/xml.cc:470 -> 2"), "a trace that stops lower down");
}

int main(void) {
  TAP_CASE("rules_version_before: older, same, newer, unknown", versions);
  TAP_CASE("rules_failed_init_trace: only traces that reach the group", init_traces);
  return tap_done();
}
