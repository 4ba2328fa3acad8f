/* api/svg_timeline.c -- one step as a lane per pipeline stage (api/svg.c
 * has the conventions). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_int.h"

/* ======================================================================= */
/* One step as a timeline                                                    */
/* ======================================================================= */

enum { TL_WARM, TL_FWD, TL_RC, TL_BWD, TL_TP, TL_CP, TL_EP, TL_FSDP, TL_PP, TL_DP, TL_COOL, TL_OPT,
       TL_OVH, TL_COUNT };
static const char *const TL_CLASS[TL_COUNT] = {"bubble", "forward", "recompute", "backward", "comm-tp",
                                               "comm-cp", "comm-ep", "comm-fsdp", "comm-pp", "comm-dp",
                                               "bubble", "optimizer", "overhead"};
static const char *const TL_WORDS[TL_COUNT] = {
    "bubble (warm-up)", "forward", "recompute", "backward", "exposed TP comm", "exposed CP comm",
    "exposed EP comm", "exposed FSDP comm", "exposed PP comm", "exposed DP comm", "bubble (cool-down)",
    "optimizer", "overhead"};
static const char *const TL_FILL[TL_COUNT] = {
    GREY_LIGHT, OI_BLUE, "url(#mfu-timeline-hatch)", OI_SKY, OI_VERMILLION, OI_ORANGE,
    OI_YELLOW, OI_GREEN, OI_BLACK, OI_PURPLE, GREY_LIGHT, GREY_MID, GREY_DARK};
/* text on the block: white on the dark fills */
static const char *const TL_INK[TL_COUNT] = {INK, "#FFFFFF", "#FFFFFF", INK, "#FFFFFF", INK, INK,
                                             "#FFFFFF", "#FFFFFF", INK, INK, INK, "#FFFFFF"};
/* words on a block wide enough to carry them */
static const char *const TL_SHORT[TL_COUNT] = {"bubble", "forward", "recompute", "backward", "TP comm",
                                               "CP comm", "EP comm", "FSDP comm", "PP comm", "DP comm",
                                               "bubble", "optimizer", "overhead"};
/* lanes at least 8 high: 1,024 stages make an 8,400-high chart; beyond, NULL */
#define SVG_MAX_LANES 1024
static const char *const TL_AXES[] = {"tp", "cp", "ep", "fsdp", "pp", "dp"};

/* The timeline's geometry and figures (api_svg_timeline). */
struct tl_geo {
    double x0, x1, top, span, lane_h, axis_y;
    double slot, bubble, step;
    int p;
    const double *d; /* TL_COUNT seconds per stage */
};

static double tl_x(const struct tl_geo *g, double s)
{
    return g->x0 + (g->x1 - g->x0) * s / g->span;
}

/* The title, description and subtitle. */
static void tl_texts(sbuf *title, sbuf *desc, sbuf *sub, json_t *result, json_t *cfg, int rank, const double *d,
                     double step, double bubble, double slot, int p)
{
    svg_config_heading(title, sub, "One training step", result, cfg, rank);
    svg_sb_printf(desc,
              "Timeline of one training step as expected (calibrated efficiency profile): %s s. One "
              "lane per pipeline stage (%d). Simplified: every stage is drawn with the busiest stage's "
              "figures, each kind of work as one block summed over the step's micro-batches, forward "
              "and backward split 1:2 as their FLOPs are; the pipeline bubble (%s s) is shifted as in "
              "1F1B: stage r idles r slots of %s s before its work and pp-1-r after it. Per stage:",
              svg_fx(step, 3), p, svg_fx(bubble, 3), svg_fx(slot, 3));
    int listed = 0;
    for (int k = TL_FWD; k <= TL_DP; k++)
        if (d[k] > 0) svg_sb_printf(desc, "%s %s %s s", listed++ ? "," : "", TL_WORDS[k], svg_fx(d[k], 3));
    if (d[TL_OPT] > 0) svg_sb_printf(desc, "%s optimizer %s s", listed++ ? "," : "", svg_fx(d[TL_OPT], 3));
    if (d[TL_OVH] > 0) svg_sb_printf(desc, "%s overhead %s s", listed++ ? "," : "", svg_fx(d[TL_OVH], 3));
    svg_sb_printf(desc, ". Configuration: ");
    svg_layout_words(desc, cfg);
    svg_sb_printf(desc, ".");
}

