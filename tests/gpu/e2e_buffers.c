/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: the device buffers and their host mirrors. */
#include "e2e.h"

#include <stdlib.h>

/* One pair of buffers, as large as the largest size asked for, serves every
 * case and every timed size. */
int alloc_buffers(struct rank_state *s) {
  size_t cap = 1;
  for (int k = 0; k < s->o->nsizes; k++)
    if (s->o->sizes[k] > cap) cap = s->o->sizes[k];
  if (s->o->bw_max > cap) cap = s->o->bw_max;
  s->cap = cap;
  CUDA_OK(cudaMalloc(&s->dsend, cap), "buffers");
  CUDA_OK(cudaMalloc(&s->drecv, cap), "buffers");
  s->hsend = malloc(cap);
  s->hrecv = malloc(cap);
  if (!s->hsend || !s->hrecv) {
    printf("# cannot allocate 2 x %zu bytes of host memory\n", cap);
    return -1;
  }
  return 0;
}

/* The receive buffer starts as a sentinel so an element NCCL never wrote
 * fails its check too. */
int upload(struct rank_state *s, size_t send_bytes, size_t recv_bytes) {
  if (send_bytes)
    CUDA_OK(cudaMemcpy(s->dsend, s->hsend, send_bytes, cudaMemcpyHostToDevice), "upload");
  if (recv_bytes) CUDA_OK(cudaMemset(s->drecv, SENTINEL_BYTE, recv_bytes), "sentinel");
  return 0;
}

int download(struct rank_state *s, size_t bytes) {
  if (bytes) CUDA_OK(cudaMemcpy(s->hrecv, s->drecv, bytes, cudaMemcpyDeviceToHost), "download");
  return 0;
}
