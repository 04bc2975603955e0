/* SPDX-License-Identifier: Apache-2.0 */
/* The cases of test_probe_unit, one function per file. */
#ifndef DIAG_TESTS_PROBE_UNIT_H
#define DIAG_TESTS_PROBE_UNIT_H

void wire_cases(void);

#endif
