/* api/svg.c -- mfud's answers as pictures (issue 13 item 2; docs/charts.md).
 *
 * Pure renderers from the result JSON (the contract in openapi.yaml) to one
 * standalone SVG document each, a malloc'd NUL-terminated string:
 *
 *   api_svg_gap       the gap waterfall of one ranked configuration
 *   api_svg_memory    per pipeline stage memory against the capacity
 *   api_svg_roofline  operators on log-log intensity vs FLOP/s, the roofs
 *   api_svg_timeline  one step as a lane per pipeline stage
 *   api_svg_compare   tokens/s (and cost) per what-if variant
 *
 * Every chart is 800 wide (viewBox 0 0 800 H, H = 450 unless many stages or
 * variants need more), has a <title> and a <desc> (the alt text, with the
 * key numbers in words), axis labels with units, text escaped for XML, no
 * external resources (the generic font family "sans-serif", no scripts, no
 * links), and the Okabe-Ito colour-blind-safe palette (Okabe and Ito 2008,
 * "Color Universal Design", https://jfly.uni-koeln.de/color/) plus greys.
 * Output is a function of the input alone: fixed precision everywhere, no
 * clock, no locale (the process runs in the "C" locale), keys read in a
 * fixed order.
 *
 * Bad input (a field missing or of the wrong type, a rank out of range)
 * returns NULL; the caller answers 404 or 422.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* ---- the Okabe-Ito palette ------------------------------------------------ */
#define OI_BLACK "#000000"
#define OI_ORANGE "#E69F00"
#define OI_SKY "#56B4E9"
#define OI_GREEN "#009E73"   /* bluish green */
#define OI_YELLOW "#F0E442"
#define OI_BLUE "#0072B2"
#define OI_VERMILLION "#D55E00"
#define OI_PURPLE "#CC79A7"  /* reddish purple */
#define GREY_LIGHT "#DDDDDD"
#define GREY_MID "#999999"
#define GREY_DARK "#555555"
#define INK "#222222"

#define SVG_W 800
#define SVG_H 450
#define SVG_H_MIN 320 /* the timeline and the comparison take the height they need */
/* a white outline under text drawn over lines and bars */
#define HALO " paint-order=\"stroke\" stroke=\"#FFFFFF\" stroke-width=\"3\" stroke-linejoin=\"round\""

/* ---- a growing string ----------------------------------------------------- */

typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 8192;
        while (b->n + n + 1 > cap) cap *= 2;
        char *q = api_realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if ((size_t)k < sizeof small) { sb_put(b, small, (size_t)k); return; }
    char *big = api_malloc((size_t)k + 1);
    if (!big) { b->oom = 1; return; }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    sb_put(b, big, (size_t)k);
    free(big);
}

/* Text or attribute content: the five XML specials as entities; control
 * characters XML 1.0 does not allow become '?'. (jansson strings are valid
 * UTF-8, so multi-byte sequences pass through.) */
static void sb_esc(sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': sb_put(b, "&amp;", 5); break;
        case '<': sb_put(b, "&lt;", 4); break;
        case '>': sb_put(b, "&gt;", 4); break;
        case '"': sb_put(b, "&quot;", 6); break;
        case '\'': sb_put(b, "&#39;", 5); break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') sb_put(b, "?", 1);
            else sb_put(b, s, 1);
        }
    }
}

/* At most `max` characters (UTF-8 code points) of s, with "..." when cut;
 * for names drawn in the chart (the desc carries them whole). */
static void sb_esc_short(sbuf *b, const char *s, int max)
{
    if (!s) return;
    int cps = 0;
    size_t i = 0, cut = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
        if (cps == max - 3) cut = i;
        cps++;
    }
    if (cps <= max) { sb_esc(b, s); return; }
    char *t = api_malloc(cut + 4);
    if (!t) { b->oom = 1; return; }
    memcpy(t, s, cut);
    memcpy(t + cut, "...", 4);
    sb_esc(b, t);
    free(t);
}

static char *sb_take(sbuf *b)
{
    if (b->oom || !b->p) { free(b->p); return NULL; }
    return b->p;
}

/* ---- fixed-precision numbers ---------------------------------------------- */

/* "%.*f" of v, without the sign of a value that rounds to zero ("-0.00"),
 * from a per-thread ring so that one sb_printf can take several. */
#define FX_RING 32
static _Thread_local char fx_ring[FX_RING][64];
static _Thread_local unsigned fx_next;

static const char *fx(double v, int prec)
{
    char *s = fx_ring[fx_next++ % FX_RING];
    if (!isfinite(v)) v = 0.0;
    if (v > 1e40) v = 1e40;
    if (v < -1e40) v = -1e40;
    snprintf(s, 64, "%.*f", prec, v);
    if (s[0] == '-' && strspn(s + 1, "0.") == strlen(s + 1)) memmove(s, s + 1, strlen(s));
    return s;
}
/* coordinates: one decimal */
#define X1(v) fx((v), 1)

/* ---- reading the result ----------------------------------------------------- */

static int num(json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) return -1;
    double x = json_number_value(v);
    if (!isfinite(x)) return -1;
    *out = x;
    return 0;
}

static double num_or(json_t *o, const char *k, double def)
{
    double x;
    return num(o, k, &x) ? def : x;
}

static const char *str_or(json_t *o, const char *k, const char *def)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : def;
}

/* The configuration `rank` (1-based) of a search result; rank 0 is the
 * measured configuration when the request gave a measured run. */
static json_t *pick_config(json_t *result, int rank)
{
    if (!json_is_object(result)) return NULL;
    json_t *c;
    if (rank == 0) c = json_object_get(json_object_get(result, "measured"), "config");
    else if (rank < 0) return NULL;
    else c = json_array_get(json_object_get(result, "configs"), (size_t)rank - 1);
    return json_is_object(c) ? c : NULL;
}

static const char *const AXES[] = {"dp", "fsdp", "tp", "ep", "pp", "cp"};

/* "dp 4 x fsdp 128 x cp 2, 1f1b, mbs 1, 4 micro-batches, recompute minimal" */
static void layout_words(sbuf *b, json_t *cfg)
{
    json_t *par = json_object_get(cfg, "parallel");
    int any = 0;
    for (int a = 0; a < 6; a++) {
        double v = num_or(par, AXES[a], 1);
        if (v > 1 || (a == 5 && !any)) {
            sb_printf(b, "%s%s %s", any ? " x " : "", AXES[a], fx(v, 0));
            any = 1;
        }
    }
    if (json_is_true(json_object_get(par, "sp"))) sb_printf(b, ", sp");
    if (num_or(par, "pp", 1) > 1) {
        sb_printf(b, ", %s", str_or(cfg, "schedule", "?"));
        if (num_or(cfg, "vpp", 1) > 1) sb_printf(b, " vpp %s", fx(num_or(cfg, "vpp", 1), 0));
    }
    sb_printf(b, ", mbs %s, %s micro-batches, recompute %s", fx(num_or(cfg, "mbs", 1), 0),
              fx(num_or(cfg, "grad_accum", 1), 0), str_or(cfg, "recompute", "?"));
}