/* The time axis: ticks, grid lines, its label. */
static void tl_axis(sbuf *b, const struct tl_geo *g)
{
    double tstep = svg_nice_step(g->span, 8);
    int dec = svg_step_decimals(tstep);
    svg_sb_printf(b, "<g class=\"axis x-axis\" font-size=\"11\">\n");
    for (int t = 0; t * tstep <= g->span * (1 + 1e-9); t++) {
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(tl_x(g, t * tstep)), X1(g->top - 4), X1(tl_x(g, t * tstep)), X1(g->axis_y));
        svg_text_at(b, tl_x(g, t * tstep), g->axis_y + 15, "middle", NULL, svg_fx(t * tstep, dec));
    }
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(g->x0),
              X1(g->axis_y), X1(g->x1), X1(g->axis_y));
    svg_text_at(b, (g->x0 + g->x1) / 2, g->axis_y + 33, "middle", " font-size=\"12\"",
            "Time within one step (s); lanes: pipeline stages");
    svg_sb_printf(b, "</g>\n");
}

/* One lane per pipeline stage, the step's end marked. */
static void tl_lanes(sbuf *b, const struct tl_geo *g)
{
    char lab[96];
    for (int r = 0; r < g->p; r++) {
        double y = g->top + r * g->lane_h, bh = g->lane_h * 0.8;
        double dd[TL_COUNT];
        memcpy(dd, g->d, sizeof dd);
        if (g->p > 1) {
            dd[TL_WARM] = g->slot * r;
            dd[TL_COOL] = g->slot * (g->p - 1 - r);
        } else {
            dd[TL_WARM] = 0;
            dd[TL_COOL] = g->bubble;
        }
        svg_sb_printf(b, "<g class=\"lane\" data-stage=\"%d\">\n", r);
        if (g->lane_h >= 11 || r % (int)ceil(11.0 / g->lane_h) == 0) {
            snprintf(lab, sizeof lab, "stage %d", r);
            svg_text_at(b, g->x0 - 8, y + bh / 2 + 4, "end", g->lane_h < 14 ? " font-size=\"9\"" : NULL, lab);
        }
        double t = 0;
        for (int k = 0; k < TL_COUNT; k++) {
            if (dd[k] <= 0) continue;
            double xa = tl_x(g, t), xb = tl_x(g, t + dd[k]);
            svg_sb_printf(b, "<rect class=\"blk %s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"%s>"
                          "<title>stage %d %s: %s s (from %s s)</title></rect>\n",
                      TL_CLASS[k], X1(xa), X1(y), X1(xb - xa), X1(bh), TL_FILL[k],
                      k == TL_WARM || k == TL_COOL ? " stroke=\"" GREY_MID "\" stroke-dasharray=\"3 2\"" : "",
                      r, TL_WORDS[k], svg_fx(dd[k], 3), svg_fx(t, 3));
            if (xb - xa >= 90 && bh >= 12) {
                snprintf(lab, sizeof lab, "%s %s", TL_SHORT[k], svg_fx(dd[k], 3));
                char extra[64];
                snprintf(extra, sizeof extra, " font-size=\"10\" fill=\"%s\"", TL_INK[k]);
                svg_text_at(b, (xa + xb) / 2, y + bh / 2 + 3.5, "middle", extra, lab);
            }
            t += dd[k];
        }
        svg_sb_printf(b, "</g>\n");
    }
    /* the step's end */
    svg_sb_printf(b, "<line class=\"step-end\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
              X1(tl_x(g, g->step)), X1(g->top - 8), X1(tl_x(g, g->step)), X1(g->axis_y));
    snprintf(lab, sizeof lab, "step %s s", svg_fx(g->step, 3));
    svg_text_at(b, tl_x(g, g->step), g->top - 11, "end", " font-size=\"11\"" HALO, lab);
}

/* The legend: what each colour is, with the per-stage seconds. */
static void tl_legend(sbuf *b, const struct tl_geo *g)
{
    char lab[96];
    svg_sb_printf(b, "<g class=\"legend\" font-size=\"11\">\n");
    int li = 0;
    for (int k = 0; k < TL_COUNT; k++) {
        double v = k == TL_WARM ? g->bubble : g->d[k];
        if (k == TL_COOL || v <= 0) continue;
        snprintf(lab, sizeof lab, "%s %s s", k == TL_WARM ? "bubble" : TL_WORDS[k], svg_fx(v, 3));
        svg_legend_item(b, 16 + (li % 4) * 194, g->axis_y + 60 + (li / 4) * 18, TL_FILL[k],
                    k == TL_WARM ? " stroke-dasharray=\"3 2\"" : NULL, lab, 0);
        li++;
    }
    svg_sb_printf(b, "</g>\n");
}

