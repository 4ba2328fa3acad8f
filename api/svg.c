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
 *
 * This file holds what the charts share (api/svg_int.h); each chart is its
 * own file: api/svg_gap.c (the gap waterfall and memory per stage),
 * api/svg_roofline.c, api/svg_timeline.c, api/svg_compare.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_int.h"


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

void svg_sb_printf(sbuf *b, const char *fmt, ...)
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
void svg_sb_esc(sbuf *b, const char *s)
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
    if (cps <= max) { svg_sb_esc(b, s); return; }
    char *t = api_malloc(cut + 4);
    if (!t) { b->oom = 1; return; }
    memcpy(t, s, cut);
    memcpy(t + cut, "...", 4);
    svg_sb_esc(b, t);
    free(t);
}

char *svg_sb_take(sbuf *b)
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

const char *svg_fx(double v, int prec)
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

/* ---- reading the result ----------------------------------------------------- */

int svg_num(json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) return -1;
    double x = json_number_value(v);
    if (!isfinite(x)) return -1;
    *out = x;
    return 0;
}

double svg_num_or(json_t *o, const char *k, double def)
{
    double x;
    return svg_num(o, k, &x) ? def : x;
}

const char *svg_str_or(json_t *o, const char *k, const char *def)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : def;
}

/* The configuration `rank` (1-based) of a search result; rank 0 is the
 * measured configuration when the request gave a measured run. */
json_t *svg_pick_config(json_t *result, int rank)
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
void svg_layout_words(sbuf *b, json_t *cfg)
{
    json_t *par = json_object_get(cfg, "parallel");
    int any = 0;
    for (int a = 0; a < 6; a++) {
        double v = svg_num_or(par, AXES[a], 1);
        if (v > 1 || (a == 5 && !any)) {
            svg_sb_printf(b, "%s%s %s", any ? " x " : "", AXES[a], svg_fx(v, 0));
            any = 1;
        }
    }
    if (json_is_true(json_object_get(par, "sp"))) svg_sb_printf(b, ", sp");
    if (svg_num_or(par, "pp", 1) > 1) {
        svg_sb_printf(b, ", %s", svg_str_or(cfg, "schedule", "?"));
        if (svg_num_or(cfg, "vpp", 1) > 1) svg_sb_printf(b, " vpp %s", svg_fx(svg_num_or(cfg, "vpp", 1), 0));
    }
    svg_sb_printf(b, ", mbs %s, %s micro-batches, recompute %s", svg_fx(svg_num_or(cfg, "mbs", 1), 0),
              svg_fx(svg_num_or(cfg, "grad_accum", 1), 0), svg_str_or(cfg, "recompute", "?"));
}

/* ---- the frame every chart shares ------------------------------------------- */

/* The document, its title and desc (escaped here), a white background and
 * the heading drawn at the top. `kind` names the chart in ids and classes. */
void svg_begin(sbuf *b, const char *kind, int h, const char *title, const char *desc,
                      const char *subtitle)
{
    svg_sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    svg_sb_printf(b,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"mfu-chart mfu-%s\" width=\"%d\" "
              "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-labelledby=\"mfu-%s-title "
              "mfu-%s-desc\" font-family=\"sans-serif\" font-size=\"12\" fill=\"" INK "\">\n",
              kind, SVG_W, h, SVG_W, h, kind, kind);
    svg_sb_printf(b, "<title id=\"mfu-%s-title\">", kind);
    svg_sb_esc(b, title);
    svg_sb_printf(b, "</title>\n<desc id=\"mfu-%s-desc\">", kind);
    svg_sb_esc(b, desc);
    svg_sb_printf(b, "</desc>\n");
    svg_sb_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#FFFFFF\"/>\n", SVG_W, h);
    svg_sb_printf(b, "<text class=\"heading\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">");
    sb_esc_short(b, title, 92);
    svg_sb_printf(b, "</text>\n");
    if (subtitle && *subtitle) {
        svg_sb_printf(b, "<text class=\"subtitle\" x=\"16\" y=\"43\" fill=\"" GREY_DARK "\">");
        sb_esc_short(b, subtitle, 118);
        svg_sb_printf(b, "</text>\n");
    }
}

void svg_end(sbuf *b) { svg_sb_printf(b, "</svg>\n"); }

void svg_text_at(sbuf *b, double x, double y, const char *anchor, const char *extra, const char *s)
{
    svg_sb_printf(b, "<text x=\"%s\" y=\"%s\"%s%s%s%s>", X1(x), X1(y), anchor ? " text-anchor=\"" : "",
              anchor ? anchor : "", anchor ? "\"" : "", extra ? extra : "");
    svg_sb_esc(b, s);
    svg_sb_printf(b, "</text>\n");
}

/* A legend entry: a swatch (or a line when `line`) and its words. */
void svg_legend_item(sbuf *b, double x, double y, const char *fill, const char *extra,
                        const char *words, int line)
{
    if (line)
        svg_sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                  X1(x), X1(y - 4), X1(x + 14), X1(y - 4), fill, extra ? extra : "");
    else
        svg_sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"14\" height=\"10\" fill=\"%s\" stroke=\"" INK
                     "\" stroke-width=\"0.5\"%s/>\n",
                  X1(x), X1(y - 9), fill, extra ? extra : "");
    svg_text_at(b, x + 19, y, NULL, NULL, words);
}

/* A step of 1, 2 or 5 x 10^k giving about `target` intervals over [0, max]. */
double svg_nice_step(double max, int target)
{
    if (!(max > 0)) return 1.0;
    double raw = max / target;
    double mag = pow(10.0, floor(log10(raw)));
    double n = raw / mag;
    return (n <= 1.0 ? 1.0 : n <= 2.0 ? 2.0 : n <= 5.0 ? 5.0 : 10.0) * mag;
}

int svg_step_decimals(double step)
{
    if (step >= 1.0) return 0;
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 6 ? 6 : d;
}

/* A per-configuration chart's title ("WHAT: model on N x hw, configuration
 * k" or "the measured configuration") and subtitle (rank and layout). */
void svg_config_heading(sbuf *title, sbuf *sub, const char *what, json_t *result, json_t *cfg, int rank)
{
    const char *model = svg_str_or(json_object_get(result, "model"), "name", "model");
    const char *hw = svg_str_or(json_object_get(result, "hardware"), "name", "hardware");
    svg_sb_printf(title, "%s: %s on %s x %s, ", what, model, svg_fx(svg_num_or(result, "devices", 0), 0), hw);
    if (rank) svg_sb_printf(title, "configuration %d", rank);
    else svg_sb_printf(title, "the measured configuration");
    if (rank) svg_sb_printf(sub, "rank %d: ", rank);
    else svg_sb_printf(sub, "measured: ");
    svg_layout_words(sub, cfg);
}