/* ---- the frame every chart shares ------------------------------------------- */

/* The document, its title and desc (escaped here), a white background and
 * the heading drawn at the top. `kind` names the chart in ids and classes. */
static void svg_begin(sbuf *b, const char *kind, int h, const char *title, const char *desc,
                      const char *subtitle)
{
    sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    sb_printf(b,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"mfu-chart mfu-%s\" width=\"%d\" "
              "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-labelledby=\"mfu-%s-title "
              "mfu-%s-desc\" font-family=\"sans-serif\" font-size=\"12\" fill=\"" INK "\">\n",
              kind, SVG_W, h, SVG_W, h, kind, kind);
    sb_printf(b, "<title id=\"mfu-%s-title\">", kind);
    sb_esc(b, title);
    sb_printf(b, "</title>\n<desc id=\"mfu-%s-desc\">", kind);
    sb_esc(b, desc);
    sb_printf(b, "</desc>\n");
    sb_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#FFFFFF\"/>\n", SVG_W, h);
    sb_printf(b, "<text class=\"heading\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">");
    sb_esc_short(b, title, 92);
    sb_printf(b, "</text>\n");
    if (subtitle && *subtitle) {
        sb_printf(b, "<text class=\"subtitle\" x=\"16\" y=\"43\" fill=\"" GREY_DARK "\">");
        sb_esc_short(b, subtitle, 118);
        sb_printf(b, "</text>\n");
    }
}

static void svg_end(sbuf *b) { sb_printf(b, "</svg>\n"); }

static void text_at(sbuf *b, double x, double y, const char *anchor, const char *extra, const char *s)
{
    sb_printf(b, "<text x=\"%s\" y=\"%s\"%s%s%s%s>", X1(x), X1(y), anchor ? " text-anchor=\"" : "",
              anchor ? anchor : "", anchor ? "\"" : "", extra ? extra : "");
    sb_esc(b, s);
    sb_printf(b, "</text>\n");
}

/* A legend entry: a swatch (or a line when `line`) and its words. */
static void legend_item(sbuf *b, double x, double y, const char *fill, const char *extra,
                        const char *words, int line)
{
    if (line)
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                  X1(x), X1(y - 4), X1(x + 14), X1(y - 4), fill, extra ? extra : "");
    else
        sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"14\" height=\"10\" fill=\"%s\" stroke=\"" INK
                     "\" stroke-width=\"0.5\"%s/>\n",
                  X1(x), X1(y - 9), fill, extra ? extra : "");
    text_at(b, x + 19, y, NULL, NULL, words);
}

/* A step of 1, 2 or 5 x 10^k giving about `target` intervals over [0, max]. */
static double nice_step(double max, int target)
{
    if (!(max > 0)) return 1.0;
    double raw = max / target;
    double mag = pow(10.0, floor(log10(raw)));
    double n = raw / mag;
    return (n <= 1.0 ? 1.0 : n <= 2.0 ? 2.0 : n <= 5.0 ? 5.0 : 10.0) * mag;
}

static int step_decimals(double step)
{
    if (step >= 1.0) return 0;
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 6 ? 6 : d;
}

/* ======================================================================= */
/* The gap waterfall                                                         */
/* ======================================================================= */

/* A per-configuration chart's title ("WHAT: model on N x hw, configuration
 * k" or "the measured configuration") and subtitle (rank and layout). */
static void config_heading(sbuf *title, sbuf *sub, const char *what, json_t *result, json_t *cfg, int rank)
{
    const char *model = str_or(json_object_get(result, "model"), "name", "model");
    const char *hw = str_or(json_object_get(result, "hardware"), "name", "hardware");
    sb_printf(title, "%s: %s on %s x %s, ", what, model, fx(num_or(result, "devices", 0), 0), hw);
    if (rank) sb_printf(title, "configuration %d", rank);
    else sb_printf(title, "the measured configuration");
    if (rank) sb_printf(sub, "rank %d: ", rank);
    else sb_printf(sub, "measured: ");
    layout_words(sub, cfg);
}

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
    sb_printf(b, "<g class=\"gap-total %s\" data-mfu=\"%s\">\n", cls, fx((value), 2));
    text_at(b, w->x0 - 8, y_ + w->rh * 0.5 + 4, "end", NULL, label);
    sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"><title>",
              X1(w->x0), X1(y_ + w->rh * 0.15), X1(wx(w, value) - w->x0), X1(w->rh * 0.7), colour);
    sb_esc(b, label);
    sb_printf(b, ": %s%%</title></rect>\n", fx((value), 2));
    text_at(b, wx(w, value) + 5, y_ + w->rh * 0.5 + 4, NULL, " font-weight=\"bold\"", fx((value), 2));
    sb_printf(b, "</g>\n");
    w->row++;
}

/* A component: a bar from the running total, down by what it costs. */
static void wf_step(wfall *w, const char *cls, const char *label, double value)
{
    sbuf *b = w->b;
    double cur = w->cur;
    double y_ = w->top + w->row * w->rh, v_ = (value), lo_ = cur - v_ < cur ? cur - v_ : cur;
    double hi_ = cur - v_ < cur ? cur : cur - v_;
    sb_printf(b, "<g class=\"gap-component %s\" data-name=\"", cls);
    sb_esc(b, label);
    sb_printf(b, "\" data-mfu-points=\"%s\">\n", fx(v_, 2));
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_MID "\" stroke-dasharray=\"2 2\"/>\n",
              X1(wx(w, cur)), X1(y_ - w->rh * 0.15), X1(wx(w, cur)), X1(y_ + w->rh * 0.15));
    text_at(b, w->x0 - 8, y_ + w->rh * 0.5 + 4, "end", NULL, label);
    sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"><title>", X1(wx(w, lo_)),
              X1(y_ + w->rh * 0.15), X1(wx(w, hi_) - wx(w, lo_)), X1(w->rh * 0.7),
              v_ >= 0 ? OI_VERMILLION : OI_ORANGE);
    sb_esc(b, label);
    sb_printf(b, ": %s points</title></rect>\n", fx(-v_, 2));
    text_at(b, wx(w, hi_) + 5, y_ + w->rh * 0.5 + 4, NULL, NULL, fx(-v_, 2));
    sb_printf(b, "</g>\n");
    w->cur -= v_;
    w->row++;
}

/* The grid and the x axis. */
static void wf_axis(const wfall *w)
{
    sbuf *b = w->b;
    sb_printf(b, "<g class=\"axis x-axis\" font-size=\"11\">\n");
    for (int t = 0; t <= 100; t += 10) {
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(wx(w, t)), X1(w->top - 4), X1(wx(w, t)), X1(w->axis_y));
        char lab[16];
        snprintf(lab, sizeof lab, "%d", t);
        text_at(b, wx(w, t), w->axis_y + 15, "middle", NULL, lab);
    }
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(w->x0),
              X1(w->axis_y), X1(w->x1), X1(w->axis_y));
    text_at(b, (w->x0 + w->x1) / 2, w->axis_y + 33, "middle", " font-size=\"12\"",
            "MFU (% of the chip's peak FLOP/s); bars between totals: percentage points lost");
    sb_printf(b, "</g>\n");
}

