/* SPDX-License-Identifier: Apache-2.0 */
/* GB/s against message size as an SVG, written by hand (SVG is text, so
 * the bench needs no plotting package): one colour per (mode, comms), the
 * plugin solid with dots, the compared plugin dotted with diamonds, the
 * baseline dashed with squares. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/report.h"

#define W 960
#define H 540
#define L 80 /* plot area margins */
#define R 250
#define T 50
#define B 70

static const char *const colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

/* x: log2 of the size; y: log10 of GB/s, whole decades, since small and
 * large messages differ by four orders of magnitude. */
struct axes {
  double x0, x1, y0, y1;
};

static double px(const struct axes *a, uint64_t size) {
  double span = a->x1 > a->x0 ? a->x1 - a->x0 : 1;
  return L + (log2((double)size) - a->x0) / span * (W - L - R);
}

static double py(const struct axes *a, double gbps) {
  double l = log10(gbps > 0 ? gbps : pow(10, a->y0));
  return H - B - (l - a->y0) / (a->y1 - a->y0) * (H - T - B);
}

static void short_size(char *out, size_t cap, uint64_t s) {
  static const char *const u[] = {"", "K", "M", "G"};
  int i = 0;
  while (i < 3 && s >= 1024 && s % 1024 == 0) s /= 1024, i++;
  snprintf(out, cap, "%llu%s", (unsigned long long)s, u[i]);
}

static void draw_axes(FILE *f, const struct axes *a, const struct report *rep) {
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#333'/>\n", L, T,
          W - L - R, H - T - B);
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
  uint64_t last = 0;
  for (int i = 0; i < rep->nrows; i++) {
    uint64_t s = rep->rows[i].size;
    if (rep->rows[i].mode == MODE_LAT || s == last) continue;
    last = s;
    char lab[16];
    short_size(lab, sizeof(lab), s);
    fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='#eee'/>\n", px(a, s), px(a, s), T,
            H - B);
    fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle'>%s</text>\n", px(a, s), H - B + 18, lab);
  }
  fprintf(f, "<text x='%d' y='%d' text-anchor='middle'>message size (bytes)</text>\n",
          L + (W - L - R) / 2, H - 20);
  fprintf(f,
          "<text x='20' y='%d' transform='rotate(-90 20 %d)' text-anchor='middle'>GB/s "
          "(median, log scale)</text>\n",
          T + (H - T - B) / 2, T + (H - T - B) / 2);
}

enum { S_PLUGIN, S_COMPARE, S_BASE };

/* The variant a series takes from a row, or -1. */
static int pick(const struct row *r, int kind) {
  return kind == S_PLUGIN ? 0 : kind == S_COMPARE ? r->cmp : r->best;
}

static const char *const dashes[] = {"", " stroke-dasharray='2 3'", " stroke-dasharray='6 4'"};

/* One polyline of a (mode, comms) group: the plugin, the compared plugin
 * or the chosen baseline shape of each row. */
static void series(FILE *f, const struct axes *a, const struct report *rep, int mode, int comms,
                   int kind, const char *col) {
  fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2'%s points='", col, dashes[kind]);
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (r->mode != mode || r->ncomms != comms || pick(r, kind) < 0) continue;
    fprintf(f, "%.1f,%.1f ", px(a, r->size), py(a, r->variants[pick(r, kind)].m_gbps));
  }
  fprintf(f, "'/>\n");
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (r->mode != mode || r->ncomms != comms || pick(r, kind) < 0) continue;
    double x = px(a, r->size), y = py(a, r->variants[pick(r, kind)].m_gbps);
    if (kind == S_BASE)
      fprintf(f, "<rect x='%.1f' y='%.1f' width='7' height='7' fill='white' stroke='%s'/>\n",
              x - 3.5, y - 3.5, col);
    else if (kind == S_COMPARE)
      fprintf(f, "<path d='M%.1f %.1fl4 4l-4 4l-4 -4z' fill='white' stroke='%s'/>\n", x, y - 4,
              col);
    else fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'/>\n", x, y, col);
  }
}

static void legend(FILE *f, int k, const char *col, const char *text, int kind) {
  int y = T + 10 + k * 22, x = W - R + 20;
  fprintf(f, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s' stroke-width='2'%s/>\n", x, x + 30,
          y, y, col, dashes[kind]);
  fprintf(f, "<text x='%d' y='%d'>%s</text>\n", x + 38, y + 4, text);
}

static void limits(const struct report *rep, struct axes *a) {
  double lo = 1e30, hi = 0;
  a->x0 = 1e9, a->x1 = -1e9;
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (r->mode == MODE_LAT) continue;
    a->x0 = fmin(a->x0, log2((double)r->size));
    a->x1 = fmax(a->x1, log2((double)r->size));
    for (int v = 0; v < r->nvariant; v++)
      if (r->variants[v].m_gbps > 0)
        lo = fmin(lo, r->variants[v].m_gbps), hi = fmax(hi, r->variants[v].m_gbps);
  }
  if (a->x0 > a->x1) a->x0 = 3, a->x1 = 28;
  if (hi <= 0) lo = 0.1, hi = 10;
  a->y0 = floor(log10(lo));
  a->y1 = ceil(log10(hi));
  if (a->y1 <= a->y0) a->y1 = a->y0 + 1;
}

int plot_svg(const struct report *rep, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return errno;
  struct axes a;
  limits(rep, &a);
  fprintf(f,
          "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
          "width='%d' height='%d' font-family='sans-serif' font-size='12'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n",
          W, H);
  fprintf(f,
          "<text x='%d' y='24' font-size='15'>nccl-net-bench: plugin (solid)%s vs raw TCP "
          "baseline (dashed), %s</text>\n",
          L, rep->o->compare ? ", compare (dotted)" : "", rep->o->placement);
  draw_axes(f, &a, rep);
  int k = 0;
  static const char *const kinds[] = {"plugin", "compare", "baseline"};
  for (int mode = MODE_UNI; mode <= MODE_BIDIR; mode++)
    for (int b = 0; b < rep->nblocks; b++) {
      int c = rep->blocks[b].ncomms, have = 0;
      for (int i = 0; i < rep->nrows; i++)
        have |= rep->rows[i].mode == mode && rep->rows[i].ncomms == c;
      if (!have) continue;
      const char *col = colour[(mode * BENCH_MAX_COMM_COUNTS + b) % 8];
      for (int kind = S_PLUGIN; kind <= S_BASE; kind++) {
        if ((kind == S_COMPARE && !rep->o->compare) || (kind == S_BASE && !rep->o->has_baseline))
          continue;
        char text[64];
        series(f, &a, rep, mode, c, kind, col);
        snprintf(text, sizeof(text), "%s, %d comm%s: %s", mode_name[mode], c, c > 1 ? "s" : "",
                 kinds[kind]);
        legend(f, k++, col, text, kind);
      }
    }
  fprintf(f, "</svg>\n");
  return fclose(f) ? errno : 0;
}
