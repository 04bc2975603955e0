/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics file writer (metrics.h). Every series carries pid and conn,
 * so two processes' files on one node never hold the same series (the
 * collector rejects a scrape that does). */
#include "transport/run/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/knobs.h"
#include "common/log.h"
#include "topo/sysfs.h"
#include "transport/prefs.h"
#include "transport/run/conns.h"
#include "transport/run/slow.h"

static struct metrics_prefs prefs;
static pthread_once_t prefs_once = PTHREAD_ONCE_INIT;

static void prefs_load(void) {
  const char *d = transport_prefs()->metrics_dir;
  prefs.dir = d && *d ? d : NULL;
}

const struct metrics_prefs *metrics_prefs_read(void) {
  pthread_once(&prefs_once, prefs_load);
  return &prefs;
}

/* A label value as the format wants it: backslash, quote and newline escaped. */
static void put_label(FILE *f, const char *name, const char *v, bool is_last) {
  fprintf(f, "%s=\"", name);
  for (; *v; v++) {
    if (*v == '\\' || *v == '"') fputc('\\', f);
    if (*v == '\n') {
      fputs("\\n", f);
      continue;
    }
    fputc(*v, f);
  }
  fputs(is_last ? "\"" : "\",", f);
}

static void put_labels(FILE *f, const struct run_conn_info *i) {
  char pid[16], id[16], ppid[16];
  snprintf(pid, sizeof(pid), "%d", (int)getpid());
  snprintf(id, sizeof(id), "%u", i->id);
  snprintf(ppid, sizeof(ppid), "%u", i->peer_pid);
  put_label(f, "pid", pid, false);
  put_label(f, "conn", id, false);
  put_label(f, "direction", i->is_send ? "send" : "recv", false);
  put_label(f, "transport", i->transport, false);
  put_label(f, "device", i->dev, false);
  put_label(f, "peer_host", i->peer_host, false);
  put_label(f, "peer_addr", i->peer_addr, false);
  put_label(f, "peer_pid", ppid, true);
}

enum field {
  F_BYTES,
  F_BUSY,
  F_DONE,
  F_RATE,
  F_OPEN,
  F_LAT_MAX,
  F_SLOW,
  F_TCP_RETRANS,
  F_TCP_RTT,
  F_TCP_LOST
};
#define F_FIRST_TCP F_TCP_RETRANS /* these only for TCP connections */
static const struct {
  const char *name, *type, *help;
} families[] = {
  [F_BYTES] = {"nccl_diag_connection_bytes_total", "counter",
               "Payload bytes of the connection's completed requests."},
  [F_BUSY] = {"nccl_diag_connection_busy_seconds_total", "counter",
              "Seconds the connection had at least one request outstanding."},
  [F_DONE] = {"nccl_diag_connection_completions_total", "counter",
              "Requests completed on the connection."},
  [F_RATE] = {"nccl_diag_connection_busy_throughput_bytes_per_second", "gauge",
              "Bytes moved per second of busy time."},
  [F_OPEN] = {"nccl_diag_connection_open", "gauge", "1 while the connection is open, 0 after."},
  [F_LAT_MAX] = {"nccl_diag_connection_completion_latency_max_seconds", "gauge",
                 "Longest time from post to completion of one request."},
  [F_SLOW] = {"nccl_diag_connection_slow", "gauge",
              "1 when the connection was named a slow link (well under its siblings, with "
              "evidence on its sockets) and has not recovered, else 0."},
  [F_TCP_RETRANS] = {"nccl_diag_connection_tcp_retransmits_total", "counter",
                     "Segments the kernel retransmitted on the connection's sockets (TCP_INFO)."},
  [F_TCP_RTT] = {"nccl_diag_connection_tcp_rtt_seconds", "gauge",
                 "Largest smoothed round-trip time of the connection's sockets (TCP_INFO)."},
  [F_TCP_LOST] = {"nccl_diag_connection_tcp_lost_segments", "gauge",
                  "Segments the kernel counts lost now on the connection's sockets (TCP_INFO)."},
};

