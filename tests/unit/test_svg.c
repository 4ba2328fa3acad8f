/* The charts as SVG (api/svg.c, docs/charts.md; issue 13 item 2).
 *
 * Each renderer runs on a real result computed here (api_search,
 * api_roofline, api_compare) and its output is checked to be well-formed
 * XML (a small checker below: one root <svg>, balanced tags, quoted
 * attributes, only the five predefined entities and character references,
 * no external references), to carry the expected series (one bar per gap
 * component, one group per pipeline stage, one point per operator, one bar
 * per variant), and to print the result's own numbers.
 *
 * Golden files: tests/golden/svg/NAME.svg, one per chart for the fixed
 * requests below, compared byte for byte. After a deliberate change to the
 * charts or to the engine's numbers, regenerate them from the repository
 * root with
 *     MFU_UPDATE_GOLDEN=1 build/tests/test_svg
 * and review the diff (tests/integration/svg.sh parses them with Python's
 * xml.etree as a second, independent check).
 *
 * (Over 600 lines: one program for the five charts, sharing the XML checker
 * and the golden comparison below.)
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "testutil.h"

#define GOLDEN_DIR "tests/golden/svg"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j) fprintf(stderr, "bad test JSON: %s\n", e.text);
    return j;
}

static void report(const char *what, const api_status *st)
{
    fprintf(stderr, "%s failed: %s %s\n", what, st->n_errors ? st->errors[0].pointer : "",
            st->n_errors ? st->errors[0].detail : "");
}

static json_t *run_search(const char *text)
{
    api_status st;
    api_status_init(&st);
    json_t *r = J(text);
    json_t *res = r ? api_search_mt(r, &st, NULL, NULL, 2) : NULL;
    if (!res) report("search", &st);
    json_decref(r);
    return res;
}

/* ---- a small XML well-formedness checker ------------------------------------ */

static int is_name_start(int c) { return isalpha(c) || c == '_' || c == ':'; }
static int is_name_char(int c) { return isalnum(c) || c == '_' || c == ':' || c == '-' || c == '.'; }

/* An entity or character reference at s (s[0] == '&'): its length, or 0. */
static size_t entity_len(const char *s)
{
    static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (!strncmp(s, named[i], strlen(named[i]))) return strlen(named[i]);
    if (s[1] != '#') return 0;
    size_t i = 2;
    int hex = s[2] == 'x';
    if (hex) i++;
    size_t d0 = i;
    while (hex ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i])) i++;
    return i > d0 && s[i] == ';' ? i + 1 : 0;
}

/* The XML name at *at (its first character checked) into out, *at moved
 * past it: 0, or -1 when it does not fit (out holds 64 bytes). */
static int xml_name(const char **at, char out[64])
{
    size_t k = 0;
    while (is_name_char((unsigned char)**at)) {
        if (k + 1 >= 64) return -1;
        out[k++] = *(*at)++;
    }
    out[k] = 0;
    return 0;
}

static int xml_quiet; /* while checking the checker on bad documents */

/* a malformed document: the reason and offset on stderr (unless quiet), -1 */
#define XFAIL(why)                                                                    \
    do {                                                                              \
        if (!xml_quiet) fprintf(stderr, "xml_check: %s at byte %ld\n", why, (long)(s - doc)); \
        return -1;                                                                    \
    } while (0)

/* The attributes of a start tag, *at just past its name: each name="value"
 * (quoted, entities well-formed, no '<'), each name once, no external
 * reference. 0 with *at at the tag's end ('>' or "/>"), or -1. */
static int xml_attrs(const char *doc, const char **at)
{
    const char *s = *at;
    char seen[32][64];
    int n_seen = 0;
    for (;;) {
        int sp = 0;
        while (isspace((unsigned char)*s)) { s++; sp = 1; }
        if (*s == '>' || !strncmp(s, "/>", 2)) break;
        if (!sp || !is_name_start((unsigned char)*s)) XFAIL("bad attribute");
        char an[64];
        if (xml_name(&s, an)) XFAIL("attribute name too long");
        for (int i = 0; i < n_seen; i++)
            if (!strcmp(seen[i], an)) XFAIL("duplicate attribute");
        if (n_seen < 32) strcpy(seen[n_seen++], an);
        if (!strcmp(an, "href") || !strcmp(an, "xlink:href") || !strcmp(an, "src"))
            XFAIL("an external reference");
        if (*s++ != '=') XFAIL("attribute without '='");
        char q = *s++;
        if (q != '"' && q != '\'') XFAIL("unquoted attribute value");
        while (*s && *s != q) {
            if (*s == '<') XFAIL("'<' in an attribute value");
            if (*s == '&') {
                size_t el = entity_len(s);
                if (!el) XFAIL("bad entity in an attribute value");
                s += el;
            } else {
                s++;
            }
        }
        if (!*s) XFAIL("unterminated attribute value");
        s++;
    }
    *at = s;
    return 0;
}

