/* SPDX-License-Identifier: Apache-2.0 */
/* The unit test of nccl-net-diag explain: the line readers (test_readers.c)
 * and the rule table with its engine (test_rules.c). */
#ifndef DIAG_TESTS_EXPLAIN_TEST_EXPLAIN_H
#define DIAG_TESTS_EXPLAIN_TEST_EXPLAIN_H

void readers_cases(void);

#endif
