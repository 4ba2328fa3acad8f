/* api/svg_gap.c -- the gap waterfall and memory per pipeline stage of one
 * ranked configuration (api/svg.c has the conventions). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_int.h"

/* ======================================================================= */
/* The gap waterfall                                                         */
/* ======================================================================= */


/* A waterfall's frame and where it is: the plot spans 0..100 percentage
 * points across x0..x1, one row per bar; cur is the running total. */
typedef struct wfall {
    sbuf *b;
    double x0, x1, top, rh, axis_y;
    double cur;
    int row;
} wfall;

static double wx(const wfall *w, double v)
{
    return w->x0 + (w->x1 - w->x0) * (v < 0 ? 0 : v > 100 ? 100 : v) / 100.0;
}

/* A total bar from 0. */
static void wf_total(wfall *w, const char *cls, const char *label, double value, const char *colour)
{
    sbuf *b = w->b;
    double y_ = w->top + w->row * w->rh;
    svg_sb_printf(b, "<g class=\"gap-total %s\" data-mfu=\"%s\">\n", cls, svg_fx((value), 2));
    svg_text_at(b, w->x0 - 8, y_ + w->rh * 0.5 + 4, "end", NULL, label);
    svg_sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"><title>",
              X1(w->x0), X1(y_ + w->rh * 0.15), X1(wx(w, value) - w->x0), X1(w->rh * 0.7), colour);
    svg_sb_esc(b, label);
    svg_sb_printf(b, ": %s%%</title></rect>\n", svg_fx((value), 2));
    svg_text_at(b, wx(w, value) + 5, y_ + w->rh * 0.5 + 4, NULL, " font-weight=\"bold\"", svg_fx((value), 2));
    svg_sb_printf(b, "</g>\n");
    w->row++;
}

/* A component: a bar from the running total, down by what it costs. */
static void wf_step(wfall *w, const char *cls, const char *label, double value)
{
    sbuf *b = w->b;
    double cur = w->cur;
    double y_ = w->top + w->row * w->rh, v_ = (value), lo_ = cur - v_ < cur ? cur - v_ : cur;
    double hi_ = cur - v_ < cur ? cur : cur - v_;
    svg_sb_printf(b, "<g class=\"gap-component %s\" data-name=\"", cls);
    svg_sb_esc(b, label);
    svg_sb_printf(b, "\" data-mfu-points=\"%s\">\n", svg_fx(v_, 2));
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_MID "\" stroke-dasharray=\"2 2\"/>\n",
              X1(wx(w, cur)), X1(y_ - w->rh * 0.15), X1(wx(w, cur)), X1(y_ + w->rh * 0.15));
    svg_text_at(b, w->x0 - 8, y_ + w->rh * 0.5 + 4, "end", NULL, label);
    svg_sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"><title>", X1(wx(w, lo_)),
              X1(y_ + w->rh * 0.15), X1(wx(w, hi_) - wx(w, lo_)), X1(w->rh * 0.7),
              v_ >= 0 ? OI_VERMILLION : OI_ORANGE);
    svg_sb_esc(b, label);
    svg_sb_printf(b, ": %s points</title></rect>\n", svg_fx(-v_, 2));
    svg_text_at(b, wx(w, hi_) + 5, y_ + w->rh * 0.5 + 4, NULL, NULL, svg_fx(-v_, 2));
    svg_sb_printf(b, "</g>\n");
    w->cur -= v_;
    w->row++;
}

/* The grid and the x axis. */
static void wf_axis(const wfall *w)
{
    sbuf *b = w->b;
    svg_sb_printf(b, "<g class=\"axis x-axis\" font-size=\"11\">\n");
    for (int t = 0; t <= 100; t += 10) {
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(wx(w, t)), X1(w->top - 4), X1(wx(w, t)), X1(w->axis_y));
        char lab[16];
        snprintf(lab, sizeof lab, "%d", t);
        svg_text_at(b, wx(w, t), w->axis_y + 15, "middle", NULL, lab);
    }
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(w->x0),
              X1(w->axis_y), X1(w->x1), X1(w->axis_y));
    svg_text_at(b, (w->x0 + w->x1) / 2, w->axis_y + 33, "middle", " font-size=\"12\"",
            "MFU (% of the chip's peak FLOP/s); bars between totals: percentage points lost");
    svg_sb_printf(b, "</g>\n");
}