/* 0 when well-formed; else -1 with the reason and offset on stderr. */
static int xml_check(const char *doc)
{
    const char *s = doc;
    char stack[64][64];
    int depth = 0, roots = 0;
    if (!strncmp(s, "<?xml", 5)) {
        const char *e = strstr(s, "?>");
        if (!e) XFAIL("unterminated declaration");
        s = e + 2;
    }
    while (*s) {
        if (*s == '<') {
            if (!strncmp(s, "<!--", 4)) {
                const char *e = strstr(s + 4, "-->");
                if (!e) XFAIL("unterminated comment");
                s = e + 3;
                continue;
            }
            if (!strncmp(s, "<?", 2) || !strncmp(s, "<!", 2)) XFAIL("processing instruction or DTD");
            int closing = s[1] == '/';
            s += closing ? 2 : 1;
            if (!is_name_start((unsigned char)*s)) XFAIL("bad tag name");
            char name[64];
            if (xml_name(&s, name)) XFAIL("tag name too long");
            if (closing) {
                while (isspace((unsigned char)*s)) s++;
                if (*s != '>') XFAIL("bad closing tag");
                s++;
                if (depth == 0 || strcmp(stack[depth - 1], name)) XFAIL("mismatched closing tag");
                depth--;
                continue;
            }
            if (depth == 0 && ++roots > 1) XFAIL("more than one root element");
            if (depth == 0 && strcmp(name, "svg")) XFAIL("the root is not <svg>");
            /* attributes: name="value", each name once */
            if (xml_attrs(doc, &s)) return -1;
            if (!strcmp(name, "script") || !strcmp(name, "foreignObject") || !strcmp(name, "image"))
                XFAIL("script, foreignObject or image element");
            if (*s == '/') {
                s += 2; /* empty element */
                if (depth == 0) XFAIL("empty root");
            } else {
                s++;
                if (depth >= 64) XFAIL("too deep");
                strcpy(stack[depth++], name);
            }
        } else if (*s == '&') {
            size_t el = entity_len(s);
            if (!el) XFAIL("bad entity in text");
            s += el;
        } else {
            unsigned char c = (unsigned char)*s;
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') XFAIL("control character");
            if (depth == 0 && !isspace(c)) XFAIL("text outside the root");
            s++;
        }
    }
    if (depth) XFAIL("unclosed element");
    if (roots != 1) XFAIL("no root element");
#undef XFAIL
    return 0;
}

/* ---- reading the SVG back ----------------------------------------------------- */

static int count(const char *hay, const char *needle)
{
    int n = 0;
    size_t k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle)) n++;
    return n;
}

static int contains(const char *hay, const char *needle)
{
    int ok = hay && strstr(hay, needle) != NULL;
    if (!ok) fprintf(stderr, "  missing: %s\n", needle);
    return ok;
}

/* The value of attribute `attr` in the first element whose text contains
 * `marker` (the element's start tag is the one holding the marker). */
static int attr_after(const char *svg, const char *marker, const char *attr, char *out, size_t n)
{
    const char *p = strstr(svg, marker);
    if (!p) return -1;
    const char *tag = p;
    while (tag > svg && *tag != '<') tag--;
    const char *end = strchr(p, '>');
    char key[64];
    snprintf(key, sizeof key, " %s=\"", attr);
    const char *a = strstr(tag, key);
    if (!a || (end && a > end)) return -1;
    a += strlen(key);
    const char *q = strchr(a, '"');
    if (!q || (size_t)(q - a) >= n) return -1;
    memcpy(out, a, (size_t)(q - a));
    out[q - a] = 0;
    return 0;
}