/* The gap chart's title, subtitle and description. */
static void gap_texts(json_t *result, json_t *cfg, int rank, double roof, double expected, double bound,
                      int has_measured, double measured, size_t nc, const char *const *names,
                      const double *pts, sbuf *title, sbuf *desc, sbuf *sub)
{
    config_heading(title, sub, "Gap to the roofline", result, cfg, rank);
    sb_printf(desc,
              "Waterfall of MFU in percentage points of the chip's peak for %s. Roofline MFU %s%%; "
              "the named gap components in the model's order (each the MFU it costs under the "
              "calibrated efficiency profile):",
              rank ? "a ranked configuration" : "the measured configuration", fx(roof * 100, 2));
    int listed = 0;
    for (size_t i = 0; i < nc; i++) {
        if (strcmp(fx(pts[i], 2), "0.00") == 0) continue;
        sb_printf(desc, "%s %s %s", listed ? "," : "", names[i], fx(pts[i], 2));
        listed++;
    }
    if (!listed) sb_printf(desc, " none above 0.005");
    sb_printf(desc, "; components below 0.005 points are drawn but not listed. Expected MFU %s%%. "
                    "Bound MFU (ideal kernels and network) %s%%, marked by a dashed line.",
              fx(expected * 100, 2), fx(bound * 100, 2));
    if (has_measured)
        sb_printf(desc, " Measured MFU %s%%; unexplained by the profile %s points.",
                  fx(measured * 100, 2), fx((expected - measured) * 100, 2));
    sb_printf(desc, " Configuration: ");
    layout_words(desc, cfg);
    sb_printf(desc, ".");
}

char *api_svg_gap(json_t *result, int rank)
{
    json_t *cfg = pick_config(result, rank);
    if (!cfg) return NULL;
    json_t *gap = json_object_get(cfg, "gap_expected");
    double roof, expected, bound;
    if (!json_is_array(gap) || json_array_size(gap) == 0 || json_array_size(gap) > 64 ||
        num(cfg, "roofline_mfu", &roof) || num(json_object_get(cfg, "expected"), "mfu", &expected) ||
        num(json_object_get(cfg, "bound"), "mfu", &bound))
        return NULL;
    size_t nc = json_array_size(gap);
    double pts[64];
    const char *names[64];
    for (size_t i = 0; i < nc; i++) {
        json_t *g = json_array_get(gap, i);
        names[i] = str_or(g, "name", NULL);
        if (!names[i] || num(g, "mfu_points", &pts[i])) return NULL; /* percentage points */
    }
    /* a measured run (rank 0): expected -> measured, the rest unexplained */
    double measured = 0;
    int has_measured = 0;
    if (rank == 0) {
        if (num(json_object_get(result, "measured"), "mfu", &measured)) return NULL;
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
    sb_printf(&b, "<g class=\"gap-bound\" data-mfu=\"%s\">\n", fx(bound * 100, 2));
    sb_printf(&b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
              X1(wx(&w, bound * 100)), X1(w.top - 8), X1(wx(&w, bound * 100)), X1(w.axis_y));
    char lab[64];
    snprintf(lab, sizeof lab, "bound %s%%", fx(bound * 100, 2));
    text_at(&b, wx(&w, bound * 100), w.top - 11, "middle", " font-size=\"11\"" HALO, lab);
    sb_printf(&b, "</g>\n");
    /* legend */
    double ly = SVG_H - 12;
    sb_printf(&b, "<g class=\"legend\" font-size=\"11\">\n");
    legend_item(&b, 16, ly, OI_BLUE, NULL, "roofline MFU", 0);
    legend_item(&b, 130, ly, OI_VERMILLION, NULL, "loss", 0);
    legend_item(&b, 185, ly, OI_ORANGE, NULL, "gain", 0);
    legend_item(&b, 240, ly, OI_GREEN, NULL, "expected MFU", 0);
    if (has_measured) legend_item(&b, 350, ly, OI_PURPLE, NULL, "measured MFU", 0);
    legend_item(&b, has_measured ? 465 : 355, ly, OI_BLACK, " stroke-dasharray=\"6 3\"",
                "bound MFU (ideal kernels and network)", 1);
    sb_printf(&b, "</g>\n");
    svg_end(&b);
    free(title.p); free(desc.p); free(sub.p);
    return sb_take(&b);
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
        if (!json_is_object(m) || num(m, "capacity_bytes", &c) || c <= 0) return -1;
        for (int k = 0; k < 6; k++) {
            if (num(m, MEM_KEYS[k], &x) || x < 0) return -1;
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
    config_heading(title, sub, "Memory per device by pipeline stage", result, cfg, rank);
    if (fallback) sb_printf(sub, " (binding stage only)");
    sb_printf(desc, "Stacked bars of the memory one device holds, in GB (10^9 bytes), for %s of %zu "
                    "pipeline stage%s, against the %s GB the device exposes (dashed line). ",
              fallback ? "the binding stage" : "each", fallback ? (size_t)num_or(json_object_get(cfg, "parallel"), "pp", 1) : n,
              n == 1 && !fallback ? "" : "s", fx(p->cap / 1e9, 2));
    for (size_t i = 0; i < n; i++) {
        json_t *m = mp_stage(p, i);
        double tot = 0;
        for (int k = 0; k < 6; k++) tot += num_or(m, MEM_KEYS[k], 0);
        sb_printf(desc, "Stage %s: %s GB (", fx(num_or(m, "stage", (double)i), 0), fx(tot / 1e9, 2));
        for (int k = 0; k < 6; k++)
            sb_printf(desc, "%s%s %s", k ? ", " : "", MEM_NAMES[k], fx(num_or(m, MEM_KEYS[k], 0) / 1e9, 2));
        sb_printf(desc, "). ");
    }
    json_t *m = mp_stage(p, p->tight);
    sb_printf(desc, "The least headroom: stage %s, %s GB %s.", fx(num_or(m, "stage", (double)p->tight), 0),
              fx(fabs(p->tight_head) / 1e9, 2), p->tight_head >= 0 ? "free" : "over the capacity");
}

/* The y axis in GB and the x axis's line and title. */
static void mem_axes(sbuf *b, const mplot *p, double step)
{
    int dec = step_decimals(step);
    sb_printf(b, "<g class=\"axis y-axis\" font-size=\"11\">\n");
    for (int t = 0; t * step <= p->ymax + step * 1e-9; t++) {
        double v = t * step;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(p->x0), X1(my(p, v)), X1(p->x1), X1(my(p, v)));
        text_at(b, p->x0 - 6, my(p, v) + 4, "end", NULL, fx(v, dec));
    }
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(p->x0),
              X1(p->top), X1(p->x0), X1(p->bottom));
    sb_printf(b, "<text x=\"20\" y=\"%s\" text-anchor=\"middle\" font-size=\"12\" "
                 "transform=\"rotate(-90 20 %s)\">Memory per device (GB, 10^9 bytes)</text>\n",
              X1((p->top + p->bottom) / 2), X1((p->top + p->bottom) / 2));
    sb_printf(b, "</g>\n");
    sb_printf(b, "<line class=\"x-axis\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n",
              X1(p->x0), X1(p->bottom), X1(p->x1), X1(p->bottom));
    text_at(b, (p->x0 + p->x1) / 2, p->bottom + 36, "middle", NULL, "Pipeline stage (rank)");
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
        double stage = num_or(m, "stage", (double)i);
        double cx = p->x0 + gw * (i + 0.5), acc = 0;
        sb_printf(b, "<g class=\"stage\" data-stage=\"%s\">\n", fx(stage, 0));
        for (int k = 0; k < 6; k++) {
            double gb = num_or(m, MEM_KEYS[k], 0) / 1e9;
            double ya = my(p, acc), yb = my(p, acc + gb);
            sb_printf(b, "<rect class=\"seg %s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" "
                         "fill=\"%s\"><title>stage %s %s: %s GB</title></rect>\n",
                      MEM_NAMES[k], X1(cx - bw / 2), X1(yb), X1(bw), X1(ya - yb), MEM_COLOURS[k],
                      fx(stage, 0), MEM_WORDS[k], fx(gb, 2));
            acc += gb;
        }
        if (bw >= 26)
            text_at(b, cx, my(p, acc) - 4, "middle", " font-size=\"10\" class=\"total\"" HALO, fx(acc, 1));
        if (i % label_every == 0)
            text_at(b, cx, p->bottom + 15, "middle",
                    i == p->tight ? " font-size=\"11\" font-weight=\"bold\"" : " font-size=\"11\"", fx(stage, 0));
        sb_printf(b, "</g>\n");
    }
}

