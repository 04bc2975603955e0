/* SPDX-License-Identifier: Apache-2.0 */
/* The release, readable in the file without loading it: the tools name the
 * version of the plugin NCCL will load, even where this host cannot load it. */
#include "common/version.h"

__attribute__((used)) static const char version_tag[] = "libnccl-net-diag version " DIAG_VERSION;