/* What the renderer prints for v at prec decimals (no "-0.00"). */
static const char *pr(char *buf, size_t n, double v, int prec)
{
    snprintf(buf, n, "%.*f", prec, v);
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1)) memmove(buf, buf + 1, strlen(buf));
    return buf;
}

static double jnum(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    return json_number_value(v);
}

/* ---- golden files ---------------------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static void golden(const char *name, const char *svg)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN_DIR "/%s.svg", name);
    if (!svg) { CHECK(svg != NULL); return; }
    const char *upd = getenv("MFU_UPDATE_GOLDEN");
    if (upd && *upd && strcmp(upd, "0")) {
        FILE *f = fopen(path, "wb");
        if (!f) fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        CHECK(f != NULL);
        if (f) {
            CHECK(fwrite(svg, 1, strlen(svg), f) == strlen(svg));
            CHECK(fclose(f) == 0);
            printf("wrote %s\n", path);
        }
        return;
    }
    char *want = read_file(path);
    if (!want) fprintf(stderr, "%s: missing (MFU_UPDATE_GOLDEN=1 build/tests/test_svg writes it)\n", path);
    int same = want && strcmp(want, svg) == 0;
    if (want && !same) {
        size_t i = 0;
        while (want[i] && want[i] == svg[i]) i++;
        size_t line = 1;
        for (size_t k = 0; k < i; k++) line += want[k] == '\n';
        fprintf(stderr, "%s: differs from the rendering at line %zu (MFU_UPDATE_GOLDEN=1 to accept)\n",
                path, line);
    }
    CHECK(same);
    free(want);
}

/* ---- the fixed requests ------------------------------------------------------------ */

/* Llama-3-70B on 256 H100 with a four-stage 1F1B pipeline: every chart of a
 * search result has several stages to draw. */
#define SEARCH_REQ                                                                                 \
    "{\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "         \
    "\"devices\": 256, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 4194304}, "      \
    "\"search\": {\"top_k\": 3, \"fix\": {\"tp\": 8, \"pp\": 4, \"schedule\": \"1f1b\"}}}"
/* Megatron-LM's published GPT 70B run (Narayanan et al. 2021, as
 * examples/measured.json): the measured configuration is rank 0. */
#define MEASURED_REQ                                                                               \
    "{\"model\": {\"name\": \"GPT 70B\", \"d_model\": 8192, \"vocab\": 131072, "                    \
    "\"tie_embeddings\": false, \"norm\": \"layernorm\", \"position\": \"learned\", "              \
    "\"max_positions\": 4096, \"bias\": true, \"dropout\": true, \"layers\": [{\"count\": 84, "    \
    "\"attention\": {\"type\": \"mha\", \"n_heads\": 64, \"n_kv_heads\": 64, \"head_dim\": 128, "  \
    "\"qkv_bias\": true}, \"mlp\": {\"type\": \"dense\", \"ffn_dim\": 32768, \"gated\": false, "    \
    "\"activation\": \"gelu\"}}]}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 768, "   \
    "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1572864, \"attention_impl\": "     \
    "\"flash\", \"dtype\": \"bf16\", \"tp_overlap\": true}, \"mfu_convention\": \"full\", "        \
    "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"dp\": 48, \"tp\": 8, " \
    "\"pp\": 2, \"sp\": true, \"zero\": 1}, \"schedule\": \"1f1b\", \"vpp\": 1, \"mbs\": 1, "      \
    "\"recompute\": \"none\"}, \"step_time_s\": 2.177}}"
#define ROOFLINE_REQ                                                                               \
    "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "          \
    "\"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 4194304}}"
#define COMPARE_REQ                                                                                \
    "{\"base\": {\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, " \
    "\"devices\": 128, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 4194304, "      \
    "\"tokens\": 15e12}, \"cost\": {\"price_per_device_hour\": 2.0}}, "                           \
    "\"vary\": {\"hardware\": [{\"preset\": \"h100-sxm\"}, {\"preset\": \"b200\"}], "               \
    "\"devices\": [64, 128, 256]}}"

/* ---- per chart ---------------------------------------------------------------------- */

