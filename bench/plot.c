/* SPDX-License-Identifier: Apache-2.0 */
/* GB/s against message size as an SVG, written by hand (SVG is text, so
 * the bench needs no plotting package), and below it the ping-pong p50
 * against size when the run measured one: one colour per (mode, comms),
 * the plugin solid with dots, the compared plugin dotted with diamonds,
 * the baseline dashed with squares. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench_report.h"

#define W 960
#define H 540
#define L 80 /* plot area margins */
#define R 250
#define T 50
#define B 70

static const char *const colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

/* x: log2 of the size; y: log10 of the value (GB/s, or p50 us in the
 * latency panel), whole decades, since small and large messages differ by
 * four orders of magnitude. Each panel is H tall, starting at top. */
struct axes {
  double x0, x1, y0, y1;
  int top;
  bool is_lat; /* the ping-pong panel: p50 round trip against size */
};

static double px(const struct axes *a, uint64_t size) {
  double span = a->x1 > a->x0 ? a->x1 - a->x0 : 1;
  return L + (log2((double)size) - a->x0) / span * (W - L - R);
}

static double py(const struct axes *a, double value) {
  double l = log10(value > 0 ? value : pow(10, a->y0));
  return a->top + H - B - (l - a->y0) / (a->y1 - a->y0) * (H - T - B);
}

static bool in_panel(const struct axes *a, const struct row *r) {
  return (r->mode == MODE_LAT) == a->is_lat;
}

static double value_of(const struct axes *a, const struct variant *v) {
  return a->is_lat ? v->m_p50 : v->m_gbps;
}

static void short_size(char *out, size_t cap, uint64_t s) {
  static const char *const u[] = {"", "K", "M", "G"};
  int i = 0;
  while (i < 3 && s >= 1024 && s % 1024 == 0) s /= 1024, i++;
  snprintf(out, cap, "%llu%s", (unsigned long long)s, u[i]);
}

static void draw_grid(FILE *f, const struct axes *a) {
  for (int d = (int)a->y0; d <= (int)a->y1; d++) {
    double y = py(a, pow(10, d));
    fprintf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ccc'/>\n", L, W - R, y, y);
    fprintf(f, "<text x='%d' y='%.1f' text-anchor='end'>%g</text>\n", L - 6, y + 4, pow(10, d));
    for (int m = 2; m < 10 && d < (int)a->y1; m++) {
      double ym = py(a, m * pow(10, d));
      fprintf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#f0f0f0'/>\n", L, W - R, ym,
              ym);
    }
  }
}

static void draw_axes(FILE *f, const struct axes *a, const struct report *rep) {
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#333'/>\n", L,
          a->top + T, W - L - R, H - T - B);
  draw_grid(f, a);
  uint64_t last = 0;
  for (int i = 0; i < rep->nrows; i++) {
    uint64_t s = rep->rows[i].size;
    if (!in_panel(a, &rep->rows[i]) || s == last) continue;
    last = s;
    char lab[16];
    short_size(lab, sizeof(lab), s);
    fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='#eee'/>\n", px(a, s), px(a, s),
            a->top + T, a->top + H - B);
    fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle'>%s</text>\n", px(a, s),
            a->top + H - B + 18, lab);
  }
  int mid = a->top + T + (H - T - B) / 2;
  fprintf(f, "<text x='%d' y='%d' text-anchor='middle'>message size (bytes)</text>\n",
          L + (W - L - R) / 2, a->top + H - 20);
  fprintf(f, "<text x='20' y='%d' transform='rotate(-90 20 %d)' text-anchor='middle'>%s</text>\n",
          mid, mid,
          a->is_lat ? "ping-pong p50 us (round trip, log scale)" : "GB/s (median, log scale)");
}

enum { S_PLUGIN, S_COMPARE, S_BASE };

/* The variant a series takes from a row, or -1. */
static int pick(const struct row *r, int kind) {
  return kind == S_PLUGIN ? 0 : kind == S_COMPARE ? r->cmp : r->best;
}

static const char *const dashes[] = {"", " stroke-dasharray='2 3'", " stroke-dasharray='6 4'"};

static bool in_series(const struct row *r, int mode, int comms, int kind) {
  return r->mode == mode && r->ncomms == comms && pick(r, kind) >= 0;
}

/* One polyline of a (mode, comms) group: the plugin, the compared plugin
 * or the chosen baseline shape of each row. */
