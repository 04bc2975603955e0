/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_DIAG_METRICS=DIR: the per-connection figures in Prometheus' text
 * exposition format, in DIR/nccl_diag_<host>_<pid>.prom, for
 * node_exporter's textfile collector. Written whole to a hidden temporary
 * file in DIR and renamed over the old one (the collector never reads half
 * a file), every RUN_METRICS_PERIOD_SEC by a thread of its own (never
 * NCCL's proxy thread) and once more when the last connection closes.
 * Unset: no thread, no file; the figures themselves are always kept (a
 * few stores per completion) for the end-of-job summary. */
#ifndef DIAG_TRANSPORT_RUN_METRICS_H
#define DIAG_TRANSPORT_RUN_METRICS_H

#define RUN_METRICS_PERIOD_SEC 5

struct metrics_prefs {
  const char *dir; /* NULL: off */
};
/* NCCL_DIAG_METRICS, read once. */
const struct metrics_prefs *metrics_prefs_read(void);

/* From the first open connection: starts the writer when a directory is set. */
void run_metrics_start(void);
/* From the last close: stops the writer and writes the file a last time. */
void run_metrics_stop(void);

#endif