static void check_gap(json_t *res, int rank, const char *svg)
{
    char b1[64], b2[64], want[160];
    json_t *cfg = rank ? json_array_get(json_object_get(res, "configs"), (size_t)rank - 1)
                       : json_object_get(json_object_get(res, "measured"), "config");
    json_t *gap = json_object_get(cfg, "gap_expected");
    size_t n = json_array_size(gap);
    CHECK(n >= 10);
    CHECK(svg && xml_check(svg) == 0);
    if (!svg) return;
    CHECK(contains(svg, "<title id=\"mfu-gap-title\">") && contains(svg, "<desc id=\"mfu-gap-desc\">"));
    CHECK(contains(svg, "viewBox=\"0 0 800 450\""));
    /* one bar per component, in the model's order, with its name and points */
    CHECK_EQ_I(count(svg, "class=\"gap-component loss\""), (long long)n);
    double roof_p, exp_p, sum_p = 0;
    const char *prev = svg;
    int order_ok = 1;
    for (size_t i = 0; i < n; i++) {
        json_t *g = json_array_get(gap, i);
        snprintf(want, sizeof want, "data-name=\"%s\"", json_string_value(json_object_get(g, "name")));
        const char *at = strstr(svg, want);
        CHECK(contains(svg, want));
        order_ok &= at && at > prev;
        if (at) prev = at;
        char got[64];
        CHECK(attr_after(svg, want, "data-mfu-points", got, sizeof got) == 0);
        CHECK_STR(got, pr(b1, sizeof b1, jnum(g, "mfu_points", NULL), 2));
        sum_p += atof(got);
    }
    CHECK(order_ok);
    /* the totals are the result's */
    char got[64];
    CHECK(attr_after(svg, "class=\"gap-total roofline\"", "data-mfu", got, sizeof got) == 0);
    CHECK_STR(got, pr(b1, sizeof b1, jnum(cfg, "roofline_mfu", NULL) * 100, 2));
    roof_p = atof(got);
    CHECK(attr_after(svg, "class=\"gap-total expected\"", "data-mfu", got, sizeof got) == 0);
    CHECK_STR(got, pr(b1, sizeof b1, jnum(cfg, "expected", "mfu") * 100, 2));
    exp_p = atof(got);
    CHECK(attr_after(svg, "class=\"gap-bound\"", "data-mfu", got, sizeof got) == 0);
    CHECK_STR(got, pr(b1, sizeof b1, jnum(cfg, "bound", "mfu") * 100, 2));
    /* the waterfall ends at the expected MFU within the printed precision:
     * each printed figure is off by at most 0.005 */
    CHECK(fabs(roof_p - sum_p - exp_p) <= 0.005 * (double)(n + 2));
    /* the alt text says the key numbers */
    snprintf(want, sizeof want, "Expected MFU %s%%", pr(b1, sizeof b1, jnum(cfg, "expected", "mfu") * 100, 2));
    CHECK(contains(svg, want));
    snprintf(want, sizeof want, "Roofline MFU %s%%", pr(b2, sizeof b2, jnum(cfg, "roofline_mfu", NULL) * 100, 2));
    CHECK(contains(svg, want));
    if (rank == 0) {
        CHECK(attr_after(svg, "class=\"gap-total measured\"", "data-mfu", got, sizeof got) == 0);
        CHECK_STR(got, pr(b1, sizeof b1, jnum(json_object_get(res, "measured"), "mfu", NULL) * 100, 2));
        CHECK_EQ_I(count(svg, "class=\"gap-component unexplained\""), 1);
    } else {
        CHECK_EQ_I(count(svg, "class=\"gap-total measured\""), 0);
    }
}

