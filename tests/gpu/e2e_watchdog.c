/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: time limits. A plugin that never completes a request is a
 * silent hang inside NCCL (spec 5.3); these turn it into a failure. */
#include "e2e.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A blocking NCCL call (comm init, the first collective that connects, the
 * destroy that closes) can hang forever on a plugin that never completes a
 * connection. The watchdog turns that into a TAP bail-out the runner reports. */
static const char *volatile watchdog_what = "";

static void watchdog_fire(int sig) {
  (void)sig;
  static const char pre[] = "Bail out! watchdog: ", post[] = " did not finish in time\n";
  const char *what = watchdog_what;
  ssize_t w = write(STDOUT_FILENO, pre, sizeof(pre) - 1);
  w = write(STDOUT_FILENO, what, strlen(what));
  w = write(STDOUT_FILENO, post, sizeof(post) - 1);
  (void)w;
  _exit(EXIT_HUNG);
}

/* `what` is read when the alarm fires: it must outlive the armed span. */
void watchdog_arm(const char *what, int seconds) {
  watchdog_what = what;
  signal(SIGALRM, watchdog_fire);
  alarm((unsigned)seconds);
}

void watchdog_disarm(void) { alarm(0); }

/* Waits for the stream without trusting NCCL to ever finish: poll the
 * stream and the communicator's async error, with a deadline. */
int wait_stream(struct rank_state *s, const char *what) {
  double deadline = now_s() + s->o->timeout_s;
  struct timespec nap = {0, 20000};
  for (;;) {
    cudaError_t e = cudaStreamQuery(s->stream);
    if (e == cudaSuccess) return 0;
    if (e != cudaErrorNotReady) {
      printf("# %s: cudaStreamQuery: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
      s->dead = 1;
      return -1;
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(s->comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      printf("# %s: NCCL reports an asynchronous error: %s (%s)\n", what, ncclGetErrorString(async),
             ncclGetLastError(s->comm));
      s->dead = 1;
      return -1;
    }
    if (now_s() > deadline) {
      printf("# %s: not finished after %d s (NCCL_E2E timeout); the transfer hangs\n", what,
             s->o->timeout_s);
      s->dead = 1;
      return -1;
    }
    nanosleep(&nap, NULL);
  }
}
