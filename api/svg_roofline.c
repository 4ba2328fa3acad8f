/* api/svg_roofline.c -- the roofline chart: operators on log-log intensity
 * vs FLOP/s, the roofs (api/svg.c has the conventions). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_int.h"

/* ======================================================================= */
/* The roofline chart                                                        */
/* ======================================================================= */

/* 10^k as a tick label: plain for 0.001 .. 100000, else 1e<k> */
static void decade_label(char *buf, size_t n, int k)
{
    if (k >= 0 && k <= 5) snprintf(buf, n, "%.0f", pow(10.0, k));
    else if (k < 0 && k >= -3) snprintf(buf, n, "%.*f", -k, pow(10.0, k));
    else snprintf(buf, n, "1e%d", k);
}

/* 10^k FLOP/s with an SI prefix: "1 T", "100 T", "1 P" */
static void decade_si(char *buf, size_t n, int k)
{
    static const char *const P[] = {"", "k", "M", "G", "T", "P", "E", "Z"};
    if (k < 0 || k >= 24) { snprintf(buf, n, "1e%d", k); return; }
    snprintf(buf, n, "%.0f %s", pow(10.0, k % 3), P[k / 3]);
}

typedef struct rop { const char *name; int bwd, vector; double x, y, t; } rop;

/* A roofline chart's data and frame: the roofs, the plotted operators and
 * the decades the axes span. */
typedef struct rplot {
    json_t *ops;
    size_t n;                   /* operators in the result */
    double ridge, bw, peak, vpeak, mfu;
    char dtype[32];             /* the training dtype(s) the peak is of */
    rop *pt;
    size_t np, skipped;         /* plotted; without FLOPs, bytes or time */
    int vroof;                  /* a vector-units roof below the compute roof */
    int xlo, xhi, ylo, yhi;     /* decades */
    double x0, x1, top, bottom; /* the plot area */
} rplot;

static double rx(const rplot *p, double v)
{
    return p->x0 + (p->x1 - p->x0) * (log10(v) - p->xlo) / (double)(p->xhi - p->xlo);
}

static double ry(const rplot *p, double v)
{
    return p->bottom - (p->bottom - p->top) * (log10(v) - p->ylo) / (double)(p->yhi - p->ylo);
}

/* The roofs from the result, the operators' points and the decades; -1 if
 * the result is not a roofline. */
static int roof_points(json_t *result, rplot *p)
{
    json_t *roof = json_object_get(result, "roofline");
    json_t *hwj = json_object_get(result, "hardware");
    memset(p, 0, sizeof *p);
    p->ops = json_object_get(roof, "ops");
    if (!json_is_array(p->ops) || json_array_size(p->ops) == 0 ||
        svg_num(roof, "ridge_point_flops_per_byte", &p->ridge) || p->ridge <= 0 || svg_num(hwj, "hbm_bw_bytes_s", &p->bw) ||
        p->bw <= 0)
        return -1;
    p->mfu = svg_num_or(roof, "mfu", 0);
    p->peak = p->ridge * p->bw;
    /* the training dtype: the peak(s) the ridge point was computed from */
    static const char *const DT[] = {"bf16", "fp16", "fp8", "fp32"};
    json_t *pf = json_object_get(hwj, "peak_flops");
    for (int d = 0; d < 4; d++) {
        double pk;
        if (!svg_num(pf, DT[d], &pk) && fabs(pk - p->peak) <= 1e-9 * p->peak) {
            if (p->dtype[0]) strcat(p->dtype, "/");
            strcat(p->dtype, DT[d]);
        }
    }
    p->vpeak = svg_num_or(pf, "fp32", 0);
    p->n = json_array_size(p->ops);
    p->pt = api_calloc(p->n, sizeof *p->pt);
    if (!p->pt) return -1;
    int any_vector = 0;
    double minx = p->ridge, maxx = p->ridge, miny = p->peak;
    for (size_t i = 0; i < p->n; i++) {
        json_t *o = json_array_get(p->ops, i);
        double fl, by, t, cnt = svg_num_or(o, "count", 1);
        const char *name = svg_str_or(o, "name", NULL), *ph = svg_str_or(o, "phase", NULL);
        if (!name || !ph || svg_num(o, "flops", &fl) || svg_num(o, "bytes", &by) || svg_num(o, "time_s", &t)) {
            free(p->pt);
            p->pt = NULL;
            return -1;
        }
        if (!(fl > 0 && by > 0 && t > 0 && cnt > 0)) { p->skipped++; continue; }
        rop *r = &p->pt[p->np++];
        r->name = name;
        r->bwd = strcmp(ph, "fwd") != 0;
        r->vector = strcmp(svg_str_or(o, "unit", "matrix"), "vector") == 0;
        any_vector |= r->vector;
        r->x = fl / by;
        r->y = fl * cnt / t;
        r->t = t;
        if (r->x < minx) minx = r->x;
        if (r->x > maxx) maxx = r->x;
        if (r->y < miny) miny = r->y;
    }
    p->vroof = any_vector && p->vpeak > 0 && p->vpeak < p->peak * (1 - 1e-9);
    if (p->vroof && p->vpeak / p->bw < minx) minx = p->vpeak / p->bw;
    p->xlo = (int)floor(log10(minx / 2.0));
    p->xhi = (int)ceil(log10(maxx * 3.0));
    p->ylo = (int)floor(log10(miny / 2.0));
    p->yhi = (int)ceil(log10(p->peak * 1.5));
    if (p->xhi - p->xlo < 2) p->xhi = p->xlo + 2;
    if (p->yhi - p->ylo < 2) p->ylo = p->yhi - 2;
    if (p->xlo < -12) p->xlo = -12;
    if (p->ylo < p->yhi - 12) p->ylo = p->yhi - 12;
    p->x0 = 96;
    p->x1 = 600;
    p->top = 66;
    p->bottom = 372;
    return 0;
}