/* The capacity line and the legend. */
static void mem_capacity_legend(sbuf *b, const mplot *p)
{
    sb_printf(b, "<g class=\"capacity\" data-gb=\"%s\">\n", fx(p->cap / 1e9, 2));
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                 "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
              X1(p->x0), X1(my(p, p->cap / 1e9)), X1(p->x1), X1(my(p, p->cap / 1e9)));
    char lab[64];
    snprintf(lab, sizeof lab, "capacity %s GB", fx(p->cap / 1e9, 2));
    text_at(b, p->x1, my(p, p->cap / 1e9) - 5, "end", " font-size=\"11\"" HALO, lab);
    sb_printf(b, "</g>\n");
    /* legend: top of the stack first */
    sb_printf(b, "<g class=\"legend\" font-size=\"11\">\n");
    for (int k = 5; k >= 0; k--)
        legend_item(b, 620, 90 + (5 - k) * 20, MEM_COLOURS[k], NULL, MEM_LEGEND[k], 0);
    legend_item(b, 620, 90 + 6 * 20, OI_BLACK, " stroke-dasharray=\"6 3\"", "capacity", 1);
    text_at(b, 620, 90 + 8 * 20, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "reserve: CUDA context, comm");
    text_at(b, 620, 90 + 8 * 20 + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "buffers, fragmentation");
    text_at(b, 620, 90 + 10 * 20, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "bold stage: least headroom");
    sb_printf(b, "</g>\n");
}

char *api_svg_memory(json_t *result, int rank)
{
    json_t *cfg = pick_config(result, rank);
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
    double step = nice_step((p.maxtot > p.cap ? p.maxtot : p.cap) / 1e9 * 1.06, 6);
    p.ymax = ceil((p.maxtot > p.cap ? p.maxtot : p.cap) / 1e9 * 1.06 / step) * step;
    mem_axes(&b, &p, step);
    mem_bars(&b, &p);
    mem_capacity_legend(&b, &p);
    svg_end(&b);
    free(title.p); free(desc.p); free(sub.p);
    return sb_take(&b);
}

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
        num(roof, "ridge_point_flops_per_byte", &p->ridge) || p->ridge <= 0 || num(hwj, "hbm_bw_bytes_s", &p->bw) ||
        p->bw <= 0)
        return -1;
    p->mfu = num_or(roof, "mfu", 0);
    p->peak = p->ridge * p->bw;
    /* the training dtype: the peak(s) the ridge point was computed from */
    static const char *const DT[] = {"bf16", "fp16", "fp8", "fp32"};
    json_t *pf = json_object_get(hwj, "peak_flops");
    for (int d = 0; d < 4; d++) {
        double pk;
        if (!num(pf, DT[d], &pk) && fabs(pk - p->peak) <= 1e-9 * p->peak) {
            if (p->dtype[0]) strcat(p->dtype, "/");
            strcat(p->dtype, DT[d]);
        }
    }
    p->vpeak = num_or(pf, "fp32", 0);
    p->n = json_array_size(p->ops);
    p->pt = api_calloc(p->n, sizeof *p->pt);
    if (!p->pt) return -1;
    int any_vector = 0;
    double minx = p->ridge, maxx = p->ridge, miny = p->peak;
    for (size_t i = 0; i < p->n; i++) {
        json_t *o = json_array_get(p->ops, i);
        double fl, by, t, cnt = num_or(o, "count", 1);
        const char *name = str_or(o, "name", NULL), *ph = str_or(o, "phase", NULL);
        if (!name || !ph || num(o, "flops", &fl) || num(o, "bytes", &by) || num(o, "time_s", &t)) {
            free(p->pt);
            p->pt = NULL;
            return -1;
        }
        if (!(fl > 0 && by > 0 && t > 0 && cnt > 0)) { p->skipped++; continue; }
        rop *r = &p->pt[p->np++];
        r->name = name;
        r->bwd = strcmp(ph, "fwd") != 0;
        r->vector = strcmp(str_or(o, "unit", "matrix"), "vector") == 0;
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
    const char *model = str_or(json_object_get(result, "model"), "name", "model");
    const char *hw = str_or(json_object_get(result, "hardware"), "name", "hardware");
    sb_printf(title, "Roofline: %s on one %s", model, hw);
    sb_printf(sub, "%s%s%scompute roof %s TFLOP/s, HBM %s TB/s, ridge %s FLOP/byte; roofline MFU %s%%",
              p->dtype[0] ? "training dtype " : "", p->dtype, p->dtype[0] ? "; " : "", fx(p->peak / 1e12, 2),
              fx(p->bw / 1e12, 2), fx(p->ridge, 2), fx(p->mfu * 100, 2));
    sb_printf(desc,
              "Log-log roofline chart: arithmetic intensity in FLOP per byte of HBM traffic (x) "
              "against achieved FLOP/s per device (y) for each forward (circle) and backward "
              "(triangle) operator of one training step on one device. Compute roof %s TFLOP/s%s%s%s, "
              "HBM roof %s TB/s, ridge point at %s FLOP/byte.",
              fx(p->peak / 1e12, 2), p->dtype[0] ? " (" : "", p->dtype, p->dtype[0] ? ")" : "", fx(p->bw / 1e12, 2),
              fx(p->ridge, 2));
    if (p->vroof)
        sb_printf(desc, " Elementwise operators run on the vector units, roof %s TFLOP/s (dashed).",
                  fx(p->vpeak / 1e12, 2));
    /* memory-bound as the result says (each operator's `bound`) */
    size_t nmem = 0;
    for (size_t i = 0; i < p->n; i++) {
        json_t *o = json_array_get(p->ops, i);
        nmem += num_or(o, "flops", 0) > 0 && num_or(o, "bytes", 0) > 0 && num_or(o, "time_s", 0) > 0 &&
                num_or(o, "count", 1) > 0 && !strcmp(str_or(o, "bound", ""), "memory");
    }
    sb_printf(desc, " %zu operators plotted, %zu of them memory-bound; roofline MFU %s%%.", p->np, nmem,
              fx(p->mfu * 100, 2));
    /* the three that take the most time */
    {
        size_t top3[3] = {(size_t)-1, (size_t)-1, (size_t)-1};
        double tt[3] = {-1, -1, -1};
        for (size_t i = 0; i < p->n; i++) {
            json_t *o = json_array_get(p->ops, i);
            double t = num_or(o, "time_s", 0);
            for (int k = 0; k < 3; k++)
                if (t > tt[k]) {
                    for (int j = 2; j > k; j--) { tt[j] = tt[j - 1]; top3[j] = top3[j - 1]; }
                    tt[k] = t;
                    top3[k] = i;
                    break;
                }
        }
        sb_printf(desc, " Most time:");
        for (int k = 0; k < 3 && top3[k] != (size_t)-1; k++) {
            json_t *o = json_array_get(p->ops, top3[k]);
            sb_printf(desc, "%s %s (%s) %s s", k ? "," : "", str_or(o, "name", "?"),
                      str_or(o, "phase", "?"), fx(tt[k], 3));
        }
        sb_printf(desc, ".");
    }
    if (p->skipped) {
        sb_printf(desc, " Not plotted (no FLOPs, bytes or time):");
        int k = 0;
        for (size_t i = 0; i < p->n; i++) {
            json_t *o = json_array_get(p->ops, i);
            if (num_or(o, "flops", 0) > 0 && num_or(o, "bytes", 0) > 0 && num_or(o, "time_s", 0) > 0 &&
                num_or(o, "count", 1) > 0)
                continue;
            sb_printf(desc, "%s %s (%s)", k++ ? "," : "", str_or(o, "name", "?"), str_or(o, "phase", "?"));
        }
        sb_printf(desc, ".");
    }
}