static void check_memory(json_t *cfg, const char *svg, int expect_stages)
{
    char b1[64], want[200], got[64];
    CHECK(svg && xml_check(svg) == 0);
    if (!svg) return;
    CHECK(contains(svg, "<title id=\"mfu-memory-title\">") && contains(svg, "Memory per device (GB"));
    json_t *stages = json_object_get(cfg, "memory_stages");
    CHECK_EQ_I(count(svg, "<g class=\"stage\""), expect_stages);
    CHECK_EQ_I(count(svg, "class=\"seg "), 6 * expect_stages);
    for (const char *const *k = (const char *const[]){"weights", "grads", "optimizer", "activations",
                                                        "buffers", "reserve", NULL};
         *k; k++) {
        snprintf(want, sizeof want, "class=\"seg %s\"", *k);
        CHECK_EQ_I(count(svg, want), expect_stages);
    }
    for (int r = 0; r < expect_stages; r++) {
        json_t *m = expect_stages > 1 || json_array_size(stages) ? json_array_get(stages, (size_t)r)
                                                                 : json_object_get(cfg, "memory");
        if (!m) m = json_object_get(cfg, "memory");
        double tot = 0;
        for (const char *const *k = (const char *const[]){"weights_bytes", "grads_bytes", "optimizer_bytes",
                                                            "activations_bytes", "buffers_bytes",
                                                            "reserve_bytes", NULL};
             *k; k++)
            tot += jnum(m, *k, NULL);
        CHECK_NEAR(tot, jnum(m, "total_bytes", NULL), 1e-9);
        snprintf(want, sizeof want, "<g class=\"stage\" data-stage=\"%lld\">",
                 (long long)jnum(m, "stage", NULL));
        CHECK(contains(svg, want));
        snprintf(want, sizeof want, "Stage %lld: %s GB", (long long)jnum(m, "stage", NULL),
                 pr(b1, sizeof b1, tot / 1e9, 2));
        CHECK(contains(svg, want));
    }
    CHECK(attr_after(svg, "<g class=\"capacity\"", "data-gb", got, sizeof got) == 0);
    CHECK_STR(got, pr(b1, sizeof b1, jnum(json_object_get(cfg, "memory"), "capacity_bytes", NULL) / 1e9, 2));
}

static void check_timeline(json_t *cfg, const char *svg)
{
    char b1[64], want[200];
    CHECK(svg && xml_check(svg) == 0);
    if (!svg) return;
    int pp = (int)jnum(json_object_get(cfg, "parallel"), "pp", NULL);
    json_t *te = json_object_get(cfg, "time_expected");
    CHECK_EQ_I(count(svg, "<g class=\"lane\""), pp);
    CHECK(contains(svg, "1F1B") && contains(svg, "busiest stage"));
    snprintf(want, sizeof want, "forward %s s", pr(b1, sizeof b1, jnum(te, "compute_s", NULL) / 3.0, 3));
    CHECK(contains(svg, want));
    snprintf(want, sizeof want, "step %s s", pr(b1, sizeof b1, jnum(te, "step_time_s", NULL), 3));
    CHECK(contains(svg, want));
    /* the step-end line's x; every lane's blocks add up to it, stage 0
     * starts working at once and the last stage with its warm-up bubble */
    const char *se = strstr(svg, "class=\"step-end\"");
    CHECK(se != NULL);
    double x_end = se ? atof(strstr(se, "x1=\"") + 4) : 0;
    int bad_sum = 0, bad_first = 0;
    for (int r = 0; r < pp; r++) {
        snprintf(want, sizeof want, "<g class=\"lane\" data-stage=\"%d\">", r);
        const char *lane = strstr(svg, want);
        if (!lane) { bad_sum++; continue; }
        const char *end = strstr(lane, "</g>");
        double w = 0, x_first = -1;
        int first_is_bubble = -1;
        for (const char *p = strstr(lane, "<rect class=\"blk "); p && p < end; p = strstr(p + 1, "<rect class=\"blk ")) {
            if (first_is_bubble < 0) {
                first_is_bubble = !strncmp(p + 17, "bubble", 6);
                x_first = atof(strstr(p, " x=\"") + 4);
            }
            w += atof(strstr(p, " width=\"") + 8);
        }
        bad_sum += fabs(x_first + w - x_end) > 0.5;
        bad_first += first_is_bubble != (r > 0);
    }
    CHECK_EQ_I(bad_sum, 0);
    CHECK_EQ_I(bad_first, 0);
}

