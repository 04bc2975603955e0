/* SPDX-License-Identifier: Apache-2.0 */
/* common/json_escape.h through json_escape() (common/events.c): what the
 * plugin's event file and the tools' --json output both write for a
 * string that came from a log, sysfs or a peer. */
#include <stdio.h>
#include <string.h>

#include "common/events.h"
#include "tap.h"

struct esc_case {
  const char *in;
  const char *out;
};

static void escapes(void) {
  static const struct esc_case cases[] = {
    {"plain", "plain"},
    {"a\"b\\c", "a\\\"b\\\\c"},
    {"l1\nl2\tx\ry", "l1\\nl2\\tx\\ry"},
    {"\x01\x1f", "\\u0001\\u001f"},
    {"del\x7f", "del\\u007f"},
    {"caf\xc3\xa9", "caf\xc3\xa9"},                 /* valid UTF-8 kept */
    {"bad\xff!", "bad\\ufffd!"},                    /* a stray byte */
    {"cut\xe2\x82", "cut\\ufffd\\ufffd"},           /* a truncated sequence */
    {"over\xc0\xaf", "over\\ufffd\\ufffd"},         /* an overlong form */
    {"\xf0\x9f\x98\x80 ok", "\xf0\x9f\x98\x80 ok"}, /* 4 bytes */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char out[128];
    json_escape(out, sizeof(out), cases[i].in);
    CHECK(!strcmp(out, cases[i].out), "case %zu: got '%s', want '%s'", i, out, cases[i].out);
  }
}

/* A full buffer ends before a character, never inside its escape. */
static void cuts(void) {
  char small[5];
  size_t n = json_escape(small, 4, "ab\"cd");
  CHECK(n == 2 && !strcmp(small, "ab"), "cut before an escape: %zu '%s'", n, small);
  n = json_escape(small, sizeof(small), "abcd\xc3\xa9");
  CHECK(n == 4 && !strcmp(small, "abcd"), "cut before a 2-byte character: %zu '%s'", n, small);
  n = json_escape(small, sizeof(small), NULL);
  CHECK(n == 0 && !small[0], "NULL: %zu '%s'", n, small);
}

int main(void) {
  TAP_CASE("control bytes, quotes and broken UTF-8 are escaped, valid UTF-8 kept", escapes);
  TAP_CASE("a full buffer ends on a whole character", cuts);
  return tap_done();
}
