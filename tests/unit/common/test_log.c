/* SPDX-License-Identifier: Apache-2.0 */
/* Long messages against NCCL's 1024-byte log line: cut between sentences,
 * each continuation marked "... ", nothing lost. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "tap.h"

static char lines[16][1100];
static int nlines;

static void sink(enum log_level level, unsigned long flags, const char *file, int line,
                 const char *text) {
  (void)level, (void)flags, (void)file, (void)line;
  if (nlines < 16) snprintf(lines[nlines++], sizeof(lines[0]), "%s", text);
}

/* The lines joined back as a reader would: "NET/diag " dropped, a
 * continuation's "... " replaced by the space it stands for. */
static void joined(char *out, size_t cap) {
  size_t o = 0;
  out[0] = 0;
  for (int i = 0; i < nlines; i++) {
    const char *t = lines[i] + 9;
    bool is_cont = !strncmp(t, "... ", 4);
    o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? (is_cont ? " " : "\n") : "",
                          is_cont ? t + 4 : t);
  }
}

static void sentences_cut_between(void) {
  char msg[3000] = "", back[4000];
  size_t o = 0;
  for (int i = 0; o < 2500; i++)
    o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%sSentence %d says what went wrong and why",
                          i ? ". " : "", i);
  nlines = 0;
  WARN("%s", msg);
  CHECK(nlines == 3, "%d lines for 2,500 characters", nlines);
  for (int i = 0; i < nlines; i++) {
    CHECK(strlen(lines[i]) < 1024, "line %d has %zu characters", i, strlen(lines[i]));
    CHECK(!strncmp(lines[i], i ? "NET/diag ... Sentence " : "NET/diag Sentence ", i ? 22 : 18),
          "line %d does not start a sentence: %.40s", i, lines[i]);
    if (i + 1 < nlines)
      CHECK(lines[i][strlen(lines[i]) - 1] == '.', "line %d is not cut after a sentence", i);
  }
  joined(back, sizeof(back));
  CHECK(!strcmp(back, msg), "the lines joined differ from the message");
}

static void no_spaces_cut_hard(void) {
  char msg[1600], back[2000];
  memset(msg, 'x', 1500);
  msg[1500] = 0;
  nlines = 0;
  WARN("%s", msg);
  CHECK(nlines == 2 && !strncmp(lines[1], "NET/diag ... x", 14), "%d lines, second %.20s", nlines,
        nlines > 1 ? lines[1] : "");
  joined(back, sizeof(back));
  /* A hard cut has no space to stand for: the reader sees one. */
  CHECK(strlen(back) == 1501 && strspn(back, "x") == 1000, "hard cut: %zu characters",
        strlen(back));
}

static void newlines_are_lines(void) {
  nlines = 0;
  WARN("first line\nsecond line");
  CHECK(nlines == 2 && !strcmp(lines[0], "NET/diag first line") &&
          !strcmp(lines[1], "NET/diag second line"),
        "newline split: %d lines: %s | %s", nlines, lines[0], nlines > 1 ? lines[1] : "");
}

static void cleaned(void) {
  static const struct {
    const char *in, *out;
  } cases[] = {
    {"plain text, 10.0.0.7<4242>", "plain text, 10.0.0.7<4242>"},
    {"bye\nWARN forged", "bye\\x0aWARN forged"},
    {"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},
    {"cr\rtab\tdel\x7f", "cr\\x0dtab\\x09del\\x7f"},
    {"h\xc3\xa9llo \xe2\x9c\x93", "h\xc3\xa9llo \xe2\x9c\x93"}, /* UTF-8 kept */
    {"c1 \xc2\x9b csi", "c1 \\xc2\\x9b csi"},                   /* C1 CSI escaped */
    {"raw \x9b\xff\xc3", "raw \\x9b\\xff\\xc3"},                /* not UTF-8 */
    {"\xed\xa0\x80 \xf5\x80\x80\x80", "\\xed\\xa0\\x80 \\xf5\\x80\\x80\\x80"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char out[200];
    log_clean(out, sizeof(out), cases[i].in, strlen(cases[i].in));
    CHECK(!strcmp(out, cases[i].out), "case %zu: got \"%s\", want \"%s\"", i, out, cases[i].out);
  }
  char small[7];
  log_clean(small, sizeof(small), "ab\ncdefgh", 9);
  CHECK(!strcmp(small, "ab\\x0a"), "cut whole: \"%s\"", small);
  log_clean(small, sizeof(small), "ab\0\ncd", 6);
  CHECK(!strcmp(small, "ab"), "stops at a NUL: \"%s\"", small);
  nlines = 0;
  char why[100];
  WARN("peer says: %s", log_clean(why, sizeof(why), "x\nWARN y", 8));
  CHECK(nlines == 1, "a cleaned newline forges no second line: %d lines", nlines);
}

int main(void) {
  log_set_sink(sink);
  TAP_CASE("a 2,500-character diagnosis: three lines, cut after sentences, nothing lost",
           sentences_cut_between);
  TAP_CASE("a message without spaces: cut at the limit, the rest marked as continuing",
           no_spaces_cut_hard);
  TAP_CASE("newlines end lines without a continuation mark", newlines_are_lines);
  TAP_CASE("log_clean: control bytes, C1 and non-UTF-8 escaped, UTF-8 kept, cut whole", cleaned);
  return tap_done();
}