static void check_roofline(json_t *res, const char *svg)
{
    char b1[64], want[200], got[64];
    CHECK(svg && xml_check(svg) == 0);
    if (!svg) return;
    json_t *ops = json_object_get(json_object_get(res, "roofline"), "ops");
    int plotted = 0, fwd = 0, bwd = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        json_t *o = json_array_get(ops, i);
        if (!(jnum(o, "flops", NULL) > 0 && jnum(o, "bytes", NULL) > 0 && jnum(o, "time_s", NULL) > 0)) continue;
        plotted++;
        if (!strcmp(json_string_value(json_object_get(o, "phase")), "fwd")) fwd++;
        else bwd++;
    }
    CHECK(plotted >= 20 && fwd > 0 && bwd > 0);
    int membound = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        json_t *o = json_array_get(ops, i);
        membound += jnum(o, "flops", NULL) > 0 && jnum(o, "bytes", NULL) > 0 && jnum(o, "time_s", NULL) > 0 &&
                    !strcmp(json_string_value(json_object_get(o, "bound")), "memory");
    }
    snprintf(want, sizeof want, "%d operators plotted, %d of them memory-bound", plotted, membound);
    CHECK(contains(svg, want));
    CHECK_EQ_I(count(svg, "class=\"op fwd\""), fwd);
    CHECK_EQ_I(count(svg, "class=\"op bwd\""), bwd);
    /* each operator by name, its intensity as printed */
    int missing = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        json_t *o = json_array_get(ops, i);
        if (!(jnum(o, "flops", NULL) > 0 && jnum(o, "bytes", NULL) > 0 && jnum(o, "time_s", NULL) > 0)) continue;
        snprintf(want, sizeof want, "<title>%s (%s, %s units): %s FLOP/byte",
                 json_string_value(json_object_get(o, "name")), json_string_value(json_object_get(o, "phase")),
                 json_string_value(json_object_get(o, "unit")), pr(b1, sizeof b1, jnum(o, "intensity", NULL), 2));
        missing += !contains(svg, want);
    }
    CHECK_EQ_I(missing, 0);
    double ridge = jnum(json_object_get(res, "roofline"), "ridge_point_flops_per_byte", NULL);
    CHECK(attr_after(svg, "<g class=\"ridge\"", "data-flops-per-byte", got, sizeof got) == 0);
    CHECK_STR(got, pr(b1, sizeof b1, ridge, 2));
    snprintf(want, sizeof want, "ridge point at %s FLOP/byte", pr(b1, sizeof b1, ridge, 2));
    CHECK(contains(svg, want));
    /* the roofs: the compute roof is the dtype's peak, ridge x HBM bandwidth */
    json_t *hw = json_object_get(res, "hardware");
    snprintf(want, sizeof want, "compute roof %s TFLOP/s",
             pr(b1, sizeof b1, jnum(json_object_get(hw, "peak_flops"), "bf16", NULL) / 1e12, 2));
    CHECK(contains(svg, want));
    snprintf(want, sizeof want, "HBM roof %s TB/s", pr(b1, sizeof b1, jnum(hw, "hbm_bw_bytes_s", NULL) / 1e12, 2));
    CHECK(contains(svg, want));
    CHECK_EQ_I(count(svg, "class=\"roof "), 3); /* compute, HBM, vector units */
}

static void check_compare(json_t *res, const char *svg, int priced)
{
    char b1[64], want[200];
    CHECK(svg && xml_check(svg) == 0);
    if (!svg) return;
    json_t *vars = json_object_get(res, "variants");
    size_t n = json_array_size(vars);
    CHECK_EQ_I(count(svg, "class=\"panel tokens-per-s\""), 1);
    CHECK_EQ_I(count(svg, "class=\"panel cost\""), priced);
    CHECK_EQ_I(count(svg, "<g class=\"variant\""), (long long)(n * (priced ? 2 : 1)));
    int bars = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(vars, i);
        if (!json_is_true(json_object_get(v, "fits"))) continue;
        bars++;
        snprintf(want, sizeof want, "%s tokens/s, MFU %s%%", pr(b1, sizeof b1, jnum(v, "tokens_per_s", NULL), 0),
                 pr(b1 + 32, 32, jnum(v, "mfu", NULL) * 100, 2));
        CHECK(contains(svg, want));
        if (priced) {
            snprintf(want, sizeof want, ": %s USD, ",
                     pr(b1, sizeof b1, jnum(json_object_get(v, "time_to_train"), "cost", NULL), 2));
            CHECK(contains(svg, want));
        }
    }
    CHECK_EQ_I(count(svg, "<rect class=\"bar\""), bars * (priced ? 2 : 1));
    snprintf(want, sizeof want, "Fastest: variant %lld.", (long long)jnum(res, "fastest", NULL));
    CHECK(contains(svg, want));
}

