/* api/svg_compare.c -- tokens/s (and cost) per what-if variant (api/svg.c
 * has the conventions). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_int.h"

/* ======================================================================= */
/* The what-if comparison                                                    */
/* ======================================================================= */

/* A count with a binary suffix when it divides evenly (8K, 16M), as the
 * CLI's sizes are written. */
static void binary_count(char *buf, size_t n, double v)
{
    static const char *const S[] = {"", "K", "M", "G", "T"};
    int k = 0;
    while (k < 4 && v >= 1024 && fmod(v, 1024) == 0) { v /= 1024; k++; }
    snprintf(buf, n, "%.0f%s", v, S[k]);
}

/* The words naming variant i (raw text: escape it when drawing). */
static void variant_label(sbuf *b, json_t *v, size_t i)
{
    json_t *vary = json_object_get(v, "vary");
    int any = 0;
    char t[64];
    if (json_object_get(vary, "hardware")) { svg_sb_printf(b, "%s", svg_str_or(v, "hardware", "?")); any = 1; }
    if (json_object_get(vary, "devices")) {
        svg_sb_printf(b, "%s%s devices", any ? ", " : "", svg_fx(svg_num_or(v, "devices", 0), 0));
        any = 1;
    }
    if (json_object_get(vary, "seq_len")) {
        binary_count(t, sizeof t, svg_num_or(v, "seq_len", 0));
        svg_sb_printf(b, "%sseq %s", any ? ", " : "", t);
        any = 1;
    }
    if (json_object_get(vary, "global_batch_tokens")) {
        binary_count(t, sizeof t, svg_num_or(v, "global_batch_tokens", 0));
        svg_sb_printf(b, "%sbatch %s", any ? ", " : "", t);
        any = 1;
    }
    if (json_object_get(vary, "fp8")) {
        svg_sb_printf(b, "%s%s", any ? ", " : "", svg_str_or(v, "dtype", "?"));
        any = 1;
    }
    if (!any) svg_sb_printf(b, "variant %zu", i + 1);
}

static void variant_label_esc(sbuf *b, json_t *v, size_t i)
{
    sbuf l = {0};
    variant_label(&l, v, i);
    if (l.oom) b->oom = 1;
    svg_sb_esc(b, l.p);
    free(l.p);
}

/* The scale for an axis of values up to max: divisor and its words. */
static double si_scale(double max, const char **words)
{
    if (max >= 1e9) { *words = "billion"; return 1e9; }
    if (max >= 1e6) { *words = "million"; return 1e6; }
    if (max >= 1e3) { *words = "thousand"; return 1e3; }
    *words = "";
    return 1;
}

/* One horizontal bar panel: rows share the variant labels on the left. */
static void compare_panel(sbuf *b, json_t *vars, int which, double px0, double px1, double top, double rh,
                          double scale, const char *axis_words, int best)
{
    size_t n = json_array_size(vars);
    double max = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i);
        double x = which == 0 ? svg_num_or(v, "tokens_per_s", 0)
                              : svg_num_or(json_object_get(v, "time_to_train"), "cost", 0);
        if (x > max) max = x;
    }
    /* room right of the longest bar for its label */
    double step = svg_nice_step(max / scale * 1.35, 4);
    double amax = ceil(max / scale * 1.35 / step) * step;
    if (!(amax > 0)) amax = 1;
    int dec = svg_step_decimals(step);
    double axis_y = top + n * rh + 4;
