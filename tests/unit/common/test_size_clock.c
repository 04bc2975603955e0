/* SPDX-License-Identifier: Apache-2.0 */
/* The units every tool shares: sizes as users write them (common/size.h)
 * and the monotonic clock (common/clock.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/size.h"
#include "tap.h"

struct size_case {
  const char *text;
  int err;
  uint64_t bytes;
};

static void check_table(const struct size_case *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t v = 12345;
    int e = size_parse(t[i].text, &v);
    CHECK(e == t[i].err && (e ? v == 12345 : v == t[i].bytes), "'%s': %d %llu, want %d %llu",
          t[i].text, e, (unsigned long long)v, t[i].err, (unsigned long long)t[i].bytes);
  }
}

/* What both former parsers took: bytes, K/M/G in either case, an optional
 * B; K is 1024. */
static void binary_units(void) {
  static const struct size_case t[] = {
    {"4096", 0, 4096},       {"0", 0, 0},           {"8", 0, 8},
    {"64K", 0, 65536},       {"64k", 0, 65536},     {"64KB", 0, 65536},
    {"64kb", 0, 65536},      {"1M", 0, 1048576},    {"256M", 0, 256ull << 20},
    {"1G", 0, 1ull << 30},   {"1g", 0, 1ull << 30}, {"4096B", 0, 4096},
    {"2T", 0, 2ull << 40},   {"64KiB", 0, 65536},   {"1MiB", 0, 1048576},
    {"1gib", 0, 1ull << 30},
  };
  check_table(t, sizeof(t) / sizeof(t[0]));
}

/* Fractions, as the CLI's parser took them: cut to whole bytes. */
static void fractions(void) {
  static const struct size_case t[] = {
    {"1.5G", 0, 3ull << 29},
    {"0.5M", 0, 524288},
    {"1.5K", 0, 1536},
    {".5K", 0, 512},
    {"2.", 0, 2},
    {"1.9", 0, 1},
    {"0.001K", 0, 1},
    {"1.0000001K", 0, 1024},
  };
  check_table(t, sizeof(t) / sizeof(t[0]));
}

static void refused(void) {
  static const struct size_case t[] = {
    {"", EINVAL, 0},
    {"K", EINVAL, 0},
    {".", EINVAL, 0},
    {"-1", EINVAL, 0},
    {"+1", EINVAL, 0},
    {" 1", EINVAL, 0},
    {"1 K", EINVAL, 0},
    {"64X", EINVAL, 0},
    {"64KK", EINVAL, 0},
    {"64Ki", EINVAL, 0},
    {"64iB", EINVAL, 0},
    {"1e3", EINVAL, 0},
    {"0x10", EINVAL, 0},
    {"1.5.1", EINVAL, 0},
    {"64KBx", EINVAL, 0},
    {"18446744073709551615", 0, UINT64_MAX},
    {"18446744073709551616", ERANGE, 0},
    {"16777216T", ERANGE, 0},
    {"16777215.99999T", 0, (16777215ull << 40) + 1099500632659ull},
  };
  check_table(t, sizeof(t) / sizeof(t[0]));
}

static void clock_monotonic(void) {
  int64_t a = clock_mono_ns();
  struct timespec d = {0, 20 * 1000 * 1000};
  nanosleep(&d, NULL);
  int64_t b = clock_mono_ns();
  CHECK(a > 0 && b - a >= 20 * 1000 * 1000 && b - a < 10LL * 1000 * 1000 * 1000,
        "a 20 ms sleep measured as %lld ns", (long long)(b - a));
  int64_t prev = clock_mono_ns(), back = 0;
  for (int i = 0; i < 100000; i++) {
    int64_t now = clock_mono_ns();
    if (now < prev) back++;
    prev = now;
  }
  CHECK(back == 0, "the clock went back %lld times in 100000 reads", (long long)back);
}

/* Sizes as the tools print them: the largest unit that holds them whole,
 * and the text parses back to the same bytes. */
static void formatted(void) {
  static const struct {
    uint64_t bytes;
    const char *text;
  } t[] = {{0, "0 B"},
           {1000, "1000 B"},
           {1536, "1536 B"},
           {65536, "64 KiB"},
           {67108864, "64 MiB"},
           {1ull << 30, "1 GiB"},
           {1ull << 40, "1 TiB"},
           {3ull << 50, "3072 TiB"},
           {(1ull << 30) + 1024, "1048577 KiB"}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    char out[32], compact[32];
    size_format(out, sizeof(out), t[i].bytes);
    uint64_t back = 0;
    int j = 0;
    for (const char *c = out; *c; c++)
      if (*c != ' ') compact[j++] = *c;
    compact[j] = 0;
    CHECK(!strcmp(out, t[i].text) && size_parse(compact, &back) == 0 && back == t[i].bytes,
          "%llu: '%s', want '%s'; parses back to %llu", (unsigned long long)t[i].bytes, out,
          t[i].text, (unsigned long long)back);
  }
}

/* Ratios: two decimals, and under 0.01 two significant digits, never 0.00
 * for a path that moves something. */
static void ratios(void) {
  static const struct {
    double r;
    const char *text;
  } t[] = {{1.5, "1.50"},        {0.27, "0.27"},          {0.01, "0.01"},
           {0.0099, "0.0099"},   {0.0043, "0.0043"},      {0.002, "0.0020"},
           {0.00049, "0.00049"}, {0.0000123, "0.000012"}, {0, "0.00"}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    char out[24];
    ratio_format(out, sizeof(out), t[i].r);
    CHECK(!strcmp(out, t[i].text), "%g: '%s', want '%s'", t[i].r, out, t[i].text);
  }
}

int main(void) {
  TAP_CASE("sizes: bytes, K/M/G/T in either case, B or iB after, K = 1024", binary_units);
  TAP_CASE("sizes: fractions cut to whole bytes", fractions);
  TAP_CASE("sizes: signs, spaces, other units, exponents, hex and overflow refused", refused);
  TAP_CASE("sizes printed in the largest whole unit, parsing back to the same bytes", formatted);
  TAP_CASE("ratios: two decimals, two significant digits under 0.01", ratios);
  TAP_CASE("clock: monotonic nanoseconds that measure a sleep", clock_monotonic);
  return tap_done();
}
