/* SPDX-License-Identifier: Apache-2.0 */
/* The launcher's environment -> rank, world size, local rank, rendezvous.
 * torchrun's variables come first: torchrun may itself run under srun or
 * mpirun, and its own are the per-process ones. */
#include "tools/probe/launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strutil.h"
#include "tools/probe/probe.h"

struct launcher {
  const char *name;
  const char *rank, *size, *local_rank, *local_size, *job;
};

static const struct launcher launchers[] = {
  {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
  {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
   "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid"},
  {"MPI (PMI)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", NULL},
  {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", NULL},
};

enum { UNSAID = -1 }; /* a number the launcher does not give */

/* A non-negative decimal integer, or UNSAID. */
static int int_of(const char *s) {
  if (!s || !*s) return UNSAID;
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < 0 || v > 1 << 24) return UNSAID;
  return (int)v;
}

int probe_parse_hostport(const char *text, char *host, size_t cap, int *port) {
  const char *colon;
  if (text[0] == '[') {
    const char *close = strchr(text, ']');
    if (!close || close[1] != ':') return EINVAL;
    if ((size_t)(close - text - 1) >= cap) return EINVAL;
    snprintf(host, cap, "%.*s", (int)(close - text - 1), text + 1);
    colon = close + 1;
  } else {
    colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= cap) return EINVAL;
    snprintf(host, cap, "%.*s", (int)(colon - text), text);
    if (strchr(host, ':')) return EINVAL; /* an IPv6 address needs brackets */
  }
  int p = int_of(colon + 1);
  if (p < 1 || p > 65535) return EINVAL;
  *port = p;
  return 0;
}

static void job_id(struct probe_launch *l, const struct launcher *x, probe_getenv_fn get,
                   void *arg) {
  const char *j = x->job ? get(x->job, arg) : NULL;
  const char *sj = get("SLURM_JOB_ID", arg), *ss = get("SLURM_STEP_ID", arg);
  if (j && *j) snprintf(l->job, sizeof(l->job), "%s:%s", x->name, j);
  else if (sj && *sj) snprintf(l->job, sizeof(l->job), "slurm:%s.%s", sj, ss ? ss : "");
  else if ((j = get("PMIX_NAMESPACE", arg)) && *j) snprintf(l->job, sizeof(l->job), "pmix:%s", j);
}

/* The rendezvous host when neither --rendezvous nor MASTER_ADDR gives it. */
static int default_host(struct probe_launch *l, const struct launcher *x, probe_getenv_fn get,
                        void *arg, char *why, size_t cap) {
  const char *nodes = get("SLURM_STEP_NODELIST", arg);
  const char *from = "SLURM_STEP_NODELIST";
  if (!nodes || !*nodes) nodes = get("SLURM_JOB_NODELIST", arg), from = "SLURM_JOB_NODELIST";
  if (nodes && *nodes && !strcmp(x->name, "Slurm")) {
    char err[160];
    if (slurm_first_node(nodes, l->host, sizeof(l->host), err, sizeof(err))) {
      snprintf(why, cap,
               "%s=%s cannot be read: %s; give the rendezvous with MASTER_ADDR or "
               "--rendezvous HOST:PORT",
               from, nodes, err);
      return EINVAL;
    }
    snprintf(l->host_from, sizeof(l->host_from), "the first node of %s", from);
    return 0;
  }
  /* All ranks on this node (mpirun -np N on one machine): rank 0 is here. */
  int local_size = x->local_size ? int_of(get(x->local_size, arg)) : -1;
  if (local_size == l->world || l->world == 1) {
    scopy(l->host, sizeof(l->host), "127.0.0.1");
    scopy(l->host_from, sizeof(l->host_from), "this node (every rank runs here)");
    return 0;
  }
  snprintf(why, cap,
           "%s gives no rendezvous host: set MASTER_ADDR to rank 0's host (and MASTER_PORT, "
           "default %d) on every rank (mpirun -x MASTER_ADDR=node01), or pass --rendezvous "
           "HOST:PORT",
           x->name, PROBE_DEFAULT_PORT);
  return EINVAL;
}

static int rendezvous(struct probe_launch *l, const struct launcher *x, const char *given,
                      probe_getenv_fn get, void *arg, char *why, size_t cap) {
  l->port = PROBE_DEFAULT_PORT;
  if (given) {
    if (probe_parse_hostport(given, l->host, sizeof(l->host), &l->port)) {
      snprintf(why, cap, "--rendezvous %s: want HOST:PORT (an IPv6 address in brackets)", given);
      return EINVAL;
    }
    scopy(l->host_from, sizeof(l->host_from), "--rendezvous");
    return 0;
  }
  const char *mp = get("MASTER_PORT", arg);
  if (mp && *mp) {
    l->port = int_of(mp);
    if (l->port < 1 || l->port > 65535) {
      snprintf(why, cap, "MASTER_PORT=%s is not a port number (1-65535)", mp);
      return EINVAL;
    }
  }
  /* torchrun's agent keeps its own store on MASTER_PORT and tells its
   * workers so: the port above it is ours. */
  const char *agent = get("TORCHELASTIC_USE_AGENT_STORE", arg);
  int shifted = agent && !strcasecmp(agent, "true") && l->port < 65535;
  l->port += shifted;
  const char *ma = get("MASTER_ADDR", arg);
  if (ma && *ma) {
    scopy(l->host, sizeof(l->host), ma);
    scopy(l->host_from, sizeof(l->host_from),
          shifted ? "MASTER_ADDR, MASTER_PORT+1: torchrun's store has MASTER_PORT" : "MASTER_ADDR");
    return 0;
  }
  return default_host(l, x, get, arg, why, cap);
}

int probe_launch_read(struct probe_launch *l, const char *given, probe_getenv_fn get, void *arg,
                      char *why, size_t cap) {
  memset(l, 0, sizeof(*l));
  const struct launcher *x = NULL;
  for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]) && !x; i++) {
    const char *r = get(launchers[i].rank, arg), *s = get(launchers[i].size, arg);
    if ((r && *r) || (s && *s)) x = &launchers[i];
  }
  if (!x) {
    snprintf(why, cap,
             "no rank and world size in the environment: run the probe under a launcher "
             "(torchrun sets RANK and WORLD_SIZE, Open MPI OMPI_COMM_WORLD_RANK and "
             "OMPI_COMM_WORLD_SIZE, MPICH and Intel MPI PMI_RANK and PMI_SIZE, srun SLURM_PROCID "
             "and SLURM_NTASKS), or set RANK and WORLD_SIZE yourself");
    return EINVAL;
  }
  const char *rs = get(x->rank, arg), *ws = get(x->size, arg);
  l->rank = int_of(rs);
  l->world = int_of(ws);
  if (l->rank < 0 || l->world < 1 || l->rank >= l->world) {
    snprintf(why, cap, "%s: %s=%s and %s=%s do not make a rank below a world size", x->name,
             x->rank, rs ? rs : "(unset)", x->size, ws ? ws : "(unset)");
    return EINVAL;
  }
  l->local_rank = x->local_rank ? int_of(get(x->local_rank, arg)) : -1;
  scopy(l->launcher, sizeof(l->launcher), x->name);
  job_id(l, x, get, arg);
  return rendezvous(l, x, given, get, arg, why, cap);
}
