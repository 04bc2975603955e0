/* SPDX-License-Identifier: Apache-2.0 */
/* common/errno_names.c: the one table behind the plugin's "(ETIMEDOUT)"
 * and explain's reading of "Connection timed out". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/errno_names.h"
#include "tap.h"

static void names(void) {
  CHECK(!strcmp(errno_name(0), "OK"), "0: %s", errno_name(0));
  CHECK(!strcmp(errno_name(ETIMEDOUT), "ETIMEDOUT"), "ETIMEDOUT: %s", errno_name(ETIMEDOUT));
  CHECK(!strcmp(errno_name(EAFNOSUPPORT), "EAFNOSUPPORT"), "EAFNOSUPPORT: %s",
        errno_name(EAFNOSUPPORT));
  CHECK(!strcmp(errno_name(4095), "errno"), "unknown: %s", errno_name(4095));
}

static void table(void) {
  for (size_t i = 0; i < errno_nnames; i++) {
    const struct errno_name *e = &errno_names[i];
    CHECK(e->name[0] == 'E' && e->words[0] && errno_find(e->err) == e,
          "%s: a name, glibc's words, and the only entry of its number", e->name);
    CHECK(!strcmp(strerror(e->err), e->words), "%s: '%s' is not strerror's '%s'", e->name, e->words,
          strerror(e->err));
  }
}

int main(void) {
  TAP_CASE("errno_name: OK, a symbol, or 'errno'", names);
  TAP_CASE("every entry: its symbol and strerror's words, once", table);
  return tap_done();
}
