/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's own loader and adapters drive one of our tables, without a GPU.
 * NCCL (2.28 and later) turns every table it loads into its current ncclNet
 * (v11 in 2.28-2.29, v12 in 2.30) with one internal function per version,
 * getNcclNet_vN(dlopen handle); the wrapper script finds that function's
 * offset in the library's symbol table and passes it here with the offset
 * of NCCL's logger. We then make the calls NCCL's proxy would: init,
 * properties, a loopback connection, registrations, a verified message,
 * and sizes the table cannot carry.
 * usage: nccl_adapters LIBNCCL PLUGIN GET_OFFSET_HEX LOGGER_OFFSET_HEX
 * Exit status 77: this NCCL is too old for the driver (its ncclNet differs). */
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/abi/net_v11.h"
#include "plugin/abi/net_v12.h"

/* v11 and v12 share every slot used here; only the property struct grew. */
typedef ncclNet_v11_t *(*get_net_fn)(void *plugin_lib);
typedef int (*get_version_fn)(int *version);

static int failed;
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failed = 1;                                                                                  \
      printf("FAIL: ");                                                                            \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
    }                                                                                              \
  } while (0)

#define PRINT_PROPS(p)                                                                             \
  printf("device 0: %s, ptrSupport %d, speed %d, maxRecvs %d, vdevs %d, maxP2pBytes %zu, "         \
         "maxCollBytes %zu\n",                                                                     \
         (p).name, (p).ptrSupport, (p).speed, (p).maxRecvs, (p).vProps.ndevs, (p).maxP2pBytes,     \
         (p).maxCollBytes);                                                                        \
  EXPECT((p).maxP2pBytes == MAX_NET_SIZE, "maxP2pBytes %zu", (p).maxP2pBytes);                     \
  EXPECT((p).netDeviceType == NCCL_NET_DEVICE_HOST && (p).vProps.ndevs == 1, "type %d, vdevs %d",  \
         (p).netDeviceType, (p).vProps.ndevs)

/* NCCL's property struct is v12's from 2.30 on, v11's before. */
static void props(ncclNet_v11_t *net, int v12) {
  union {
    ncclNetProperties_v11_t v11;
    ncclNetProperties_v12_t v12;
  } p;
  memset(&p, 0xa5, sizeof(p));
  ncclResult_t r =
    v12 ? ((ncclResult_t(*)(int, ncclNetProperties_v12_t *))net->getProperties)(0, &p.v12)
        : net->getProperties(0, &p.v11);
  EXPECT(r == ncclSuccess, "getProperties: %d", r);
  if (v12) {
    PRINT_PROPS(p.v12);
    EXPECT(p.v12.railId == NCCL_NET_ID_UNDEF, "railId %d", p.v12.railId);
  } else {
    PRINT_PROPS(p.v11);
  }
}

static void message(ncclNet_v11_t *net, void *sc, void *rc) {
  size_t size = 3 << 20;
  char *a = malloc(size), *b = calloc(1, size);
  void *ma = NULL, *mb = NULL, *rq = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION, *sq = NULL;
  for (size_t i = 0; i < size; i++) a[i] = (char)(i * 7 + 1);
  EXPECT(net->regMr(sc, a, size, NCCL_PTR_HOST, &ma) == 0 &&
           net->regMr(rc, b, size, NCCL_PTR_HOST, &mb) == 0,
         "regMr");
  int tag = 3, ds = 0, dr = 0, ns = -1, nr = -1;
  void *bp = b;
  EXPECT(net->irecv(rc, 1, &bp, &size, &tag, &mb, NULL, &rq) == 0 && rq, "irecv");
  for (int i = 0; i < 1000000 && !sq; i++)
    if (net->isend(sc, a, size, tag, ma, NULL, &sq)) break;
  EXPECT(sq, "isend");
  for (long i = 0; sq && rq && i < 100000000 && (!ds || !dr); i++) {
    if (!ds && net->test(sq, &ds, &ns)) break;
    if (!dr && net->test(rq, &dr, &nr)) break;
    if (i % 64 == 0) sched_yield();
  }
  EXPECT(ds && dr && ns == (int)size && nr == (int)size && !memcmp(a, b, size),
         "message of %zu bytes: done %d/%d, sizes %d/%d, data %s", size, ds, dr, ns, nr,
         memcmp(a, b, size) ? "differs" : "equal");
  if (!failed) printf("message of %zu bytes through NCCL's adapter: verified\n", size);
  void *q = NULL, *m3 = NULL;
  EXPECT(net->isend(sc, a, MAX_NET_SIZE + 1, tag, ma, NULL, &q) != ncclSuccess,
         "isend of 1 GiB + 1 accepted");
  ncclResult_t r = net->regMr(sc, a, 3ULL << 30, NCCL_PTR_HOST, &m3);
  printf("isend of 1 GiB + 1 refused; regMr of 3 GiB: %s\n", r ? "refused" : "accepted");
  if (!r && m3) net->deregMr(sc, m3);
  net->deregMr(sc, ma);
  net->deregMr(rc, mb);
  free(a), free(b);
}

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  void *nccl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  struct link_map *lm = NULL;
  if (!nccl || dlinfo(nccl, RTLD_DI_LINKMAP, &lm)) {
    printf("FAIL: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  int code = 0;
  get_version_fn ver = (get_version_fn)dlsym(nccl, "ncclGetVersion");
  if (ver) ver(&code);
  if (code < 22800) { /* its internal ncclNet has another shape */
    printf("SKIP: NCCL %d is older than 2.28\n", code);
    return 77;
  }
  get_net_fn get = (get_net_fn)(lm->l_addr + strtoul(argv[3], NULL, 16));
  ncclDebugLogger_t logger = (ncclDebugLogger_t)(lm->l_addr + strtoul(argv[4], NULL, 16));
  void *plugin = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  ncclNet_v11_t *net = plugin ? get(plugin) : NULL;
  if (!net) {
    printf("FAIL: NCCL %d found no table in %s\n", code, argv[2]);
    return 1;
  }
  void *ctx = NULL, *lc = NULL, *sc = NULL, *rc = NULL;
  ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  ncclNetDeviceHandle_v11_t *dh = NULL;
  int ndev = 0;
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  EXPECT(net->init(&ctx, 77, &cfg, logger, NULL) == 0, "init");
  EXPECT(net->devices(&ndev) == 0 && ndev >= 1, "devices: %d", ndev);
  props(net, code >= 23000);
  EXPECT(net->listen(ctx, 0, handle, &lc) == 0 && lc, "listen");
  for (long i = 0; lc && i < 10000000 && (!sc || !rc); i++) {
    if (!sc && net->connect(ctx, 0, handle, &sc, &dh)) break;
    if (!rc && net->accept(lc, &rc, &dh)) break;
  }
  EXPECT(sc && rc, "loopback connection");
  if (lc) net->closeListen(lc);
  if (sc && rc) message(net, sc, rc);
  if (sc) net->closeSend(sc);
  if (rc) net->closeRecv(rc);
  EXPECT(net->finalize(ctx) == 0, "finalize");
  printf("%s\n", failed ? "FAILED" : "PASSED");
  return failed;
}