/* The chart's title, subtitle and description (what a screen reader says). */
static void roof_texts(json_t *result, const rplot *p, sbuf *title, sbuf *desc, sbuf *sub)
{
    const char *model = svg_str_or(json_object_get(result, "model"), "name", "model");
    const char *hw = svg_str_or(json_object_get(result, "hardware"), "name", "hardware");
    svg_sb_printf(title, "Roofline: %s on one %s", model, hw);
    svg_sb_printf(sub, "%s%s%scompute roof %s TFLOP/s, HBM %s TB/s, ridge %s FLOP/byte; roofline MFU %s%%",
              p->dtype[0] ? "training dtype " : "", p->dtype, p->dtype[0] ? "; " : "", svg_fx(p->peak / 1e12, 2),
              svg_fx(p->bw / 1e12, 2), svg_fx(p->ridge, 2), svg_fx(p->mfu * 100, 2));
    svg_sb_printf(desc,
              "Log-log roofline chart: arithmetic intensity in FLOP per byte of HBM traffic (x) "
              "against achieved FLOP/s per device (y) for each forward (circle) and backward "
              "(triangle) operator of one training step on one device. Compute roof %s TFLOP/s%s%s%s, "
              "HBM roof %s TB/s, ridge point at %s FLOP/byte.",
              svg_fx(p->peak / 1e12, 2), p->dtype[0] ? " (" : "", p->dtype, p->dtype[0] ? ")" : "", svg_fx(p->bw / 1e12, 2),
              svg_fx(p->ridge, 2));
    if (p->vroof)
        svg_sb_printf(desc, " Elementwise operators run on the vector units, roof %s TFLOP/s (dashed).",
                  svg_fx(p->vpeak / 1e12, 2));
    /* memory-bound as the result says (each operator's `bound`) */
    size_t nmem = 0;
    for (size_t i = 0; i < p->n; i++) {
        json_t *o = json_array_get(p->ops, i);
        nmem += svg_num_or(o, "flops", 0) > 0 && svg_num_or(o, "bytes", 0) > 0 && svg_num_or(o, "time_s", 0) > 0 &&
                svg_num_or(o, "count", 1) > 0 && !strcmp(svg_str_or(o, "bound", ""), "memory");
    }
    svg_sb_printf(desc, " %zu operators plotted, %zu of them memory-bound; roofline MFU %s%%.", p->np, nmem,
              svg_fx(p->mfu * 100, 2));
    /* the three that take the most time */
    {
        size_t top3[3] = {(size_t)-1, (size_t)-1, (size_t)-1};
        double tt[3] = {-1, -1, -1};
        for (size_t i = 0; i < p->n; i++) {
            json_t *o = json_array_get(p->ops, i);
            double t = svg_num_or(o, "time_s", 0);
            for (int k = 0; k < 3; k++)
                if (t > tt[k]) {
                    for (int j = 2; j > k; j--) { tt[j] = tt[j - 1]; top3[j] = top3[j - 1]; }
                    tt[k] = t;
                    top3[k] = i;
                    break;
                }
        }
        svg_sb_printf(desc, " Most time:");
        for (int k = 0; k < 3 && top3[k] != (size_t)-1; k++) {
            json_t *o = json_array_get(p->ops, top3[k]);
            svg_sb_printf(desc, "%s %s (%s) %s s", k ? "," : "", svg_str_or(o, "name", "?"),
                      svg_str_or(o, "phase", "?"), svg_fx(tt[k], 3));
        }
        svg_sb_printf(desc, ".");
    }
    if (p->skipped) {
        svg_sb_printf(desc, " Not plotted (no FLOPs, bytes or time):");
        int k = 0;
        for (size_t i = 0; i < p->n; i++) {
            json_t *o = json_array_get(p->ops, i);
            if (svg_num_or(o, "flops", 0) > 0 && svg_num_or(o, "bytes", 0) > 0 && svg_num_or(o, "time_s", 0) > 0 &&
                svg_num_or(o, "count", 1) > 0)
                continue;
            svg_sb_printf(desc, "%s %s (%s)", k++ ? "," : "", svg_str_or(o, "name", "?"), svg_str_or(o, "phase", "?"));
        }
        svg_sb_printf(desc, ".");
    }
}

