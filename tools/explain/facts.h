/* SPDX-License-Identifier: Apache-2.0 */
/* Readers of the words NCCL prints: tokens, numbers, errno texts, GIDs and
 * socket addresses. The text is untrusted; every reader stops at its NUL
 * and at its output's capacity. */
#ifndef DIAG_TOOLS_EXPLAIN_FACTS_H
#define DIAG_TOOLS_EXPLAIN_FACTS_H

#include <stdbool.h>
#include <stddef.h>

/* The character after the first `needle` in s, or NULL. */
const char *text_after(const char *s, const char *needle);
/* Copies the word at p (up to whitespace or a character of stops) into
 * out; returns its length (0: no word). */
size_t text_token(const char *p, const char *stops, char *out, size_t cap);
/* A decimal integer at p (optional '-'). */
bool text_long(const char *p, long *v);
/* The errno whose text starts at p ("Connection timed out, on dev ...")
 * or whose name does ("ETIMEDOUT"); 0 when none. */
int text_errno(const char *p);
/* "ETIMEDOUT"; "errno N" for one outside the table (into buf). */
const char *errno_label(int err, char *buf, size_t cap);
/* The C library's wording, "Connection timed out"; "" when unknown. */
const char *errno_words(int err);
/* "10.0.0.2<4242>" or "[fe80::1%eth0]:4242" -> "10.0.0.2" / "fe80::1". */
void text_ip_of(const char *addr, char *ip, size_t cap);
/* Printable ASCII and valid UTF-8 kept; control bytes and broken UTF-8
 * become '?'. For quoting untrusted lines on a terminal. */
void text_clean(const char *in, char *out, size_t cap);

struct log_gid {
  unsigned char b[16];
};

/* "::ffff:10.0.0.1", "fe80::ba59:9f03:c3:1a2b", "0000:0000:...:0001". */
bool log_gid_parse(const char *s, struct log_gid *g);
/* NCCL's per-QP form "(<subnet prefix hex>/<interface id hex>)": each half
 * is the GID's 8 bytes read as one little-endian 64-bit word (the hosts
 * that print it are x86-64 or aarch64). */
bool log_gid_parse_nccl(const char *s, struct log_gid *g);
/* The first GID after an occurrence of label ("local GID " also starts
 * "local GID index 3, local GID ::ffff:..."). */
bool log_gid_after(const char *s, const char *label, struct log_gid *g);
bool log_gid_is_zero(const struct log_gid *g);
bool log_gid_is_link_local(const struct log_gid *g); /* fe80::/64 */
bool log_gid_is_v4(const struct log_gid *g);         /* ::ffff:a.b.c.d */
void log_gid_text(const struct log_gid *g, char *buf, size_t cap);
/* The GID's subnet as the logs let us know it: /24 for an IPv4-mapped GID,
 * /64 otherwise (the logs carry no prefix length). "10.1.4.0/24". */
void log_gid_subnet(const struct log_gid *g, char *buf, size_t cap);
bool log_gid_same_subnet(const struct log_gid *a, const struct log_gid *b);
/* The IPv4 address of an IPv4-mapped GID. */
bool log_gid_v4(const struct log_gid *g, char *ip, size_t cap);

#endif
