/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin version. Its one source is the project version in meson.build,
 * which meson passes as DIAG_VERSION; the packages take it from there too. */
#ifndef DIAG_COMMON_VERSION_H
#define DIAG_COMMON_VERSION_H

#ifndef DIAG_VERSION
#error "DIAG_VERSION is set by meson.build from the project version: build with meson"
#endif

#endif
