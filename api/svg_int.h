/* api/svg_int.h -- what the chart renderers share (api/svg.c): the
 * palette, the growing string, fixed-precision numbers, reading the
 * result, and the frame every chart has. Included by api/svg*.c only. */
#ifndef MFU_API_SVG_INT_H
#define MFU_API_SVG_INT_H

#include <stddef.h>

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

/* a coordinate, one decimal */
#define X1(v) svg_fx((v), 1)

/* ---- what api/svg.c gives the charts (each commented where defined) ---- */

void svg_sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void svg_sb_esc(sbuf *b, const char *s);
char *svg_sb_take(sbuf *b);
const char *svg_fx(double v, int prec);
int svg_num(json_t *o, const char *k, double *out);
double svg_num_or(json_t *o, const char *k, double def);
const char *svg_str_or(json_t *o, const char *k, const char *def);
json_t *svg_pick_config(json_t *result, int rank);
void svg_layout_words(sbuf *b, json_t *cfg);
void svg_begin(sbuf *b, const char *kind, int h, const char *title, const char *desc,
                      const char *subtitle);
void svg_end(sbuf *b);
void svg_text_at(sbuf *b, double x, double y, const char *anchor, const char *extra, const char *s);
void svg_legend_item(sbuf *b, double x, double y, const char *fill, const char *extra,
                        const char *words, int line);
double svg_nice_step(double max, int target);
int svg_step_decimals(double step);
void svg_config_heading(sbuf *title, sbuf *sub, const char *what, json_t *result, json_t *cfg, int rank);

#endif