/* The decade grid, the frame and the axis titles. */
static void roof_axes(sbuf *b, const rplot *p)
{
    char lab[64];
    sb_printf(b, "<g class=\"axis\" font-size=\"11\">\n");
    for (int k = p->xlo; k <= p->xhi; k++) {
        double v = pow(10.0, k);
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(rx(p, v)), X1(p->top), X1(rx(p, v)), X1(p->bottom));
        decade_label(lab, sizeof lab, k);
        text_at(b, rx(p, v), p->bottom + 15, "middle", NULL, lab);
    }
    for (int k = p->ylo; k <= p->yhi; k++) {
        double v = pow(10.0, k);
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(p->x0), X1(ry(p, v)), X1(p->x1), X1(ry(p, v)));
        decade_si(lab, sizeof lab, k);
        text_at(b, p->x0 - 6, ry(p, v) + 4, "end", NULL, lab);
    }
    sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"" INK "\"/>\n",
              X1(p->x0), X1(p->top), X1(p->x1 - p->x0), X1(p->bottom - p->top));
    text_at(b, (p->x0 + p->x1) / 2, p->bottom + 34, "middle", " font-size=\"12\"",
            "Arithmetic intensity (FLOP/byte of HBM traffic, log scale)");
    sb_printf(b, "<text x=\"18\" y=\"%s\" text-anchor=\"middle\" font-size=\"12\" "
                  "transform=\"rotate(-90 18 %s)\">Achieved FLOP/s per device (log scale)</text>\n",
              X1((p->top + p->bottom) / 2), X1((p->top + p->bottom) / 2));
    sb_printf(b, "</g>\n");

}

/* The HBM, compute and vector-units roofs with their labels. */
static void roof_roofs(sbuf *b, const rplot *p)
{
    char lab[64];
    /* the roofs: HBM up to the p->ridge, compute beyond it */
    double xa = pow(10.0, p->xlo), ya = xa * p->bw;
    if (ya < pow(10.0, p->ylo)) { ya = pow(10.0, p->ylo); xa = ya / p->bw; }
    double xe = pow(10.0, p->xhi);
    sb_printf(b, "<g class=\"roofs\">\n");
    sb_printf(b, "<line class=\"roof hbm-roof\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"2\"><title>HBM roof: %s TB/s x intensity</title></line>\n",
              X1(rx(p, xa)), X1(ry(p, ya)), X1(rx(p, p->ridge)), X1(ry(p, p->peak)), fx(p->bw / 1e12, 2));
    sb_printf(b, "<line class=\"roof compute-roof\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"2\"><title>compute roof: %s TFLOP/s</title></line>\n",
              X1(rx(p, p->ridge)), X1(ry(p, p->peak)), X1(rx(p, xe)), X1(ry(p, p->peak)), fx(p->peak / 1e12, 2));
    snprintf(lab, sizeof lab, "compute roof %s TFLOP/s", fx(p->peak / 1e12, 2));
    text_at(b, p->x1 - 4, ry(p, p->peak) - 10, "end", " font-size=\"11\"" HALO, lab);
    {
        /* the HBM label along the slope, above the memory-bound points */
        double lx = pow(10.0, log10(xa) + (log10(p->ridge) - log10(xa)) * 0.62);
        double px = rx(p, lx), py = ry(p, lx * p->bw);
        double ang = atan2(ry(p, p->ridge * p->bw) - ry(p, xa * p->bw), rx(p, p->ridge) - rx(p, xa)) * 180.0 / M_PI;
        snprintf(lab, sizeof lab, "HBM roof %s TB/s", fx(p->bw / 1e12, 2));
        sb_printf(b, "<text x=\"%s\" y=\"%s\" font-size=\"11\"" HALO " transform=\"rotate(%s %s %s)\">", X1(px),
                  X1(py - 6), fx(ang, 1), X1(px), X1(py - 6));
        sb_esc(b, lab);
        sb_printf(b, "</text>\n");
    }
    if (p->vroof) {
        sb_printf(b, "<line class=\"roof vector-roof\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_DARK
                      "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"><title>vector units roof: %s TFLOP/s"
                      "</title></line>\n",
                  X1(rx(p, p->vpeak / p->bw)), X1(ry(p, p->vpeak)), X1(rx(p, xe)), X1(ry(p, p->vpeak)), fx(p->vpeak / 1e12, 2));
        snprintf(lab, sizeof lab, "vector units %s TFLOP/s", fx(p->vpeak / 1e12, 2));
        text_at(b, p->x1 - 4, ry(p, p->vpeak) - 5, "end", " font-size=\"11\" fill=\"" GREY_DARK "\"" HALO, lab);
    }
    sb_printf(b, "</g>\n");
}

