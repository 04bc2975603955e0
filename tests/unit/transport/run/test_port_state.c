/* SPDX-License-Identifier: Apache-2.0 */
/* transport/run/port_state.c: a port's down spell and return, as this
 * process reads them and as its liveness answers carry them to peers. */
#include <string.h>

#include "tap.h"
#include "transport/run/port_state.h"
#include "transport/run/waitfor.h"

#define S 1000000000LL

/* Never down: nothing to tell. */
static void never_down(void) {
  struct run_port_down_view v;
  CHECK(!run_port_down_now(&v), "no port down");
  CHECK(run_port_last_down_ns(100 * S) == 0, "never down");
  CHECK(run_port_answer(100 * S) == 0, "the answer says nothing: %#x", run_port_answer(100 * S));
  int secs = -1;
  CHECK(!run_port_word_down(0, &secs) && run_port_word_last_down_ns(0, 100 * S) == 0,
        "an older plugin's 0 word: nothing");
}

/* Down: the one down longest is named, with its deadline; its answer says
 * for how long, and a peer reads it back. */
static void down_then_back(void) {
  run_port_down("mlx5_1", 1, 100 * S, 17 * S);
  run_port_down("mlx5_0", 1, 90 * S, 17 * S);
  run_port_down("mlx5_0", 1, 95 * S, 17 * S); /* a second event keeps the first time */
  struct run_port_down_view v;
  CHECK(run_port_down_now(&v) && !strcmp(v.words, "mlx5_0 port 1") && v.since_ns == 90 * S &&
          v.deadline_ns == 17 * S,
        "the port down longest: %s since %lld", v.words, (long long)v.since_ns);
  uint32_t w = run_port_answer(102 * S);
  int secs = -1;
  CHECK(run_port_word_down(w, &secs) && secs == 12, "the answer: down for 12 s (%#x, %d)", w, secs);
  CHECK(run_port_word_last_down_ns(w, 500 * S) == 500 * S, "down at the answer's time");
  CHECK(run_port_last_down_ns(102 * S) == 102 * S, "down now");
  run_port_up("mlx5_0", 1, 104 * S);
  CHECK(run_port_down_now(&v) && !strcmp(v.words, "mlx5_1 port 1"), "the other is still down");
  run_port_up("mlx5_1", 1, 105 * S);
  CHECK(!run_port_down_now(&v), "both back");
  CHECK(run_port_last_down_ns(110 * S) == 105 * S, "the last return: %lld",
        (long long)run_port_last_down_ns(110 * S));
  w = run_port_answer(110 * S);
  CHECK(!run_port_word_down(w, &secs) && (w & RUN_PORT_WAS_DOWN) &&
          run_port_word_last_down_ns(w, 200 * S) == 195 * S,
        "back 5 s ago, read at 200 s: %#x -> %lld", w,
        (long long)run_port_word_last_down_ns(w, 200 * S));
  w = run_port_answer((105 + RUN_PORT_TELL_SEC + 1) * S);
  CHECK(w == 0, "a return longer ago than RUN_PORT_TELL_SEC is not told: %#x", w);
}

int main(void) {
  TAP_CASE("never down: nothing told", never_down);
  TAP_CASE("down, then back: this process's view and its answer word", down_then_back);
  return tap_done();
}