/* The decade grid, the frame and the axis titles. */
static void roof_axes(sbuf *b, const rplot *p)
{
    char lab[64];
    svg_sb_printf(b, "<g class=\"axis\" font-size=\"11\">\n");
    for (int k = p->xlo; k <= p->xhi; k++) {
        double v = pow(10.0, k);
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(rx(p, v)), X1(p->top), X1(rx(p, v)), X1(p->bottom));
        decade_label(lab, sizeof lab, k);
        svg_text_at(b, rx(p, v), p->bottom + 15, "middle", NULL, lab);
    }
    for (int k = p->ylo; k <= p->yhi; k++) {
        double v = pow(10.0, k);
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(p->x0), X1(ry(p, v)), X1(p->x1), X1(ry(p, v)));
        decade_si(lab, sizeof lab, k);
        svg_text_at(b, p->x0 - 6, ry(p, v) + 4, "end", NULL, lab);
    }
    svg_sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"" INK "\"/>\n",
              X1(p->x0), X1(p->top), X1(p->x1 - p->x0), X1(p->bottom - p->top));
    svg_text_at(b, (p->x0 + p->x1) / 2, p->bottom + 34, "middle", " font-size=\"12\"",
            "Arithmetic intensity (FLOP/byte of HBM traffic, log scale)");
    svg_sb_printf(b, "<text x=\"18\" y=\"%s\" text-anchor=\"middle\" font-size=\"12\" "
                  "transform=\"rotate(-90 18 %s)\">Achieved FLOP/s per device (log scale)</text>\n",
              X1((p->top + p->bottom) / 2), X1((p->top + p->bottom) / 2));
    svg_sb_printf(b, "</g>\n");

}

