/* SPDX-License-Identifier: Apache-2.0 */
/* Who this process is in the job, read from the environment its launcher
 * set (no launcher of our own), and where rank 0's rendezvous is:
 *   torchrun   RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
 *   Open MPI   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK (_LOCAL_SIZE)
 *   MPICH, Intel MPI  PMI_RANK, PMI_SIZE (MPI_LOCALRANKID)
 *   Slurm      SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the rendezvous
 *              host is the first node of SLURM_STEP_NODELIST
 * MASTER_ADDR / MASTER_PORT and --rendezvous override the host and port.
 * Under torchrun, whose agent holds its own store on MASTER_PORT
 * (TORCHELASTIC_USE_AGENT_STORE=True), the rendezvous is MASTER_PORT+1. */
#ifndef DIAG_TOOLS_PROBE_LAUNCH_H
#define DIAG_TOOLS_PROBE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

struct probe_launch {
  int rank, world, local_rank; /* local_rank -1 when the launcher does not say */
  char launcher[32];           /* "torchrun", "Open MPI", "MPI (PMI)", "Slurm" */
  char host[256];              /* rendezvous host */
  int port;
  char host_from[96]; /* where host came from, for messages */
  char job[128];      /* job id both sides must share, "" none */
  /* The rendezvous secret every rank presents (rdv_secret.h). */
  uint64_t secret;
  int secret_strength;   /* enum rdv_secret_strength */
  char secret_from[400]; /* its inputs, and why they are weak, for messages */
};

/* getenv-like lookup, so tests can feed an environment of their own. */
typedef const char *(*probe_getenv_fn)(const char *name, void *arg);

/* 0, or EINVAL with the message for the user in why (it names the
 * variables looked for). rendezvous: --rendezvous HOST:PORT or NULL. */
int probe_launch_read(struct probe_launch *l, const char *rendezvous, probe_getenv_fn get,
                      void *arg, char *why, size_t cap);

/* The first host of a Slurm node list as Slurm writes it:
 * "node[01-04,07],gpu-a1" -> "node01", "rack[1-2]-n[3,5]" -> "rack1-n3".
 * 0, or EINVAL with the reason in why. */
int slurm_first_node(const char *list, char *out, size_t cap, char *why, size_t whycap);

/* "HOST:PORT", "[v6addr]:PORT" -> host and port. 0 or EINVAL. */
int probe_parse_hostport(const char *text, char *host, size_t cap, int *port);

#endif
