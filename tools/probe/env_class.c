/* SPDX-License-Identifier: Apache-2.0 */
/* The probe's verdict on a setting that differs: from the must-agree table. */
#include "tools/probe/env_class.h"

#include "common/agree.h"

enum env_class probe_env_class(const char *name) {
  switch (agree_classify(name)) {
  case AGREE_MUST: return EC_MUST_AGREE;
  case AGREE_PER_HOST: return EC_PER_HOST;
  case AGREE_DIFFERS: return EC_DIFFERS;
  case AGREE_LOCAL:
  case AGREE_IGNORE: break;
  }
  return EC_IGNORE;
}
