/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag: the plugin's code, outside a training job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "tools/ncclconf.h"
#include "tools/tool.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-net-diag COMMAND [options]\n"
          "nccl-net-diag %s: the libnccl-net-diag NCCL network plugin, outside a training job\n"
          "\n"
          "  selftest   load the plugin as NCCL does, list its devices, and move verified data\n"
          "             through each one on this host\n"
          "  params     every environment variable the plugin reads: default, value, meaning\n"
          "  doctor     inspect this host: RDMA ports, GIDs, GPU-to-NIC distances, interfaces,\n"
          "             NCCL_* of this process and PID 1; what NCCL should use and why\n"
          "  explain    read NCCL logs (any transport, several ranks or hosts) and name the\n"
          "             cause and the fix of each failure, with the lines that show it\n"
          "  probe      whole-cluster preflight under torchrun, mpirun or srun: every host's\n"
          "             versions and settings compared, every pair of hosts tested through\n"
          "             the plugin on every device, one report with the fixes\n"
          "\n"
          "Run a command with -h for its options.\n",
          DIAG_VERSION);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("nccl-net-diag %s\n", DIAG_VERSION);
    return 0;
  }
  /* What NCCL's configuration files set, as NCCL sets it before the
   * plugin reads its settings. */
  ncclconf_apply();
  if (!strcmp(argv[1], "selftest")) return cmd_selftest(argc - 1, argv + 1);
  if (!strcmp(argv[1], "params")) return cmd_params(argc - 1, argv + 1);
  if (!strcmp(argv[1], "doctor")) return cmd_doctor(argc - 1, argv + 1);
  if (!strcmp(argv[1], "explain")) return cmd_explain(argc - 1, argv + 1);
  if (!strcmp(argv[1], "probe")) return cmd_probe(argc - 1, argv + 1);
  fprintf(stderr, "nccl-net-diag: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
