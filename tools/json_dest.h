/* SPDX-License-Identifier: Apache-2.0 */
/* --json[=FILE], the one rule of every command that writes JSON (doctor,
 * explain, probe, params, nccl-net-bench): "--json" and "--json=-" write
 * the document to stdout, "--json=FILE" to FILE. The file is created
 * before the work starts, so a bad FILE is a usage error (exit 2) and not a
 * report lost at the end. */
#ifndef DIAG_TOOLS_JSON_DEST_H
#define DIAG_TOOLS_JSON_DEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct json_dest {
  bool is_set;      /* --json was given */
  const char *path; /* NULL: stdout */
  FILE *f;          /* open between json_dest_open and json_dest_close */
};

/* Names the mistake of "--json FILE" (prev "--json", arg not an option),
 * where the FILE would be taken for something else: true with why set. */
bool json_dest_stray(const char *prev, const char *arg, char *why, size_t cap);
/* Opens the destination when --json was given: 0, or an errno with the file
 * and the cause in why. */
int json_dest_open(struct json_dest *d, char *why, size_t cap);
/* Flushes (stdout) or closes (a file): 0, or an errno with the file and the
 * cause in why. Nothing to do when --json was not given. */
int json_dest_close(struct json_dest *d, char *why, size_t cap);
/* Where the document goes, for messages: the file, or "stdout". */
const char *json_dest_name(const struct json_dest *d);

#endif
