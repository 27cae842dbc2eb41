/*
 * ana_svg.c - SVG pieces for `npurr report` (ana_svg.h) and for every plot
 * (analysis.h's drawing section: the sweep's page too).
 */
#include <math.h>
#include <string.h>

#include "analysis/present/present.h"
#include "analysis/derive/derive.h"
#include "analysis/present/ana_svg.h"

void svg_esc(FILE *out, const char *s) {
    for (const char *p = s ? s : ""; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*p, out);
        }
    }
}

void svg_open(FILE *out, const char *id, int w, int h, const char *label) {
    fprintf(out, "<svg id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"", id, w, h, w, h);
    svg_esc(out, label);
    fputs("\">\n", out);
}

void svg_close(FILE *out) { fputs("</svg>\n", out); }

void svg_rect(FILE *out, double x, double y, double w, double h, const char *fill,
              const char *title) {
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"", x, y,
            w > 0 ? w : 0, h > 0 ? h : 0, fill);
    if (!title) {
        fputs("/>\n", out);
        return;
    }
    fputs("><title>", out);
    svg_esc(out, title);
    fputs("</title></rect>\n", out);
}

void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *stroke) {
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x1, y1,
            x2, y2, stroke);
}

void svg_text(FILE *out, double x, double y, const char *anchor, const char *cls,
              const char *text) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", x, y, anchor,
            cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    svg_esc(out, text);
    fputs("</text>\n", out);
}

void svg_time_axis(FILE *out, double x0, double w, double y, uint64_t end_ps) {
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n", x0,
            y, x0 + w, y);
    if (!end_ps) return;
    /* A 1-2-5 step giving at most seven ticks. */
    double raw = (double)end_ps / 6, step = pow(10, floor(log10(raw)));
    if (step * 5 <= raw) step *= 5;
    else if (step * 2 <= raw) step *= 2;
    if (step <= 0) step = (double)end_ps;
    for (double t = 0; t <= (double)end_ps + 0.5; t += step) {
        double x = x0 + w * t / (double)end_ps;
        char label[32];
        ana_format_ps(t, label, sizeof label);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n",
                x, y, x, y + 4);
        svg_text(out, x, y + 15, "middle", "tick", label);
    }
}

void svg_heat(double v, char buf[8]) {
    if (!(v > 0)) v = 0;
    if (v > 1) v = 1;
    /* white (255,255,255) -> orange (253,141,60) -> dark red (128,0,38) */
    double r, g, b;
    if (v < 0.5) {
        double t = v / 0.5;
        r = 255 + (253 - 255) * t, g = 255 + (141 - 255) * t, b = 255 + (60 - 255) * t;
    } else {
        double t = (v - 0.5) / 0.5;
        r = 253 + (128 - 253) * t, g = 141 + (0 - 141) * t, b = 60 + (38 - 60) * t;
    }
    snprintf(buf, 8, "#%02x%02x%02x", (int)r, (int)g, (int)b);
}

void svg_heat_scale(FILE *out, const char *what, const char *lo, const char *hi) {
    enum { STEPS = 20 };
    const double x0 = 10, w = 240, y = 16, h = 10;
    fputs("<svg class=\"scale\" width=\"420\" height=\"40\" role=\"img\" aria-label=\"", out);
    svg_esc(out, what);
    fputs(" colour scale\">\n", out);
    svg_text(out, x0, 11, "start", "tick", what);
    for (int i = 0; i < STEPS; i++) {
        char c[8];
        svg_heat((i + 0.5) / STEPS, c);
        svg_rect(out, x0 + w * i / STEPS, y, w / STEPS + 0.5, h, c, NULL);
    }
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#999\"/>\n", x0, y, w, h);
    svg_text(out, x0, y + h + 11, "start", "tick", lo);
    svg_text(out, x0 + w, y + h + 11, "end", "tick", hi);
    fputs("</svg>\n", out);
}

const char *svg_cause_color(const char *cause) {
    static const struct { const char *cause, *color; } colors[] = {
        {ANA_CAUSE_CREDIT_STARVATION, "#b279a2"}, {ANA_CAUSE_FLOW_CONTROL, "#4c78a8"},
        {ANA_CAUSE_PRODUCER_LATE, "#e45756"},     {ANA_CAUSE_TRANSFER_SLOW, "#f58518"},
        {ANA_CAUSE_BARRIER, "#54a24b"},           {"busy", "#e8eef4"},
    };
    for (size_t i = 0; cause && i < sizeof colors / sizeof colors[0]; i++)
        if (!strcmp(cause, colors[i].cause)) return colors[i].color;
    return "#9d9d9d";
}
