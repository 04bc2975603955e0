/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin version; meson passes the project version in DIAG_VERSION. */
#ifndef DIAG_COMMON_VERSION_H
#define DIAG_COMMON_VERSION_H

#ifndef DIAG_VERSION
#define DIAG_VERSION "0.0.0-dev"
#endif

#endif