/* The HBM, compute and vector-units roofs with their labels. */
static void roof_roofs(sbuf *b, const rplot *p)
{
    char lab[64];
    /* the roofs: HBM up to the p->ridge, compute beyond it */
    double xa = pow(10.0, p->xlo), ya = xa * p->bw;
    if (ya < pow(10.0, p->ylo)) { ya = pow(10.0, p->ylo); xa = ya / p->bw; }
    double xe = pow(10.0, p->xhi);
    svg_sb_printf(b, "<g class=\"roofs\">\n");
    svg_sb_printf(b, "<line class=\"roof hbm-roof\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"2\"><title>HBM roof: %s TB/s x intensity</title></line>\n",
              X1(rx(p, xa)), X1(ry(p, ya)), X1(rx(p, p->ridge)), X1(ry(p, p->peak)), svg_fx(p->bw / 1e12, 2));
    svg_sb_printf(b, "<line class=\"roof compute-roof\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"2\"><title>compute roof: %s TFLOP/s</title></line>\n",
              X1(rx(p, p->ridge)), X1(ry(p, p->peak)), X1(rx(p, xe)), X1(ry(p, p->peak)), svg_fx(p->peak / 1e12, 2));
    snprintf(lab, sizeof lab, "compute roof %s TFLOP/s", svg_fx(p->peak / 1e12, 2));
    svg_text_at(b, p->x1 - 4, ry(p, p->peak) - 10, "end", " font-size=\"11\"" HALO, lab);
    {
        /* the HBM label along the slope, above the memory-bound points */
        double lx = pow(10.0, log10(xa) + (log10(p->ridge) - log10(xa)) * 0.62);
        double px = rx(p, lx), py = ry(p, lx * p->bw);
        double ang = atan2(ry(p, p->ridge * p->bw) - ry(p, xa * p->bw), rx(p, p->ridge) - rx(p, xa)) * 180.0 / M_PI;
        snprintf(lab, sizeof lab, "HBM roof %s TB/s", svg_fx(p->bw / 1e12, 2));
        svg_sb_printf(b, "<text x=\"%s\" y=\"%s\" font-size=\"11\"" HALO " transform=\"rotate(%s %s %s)\">", X1(px),
                  X1(py - 6), svg_fx(ang, 1), X1(px), X1(py - 6));
        svg_sb_esc(b, lab);
        svg_sb_printf(b, "</text>\n");
    }
    if (p->vroof) {
        svg_sb_printf(b, "<line class=\"roof vector-roof\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_DARK
                      "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"><title>vector units roof: %s TFLOP/s"
                      "</title></line>\n",
                  X1(rx(p, p->vpeak / p->bw)), X1(ry(p, p->vpeak)), X1(rx(p, xe)), X1(ry(p, p->vpeak)), svg_fx(p->vpeak / 1e12, 2));
        snprintf(lab, sizeof lab, "vector units %s TFLOP/s", svg_fx(p->vpeak / 1e12, 2));
        svg_text_at(b, p->x1 - 4, ry(p, p->vpeak) - 5, "end", " font-size=\"11\" fill=\"" GREY_DARK "\"" HALO, lab);
    }
    svg_sb_printf(b, "</g>\n");
}

/* The operators and the ridge point. */
static void roof_ops(sbuf *b, const rplot *p)
{
    char lab[64];
    /* the operators */
    svg_sb_printf(b, "<g class=\"ops\" stroke=\"" INK "\" stroke-width=\"0.6\" fill-opacity=\"0.85\">\n");
    for (size_t i = 0; i < p->np; i++) {
        const rop *r = &p->pt[i];
        double cx = rx(p, r->x), cy = ry(p, r->y);
        const char *col = r->vector ? OI_ORANGE : OI_BLUE;
        if (r->bwd)
            svg_sb_printf(b, "<path class=\"op bwd\" d=\"M%s %sL%s %sL%s %sZ\" fill=\"%s\"><title>", X1(cx),
                      X1(cy - 5.5), X1(cx + 5), X1(cy + 3.5), X1(cx - 5), X1(cy + 3.5), col);
        else
            svg_sb_printf(b, "<circle class=\"op fwd\" cx=\"%s\" cy=\"%s\" r=\"4.5\" fill=\"%s\"><title>", X1(cx),
                      X1(cy), col);
        svg_sb_esc(b, r->name);
        svg_sb_printf(b, " (%s, %s units): %s FLOP/byte, %s TFLOP/s, %s s per step</title></%s>\n",
                  r->bwd ? "bwd" : "fwd", r->vector ? "vector" : "matrix", svg_fx(r->x, 2), svg_fx(r->y / 1e12, 2),
                  svg_fx(r->t, 3), r->bwd ? "path" : "circle");
    }
    svg_sb_printf(b, "</g>\n");
    /* the p->ridge point */
    svg_sb_printf(b, "<g class=\"ridge\" data-flops-per-byte=\"%s\">\n", svg_fx(p->ridge, 2));
    svg_sb_printf(b, "<path d=\"M%s %sL%s %sL%s %sL%s %sZ\" fill=\"" OI_VERMILLION "\" stroke=\"" INK
                  "\"><title>ridge point: %s FLOP/byte</title></path>\n",
              X1(rx(p, p->ridge)), X1(ry(p, p->peak) - 7), X1(rx(p, p->ridge) + 7), X1(ry(p, p->peak)), X1(rx(p, p->ridge)), X1(ry(p, p->peak) + 7),
              X1(rx(p, p->ridge) - 7), X1(ry(p, p->peak)), svg_fx(p->ridge, 2));
    svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_VERMILLION
                  "\" stroke-dasharray=\"2 3\"/>\n",
              X1(rx(p, p->ridge)), X1(ry(p, p->peak) + 7), X1(rx(p, p->ridge)), X1(p->bottom));
    snprintf(lab, sizeof lab, "ridge %s FLOP/byte", svg_fx(p->ridge, 2));
    svg_text_at(b, rx(p, p->ridge) + 6, p->bottom - 6, NULL, " font-size=\"11\" fill=\"" OI_VERMILLION "\"" HALO, lab);
    svg_sb_printf(b, "</g>\n");
}