static void t_checker_can_fail(void)
{
    /* ---- the checker itself must be able to fail ---- */
    xml_quiet = 1;
    CHECK(xml_check("<svg><g></g></svg>") == 0);
    CHECK(xml_check("<svg a=\"1 &amp; 2\">x &lt; y &#39; &#x41;</svg>") == 0);
    CHECK(xml_check("<svg><g></svg>") != 0);
    CHECK(xml_check("<svg><g></h></svg>") != 0);
    CHECK(xml_check("<svg>a & b</svg>") != 0);
    CHECK(xml_check("<svg a=1></svg>") != 0);
    CHECK(xml_check("<svg a=\"<\"></svg>") != 0);
    CHECK(xml_check("<svg a=\"1\" a=\"2\"></svg>") != 0);
    CHECK(xml_check("<svg></svg><svg></svg>") != 0);
    CHECK(xml_check("<svg><image href=\"x.png\"/></svg>") != 0);
    CHECK(xml_check("<svg><script>x</script></svg>") != 0);
    xml_quiet = 0;
}

/* A search result damaged field by field (a copy of res): the charts that
 * lose their data are NULL, the others still render. */
static void check_damaged(json_t *res)
{
    json_t *bad = json_deep_copy(res);
    json_t *bc = json_array_get(json_object_get(bad, "configs"), 0);
    /* memory_stages absent: the binding stage alone */
    json_object_del(bc, "memory_stages");
    char *m1 = api_svg_memory(bad, 1);
    check_memory(bc, m1, 1);
    CHECK(m1 && contains(m1, "binding stage only"));
    free(m1);
    json_object_del(bc, "memory");
    CHECK(api_svg_memory(bad, 1) == NULL);
    json_object_set_new(json_object_get(bc, "expected"), "mfu", json_string("high"));
    CHECK(api_svg_gap(bad, 1) == NULL);
    json_object_del(json_object_get(bc, "time_expected"), "compute_s");
    CHECK(api_svg_timeline(bad, 1) == NULL);
    json_object_del(json_array_get(json_object_get(bc, "gap_expected"), 2), "mfu_points");
    /* the other ranks still render */
    char *ok2 = api_svg_gap(bad, 2);
    CHECK(ok2 != NULL);
    free(ok2);
    json_decref(bad);
}

/* names are escaped: XML specials and a control character */
static void check_escaped(json_t *res)
{
    json_t *odd = json_deep_copy(res);
    json_object_set_new(json_object_get(odd, "model"), "name", json_string("a<b & \"c\" 'd'>\x01"));
    char *s = api_svg_gap(odd, 1);
    CHECK(s && xml_check(s) == 0);
    CHECK(contains(s, "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;?"));
    free(s);
    s = api_svg_timeline(odd, 1);
    CHECK(s && xml_check(s) == 0 && contains(s, "a&lt;b &amp;"));
    free(s);
    json_decref(odd);
}

static void t_search_charts(void)
{
    /* ---- a search result: gap, memory, timeline ---- */
    json_t *res = run_search(SEARCH_REQ);
    CHECK(res != NULL);
    if (!res) return;
    json_t *cfgs = json_object_get(res, "configs");
    CHECK(json_array_size(cfgs) == 3);
    json_t *c1 = json_array_get(cfgs, 0);
    CHECK_EQ_I(jnum(json_object_get(c1, "parallel"), "pp", NULL), 4);
    CHECK_EQ_I(json_array_size(json_object_get(c1, "memory_stages")), 4);

    char *gap = api_svg_gap(res, 1);
    check_gap(res, 1, gap);
    golden("gap", gap);
    char *again = api_svg_gap(res, 1);
    CHECK(gap && again && strcmp(gap, again) == 0); /* deterministic */
    free(again);
    char *gap3 = api_svg_gap(res, 3);
    check_gap(res, 3, gap3);
    free(gap3);

    char *mem = api_svg_memory(res, 1);
    check_memory(c1, mem, 4);
    golden("memory", mem);

    char *tl = api_svg_timeline(res, 1);
    check_timeline(c1, tl);
    golden("timeline", tl);

    /* ranks out of range and bad input: NULL */
    CHECK(api_svg_gap(res, 0) == NULL); /* no measured run in this result */
    CHECK(api_svg_gap(res, 4) == NULL);
    CHECK(api_svg_gap(res, -1) == NULL);
    CHECK(api_svg_memory(res, 4) == NULL);
    CHECK(api_svg_timeline(res, 4) == NULL);
    CHECK(api_svg_gap(NULL, 1) == NULL);
    CHECK(api_svg_memory(NULL, 1) == NULL);
    CHECK(api_svg_timeline(NULL, 1) == NULL);
    CHECK(api_svg_roofline(NULL) == NULL);
    CHECK(api_svg_compare(NULL) == NULL);
    CHECK(api_svg_roofline(res) == NULL); /* a search result has no roofline.ops */
    CHECK(api_svg_compare(res) == NULL);
    check_damaged(res);
    check_escaped(res);
    free(gap);
    free(mem);
    free(tl);
    json_decref(res);
}