static void series(FILE *f, const struct axes *a, const struct report *rep, int mode, int comms,
                   int kind, const char *col) {
  fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2'%s points='", col, dashes[kind]);
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (!in_series(r, mode, comms, kind)) continue;
    fprintf(f, "%.1f,%.1f ", px(a, r->size), py(a, value_of(a, &r->variants[pick(r, kind)])));
  }
  fprintf(f, "'/>\n");
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (!in_series(r, mode, comms, kind)) continue;
    double x = px(a, r->size), y = py(a, value_of(a, &r->variants[pick(r, kind)]));
    if (kind == S_BASE)
      fprintf(f, "<rect x='%.1f' y='%.1f' width='7' height='7' fill='white' stroke='%s'/>\n",
              x - 3.5, y - 3.5, col);
    else if (kind == S_COMPARE)
      fprintf(f, "<path d='M%.1f %.1fl4 4l-4 4l-4 -4z' fill='white' stroke='%s'/>\n", x, y - 4,
              col);
    else fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'/>\n", x, y, col);
  }
}

static void legend(FILE *f, const struct axes *a, int k, const char *col, const char *text,
                   int kind) {
  int y = a->top + T + 10 + k * 22, x = W - R + 20;
  fprintf(f, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s' stroke-width='2'%s/>\n", x, x + 30,
          y, y, col, dashes[kind]);
  fprintf(f, "<text x='%d' y='%d'>%s</text>\n", x + 38, y + 4, text);
}

/* The panel's ranges from its rows; false when it has none. */
static bool limits(const struct report *rep, struct axes *a) {
  double lo = 1e30, hi = 0;
  a->x0 = 1e9, a->x1 = -1e9;
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (!in_panel(a, r)) continue;
    a->x0 = fmin(a->x0, log2((double)r->size));
    a->x1 = fmax(a->x1, log2((double)r->size));
    for (int v = 0; v < r->nvariant; v++) {
      double x = value_of(a, &r->variants[v]);
      if (r->variants[v].nrep && x > 0) lo = fmin(lo, x), hi = fmax(hi, x);
    }
  }
  if (a->x0 > a->x1) return false;
  if (hi <= 0) lo = 0.1, hi = 10;
  a->y0 = floor(log10(lo));
  a->y1 = ceil(log10(hi));
  if (a->y1 <= a->y0) a->y1 = a->y0 + 1;
  return true;
}

/* One panel: its axes, then a line per (mode, comms, engine), each group
 * of the panel in its own colour (uni and bidir never share one). */
static void panel(FILE *f, const struct report *rep, struct axes *a, int *group) {
  static const char *const kinds[] = {"plugin", "compare", "baseline"};
  draw_axes(f, a, rep);
  int k = 0;
  for (int mode = MODE_UNI; mode < MODE_COUNT; mode++)
    for (int b = 0; b < rep->nblocks; b++) {
      int c = rep->blocks[b].ncomms, have = 0;
      for (int i = 0; i < rep->nrows; i++)
        have |= rep->rows[i].mode == mode && rep->rows[i].ncomms == c && in_panel(a, &rep->rows[i]);
      if (!have) continue;
      const char *col = colour[(*group)++ % 8];
      for (int kind = S_PLUGIN; kind <= S_BASE; kind++) {
        if ((kind == S_COMPARE && !rep->o->compare) || (kind == S_BASE && !rep->o->has_baseline))
          continue;
        char text[64];
        series(f, a, rep, mode, c, kind, col);
        snprintf(text, sizeof(text), "%s, %d comm%s: %s", mode_name[mode], c, c > 1 ? "s" : "",
                 kinds[kind]);
        legend(f, a, k++, col, text, kind);
      }
    }
}

int plot_svg(const struct report *rep, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return errno;
  struct axes bw = {.top = 0}, lat = {.is_lat = true};
  bool has_bw = limits(rep, &bw), has_lat = limits(rep, &lat);
  if (!has_bw && !has_lat) has_bw = true, bw.x0 = 3, bw.x1 = 28, bw.y0 = -1, bw.y1 = 1;
  lat.top = has_bw ? H : 0;
  fprintf(f,
          "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
          "width='%d' height='%d' font-family='sans-serif' font-size='12'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n",
          W, H * (has_bw + has_lat));
  fprintf(f,
          "<text x='%d' y='24' font-size='15'>nccl-net-bench: plugin (solid)%s vs raw TCP "
          "baseline (dashed), %s</text>\n",
          L, rep->o->compare ? ", compare (dotted)" : "", rep->o->placement);
  int group = 0; /* colours run on into the latency panel */
  if (has_bw) panel(f, rep, &bw, &group);
  if (has_lat) {
    fprintf(f,
            "<text x='%d' y='%d' font-size='15'>ping-pong: p50 round trip (lower is "
            "better)</text>\n",
            L, lat.top + 24);
    panel(f, rep, &lat, &group);
  }
  fprintf(f, "</svg>\n");
  return fclose(f) ? errno : 0;
}
