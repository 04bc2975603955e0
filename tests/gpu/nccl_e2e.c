/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: one rank of the real-NCCL end-to-end test (design test layer 6).
 *
 * Two of these processes share one GPU; tests/gpu/run.sh starts them with
 * different NCCL_HOSTID values so NCCL counts them as two hosts and every
 * byte between them crosses the network plugin (spec section 8). Each rank
 * runs the collectives over a list of sizes and checks every element of its
 * result on the host, then (optionally) times all_reduce for the bus
 * bandwidth table. Output is TAP ("ok N - ...") plus "BW ..." lines that the
 * runner turns into the table.
 *
 *   nccl_e2e probe            GPUs and versions; exit 3 when no GPU is usable
 *   nccl_e2e dlopen PLUGIN    load a net plugin as NCCL does (RTLD_NOW) and
 *                             list the ncclNetPlugin_vN symbols it exports
 *   nccl_e2e run --rank R --id-file F [options]   one rank (see usage())
 *
 * Data: every element is a pure function of (index, rank, case seed), so each
 * rank computes what every other rank sent. Reductions use small integers in
 * float, whose sums are exact; the receive buffer is pre-filled with a
 * sentinel so an element NCCL never wrote is caught too.
 *
 * Files: this one (main and the life of a rank), e2e_cli.c (options),
 * e2e_probe.c (probe, dlopen), e2e_bootstrap.c (the unique id file),
 * e2e_cases.c (the checks), e2e_bw.c (the timings), e2e_data.c (values and
 * verdicts), e2e_buffers.c, e2e_watchdog.c (time limits), e2e_report.c. */
#include "e2e.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_or(const char *name) {
  const char *v = getenv(name);
  return v ? v : "(unset)";
}

/* Sets NCCL_HOSTID, selects the GPU and prints what this rank runs with.
 * Returns 0, or the exit status. */
static int rank_setup(const struct opts *o) {
  /* NCCL computes its host hash once, at the first use: before any call. */
  if (o->hostid && setenv("NCCL_HOSTID", o->hostid, 1)) return EXIT_SETUP;
  const char *hid = getenv("NCCL_HOSTID");
  if (o->nranks > 1 && !hid)
    printf("# NCCL_HOSTID is unset: ranks on one GPU will be refused as duplicate GPUs\n");

  int nccl = 0, rt = 0, drv = 0;
  char nv[32];
  ncclGetVersion(&nccl);
  version_str(nccl, nv, sizeof(nv));
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  cudaError_t e = cudaSetDevice(o->device);
  struct cudaDeviceProp p;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&p, o->device);
  if (e != cudaSuccess) {
    printf("Bail out! no usable GPU %d: %s (%s)\n", o->device, cudaGetErrorName(e),
           cudaGetErrorString(e));
    return EXIT_NO_GPU;
  }
  printf("# rank %d/%d pid %d: GPU %d %s (pci %04x:%02x:%02x.0), NCCL %s, CUDA runtime %d.%d "
         "driver %d.%d\n",
         o->rank, o->nranks, (int)getpid(), o->device, p.name, p.pciDomainID, p.pciBusID,
         p.pciDeviceID, nv, rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
  printf("# NCCL_NET=%s NCCL_NET_PLUGIN=%s NCCL_HOSTID=%s\n", env_or("NCCL_NET"),
         env_or("NCCL_NET_PLUGIN"), env_or("NCCL_HOSTID"));
  fflush(stdout);
  return 0;
}

/* Rank 0 makes the unique id and publishes it; the others wait for it. */
static int share_id(const struct opts *o, ncclUniqueId *id) {
  if (o->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(id);
    if (r != ncclSuccess) {
      printf("Bail out! ncclGetUniqueId: %s (%s)\n", ncclGetErrorString(r), ncclGetLastError(NULL));
      return EXIT_SETUP;
    }
    if (write_id(o->id_file, id)) return EXIT_SETUP;
  } else if (read_id(o->id_file, id, o->timeout_s)) {
    printf("Bail out! no unique id from rank 0\n");
    return EXIT_SETUP;
  }
  return 0;
}

/* The stream, the buffers and the communicator (the first TAP case).
 * Returns 0, or the exit status. */
static int comm_up(struct rank_state *s, ncclUniqueId id) {
  const struct opts *o = s->o;
  if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess ||
      alloc_buffers(s)) {
    printf("Bail out! cannot set up the GPU buffers\n");
    return EXIT_SETUP;
  }
  double t0 = now_s();
  watchdog_arm("ncclCommInitRank", o->timeout_s);
  ncclResult_t r = ncclCommInitRank(&s->comm, o->nranks, id, o->rank);
  watchdog_disarm();
  tap_result(s, r == ncclSuccess, "ncclCommInitRank");
  if (r != ncclSuccess) {
    printf("# ncclCommInitRank: %s (%s)\n", ncclGetErrorString(r), ncclGetLastError(NULL));
    printf("Bail out! no communicator\n");
    return EXIT_SETUP;
  }
  printf("# communicator up in %.2f s\n", now_s() - t0);
  fflush(stdout);
  return 0;
}

/* Destroy makes NCCL close every plugin connection (a case of its own);
 * after a hang only abort is safe. */
static void comm_down(struct rank_state *s) {
  if (s->dead) {
    watchdog_arm("ncclCommAbort", s->o->timeout_s);
    ncclCommAbort(s->comm);
    watchdog_disarm();
    tap_result(s, 0, "communicator aborted after a hang or an asynchronous error");
  } else {
    watchdog_arm("ncclCommDestroy", s->o->timeout_s);
    ncclResult_t r = ncclCommDestroy(s->comm);
    watchdog_disarm();
    if (r != ncclSuccess) printf("# ncclCommDestroy: %s\n", ncclGetErrorString(r));
    tap_result(s, r == ncclSuccess, "ncclCommDestroy (the plugin closes its connections)");
  }
  cudaFree(s->dsend);
  cudaFree(s->drecv);
  cudaStreamDestroy(s->stream);
  free(s->hsend);
  free(s->hrecv);
}

static int cmd_run(int argc, char **argv) {
  struct opts o;
  if (parse_run(argc, argv, &o)) {
    usage(stderr);
    return EXIT_USAGE;
  }
  int rc = rank_setup(&o);
  if (rc) return rc;
  struct rank_state s = {.o = &o};
  ncclUniqueId id;
  if ((rc = share_id(&o, &id)) || (rc = comm_up(&s, id))) return rc;

  if (strcmp(o.checks, "none")) run_checks(&s);
  if (o.bw_max) run_bw(&s);
  comm_down(&s);
  printf("1..%d\n", s.tap_n);
  return s.tap_failed ? EXIT_CHECKS : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && !strcmp(argv[1], "probe")) return cmd_probe();
  if (argc == 3 && !strcmp(argv[1], "dlopen")) return cmd_dlopen(argv[2]);
  if (argc >= 2 && !strcmp(argv[1], "run")) return cmd_run(argc - 1, argv + 1);
  usage(argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
  return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : EXIT_USAGE;
}