static double field(enum field k, const struct run_conn_info *i) {
  switch (k) {
  case F_BYTES: return (double)i->v.bytes;
  case F_BUSY: return (double)i->v.busy_ns * 1e-9;
  case F_DONE: return (double)i->v.completions;
  case F_RATE: return run_stats_rate(&i->v);
  case F_OPEN: return i->is_open ? 1 : 0;
  case F_LAT_MAX: return (double)i->v.lat_max_ns * 1e-9;
  case F_SLOW: {
    double ratio;
    return run_slow_of(i->id, &ratio) ? 1 : 0;
  }
  case F_TCP_RETRANS: return (double)i->tcp.retrans;
  case F_TCP_RTT: return (double)i->tcp.rtt_us * 1e-6;
  case F_TCP_LOST: return (double)i->tcp.lost;
  }
  return 0;
}

static void put_histogram(FILE *f, const struct run_conn_info *all, int n) {
  const char *h = "nccl_diag_connection_completion_latency_seconds";
  fprintf(f, "# HELP %s Time from post to completion, one request in %d sampled.\n", h,
          RUN_LAT_SAMPLE);
  fprintf(f, "# TYPE %s histogram\n", h);
  for (int k = 0; k < n; k++) {
    const struct run_conn_info *i = &all[k];
    uint64_t cum = 0;
    for (int b = 0; b < RUN_LAT_BUCKETS; b++) {
      cum += i->v.lat_buckets[b];
      fprintf(f, "%s_bucket{", h);
      put_labels(f, i);
      if (b == RUN_LAT_BUCKETS - 1) fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
      else fprintf(f, ",le=\"%g\"} %llu\n", run_stats_bucket_le(b), (unsigned long long)cum);
    }
    fprintf(f, "%s_sum{", h);
    put_labels(f, i);
    fprintf(f, "} %.9f\n%s_count{", (double)i->v.lat_sum_ns * 1e-9, h);
    put_labels(f, i);
    fprintf(f, "} %llu\n", (unsigned long long)i->v.lat_count);
  }
}

/* The RDMA ports of the IB connections, each once: device and port from
 * our device's name ("mlx5_2" or "mlx5_2:1"); merged devices are left out. */
#define MAX_PORTS 64
static int rdma_ports(const struct run_conn_info *all, int n, char (*devs)[SYSFS_NAME_MAX],
                      int *ports) {
  int np = 0;
  for (int k = 0; k < n && np < MAX_PORTS; k++) {
    if (strcmp(all[k].transport, "ib") || strchr(all[k].dev, '+')) continue;
    char dev[SYSFS_NAME_MAX];
    snprintf(dev, sizeof(dev), "%s", all[k].dev);
    char *colon = strchr(dev, ':');
    if (colon) *colon = '\0';
    bool is_seen = false;
    for (int j = 0; j < np; j++) is_seen |= !strcmp(devs[j], dev) && ports[j] == all[k].port;
    if (is_seen) continue;
    snprintf(devs[np], SYSFS_NAME_MAX, "%s", dev);
    ports[np++] = all[k].port;
  }
  return np;
}

/* The ports' hw_counters (retries, out-of-sequence, ACK timeouts, CNPs,
 * ECN marks: whatever the driver exposes), as the kernel names them. */
static void put_hw_counters(FILE *f, const struct run_conn_info *all, int n) {
  char devs[MAX_PORTS][SYSFS_NAME_MAX], names[256][SYSFS_NAME_MAX]; /* 20 KiB, off the data path */
  int ports[MAX_PORTS], np = rdma_ports(all, n, devs, ports);
  const char *h = "nccl_diag_rdma_port_hw_counter_total";
  bool has_head = false;
  for (int j = 0; j < np; j++) {
    int count = 0;
    if (sysfs_list(names, 256, &count, "class/infiniband/%s/ports/%d/hw_counters", devs[j],
                   ports[j]))
      continue;
    for (int c = 0; c < count && c < 256; c++) {
      long v;
      if (sysfs_read_long(&v, "class/infiniband/%s/ports/%d/hw_counters/%s", devs[j], ports[j],
                          names[c]) ||
          v < 0)
        continue;
      if (!has_head)
        fprintf(f,
                "# HELP %s The RDMA port's hardware counter, as its driver names it.\n"
                "# TYPE %s counter\n",
                h, h);
      has_head = true;
      char pid[16], port[16];
      snprintf(pid, sizeof(pid), "%d", (int)getpid());
      snprintf(port, sizeof(port), "%d", ports[j]);
      fprintf(f, "%s{", h);
      put_label(f, "pid", pid, false);
      put_label(f, "device", devs[j], false);
      put_label(f, "port", port, false);
      put_label(f, "counter", names[c], true);
      fprintf(f, "} %ld\n", v);
    }
  }
}