/* The gap chart's title, subtitle and description. */
static void gap_texts(json_t *result, json_t *cfg, int rank, double roof, double expected, double bound,
                      int has_measured, double measured, size_t nc, const char *const *names,
                      const double *pts, sbuf *title, sbuf *desc, sbuf *sub)
{
    svg_config_heading(title, sub, "Gap to the roofline", result, cfg, rank);
    svg_sb_printf(desc,
              "Waterfall of MFU in percentage points of the chip's peak for %s. Roofline MFU %s%%; "
              "the named gap components in the model's order (each the MFU it costs under the "
              "calibrated efficiency profile):",
              rank ? "a ranked configuration" : "the measured configuration", svg_fx(roof * 100, 2));
    int listed = 0;
    for (size_t i = 0; i < nc; i++) {
        if (strcmp(svg_fx(pts[i], 2), "0.00") == 0) continue;
        svg_sb_printf(desc, "%s %s %s", listed ? "," : "", names[i], svg_fx(pts[i], 2));
        listed++;
    }
    if (!listed) svg_sb_printf(desc, " none above 0.005");
    svg_sb_printf(desc, "; components below 0.005 points are drawn but not listed. Expected MFU %s%%. "
                    "Bound MFU (ideal kernels and network) %s%%, marked by a dashed line.",
              svg_fx(expected * 100, 2), svg_fx(bound * 100, 2));
    if (has_measured)
        svg_sb_printf(desc, " Measured MFU %s%%; unexplained by the profile %s points.",
                  svg_fx(measured * 100, 2), svg_fx((expected - measured) * 100, 2));
    svg_sb_printf(desc, " Configuration: ");
    svg_layout_words(desc, cfg);
    svg_sb_printf(desc, ".");
}

char *api_svg_gap(json_t *result, int rank)
{
    json_t *cfg = svg_pick_config(result, rank);
    if (!cfg) return NULL;
    json_t *gap = json_object_get(cfg, "gap_expected");
    double roof, expected, bound;
    if (!json_is_array(gap) || json_array_size(gap) == 0 || json_array_size(gap) > 64 ||
        svg_num(cfg, "roofline_mfu", &roof) || svg_num(json_object_get(cfg, "expected"), "mfu", &expected) ||
        svg_num(json_object_get(cfg, "bound"), "mfu", &bound))
        return NULL;
    size_t nc = json_array_size(gap);
    double pts[64];
    const char *names[64];
    for (size_t i = 0; i < nc; i++) {
        json_t *g = json_array_get(gap, i);
        names[i] = svg_str_or(g, "name", NULL);
        if (!names[i] || svg_num(g, "mfu_points", &pts[i])) return NULL; /* percentage points */
    }
    /* a measured run (rank 0): expected -> measured, the rest unexplained */
    double measured = 0;
    int has_measured = 0;
    if (rank == 0) {
        if (svg_num(json_object_get(result, "measured"), "mfu", &measured)) return NULL;
        has_measured = 1;
    }
    sbuf title = {0}, desc = {0}, sub = {0}, b = {0};
    gap_texts(result, cfg, rank, roof, expected, bound, has_measured, measured, nc, names, pts, &title, &desc,
              &sub);
    if (title.oom || desc.oom || sub.oom) {
        free(title.p); free(desc.p); free(sub.p);
        return NULL;
    }
    svg_begin(&b, "gap", SVG_H, title.p, desc.p, sub.p);
    wfall w = {&b, 208, 688, 66, 0, 0, roof * 100, 0};
    int rows = (int)nc + 2 + (has_measured ? 2 : 0);
    w.rh = (380 - w.top) / rows;
    if (w.rh > 30) w.rh = 30;
    w.axis_y = w.top + rows * w.rh + 4;
    wf_axis(&w);
    wf_total(&w, "roofline", "roofline MFU", roof * 100, OI_BLUE);
    for (size_t i = 0; i < nc; i++) wf_step(&w, "loss", names[i], pts[i]);
    w.cur = expected * 100; /* the total is the result's, not the running sum */
    wf_total(&w, "expected", "expected MFU", expected * 100, OI_GREEN);
    if (has_measured) {
        wf_step(&w, "unexplained", "unexplained", (expected - measured) * 100);
        wf_total(&w, "measured", "measured MFU", measured * 100, OI_PURPLE);
    }
    /* the bound */
    svg_sb_printf(&b, "<g class=\"gap-bound\" data-mfu=\"%s\">\n", svg_fx(bound * 100, 2));
    svg_sb_printf(&b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
              X1(wx(&w, bound * 100)), X1(w.top - 8), X1(wx(&w, bound * 100)), X1(w.axis_y));
    char lab[64];
    snprintf(lab, sizeof lab, "bound %s%%", svg_fx(bound * 100, 2));
    svg_text_at(&b, wx(&w, bound * 100), w.top - 11, "middle", " font-size=\"11\"" HALO, lab);
    svg_sb_printf(&b, "</g>\n");
    /* legend */
    double ly = SVG_H - 12;
    svg_sb_printf(&b, "<g class=\"legend\" font-size=\"11\">\n");
    svg_legend_item(&b, 16, ly, OI_BLUE, NULL, "roofline MFU", 0);
    svg_legend_item(&b, 130, ly, OI_VERMILLION, NULL, "loss", 0);
    svg_legend_item(&b, 185, ly, OI_ORANGE, NULL, "gain", 0);
    svg_legend_item(&b, 240, ly, OI_GREEN, NULL, "expected MFU", 0);
    if (has_measured) svg_legend_item(&b, 350, ly, OI_PURPLE, NULL, "measured MFU", 0);
    svg_legend_item(&b, has_measured ? 465 : 355, ly, OI_BLACK, " stroke-dasharray=\"6 3\"",
                "bound MFU (ideal kernels and network)", 1);
    svg_sb_printf(&b, "</g>\n");
    svg_end(&b);
    free(title.p); free(desc.p); free(sub.p);
    return svg_sb_take(&b);
}

