/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_IB_HCA / NCCL_SOCKET_IFNAME grammar (topo/filter.h), table-tested:
 * prefix versus '=', '^' and '^=', ':port', comma lists, the mlx5_1 versus
 * mlx5_10 prefix trap, and bad input. */
#include <string.h>

#include "tap.h"
#include "topo/filter.h"

/* The devices of a DGX-like host: the trap is mlx5_1 versus mlx5_10/11. */
static const char *const devs[] = {"mlx5_0",  "mlx5_1", "mlx5_10",
                                   "mlx5_11", "mlx5_2", "mlx5_bond_0"};
#define NDEVS (int)(sizeof(devs) / sizeof(devs[0]))

struct row {
  const char *filter;
  int port;             /* the port each device is asked about */
  const char *selected; /* the devices selected, space separated, in devs order */
};

static const struct row rows[] = {
  {"mlx5_1", 1, "mlx5_1 mlx5_10 mlx5_11"},     /* prefix: the trap */
  {"=mlx5_1", 1, "mlx5_1"},                    /* exact */
  {"^mlx5_1", 1, "mlx5_0 mlx5_2 mlx5_bond_0"}, /* excluding the prefix excludes 10, 11 */
  {"^=mlx5_1", 1, "mlx5_0 mlx5_10 mlx5_11 mlx5_2 mlx5_bond_0"},
  {"mlx5_0,mlx5_2", 1, "mlx5_0 mlx5_2"},
  {"=mlx5_2:1,mlx5_0:1", 1, "mlx5_0 mlx5_2"},
  {"=mlx5_2:2", 1, ""}, /* port 2 does not match port 1 */
  {"=mlx5_2:2", 2, "mlx5_2"},
  {"mlx5_2::0:0", 1, "mlx5_2"}, /* empty port field = any */
  {"^=mlx5_bond_0", 1, "mlx5_0 mlx5_1 mlx5_10 mlx5_11 mlx5_2"},
  {"mlx5", 1, "mlx5_0 mlx5_1 mlx5_10 mlx5_11 mlx5_2 mlx5_bond_0"},
  {" mlx5_0 , mlx5_2 ", 1, "mlx5_0 mlx5_2"}, /* blanks around entries */
  {"mlx5_0,,mlx5_2,", 1, "mlx5_0 mlx5_2"},   /* empty entries are skipped */
  {"", 1, ""},
};

static void selected_of(const char *text, int port, char *out, size_t cap) {
  struct filter f;
  char why[256];
  out[0] = 0;
  CHECK(filter_parse(text, &f, why, sizeof(why)) == 0, "'%s' should parse: %s", text, why);
  for (int i = 0; i < NDEVS; i++)
    if (filter_select(&f, devs[i], port)) {
      if (out[0]) strncat(out, " ", cap - strlen(out) - 1);
      strncat(out, devs[i], cap - strlen(out) - 1);
    }
}

static void test_rows(void) {
  for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
    char got[256];
    selected_of(rows[r].filter, rows[r].port, got, sizeof(got));
    CHECK(!strcmp(got, rows[r].selected), "filter '%s' port %d: got '%s', want '%s'",
          rows[r].filter, rows[r].port, got, rows[r].selected);
  }
}

static void test_fields(void) {
  struct filter f;
  char why[256];
  CHECK(filter_parse("^=mlx5_2:1:3:1,mlx5_3", &f, why, sizeof(why)) == 0, "%s", why);
  CHECK(f.is_exclude && f.is_exact && f.nentry == 2, "exclude %d exact %d n %d", f.is_exclude,
        f.is_exact, f.nentry);
  CHECK(f.entries[0].port == 1 && f.entries[0].rail == 3 && f.entries[0].plane == 1,
        "fields %d %d %d", f.entries[0].port, f.entries[0].rail, f.entries[0].plane);
  CHECK(f.entries[1].port == -1 && f.entries[1].rail == -1, "missing fields are -1");
}

static void test_hits(void) {
  struct filter f;
  char why[256];
  filter_parse("mlx5_1,mlx5_7", &f, why, sizeof(why));
  for (int i = 0; i < NDEVS; i++) filter_select(&f, devs[i], 1);
  CHECK(f.entries[0].hits == 3, "mlx5_1 as a prefix hits mlx5_1, mlx5_10, mlx5_11: %d",
        f.entries[0].hits);
  CHECK(f.entries[1].hits == 0, "mlx5_7 hits nothing: %d", f.entries[1].hits);
}

static void test_bad(void) {
  static const char *const bad[] = {"mlx5_0:x", "mlx5_0:1:2:3:4", "=^mlx5_0", "mlx5_0,^mlx5_1",
                                    ":1",       "mlx5_0:99999"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct filter f;
    char why[256] = "";
    CHECK(filter_parse(bad[i], &f, why, sizeof(why)) != 0, "'%s' should be refused", bad[i]);
    CHECK(why[0] != 0, "'%s' refused without a reason", bad[i]);
  }
}

int main(void) {
  TAP_CASE("NCCL_IB_HCA grammar: prefix, =, ^, ^=, :port, comma lists", test_rows);
  TAP_CASE("name:port:rail:plane fields", test_fields);
  TAP_CASE("hit counts: the mlx5_1 prefix trap and an entry matching nothing", test_hits);
  TAP_CASE("bad input is refused with a reason", test_bad);
  return tap_done();
}