/* The operators and the ridge point. */
static void roof_ops(sbuf *b, const rplot *p)
{
    char lab[64];
    /* the operators */
    sb_printf(b, "<g class=\"ops\" stroke=\"" INK "\" stroke-width=\"0.6\" fill-opacity=\"0.85\">\n");
    for (size_t i = 0; i < p->np; i++) {
        const rop *r = &p->pt[i];
        double cx = rx(p, r->x), cy = ry(p, r->y);
        const char *col = r->vector ? OI_ORANGE : OI_BLUE;
        if (r->bwd)
            sb_printf(b, "<path class=\"op bwd\" d=\"M%s %sL%s %sL%s %sZ\" fill=\"%s\"><title>", X1(cx),
                      X1(cy - 5.5), X1(cx + 5), X1(cy + 3.5), X1(cx - 5), X1(cy + 3.5), col);
        else
            sb_printf(b, "<circle class=\"op fwd\" cx=\"%s\" cy=\"%s\" r=\"4.5\" fill=\"%s\"><title>", X1(cx),
                      X1(cy), col);
        sb_esc(b, r->name);
        sb_printf(b, " (%s, %s units): %s FLOP/byte, %s TFLOP/s, %s s per step</title></%s>\n",
                  r->bwd ? "bwd" : "fwd", r->vector ? "vector" : "matrix", fx(r->x, 2), fx(r->y / 1e12, 2),
                  fx(r->t, 3), r->bwd ? "path" : "circle");
    }
    sb_printf(b, "</g>\n");
    /* the p->ridge point */
    sb_printf(b, "<g class=\"ridge\" data-flops-per-byte=\"%s\">\n", fx(p->ridge, 2));
    sb_printf(b, "<path d=\"M%s %sL%s %sL%s %sL%s %sZ\" fill=\"" OI_VERMILLION "\" stroke=\"" INK
                  "\"><title>ridge point: %s FLOP/byte</title></path>\n",
              X1(rx(p, p->ridge)), X1(ry(p, p->peak) - 7), X1(rx(p, p->ridge) + 7), X1(ry(p, p->peak)), X1(rx(p, p->ridge)), X1(ry(p, p->peak) + 7),
              X1(rx(p, p->ridge) - 7), X1(ry(p, p->peak)), fx(p->ridge, 2));
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_VERMILLION
                  "\" stroke-dasharray=\"2 3\"/>\n",
              X1(rx(p, p->ridge)), X1(ry(p, p->peak) + 7), X1(rx(p, p->ridge)), X1(p->bottom));
    snprintf(lab, sizeof lab, "ridge %s FLOP/byte", fx(p->ridge, 2));
    text_at(b, rx(p, p->ridge) + 6, p->bottom - 6, NULL, " font-size=\"11\" fill=\"" OI_VERMILLION "\"" HALO, lab);
    sb_printf(b, "</g>\n");
}

/* The legend. */
static void roof_legend(sbuf *b, const rplot *p)
{
    char lab[64];
    /* legend */
    sb_printf(b, "<g class=\"legend\" font-size=\"11\">\n");
    double ly = 90;
    sb_printf(b, "<circle cx=\"627\" cy=\"%s\" r=\"4.5\" fill=\"#FFFFFF\" stroke=\"" INK "\"/>\n", X1(ly - 4));
    text_at(b, 639, ly, NULL, NULL, "forward operator");
    ly += 20;
    sb_printf(b, "<path d=\"M627 %sL632 %sL622 %sZ\" fill=\"#FFFFFF\" stroke=\"" INK "\"/>\n", X1(ly - 9.5),
              X1(ly - 0.5), X1(ly - 0.5));
    text_at(b, 639, ly, NULL, NULL, "backward operator");
    ly += 20;
    legend_item(b, 620, ly, OI_BLUE, NULL, "matrix units", 0);
    text_at(b, 639, ly + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "(GEMM, attention)");
    ly += 33;
    legend_item(b, 620, ly, OI_ORANGE, NULL, "vector units", 0);
    text_at(b, 639, ly + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "(norms, activations)");
    ly += 33;
    legend_item(b, 620, ly, OI_BLACK, NULL, "compute and HBM roofs", 1);
    ly += 20;
    if (p->vroof) {
        legend_item(b, 620, ly, GREY_DARK, " stroke-dasharray=\"6 3\"", "vector units roof", 1);
        ly += 20;
    }
    sb_printf(b, "<path d=\"M627 %sL633 %sL627 %sL621 %sZ\" fill=\"" OI_VERMILLION "\" stroke=\"" INK "\"/>\n",
              X1(ly - 10), X1(ly - 4), X1(ly + 2), X1(ly - 4));
    text_at(b, 639, ly, NULL, NULL, "ridge point");
    ly += 24;
    text_at(b, 620, ly, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "FLOP/s prefixes: G = 10^9,");
    text_at(b, 620, ly + 13, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "T = 10^12, P = 10^15");
    ly += 26;
    if (p->skipped) {
        snprintf(lab, sizeof lab, "%zu operator%s without FLOPs", p->skipped, p->skipped == 1 ? "" : "s");
        text_at(b, 620, ly + 6, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", lab);
        text_at(b, 620, ly + 19, NULL, " font-size=\"10\" fill=\"" GREY_DARK "\"", "not plotted (see desc)");
    }
    sb_printf(b, "</g>\n");
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
        out = sb_take(&b);
    }
    free(p.pt);
    free(title.p); free(desc.p); free(sub.p);
    return out;
}

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
    config_heading(title, sub, "One training step", result, cfg, rank);
    sb_printf(desc,
              "Timeline of one training step as expected (calibrated efficiency profile): %s s. One "
              "lane per pipeline stage (%d). Simplified: every stage is drawn with the busiest stage's "
              "figures, each kind of work as one block summed over the step's micro-batches, forward "
              "and backward split 1:2 as their FLOPs are; the pipeline bubble (%s s) is shifted as in "
              "1F1B: stage r idles r slots of %s s before its work and pp-1-r after it. Per stage:",
              fx(step, 3), p, fx(bubble, 3), fx(slot, 3));
    int listed = 0;
    for (int k = TL_FWD; k <= TL_DP; k++)
        if (d[k] > 0) sb_printf(desc, "%s %s %s s", listed++ ? "," : "", TL_WORDS[k], fx(d[k], 3));
    if (d[TL_OPT] > 0) sb_printf(desc, "%s optimizer %s s", listed++ ? "," : "", fx(d[TL_OPT], 3));
    if (d[TL_OVH] > 0) sb_printf(desc, "%s overhead %s s", listed++ ? "," : "", fx(d[TL_OVH], 3));
    sb_printf(desc, ". Configuration: ");
    layout_words(desc, cfg);
    sb_printf(desc, ".");
}