/* ======================================================================= */
/* Memory per pipeline stage                                                 */
/* ======================================================================= */

static const char *const MEM_KEYS[] = {"weights_bytes", "grads_bytes", "optimizer_bytes",
                                       "activations_bytes", "buffers_bytes", "reserve_bytes"};
static const char *const MEM_NAMES[] = {"weights", "grads", "optimizer", "activations", "buffers",
                                        "reserve"};
static const char *const MEM_WORDS[] = {"weights", "gradients", "optimizer state", "activations",
                                        "buffers", "reserve (context, comm, fragmentation)"};
static const char *const MEM_LEGEND[] = {"weights", "gradients", "optimizer state", "activations",
                                         "buffers", "reserve"};
static const char *const MEM_COLOURS[] = {OI_BLUE, OI_SKY, OI_GREEN, OI_ORANGE, OI_PURPLE, GREY_MID};

/* A memory chart's data and frame: the stages (or the binding one), the
 * largest capacity and total, the stage with the least headroom. */
typedef struct mplot {
    json_t *stages, *one;
    int fallback;               /* only the binding stage's figures */
    size_t n, tight;
    double cap, maxtot, tight_head;
    double x0, x1, top, bottom, ymax;
} mplot;

static json_t *mp_stage(const mplot *p, size_t i) { return p->fallback ? p->one : json_array_get(p->stages, i); }

static double my(const mplot *p, double gb) { return p->bottom - (p->bottom - p->top) * (gb) / p->ymax; }

/* The stages' totals: -1 if the result has no memory figures. */
static int mem_scan(json_t *cfg, mplot *p)
{
    memset(p, 0, sizeof *p);
    p->stages = json_object_get(cfg, "memory_stages");
    p->one = json_object_get(cfg, "memory");
    if (!json_is_array(p->stages) || json_array_size(p->stages) == 0) {
        if (!json_is_object(p->one)) return -1;
        p->fallback = 1;
    }
    p->n = p->fallback ? 1 : json_array_size(p->stages);
    p->tight_head = INFINITY;
    for (size_t i = 0; i < p->n; i++) {
        json_t *m = mp_stage(p, i);
        double x, tot = 0, c;
        if (!json_is_object(m) || svg_num(m, "capacity_bytes", &c) || c <= 0) return -1;
        for (int k = 0; k < 6; k++) {
            if (svg_num(m, MEM_KEYS[k], &x) || x < 0) return -1;
            tot += x;
        }
        if (c > p->cap) p->cap = c;
        if (tot > p->maxtot) p->maxtot = tot;
        if (c - tot < p->tight_head) { p->tight_head = c - tot; p->tight = i; }
    }
    return 0;
}