char *api_svg_timeline(json_t *result, int rank)
{
    json_t *cfg = svg_pick_config(result, rank);
    if (!cfg) return NULL;
    json_t *te = json_object_get(cfg, "time_expected");
    json_t *comm = json_object_get(te, "comm");
    double compute, recompute, bubble, opt, ovh, step, pp;
    if (!json_is_object(comm) || svg_num(te, "compute_s", &compute) || svg_num(te, "recompute_s", &recompute) ||
        svg_num(te, "bubble_s", &bubble) || svg_num(te, "optimizer_s", &opt) || svg_num(te, "overhead_s", &ovh) ||
        svg_num(te, "step_time_s", &step) || svg_num(json_object_get(cfg, "parallel"), "pp", &pp) || pp < 1 ||
        pp > SVG_MAX_LANES || step <= 0)
        return NULL;
    int p = (int)pp;
    double d[TL_COUNT] = {0};
    /* forward : backward = 1 : 2, as their FLOPs are (the result gives the
     * sum); the recompute runs forwards again inside the backward */
    d[TL_FWD] = compute / 3.0;
    d[TL_BWD] = compute - d[TL_FWD];
    d[TL_RC] = recompute;
    for (int a = 0; a < 6; a++) {
        json_t *ax = json_object_get(comm, TL_AXES[a]);
        d[TL_TP + a] = ax ? svg_num_or(ax, "exposed_s", 0) : 0;
    }
    d[TL_OPT] = opt;
    d[TL_OVH] = ovh;
    for (int k = 0; k < TL_COUNT; k++)
        if (d[k] < 0) d[k] = 0;
    if (bubble < 0) bubble = 0;
    /* 1F1B's bubble, simplified: stage r idles r micro-batch-forward slots
     * before its first forward and p - 1 - r after its last backward, each
     * slot bubble / (p - 1) long, so every lane adds up to the same step */
    double slot = p > 1 ? bubble / (p - 1) : 0;
    double total = bubble;
    for (int k = 0; k < TL_COUNT; k++) total += d[k];
    double span = total > step ? total : step;

    sbuf title = {0}, desc = {0}, sub = {0}, b = {0};
    tl_texts(&title, &desc, &sub, result, cfg, rank, d, step, bubble, slot, p);
    if (title.oom || desc.oom || sub.oom) goto fail;

    /* lanes, the time axis, the legend below */
    double lane_h = 280.0 / p;
    if (lane_h > 60) lane_h = 60;
    if (lane_h < 8) lane_h = 8;
    const double x0 = 92, x1 = 780, top = 66;
    int n_leg = 0;
    for (int k = TL_FWD; k < TL_COUNT; k++) n_leg += k != TL_COOL && d[k] > 0;
    n_leg += bubble > 0;
    double axis_y = top + p * lane_h + 4;
    int leg_rows = (n_leg + 3) / 4;
    int h = (int)ceil(axis_y + 48 + leg_rows * 18 + 12);
    if (h < SVG_H_MIN) h = SVG_H_MIN;
    svg_begin(&b, "timeline", h, title.p, desc.p, sub.p);
    svg_sb_printf(&b, "<defs><pattern id=\"mfu-timeline-hatch\" width=\"6\" height=\"6\" "
                  "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" "
                  "height=\"6\" fill=\"" OI_BLUE "\"/><rect width=\"2.5\" height=\"6\" fill=\"" OI_SKY
                  "\"/></pattern></defs>\n");
    struct tl_geo g = {x0, x1, top, span, lane_h, axis_y, slot, bubble, step, p, d};
    tl_axis(&b, &g);
    tl_lanes(&b, &g);
    tl_legend(&b, &g);
    svg_end(&b);
    free(title.p); free(desc.p); free(sub.p);
    return svg_sb_take(&b);
fail:
    free(title.p); free(desc.p); free(sub.p); free(b.p);
    return NULL;
}