#define CX(v) (px0 + (px1 - px0) * (v) / amax)
    svg_sb_printf(b, "<g class=\"panel %s\">\n", which == 0 ? "tokens-per-s" : "cost");
    svg_sb_printf(b, "<g class=\"axis\" font-size=\"11\">\n");
    for (int t = 0; t * step <= amax * (1 + 1e-9); t++) {
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(CX(t * step)), X1(top - 4), X1(CX(t * step)), X1(axis_y));
        svg_text_at(b, CX(t * step), axis_y + 15, "middle", NULL, svg_fx(t * step, dec));
    }
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(px0),
              X1(axis_y), X1(px1), X1(axis_y));
    svg_text_at(b, (px0 + px1) / 2, axis_y + 33, "middle", " font-size=\"12\"", axis_words);
    svg_sb_printf(b, "</g>\n");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i);
        json_t *ttt = json_object_get(v, "time_to_train");
        double y = top + i * rh, x;
        int have = which == 0 ? !svg_num(v, "tokens_per_s", &x) && json_is_true(json_object_get(v, "fits"))
                              : !svg_num(ttt, "cost", &x);
        svg_sb_printf(b, "<g class=\"variant\" data-variant=\"%zu\">\n", i + 1);
        if (!have) {
            svg_text_at(b, px0 + 4, y + rh / 2 + 4, NULL, " font-size=\"11\" fill=\"" GREY_DARK "\"",
                    json_is_true(json_object_get(v, "fits")) ? "no price" : "does not fit");
        } else {
            int is_best = best == (int)i + 1;
            svg_sb_printf(b, "<rect class=\"bar\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"%s>"
                         "<title>",
                      X1(px0), X1(y + rh * 0.15), X1(CX(x / scale) - px0), X1(rh * 0.7),
                      which == 0 ? OI_BLUE : OI_ORANGE,
                      is_best ? " stroke=\"" OI_BLACK "\" stroke-width=\"2\"" : "");
            variant_label_esc(b, v, i);
            if (which == 0)
                svg_sb_printf(b, ": %s tokens/s, %s per device, MFU %s%%</title></rect>\n", svg_fx(x, 0),
                          svg_fx(svg_num_or(v, "tokens_per_s_per_device", 0), 1), svg_fx(svg_num_or(v, "mfu", 0) * 100, 2));
            else {
                svg_sb_printf(b, ": %s ", svg_fx(x, 2));
                svg_sb_esc(b, svg_str_or(ttt, "currency", ""));
                svg_sb_printf(b, ", %s days</title></rect>\n", svg_fx(svg_num_or(ttt, "wall_clock_days", 0), 1));
            }
            char lab[96];
            if (which == 0)
                snprintf(lab, sizeof lab, "%s", svg_fx(x / scale, 2));
            else
                snprintf(lab, sizeof lab, "%s, %s d", svg_fx(x / scale, 2), svg_fx(svg_num_or(ttt, "wall_clock_days", 0), 0));
            svg_text_at(b, CX(x / scale) + 4, y + rh / 2 + 4, NULL,
                    is_best ? " font-size=\"11\" font-weight=\"bold\"" : " font-size=\"11\"", lab);
        }
        svg_sb_printf(b, "</g>\n");
    }
    svg_sb_printf(b, "</g>\n");
#undef CX
}

/* The variants' largest throughput and cost, whether any is priced and in
 * what currency. -1 when a variant is not what api_compare writes. */
static int compare_scan(json_t *vars, size_t n, double *max_tps_out, double *max_cost_out, int *priced_out,
                        const char **currency_out)
{
    double max_tps = 0, max_cost = 0;
    int priced = 0;
    const char *currency = "";
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i), *ttt;
        double x;
        if (!json_is_object(v) || !json_is_boolean(json_object_get(v, "fits")) ||
            !json_is_string(json_object_get(v, "hardware")) || svg_num(v, "devices", &x))
            return -1;
        if (json_is_true(json_object_get(v, "fits"))) {
            if (svg_num(v, "tokens_per_s", &x) || x < 0) return -1;
            if (x > max_tps) max_tps = x;
        }
        ttt = json_object_get(v, "time_to_train");
        if (!svg_num(ttt, "cost", &x) && x >= 0) {
            if (!priced) currency = svg_str_or(ttt, "currency", "");
            priced = 1;
            if (x > max_cost) max_cost = x;
        }
    }
    *max_tps_out = max_tps;
    *max_cost_out = max_cost;
    *priced_out = priced;
    *currency_out = currency;
    return 0;
}

/* The chart's description: every variant's figures, the fastest and the
 * cheapest. */
static void compare_desc(sbuf *desc, json_t *vars, size_t n, int priced, const char *currency, int fastest,
                         int cheapest)
{
    svg_sb_printf(desc, "Bar chart of the expected training throughput (tokens/s, all devices) of the "
                     "best configuration of each variant");
    if (priced) svg_sb_printf(desc, ", and beside it the cost to train in %s", currency);
    svg_sb_printf(desc, ".");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i);
        svg_sb_printf(desc, " ");
        variant_label(desc, v, i);
        if (!json_is_true(json_object_get(v, "fits"))) {
            svg_sb_printf(desc, ": does not fit.");
            continue;
        }
        svg_sb_printf(desc, ": %s tokens/s, MFU %s%%", svg_fx(svg_num_or(v, "tokens_per_s", 0), 0),
                  svg_fx(svg_num_or(v, "mfu", 0) * 100, 2));
        json_t *ttt = json_object_get(v, "time_to_train");
        double c;
        if (!svg_num(ttt, "cost", &c)) {
            svg_sb_printf(desc, ", %s %s over %s days", svg_fx(c, 0), svg_str_or(ttt, "currency", ""),
                      svg_fx(svg_num_or(ttt, "wall_clock_days", 0), 1));
        }
        svg_sb_printf(desc, ".");
    }
    if (fastest >= 1 && (size_t)fastest <= n) svg_sb_printf(desc, " Fastest: variant %d.", fastest);
    if (priced && cheapest >= 1 && (size_t)cheapest <= n) svg_sb_printf(desc, " Cheapest: variant %d.", cheapest);
}

