/* SPDX-License-Identifier: Apache-2.0 */
/* The DCB readers: a netlink reply from the kernel (any driver's
 * attributes) and a fixture host's DCB text. The first byte picks which. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/qos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct topo_qos q;
  memset(&q, 0, sizeof(q));
  if (!size) return 0;
  if (data[0] & 1) {
    char text[4096];
    size_t n = size - 1 < sizeof(text) - 1 ? size - 1 : sizeof(text) - 1;
    memcpy(text, data + 1, n);
    text[n] = 0;
    char why[200];
    topo_qos_text_parse(text, &q, why, sizeof(why));
    return 0;
  }
  uint8_t *copy = (uint8_t *)malloc(size - 1 ? size - 1 : 1); /* exact size: ASan sees overreads */
  if (!copy) return 0;
  memcpy(copy, data + 1, size - 1);
  topo_qos_nl_parse(copy, size - 1, &q);
  free(copy);
  return 0;
}
