/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in libnccl for the probe's version scenario: it exports only
 * ncclGetVersion, answering the release it was built for. */
#ifndef NCCL_TEST_VERSION_CODE
#error "build with -DNCCL_TEST_VERSION_CODE=<major*10000+minor*100+patch>"
#endif

int ncclGetVersion(int *version);
int ncclGetVersion(int *version) {
  *version = NCCL_TEST_VERSION_CODE;
  return 0;
}