static void t_measured_waterfall(void)
{
    json_t *res;
    /* ---- a measured run: rank 0 continues the waterfall to the measurement ---- */
    res = run_search(MEASURED_REQ);
    CHECK(res != NULL);
    if (res) {
        CHECK(json_is_object(json_object_get(res, "measured")));
        char *gm = api_svg_gap(res, 0);
        check_gap(res, 0, gm);
        golden("gap-measured", gm);
        free(gm);
        json_t *mc = json_object_get(json_object_get(res, "measured"), "config");
        char *mm = api_svg_memory(res, 0);
        check_memory(mc, mm, (int)json_array_size(json_object_get(mc, "memory_stages")));
        free(mm);
        char *tm = api_svg_timeline(res, 0);
        check_timeline(mc, tm);
        free(tm);
        json_decref(res);
    }
}

static void t_roofline_chart(void)
{
    api_status st;
    json_t *res;

    /* ---- the roofline ---- */
    {
        api_status_init(&st);
        json_t *r = J(ROOFLINE_REQ);
        res = api_roofline(r, &st);
        json_decref(r);
        if (!res) report("roofline", &st);
        CHECK(res != NULL);
        if (res) {
            char *rf = api_svg_roofline(res);
            check_roofline(res, rf);
            golden("roofline", rf);
            free(rf);
            json_t *bad = json_deep_copy(res);
            json_object_del(json_object_get(bad, "roofline"), "ridge_point_flops_per_byte");
            CHECK(api_svg_roofline(bad) == NULL);
            json_decref(bad);
            bad = json_deep_copy(res);
            json_object_del(json_object_get(bad, "roofline"), "ops");
            CHECK(api_svg_roofline(bad) == NULL);
            json_decref(bad);
            json_decref(res);
        }
    }
}

static void t_compare_chart(void)
{
    api_status st;
    json_t *res;

    /* ---- a comparison, priced, then without the price ---- */
    {
        api_status_init(&st);
        json_t *r = J(COMPARE_REQ);
        res = api_compare(r, &st, NULL, NULL, 2, NULL, NULL);
        if (!res) report("compare", &st);
        CHECK(res != NULL);
        if (res) {
            CHECK_EQ_I(json_array_size(json_object_get(res, "variants")), 6);
            char *cs = api_svg_compare(res);
            check_compare(res, cs, 1);
            golden("compare", cs);
            free(cs);
            json_decref(res);
        }
        json_object_del(json_object_get(r, "base"), "cost");
        api_status_init(&st);
        res = api_compare(r, &st, NULL, NULL, 2, NULL, NULL);
        if (!res) report("compare", &st);
        CHECK(res != NULL);
        if (res) {
            char *cs = api_svg_compare(res);
            check_compare(res, cs, 0);
            free(cs);
            json_t *bad = json_deep_copy(res);
            json_object_del(json_array_get(json_object_get(bad, "variants"), 1), "tokens_per_s");
            CHECK(api_svg_compare(bad) == NULL);
            json_decref(bad);
            json_decref(res);
        }
        json_decref(r);
    }
}

static const check_case cases[] = {
    CHECK_CASE(t_checker_can_fail),
    CHECK_CASE(t_search_charts),
    CHECK_CASE(t_measured_waterfall),
    CHECK_CASE(t_roofline_chart),
    CHECK_CASE(t_compare_chart),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}

