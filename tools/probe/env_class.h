/* SPDX-License-Identifier: Apache-2.0 */
/* How the probe judges an NCCL_* setting that differs across ranks: the
 * must-agree table's class (common/agree.h) as a probe verdict. */
#ifndef DIAG_TOOLS_PROBE_ENV_CLASS_H
#define DIAG_TOOLS_PROBE_ENV_CLASS_H

enum env_class { EC_IGNORE, EC_DIFFERS, EC_PER_HOST, EC_MUST_AGREE };

/* EC_MUST_AGREE is an error, EC_PER_HOST and EC_DIFFERS a warning,
 * EC_IGNORE not compared (also settings NCCL reconciles). */
enum env_class probe_env_class(const char *name);

#endif