/* The memory chart's title, subtitle and description. */
static void mem_texts(json_t *result, json_t *cfg, int rank, const mplot *p, sbuf *title, sbuf *desc, sbuf *sub)
{
    size_t n = p->n;
    int fallback = p->fallback;
    svg_config_heading(title, sub, "Memory per device by pipeline stage", result, cfg, rank);
    if (fallback) svg_sb_printf(sub, " (binding stage only)");
    svg_sb_printf(desc, "Stacked bars of the memory one device holds, in GB (10^9 bytes), for %s of %zu "
                    "pipeline stage%s, against the %s GB the device exposes (dashed line). ",
              fallback ? "the binding stage" : "each", fallback ? (size_t)svg_num_or(json_object_get(cfg, "parallel"), "pp", 1) : n,
              n == 1 && !fallback ? "" : "s", svg_fx(p->cap / 1e9, 2));
    for (size_t i = 0; i < n; i++) {
        json_t *m = mp_stage(p, i);
        double tot = 0;
        for (int k = 0; k < 6; k++) tot += svg_num_or(m, MEM_KEYS[k], 0);
        svg_sb_printf(desc, "Stage %s: %s GB (", svg_fx(svg_num_or(m, "stage", (double)i), 0), svg_fx(tot / 1e9, 2));
        for (int k = 0; k < 6; k++)
            svg_sb_printf(desc, "%s%s %s", k ? ", " : "", MEM_NAMES[k], svg_fx(svg_num_or(m, MEM_KEYS[k], 0) / 1e9, 2));
        svg_sb_printf(desc, "). ");
    }
    json_t *m = mp_stage(p, p->tight);
    svg_sb_printf(desc, "The least headroom: stage %s, %s GB %s.", svg_fx(svg_num_or(m, "stage", (double)p->tight), 0),
              svg_fx(fabs(p->tight_head) / 1e9, 2), p->tight_head >= 0 ? "free" : "over the capacity");
}

/* The y axis in GB and the x axis's line and title. */
static void mem_axes(sbuf *b, const mplot *p, double step)
{
    int dec = svg_step_decimals(step);
    svg_sb_printf(b, "<g class=\"axis y-axis\" font-size=\"11\">\n");
    for (int t = 0; t * step <= p->ymax + step * 1e-9; t++) {
        double v = t * step;
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(p->x0), X1(my(p, v)), X1(p->x1), X1(my(p, v)));
        svg_text_at(b, p->x0 - 6, my(p, v) + 4, "end", NULL, svg_fx(v, dec));
    }
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(p->x0),
              X1(p->top), X1(p->x0), X1(p->bottom));
    svg_sb_printf(b, "<text x=\"20\" y=\"%s\" text-anchor=\"middle\" font-size=\"12\" "
                 "transform=\"rotate(-90 20 %s)\">Memory per device (GB, 10^9 bytes)</text>\n",
              X1((p->top + p->bottom) / 2), X1((p->top + p->bottom) / 2));
    svg_sb_printf(b, "</g>\n");
    svg_sb_printf(b, "<line class=\"x-axis\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n",
              X1(p->x0), X1(p->bottom), X1(p->x1), X1(p->bottom));
    svg_text_at(b, (p->x0 + p->x1) / 2, p->bottom + 36, "middle", NULL, "Pipeline stage (rank)");
}