char *api_svg_compare(json_t *result)
{
    if (!json_is_object(result)) return NULL;
    json_t *vars = json_object_get(result, "variants");
    if (!json_is_array(vars) || json_array_size(vars) == 0) return NULL;
    size_t n = json_array_size(vars);
    double max_tps, max_cost;
    int priced;
    const char *currency;
    if (compare_scan(vars, n, &max_tps, &max_cost, &priced, &currency)) return NULL;
    int fastest = (int)svg_num_or(result, "fastest", 0), cheapest = (int)svg_num_or(result, "cheapest", 0);
    const char *tw, *cw;
    double ts = si_scale(max_tps, &tw), cs = si_scale(max_cost, &cw);

    sbuf title = {0}, desc = {0}, b = {0}, ax1 = {0}, ax2 = {0};
    svg_sb_printf(&title, "What-if comparison: %zu variant%s", n, n == 1 ? "" : "s");
    compare_desc(&desc, vars, n, priced, currency, fastest, cheapest);
    svg_sb_printf(&ax1, "Throughput (%s%stokens/s)", tw, tw[0] ? " " : "");
    svg_sb_printf(&ax2, "Cost to train (%s%s%s); labels: cost, days", cw, cw[0] && currency[0] ? " " : "", currency);
    if (title.oom || desc.oom || ax1.oom || ax2.oom) goto fail;

    double rh = 300.0 / n;
    if (rh > 44) rh = 44;
    if (rh < 16) rh = 16;
    const double top = 66, lx = 212;
    int h = (int)ceil(top + n * rh + 4 + 48 + 30);
    if (h < SVG_H_MIN) h = SVG_H_MIN;
    svg_begin(&b, "compare", h, title.p, desc.p,
              priced ? "expected tokens/s of each variant's best configuration; cost and days to train"
                     : "expected tokens/s of each variant's best configuration");
    svg_sb_printf(&b, "<g class=\"labels\" font-size=\"11\">\n");
    for (size_t i = 0; i < n; i++) {
        int f = fastest == (int)i + 1, c = priced && cheapest == (int)i + 1;
        svg_sb_printf(&b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\"%s>", X1(lx - 8),
                  X1(top + i * rh + rh / 2 + 4), f || c ? " font-weight=\"bold\"" : "");
        variant_label_esc(&b, json_array_get(vars, i), i);
        svg_sb_printf(&b, "%s</text>\n", f && c ? " (fastest, cheapest)" : f ? " (fastest)" : c ? " (cheapest)" : "");
    }
    svg_sb_printf(&b, "</g>\n");
    if (priced) {
        compare_panel(&b, vars, 0, lx, 470, top, rh, ts, ax1.p, fastest);
        compare_panel(&b, vars, 1, 520, 770, top, rh, cs, ax2.p, cheapest);
    } else {
        compare_panel(&b, vars, 0, lx, 700, top, rh, ts, ax1.p, fastest);
    }
    svg_sb_printf(&b, "<g class=\"legend\" font-size=\"11\">\n");
    double ly = top + n * rh + 4 + 62;
    svg_legend_item(&b, 16, ly, OI_BLUE, NULL, "tokens/s", 0);
    if (priced) svg_legend_item(&b, 100, ly, OI_ORANGE, NULL, "cost to train", 0);
    svg_text_at(&b, priced ? 210 : 100, ly, NULL, " fill=\"" GREY_DARK "\"",
            priced ? "black outline: fastest and cheapest" : "black outline: fastest");
    svg_sb_printf(&b, "</g>\n");
    svg_end(&b);
    free(title.p); free(desc.p); free(ax1.p); free(ax2.p);
    return svg_sb_take(&b);
fail:
    free(title.p); free(desc.p); free(ax1.p); free(ax2.p); free(b.p);
    return NULL;
}