static void put_all(FILE *f, const struct run_conn_info *all, int n) {
  for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", families[k].name, families[k].help, families[k].name,
            families[k].type);
    for (int c = 0; c < n; c++) {
      if (k >= F_FIRST_TCP && !all[c].tcp.has) continue;
      fprintf(f, "%s{", families[k].name);
      put_labels(f, &all[c]);
      double v = field((enum field)k, &all[c]);
      if (k == F_BYTES || k == F_DONE || k == F_OPEN || k == F_SLOW || k == F_TCP_RETRANS ||
          k == F_TCP_LOST)
        /* counts: exact, never 1.6e+10 */
        fprintf(f, "} %.0f\n", v);
      else fprintf(f, "} %.9g\n", v);
    }
  }
  put_histogram(f, all, n);
  put_hw_counters(f, all, n);
}

/* "nccl_diag_<host>_<pid>.prom", the host name cut to characters safe in a
 * file name. */
static void file_name(char *out, size_t cap, bool is_tmp) {
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  for (char *p = host; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '-' || *p == '.'))
      *p = '_';
  /* the collector reads *.prom only, so the hidden temporary is never scraped */
  snprintf(out, cap, "%s/%snccl_diag_%s_%d.prom%s", prefs.dir, is_tmp ? "." : "", host,
           (int)getpid(), is_tmp ? ".tmp" : "");
}

static atomic_bool has_warned;

static void warn_once(const char *path, int err, const char *what) {
  if (atomic_exchange(&has_warned, true)) return;
  WARN("metrics file %s: %s failed (%s); no metrics are written. Set NCCL_DIAG_METRICS to a "
       "directory this process can write, or unset it",
       path, what, strerror(err));
}

/* 0 or an errno (logged once per process). */
static int write_file(void) {
  int n = 0, nopen = 0;
  struct run_conn_info *all = run_conn_snapshot(&n, &nopen);
  char tmp[4096], final[4096];
  file_name(tmp, sizeof(tmp), true);
  file_name(final, sizeof(final), false);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    free(all);
    warn_once(tmp, err, "creating");
    return err;
  }
  fchmod(fd, 0644); /* the collector runs as another user: readable whatever the umask */
  FILE *f = fdopen(fd, "w");
  if (!f) {
    int err = errno;
    close(fd);
    unlink(tmp);
    free(all);
    warn_once(tmp, err, "opening");
    return err;
  }
  put_all(f, all, n);
  free(all);
  int err = ferror(f) ? EIO : 0;
  if (fclose(f) && !err) err = errno;
  if (!err && rename(tmp, final)) err = errno;
  if (err) {
    unlink(tmp);
    warn_once(final, err, "writing");
  }
  return err;
}

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_cond;
static bool is_running, is_stopping;
static pthread_t writer;

static void *writer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&run_lock);
  while (!is_stopping) {
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += RUN_METRICS_PERIOD_SEC;
    while (!is_stopping && pthread_cond_timedwait(&run_cond, &run_lock, &at) != ETIMEDOUT) {
    }
    if (is_stopping) break;
    pthread_mutex_unlock(&run_lock);
    write_file();
    pthread_mutex_lock(&run_lock);
  }
  pthread_mutex_unlock(&run_lock);
  return NULL;
}

void run_metrics_start(void) {
  if (!metrics_prefs_read()->dir) return;
  pthread_mutex_lock(&run_lock);
  if (!is_running) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&run_cond, &ca);
    pthread_condattr_destroy(&ca);
    is_stopping = false;
    int err = pthread_create(&writer, NULL, writer_main, NULL);
    if (err)
      WARN("metrics for NCCL_DIAG_METRICS=%s: no thread to write them (%s); the file is written "
           "only when the last connection closes",
           prefs.dir, strerror(err));
    is_running = !err;
  }
  pthread_mutex_unlock(&run_lock);
}

void run_metrics_stop(void) {
  if (!metrics_prefs_read()->dir) return;
  pthread_mutex_lock(&run_lock);
  bool was = is_running;
  is_running = false;
  is_stopping = true;
  if (was) pthread_cond_signal(&run_cond);
  pthread_mutex_unlock(&run_lock);
  if (was) pthread_join(writer, NULL);
  write_file();
}