/* One stacked bar per stage. */
static void mem_bars(sbuf *b, const mplot *p)
{
    size_t n = p->n;
    double gw = (p->x1 - p->x0) / (double)n, bw = gw * 0.7;
    if (bw > 64) bw = 64;
    size_t label_every = n <= 32 ? 1 : (n + 31) / 32;
    for (size_t i = 0; i < n; i++) {
        json_t *m = mp_stage(p, i);
        double stage = svg_num_or(m, "stage", (double)i);
        double cx = p->x0 + gw * (i + 0.5), acc = 0;
        svg_sb_printf(b, "<g class=\"stage\" data-stage=\"%s\">\n", svg_fx(stage, 0));
        for (int k = 0; k < 6; k++) {
            double gb = svg_num_or(m, MEM_KEYS[k], 0) / 1e9;
            double ya = my(p, acc), yb = my(p, acc + gb);
            svg_sb_printf(b, "<rect class=\"seg %s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" "
                         "fill=\"%s\"><title>stage %s %s: %s GB</title></rect>\n",
                      MEM_NAMES[k], X1(cx - bw / 2), X1(yb), X1(bw), X1(ya - yb), MEM_COLOURS[k],
                      svg_fx(stage, 0), MEM_WORDS[k], svg_fx(gb, 2));
            acc += gb;
        }
        if (bw >= 26)
            svg_text_at(b, cx, my(p, acc) - 4, "middle", " font-size=\"10\" class=\"total\"" HALO, svg_fx(acc, 1));
        if (i % label_every == 0)
            svg_text_at(b, cx, p->bottom + 15, "middle",
                    i == p->tight ? " font-size=\"11\" font-weight=\"bold\"" : " font-size=\"11\"", svg_fx(stage, 0));
        svg_sb_printf(b, "</g>\n");
    }
}

/* The capacity line and the legend. */
static void mem_capacity_legend(sbuf *b, const mplot *p)
{
    svg_sb_printf(b, "<g class=\"capacity\" data-gb=\"%s\">\n", svg_fx(p->cap / 1e9, 2));
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                 "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
              X1(p->x0), X1(my(p, p->cap / 1e9)), X1(p->x1), X1(my(p, p->cap / 1e9)));
    char lab[64];
    snprintf(lab, sizeof lab, "capacity %s GB", svg_fx(p->cap / 1e9, 2));
    svg_text_at(b, p->x1, my(p, p->cap / 1e9) - 5, "end", " font-size=\"11\"" HALO, lab);
    svg_sb_printf(b, "</g>\n");
    /* legend: top of the stack first */
    svg_sb_printf(b, "<g class=\"legend\" font-size=\"11\">\n");
    for (int k = 5; k >= 0; k--)
        svg_legend_item(b, 620, 90 + (5 - k) * 20, MEM_COLOURS[k], NULL, MEM_LEGEND[k], 0);
    svg_legend_item(b, 620, 90 + 6 * 20, OI_BLACK, " stroke-dasharray=\"6 3\"", "capacity", 1);
    svg_text_at(b, 620, 90 + 8 * 20, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "reserve: CUDA context, comm");
    svg_text_at(b, 620, 90 + 8 * 20 + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "buffers, fragmentation");
    svg_text_at(b, 620, 90 + 10 * 20, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "bold stage: least headroom");
    svg_sb_printf(b, "</g>\n");
}

char *api_svg_memory(json_t *result, int rank)
{
    json_t *cfg = svg_pick_config(result, rank);
    if (!cfg) return NULL;
    mplot p;
    if (mem_scan(cfg, &p)) return NULL;
    sbuf title = {0}, desc = {0}, sub = {0}, b = {0};
    mem_texts(result, cfg, rank, &p, &title, &desc, &sub);
    if (title.oom || desc.oom || sub.oom) {
        free(title.p); free(desc.p); free(sub.p);
        return NULL;
    }
    svg_begin(&b, "memory", SVG_H, title.p, desc.p, sub.p);
    p.x0 = 80;
    p.x1 = 600;
    p.top = 66;
    p.bottom = 372;
    double step = svg_nice_step((p.maxtot > p.cap ? p.maxtot : p.cap) / 1e9 * 1.06, 6);
    p.ymax = ceil((p.maxtot > p.cap ? p.maxtot : p.cap) / 1e9 * 1.06 / step) * step;
    mem_axes(&b, &p, step);
    mem_bars(&b, &p);
    mem_capacity_legend(&b, &p);
    svg_end(&b);
    free(title.p); free(desc.p); free(sub.p);
    return svg_sb_take(&b);
}