/* The legend. */
static void roof_legend(sbuf *b, const rplot *p)
{
    char lab[64];
    /* legend */
    svg_sb_printf(b, "<g class=\"legend\" font-size=\"11\">\n");
    double ly = 90;
    svg_sb_printf(b, "<circle cx=\"627\" cy=\"%s\" r=\"4.5\" fill=\"#FFFFFF\" stroke=\"" INK "\"/>\n", X1(ly - 4));
    svg_text_at(b, 639, ly, NULL, NULL, "forward operator");
    ly += 20;
    svg_sb_printf(b, "<path d=\"M627 %sL632 %sL622 %sZ\" fill=\"#FFFFFF\" stroke=\"" INK "\"/>\n", X1(ly - 9.5),
              X1(ly - 0.5), X1(ly - 0.5));
    svg_text_at(b, 639, ly, NULL, NULL, "backward operator");
    ly += 20;
    svg_legend_item(b, 620, ly, OI_BLUE, NULL, "matrix units", 0);
    svg_text_at(b, 639, ly + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "(GEMM, attention)");
    ly += 33;
    svg_legend_item(b, 620, ly, OI_ORANGE, NULL, "vector units", 0);
    svg_text_at(b, 639, ly + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "(norms, activations)");
    ly += 33;
    svg_legend_item(b, 620, ly, OI_BLACK, NULL, "compute and HBM roofs", 1);
    ly += 20;
    if (p->vroof) {
        svg_legend_item(b, 620, ly, GREY_DARK, " stroke-dasharray=\"6 3\"", "vector units roof", 1);
        ly += 20;
    }
    svg_sb_printf(b, "<path d=\"M627 %sL633 %sL627 %sL621 %sZ\" fill=\"" OI_VERMILLION "\" stroke=\"" INK "\"/>\n",
              X1(ly - 10), X1(ly - 4), X1(ly + 2), X1(ly - 4));
    svg_text_at(b, 639, ly, NULL, NULL, "ridge point");
    ly += 24;
    svg_text_at(b, 620, ly, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "FLOP/s prefixes: G = 10^9,");
    svg_text_at(b, 620, ly + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "T = 10^12, P = 10^15");
    ly += 26;
    if (p->skipped) {
        snprintf(lab, sizeof lab, "%zu operator%s without FLOPs", p->skipped, p->skipped == 1 ? "" : "s");
        svg_text_at(b, 620, ly + 6, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", lab);
        svg_text_at(b, 620, ly + 19, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "not plotted (see desc)");
    }
    svg_sb_printf(b, "</g>\n");
}

char *api_svg_roofline(json_t *result)
{
    if (!json_is_object(result)) return NULL;
    rplot p;
    if (roof_points(result, &p)) return NULL;
    sbuf title = {0}, desc = {0}, sub = {0}, b = {0};
    roof_texts(result, &p, &title, &desc, &sub);
    char *out = NULL;
    if (!(title.oom || desc.oom || sub.oom)) {
        svg_begin(&b, "roofline", SVG_H, title.p, desc.p, sub.p);
        roof_axes(&b, &p);
        roof_roofs(&b, &p);
        roof_ops(&b, &p);
        roof_legend(&b, &p);
        svg_end(&b);
        out = svg_sb_take(&b);
    }
    free(p.pt);
    free(title.p); free(desc.p); free(sub.p);
    return out;
}