/* The time axis: ticks, grid lines, its label. */
static void tl_axis(sbuf *b, const struct tl_geo *g)
{
    double tstep = nice_step(g->span, 8);
    int dec = step_decimals(tstep);
    sb_printf(b, "<g class=\"axis x-axis\" font-size=\"11\">\n");
    for (int t = 0; t * tstep <= g->span * (1 + 1e-9); t++) {
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(tl_x(g, t * tstep)), X1(g->top - 4), X1(tl_x(g, t * tstep)), X1(g->axis_y));
        text_at(b, tl_x(g, t * tstep), g->axis_y + 15, "middle", NULL, fx(t * tstep, dec));
    }
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(g->x0),
              X1(g->axis_y), X1(g->x1), X1(g->axis_y));
    text_at(b, (g->x0 + g->x1) / 2, g->axis_y + 33, "middle", " font-size=\"12\"",
            "Time within one step (s); lanes: pipeline stages");
    sb_printf(b, "</g>\n");
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
        sb_printf(b, "<g class=\"lane\" data-stage=\"%d\">\n", r);
        if (g->lane_h >= 11 || r % (int)ceil(11.0 / g->lane_h) == 0) {
            snprintf(lab, sizeof lab, "stage %d", r);
            text_at(b, g->x0 - 8, y + bh / 2 + 4, "end", g->lane_h < 14 ? " font-size=\"9\"" : NULL, lab);
        }
        double t = 0;
        for (int k = 0; k < TL_COUNT; k++) {
            if (dd[k] <= 0) continue;
            double xa = tl_x(g, t), xb = tl_x(g, t + dd[k]);
            sb_printf(b, "<rect class=\"blk %s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"%s>"
                          "<title>stage %d %s: %s s (from %s s)</title></rect>\n",
                      TL_CLASS[k], X1(xa), X1(y), X1(xb - xa), X1(bh), TL_FILL[k],
                      k == TL_WARM || k == TL_COOL ? " stroke=\"" GREY_MID "\" stroke-dasharray=\"3 2\"" : "",
                      r, TL_WORDS[k], fx(dd[k], 3), fx(t, 3));
            if (xb - xa >= 90 && bh >= 12) {
                snprintf(lab, sizeof lab, "%s %s", TL_SHORT[k], fx(dd[k], 3));
                char extra[64];
                snprintf(extra, sizeof extra, " font-size=\"10\" fill=\"%s\"", TL_INK[k]);
                text_at(b, (xa + xb) / 2, y + bh / 2 + 3.5, "middle", extra, lab);
            }
            t += dd[k];
        }
        sb_printf(b, "</g>\n");
    }
    /* the step's end */
    sb_printf(b, "<line class=\"step-end\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" OI_BLACK
                  "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
              X1(tl_x(g, g->step)), X1(g->top - 8), X1(tl_x(g, g->step)), X1(g->axis_y));
    snprintf(lab, sizeof lab, "step %s s", fx(g->step, 3));
    text_at(b, tl_x(g, g->step), g->top - 11, "end", " font-size=\"11\"" HALO, lab);
}

/* The legend: what each colour is, with the per-stage seconds. */
static void tl_legend(sbuf *b, const struct tl_geo *g)
{
    char lab[96];
    sb_printf(b, "<g class=\"legend\" font-size=\"11\">\n");
    int li = 0;
    for (int k = 0; k < TL_COUNT; k++) {
        double v = k == TL_WARM ? g->bubble : g->d[k];
        if (k == TL_COOL || v <= 0) continue;
        snprintf(lab, sizeof lab, "%s %s s", k == TL_WARM ? "bubble" : TL_WORDS[k], fx(v, 3));
        legend_item(b, 16 + (li % 4) * 194, g->axis_y + 60 + (li / 4) * 18, TL_FILL[k],
                    k == TL_WARM ? " stroke-dasharray=\"3 2\"" : NULL, lab, 0);
        li++;
    }
    sb_printf(b, "</g>\n");
}

char *api_svg_timeline(json_t *result, int rank)
{
    json_t *cfg = pick_config(result, rank);
    if (!cfg) return NULL;
    json_t *te = json_object_get(cfg, "time_expected");
    json_t *comm = json_object_get(te, "comm");
    double compute, recompute, bubble, opt, ovh, step, pp;
    if (!json_is_object(comm) || num(te, "compute_s", &compute) || num(te, "recompute_s", &recompute) ||
        num(te, "bubble_s", &bubble) || num(te, "optimizer_s", &opt) || num(te, "overhead_s", &ovh) ||
        num(te, "step_time_s", &step) || num(json_object_get(cfg, "parallel"), "pp", &pp) || pp < 1 ||
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
        d[TL_TP + a] = ax ? num_or(ax, "exposed_s", 0) : 0;
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
    sb_printf(&b, "<defs><pattern id=\"mfu-timeline-hatch\" width=\"6\" height=\"6\" "
                  "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" "
                  "height=\"6\" fill=\"" OI_BLUE "\"/><rect width=\"2.5\" height=\"6\" fill=\"" OI_SKY
                  "\"/></pattern></defs>\n");
    struct tl_geo g = {x0, x1, top, span, lane_h, axis_y, slot, bubble, step, p, d};
    tl_axis(&b, &g);
    tl_lanes(&b, &g);
    tl_legend(&b, &g);
    svg_end(&b);
    free(title.p); free(desc.p); free(sub.p);
    return sb_take(&b);
fail:
    free(title.p); free(desc.p); free(sub.p); free(b.p);
    return NULL;
}

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
    if (json_object_get(vary, "hardware")) { sb_printf(b, "%s", str_or(v, "hardware", "?")); any = 1; }
    if (json_object_get(vary, "devices")) {
        sb_printf(b, "%s%s devices", any ? ", " : "", fx(num_or(v, "devices", 0), 0));
        any = 1;
    }
    if (json_object_get(vary, "seq_len")) {
        binary_count(t, sizeof t, num_or(v, "seq_len", 0));
        sb_printf(b, "%sseq %s", any ? ", " : "", t);
        any = 1;
    }
    if (json_object_get(vary, "global_batch_tokens")) {
        binary_count(t, sizeof t, num_or(v, "global_batch_tokens", 0));
        sb_printf(b, "%sbatch %s", any ? ", " : "", t);
        any = 1;
    }
    if (json_object_get(vary, "fp8")) {
        sb_printf(b, "%s%s", any ? ", " : "", str_or(v, "dtype", "?"));
        any = 1;
    }
    if (!any) sb_printf(b, "variant %zu", i + 1);
}

static void variant_label_esc(sbuf *b, json_t *v, size_t i)
{
    sbuf l = {0};
    variant_label(&l, v, i);
    if (l.oom) b->oom = 1;
    sb_esc(b, l.p);
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
        double x = which == 0 ? num_or(v, "tokens_per_s", 0)
                              : num_or(json_object_get(v, "time_to_train"), "cost", 0);
        if (x > max) max = x;
    }
    /* room right of the longest bar for its label */
    double step = nice_step(max / scale * 1.35, 4);
    double amax = ceil(max / scale * 1.35 / step) * step;
    if (!(amax > 0)) amax = 1;
    int dec = step_decimals(step);
    double axis_y = top + n * rh + 4;
