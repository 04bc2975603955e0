/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes as users write them, the one rule of every option that takes one
 * (nccl-net-diag probe --bytes, selftest --size, nccl-net-bench --sizes,
 * --target-bytes, --max-mem, ...):
 *   a number of bytes ("4096"), or a number and a unit K, M, G or T, either
 *   case, each 1024 times the one before (K = 1024, never 1000), optionally
 *   followed by "B" or "iB": 64K = 64k = 64KB = 64KiB = 65536.
 *   A fraction is allowed ("1.5G", "0.5M"): the result is cut to whole bytes.
 * Nothing else: no sign, no spaces, no exponent. */
#ifndef DIAG_COMMON_SIZE_H
#define DIAG_COMMON_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* 0 with the bytes in *out; EINVAL for text that is not a size, ERANGE for
 * one past 2^64 - 1. *out is untouched on error. */
int size_parse(const char *s, uint64_t *out);

/* size as a user reads it, in the largest binary unit that holds it whole
 * ("64 MiB", "1 GiB", "1536 B"): never rounded, so the text parses back to
 * the same bytes. Returns out. */
const char *size_format(char *out, size_t cap, uint64_t size);

/* A ratio as the logs print it, before its "x": two decimals ("0.27"), or
 * under 0.01 its first two significant digits ("0.0043"), so a path at
 * 1/500 of its siblings reads 0.002, not 0.00. Returns out. */
const char *ratio_format(char *out, size_t cap, double r);

#endif
