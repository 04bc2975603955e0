/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the listen handle decoder (bytes from the peer via NCCL). A
 * handle that decodes must re-encode to bytes that decode to the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/handle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t in[NCCL_NET_HANDLE_MAXSIZE] = {0};
  memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
  struct handle h, h2;
  char why[256];
  if (handle_decode(in, &h, why, sizeof(why)) != HANDLE_OK) return 0;
  uint8_t out[NCCL_NET_HANDLE_MAXSIZE];
  int n = handle_encode(&h, out);
  if (handle_decode(out, &h2, why, sizeof(why)) != HANDLE_OK) abort();
  if (h2.nonce != h.nonce || h2.ncands != n || n != h.ncands) abort();
  for (int i = 0; i < n; i++)
    if (h2.cands[i].port != h.cands[i].port ||
        memcmp(&h2.cands[i].addr, &h.cands[i].addr, sizeof(h.cands[i].addr)) ||
        strcmp(h2.cands[i].ifname, h.cands[i].ifname))
      abort();
  return 0;
}