#define CX(v) (px0 + (px1 - px0) * (v) / amax)
    sb_printf(b, "<g class=\"panel %s\">\n", which == 0 ? "tokens-per-s" : "cost");
    sb_printf(b, "<g class=\"axis\" font-size=\"11\">\n");
    for (int t = 0; t * step <= amax * (1 + 1e-9); t++) {
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" GREY_LIGHT "\"/>\n",
                  X1(CX(t * step)), X1(top - 4), X1(CX(t * step)), X1(axis_y));
        text_at(b, CX(t * step), axis_y + 15, "middle", NULL, fx(t * step, dec));
    }
    sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"" INK "\"/>\n", X1(px0),
              X1(axis_y), X1(px1), X1(axis_y));
    text_at(b, (px0 + px1) / 2, axis_y + 33, "middle", " font-size=\"12\"", axis_words);
    sb_printf(b, "</g>\n");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i);
        json_t *ttt = json_object_get(v, "time_to_train");
        double y = top + i * rh, x;
        int have = which == 0 ? !num(v, "tokens_per_s", &x) && json_is_true(json_object_get(v, "fits"))
                              : !num(ttt, "cost", &x);
        sb_printf(b, "<g class=\"variant\" data-variant=\"%zu\">\n", i + 1);
        if (!have) {
            text_at(b, px0 + 4, y + rh / 2 + 4, NULL, " font-size=\"11\" fill=\"" GREY_DARK "\"",
                    json_is_true(json_object_get(v, "fits")) ? "no price" : "does not fit");
        } else {
            int is_best = best == (int)i + 1;
            sb_printf(b, "<rect class=\"bar\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"%s>"
                         "<title>",
                      X1(px0), X1(y + rh * 0.15), X1(CX(x / scale) - px0), X1(rh * 0.7),
                      which == 0 ? OI_BLUE : OI_ORANGE,
                      is_best ? " stroke=\"" OI_BLACK "\" stroke-width=\"2\"" : "");
            variant_label_esc(b, v, i);
            if (which == 0)
                sb_printf(b, ": %s tokens/s, %s per device, MFU %s%%</title></rect>\n", fx(x, 0),
                          fx(num_or(v, "tokens_per_s_per_device", 0), 1), fx(num_or(v, "mfu", 0) * 100, 2));
            else {
                sb_printf(b, ": %s ", fx(x, 2));
                sb_esc(b, str_or(ttt, "currency", ""));
                sb_printf(b, ", %s days</title></rect>\n", fx(num_or(ttt, "wall_clock_days", 0), 1));
            }
            char lab[96];
            if (which == 0)
                snprintf(lab, sizeof lab, "%s", fx(x / scale, 2));
            else
                snprintf(lab, sizeof lab, "%s, %s d", fx(x / scale, 2), fx(num_or(ttt, "wall_clock_days", 0), 0));
            text_at(b, CX(x / scale) + 4, y + rh / 2 + 4, NULL,
                    is_best ? " font-size=\"11\" font-weight=\"bold\"" : " font-size=\"11\"", lab);
        }
        sb_printf(b, "</g>\n");
    }
    sb_printf(b, "</g>\n");
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
            !json_is_string(json_object_get(v, "hardware")) || num(v, "devices", &x))
            return -1;
        if (json_is_true(json_object_get(v, "fits"))) {
            if (num(v, "tokens_per_s", &x) || x < 0) return -1;
            if (x > max_tps) max_tps = x;
        }
        ttt = json_object_get(v, "time_to_train");
        if (!num(ttt, "cost", &x) && x >= 0) {
            if (!priced) currency = str_or(ttt, "currency", "");
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
    sb_printf(desc, "Bar chart of the expected training throughput (tokens/s, all devices) of the "
                     "best configuration of each variant");
    if (priced) sb_printf(desc, ", and beside it the cost to train in %s", currency);
    sb_printf(desc, ".");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i);
        sb_printf(desc, " ");
        variant_label(desc, v, i);
        if (!json_is_true(json_object_get(v, "fits"))) {
            sb_printf(desc, ": does not fit.");
            continue;
        }
        sb_printf(desc, ": %s tokens/s, MFU %s%%", fx(num_or(v, "tokens_per_s", 0), 0),
                  fx(num_or(v, "mfu", 0) * 100, 2));
        json_t *ttt = json_object_get(v, "time_to_train");
        double c;
        if (!num(ttt, "cost", &c)) {
            sb_printf(desc, ", %s %s over %s days", fx(c, 0), str_or(ttt, "currency", ""),
                      fx(num_or(ttt, "wall_clock_days", 0), 1));
        }
        sb_printf(desc, ".");
    }
    if (fastest >= 1 && (size_t)fastest <= n) sb_printf(desc, " Fastest: variant %d.", fastest);
    if (priced && cheapest >= 1 && (size_t)cheapest <= n) sb_printf(desc, " Cheapest: variant %d.", cheapest);
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
    int fastest = (int)num_or(result, "fastest", 0), cheapest = (int)num_or(result, "cheapest", 0);
    const char *tw, *cw;
    double ts = si_scale(max_tps, &tw), cs = si_scale(max_cost, &cw);

    sbuf title = {0}, desc = {0}, b = {0}, ax1 = {0}, ax2 = {0};
    sb_printf(&title, "What-if comparison: %zu variant%s", n, n == 1 ? "" : "s");
    compare_desc(&desc, vars, n, priced, currency, fastest, cheapest);
    sb_printf(&ax1, "Throughput (%s%stokens/s)", tw, tw[0] ? " " : "");
    sb_printf(&ax2, "Cost to train (%s%s%s); labels: cost, days", cw, cw[0] && currency[0] ? " " : "", currency);
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
    sb_printf(&b, "<g class=\"labels\" font-size=\"11\">\n");
    for (size_t i = 0; i < n; i++) {
        int f = fastest == (int)i + 1, c = priced && cheapest == (int)i + 1;
        sb_printf(&b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\"%s>", X1(lx - 8),
                  X1(top + i * rh + rh / 2 + 4), f || c ? " font-weight=\"bold\"" : "");
        variant_label_esc(&b, json_array_get(vars, i), i);
        sb_printf(&b, "%s</text>\n", f && c ? " (fastest, cheapest)" : f ? " (fastest)" : c ? " (cheapest)" : "");
    }
    sb_printf(&b, "</g>\n");
    if (priced) {
        compare_panel(&b, vars, 0, lx, 470, top, rh, ts, ax1.p, fastest);
        compare_panel(&b, vars, 1, 520, 770, top, rh, cs, ax2.p, cheapest);
    } else {
        compare_panel(&b, vars, 0, lx, 700, top, rh, ts, ax1.p, fastest);
    }
    sb_printf(&b, "<g class=\"legend\" font-size=\"11\">\n");
    double ly = top + n * rh + 4 + 62;
    legend_item(&b, 16, ly, OI_BLUE, NULL, "tokens/s", 0);
    if (priced) legend_item(&b, 100, ly, OI_ORANGE, NULL, "cost to train", 0);
    text_at(&b, priced ? 210 : 100, ly, NULL, " fill=\"" GREY_DARK "\"",
            priced ? "black outline: fastest and cheapest" : "black outline: fastest");
    sb_printf(&b, "</g>\n");
    svg_end(&b);
    free(title.p); free(desc.p); free(ax1.p); free(ax2.p);
    return sb_take(&b);
fail:
    free(title.p); free(desc.p); free(ax1.p); free(ax2.p); free(b.p);
    return NULL;
}
