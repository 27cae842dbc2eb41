/*
 * sweep_out.c - a sweep's results as DIR/sweep.csv and DIR/sweep.html.
 *
 * The CSV has one row per point that ran, in grid order: the varied values,
 * how it ended (exit code, outcome, check), the end time, the stall share
 * (summed stalls over cores x end time), the end time of each role (the
 * cores' SetRole names: when the last core of that role finished, the
 * phases of the kernel) and the message of a point that failed. The page is
 * self-contained (inline SVG, no script): per varied key, end time against
 * that key, one line per combination of the other keys' values; points
 * that failed are red crosses on the axis with their exit code.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "sweep.h"

size_t sweep_value_index(const sweep *s, size_t p, size_t k) {
    size_t stride = 1;
    for (size_t j = s->nkeys; j-- > k + 1;) stride *= s->keys[j].nvalues;
    return (p / stride) % s->keys[k].nvalues;
}

static const char *outcome_text(const point_result *r) {
    if (!r->outcome) return "not run";
    return engine_outcome_name(r->outcome);
}

/* The union of the points' role names, in first-seen order. */
static size_t role_columns(const sweep *s, char (*names)[40], size_t cap) {
    size_t n = 0;
    for (size_t p = 0; p < s->npoints; p++) {
        const point_result *r = &s->res[p];
        for (int i = 0; r->done && i < r->nroles; i++) {
            size_t k = 0;
            while (k < n && strcmp(names[k], r->role[i])) k++;
            if (k == n && n < cap) memcpy(names[n++], r->role[i], sizeof names[0]);
        }
    }
    return n;
}

/* The columns up to the per-role end times. */
static void csv_head(const sweep *s, FILE *out) {
    fputs("point", out);
    for (size_t k = 0; k < s->nkeys; k++) {
        fputc(',', out);
        ana_csv_field(out, s->keys[k].name);
    }
    fputs(",exit_code,outcome,check,end_ps,stall_share,events,wall_s", out);
}

/* Point p's row: roles[0..nr) are the role columns (none: nr 0). */
static void csv_row(const sweep *s, size_t p, char roles[][40], size_t nr, FILE *out) {
    const point_result *r = &s->res[p];
    fprintf(out, "%zu", p + 1);
    for (size_t k = 0; k < s->nkeys; k++) {
        fputc(',', out);
        ana_csv_field(out, s->keys[k].values[sweep_value_index(s, p, k)]);
    }
    fprintf(out, ",%d,%s,%s,", r->status, outcome_text(r), r->check);
    if (r->outcome) fprintf(out, "%llu,%.6f,%llu,%.3f", (unsigned long long)r->end_ps,
                            r->stall_share, (unsigned long long)r->events, r->wall);
    else fputs(",,,", out);
    for (size_t i = 0; i < nr; i++) {
        fputc(',', out);
        for (int j = 0; j < r->nroles; j++)
            if (!strcmp(r->role[j], roles[i])) fprintf(out, "%llu", (unsigned long long)r->role_end[j]);
    }
    fputc(',', out);
    ana_csv_field(out, r->status ? r->what : "");
    fputc('\n', out);
}

int sweep_write_csv(const sweep *s, FILE *out) {
    char roles[64][40];
    size_t nr = role_columns(s, roles, 64);
    csv_head(s, out);
    for (size_t i = 0; i < nr; i++) {
        char col[64];
        snprintf(col, sizeof col, "end_%.39s_ps", roles[i]);
        fputc(',', out);
        ana_csv_field(out, col);
    }
    fputs(",message\n", out);
    for (size_t p = 0; p < s->npoints; p++)
        if (s->res[p].done) csv_row(s, p, roles, nr, out);
    return ferror(out) ? -1 : 0;
}

int sweep_write_partial_head(const sweep *s, FILE *out) {
    csv_head(s, out);
    fputs(",message\n", out);
    return fflush(out) || ferror(out) ? -1 : 0;
}

int sweep_write_partial_row(const sweep *s, size_t p, FILE *out) {
    csv_row(s, p, NULL, 0, out);
    return fflush(out) || ferror(out) ? -1 : 0;
}

static int all_numbers(const sweep_key *k, double *x) {
    for (size_t i = 0; i < k->nvalues; i++) {
        char *end = NULL;
        x[i] = strtod(k->values[i], &end);
        if (!end || end == k->values[i] || *end || !isfinite(x[i])) return 0;
    }
    return 1;
}

static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                     "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79"};
#define NCOLORS (sizeof colors / sizeof colors[0])

enum { W = 640, H = 300, L = 70, R = 20, T = 20, B = 50 };

/* One plot's coordinates: the key's values along x (numbers to scale, or
 * evenly spaced), end times up to ymax along y. */
typedef struct frame {
    const double *xv;
    int numeric;
    double xmin, xmax, ymax;
} frame;

static double px(const frame *f, size_t i) {
    double x = f->numeric ? f->xv[i] : (double)i;
    return L + (double)(W - L - R) * (x - f->xmin) / (f->xmax - f->xmin);
}

static double py(const frame *f, double ps) { return T + (double)(H - T - B) * (1.0 - ps / f->ymax); }

static void frame_of(const sweep *s, const sweep_key *key, double *xv, frame *f) {
    f->xv = xv;
    f->numeric = all_numbers(key, xv) && key->nvalues > 1;
    f->xmin = 0, f->xmax = (double)(key->nvalues > 1 ? key->nvalues - 1 : 1);
    if (f->numeric) {
        f->xmin = f->xmax = xv[0];
        for (size_t i = 1; i < key->nvalues; i++) {
            if (xv[i] < f->xmin) f->xmin = xv[i];
            if (xv[i] > f->xmax) f->xmax = xv[i];
        }
        if (f->xmax == f->xmin) f->xmax = f->xmin + 1;
    }
    f->ymax = 0;
    for (size_t p = 0; p < s->npoints; p++)
        if (s->res[p].done && !s->res[p].status && (double)s->res[p].end_ps > f->ymax)
            f->ymax = (double)s->res[p].end_ps;
    if (f->ymax <= 0) f->ymax = 1;
    f->ymax *= 1.1;
}

/* Axes, the end-time grid in us and the key's values. */
static void plot_axes(const frame *f, const sweep_key *key, FILE *out) {
    svg_line(out, L, H - B, W - R, H - B, "#333");
    svg_line(out, L, T, L, H - B, "#333");
    for (int i = 0; i <= 4; i++) {
        double ps = f->ymax * i / 4;
        char label[32];
        snprintf(label, sizeof label, "%.4g us", ps / 1e6);
        svg_line(out, L, py(f, ps), W - R, py(f, ps), "#ddd");
        svg_text(out, L - 4, py(f, ps) + 4, "end", "tick", label);
    }
    for (size_t i = 0; i < key->nvalues; i++) {
        /* centred under its point, unless that would cut it at the page's
         * edge (a long last value, "credit-leak"): then it ends there */
        double x = px(f, i), half = 3.2 * (double)strlen(key->values[i]);   /* 11px text */
        const char *anchor = x + half > W ? "end" : x - half < 0 ? "start" : "middle";
        svg_text(out, x, H - B + 16, anchor, "tick", key->values[i]);
    }
    svg_text(out, (L + W - R) / 2.0, H - 8, "middle", "label", key->name);
}

/* One series, the points members[] (one per value of the key): a line
 * through those that completed, a dot with its time on each, a red cross
 * with its exit code on the axis for each that failed. */
static void plot_series(const frame *f, const sweep *s, const sweep_key *key,
                        const size_t *members, const char *c, FILE *out) {
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
    for (size_t i = 0; i < key->nvalues; i++) {
        const point_result *r = &s->res[members[i]];
        if (r->done && !r->status) fprintf(out, "%.1f,%.1f ", px(f, i), py(f, (double)r->end_ps));
    }
    fprintf(out, "\"/>\n");
    for (size_t i = 0; i < key->nvalues; i++) {
        const point_result *r = &s->res[members[i]];
        if (!r->done) continue;
        if (!r->status) {
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%.3f us"
                    "</title></circle>\n", px(f, i), py(f, (double)r->end_ps), c,
                    (double)r->end_ps / 1e6);
            continue;
        }
        double x = px(f, i), y = H - B;
        char code[16];
        snprintf(code, sizeof code, "exit %d", r->status);
        fprintf(out, "<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" transform=\"translate(-4 -4)\" "
                "stroke=\"#d62728\" stroke-width=\"2\"><title>%s: ", x, y, code);
        svg_esc(out, r->what);
        fprintf(out, "</title></path>\n");
        svg_text(out, x, y - 8, "middle", "fail", code);
    }
}

/* The series' legend entry: the other keys' values at point p. */
static void plot_legend(const sweep *s, size_t k, size_t p, size_t nseries, size_t drawn,
                        const char *c, FILE *out) {
    char legend[SWEEP_MAX_KEYS * 80];
    size_t used = 0;
    legend[0] = 0;
    for (size_t j = 0; j < s->nkeys; j++) {
        if (j == k) continue;
        int w = snprintf(legend + used, sizeof legend - used, "%s%s=%s", used ? ", " : "",
                         s->keys[j].name, s->keys[j].values[sweep_value_index(s, p, j)]);
        if (w < 0 || (size_t)w >= sizeof legend - used) break;
        used += (size_t)w;
    }
    if (nseries <= 1 && !used) return;
    svg_rect(out, W - R - 230, (double)(T + 4 + 14 * drawn), 10, 10, c, NULL);
    svg_text(out, W - R - 216, (double)(T + 13 + 14 * drawn), "start", "tick", legend);
}

/* One plot: end time against key k, a series per combination of the
 * other keys' values. */
static void plot(const sweep *s, size_t k, FILE *out) {
    const sweep_key *key = &s->keys[k];
    double *xv = calloc(key->nvalues, sizeof *xv);
    size_t *members = calloc(key->nvalues, sizeof *members);
    if (!xv || !members) {
        free(xv);
        free(members);
        return;
    }
    frame f;
    frame_of(s, key, xv, &f);
    char id[32], label[160];
    snprintf(id, sizeof id, "plot-%zu", k + 1);
    snprintf(label, sizeof label, "end time against %s", key->name);
    fprintf(out, "<h2>");
    svg_esc(out, label);
    fprintf(out, "</h2>\n");
    svg_open(out, id, W, H, label);
    plot_axes(&f, key, out);
    size_t nseries = s->npoints / key->nvalues, drawn = 0;
    for (size_t p = 0; p < s->npoints; p++) {
        if (sweep_value_index(s, p, k) != 0) continue;   /* each series once, from its first point */
        size_t stride = 1;
        for (size_t j = s->nkeys; j-- > k + 1;) stride *= s->keys[j].nvalues;
        for (size_t i = 0; i < key->nvalues; i++) members[i] = p + i * stride;
        const char *c = colors[drawn % NCOLORS];
        plot_series(&f, s, key, members, c, out);
        plot_legend(s, k, p, nseries, drawn, c, out);
        drawn++;
    }
    svg_close(out);
    free(members);
    free(xv);
}

int sweep_write_html(const sweep *s, const char *title, FILE *out) {
    fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    svg_esc(out, title);
    fprintf(out, "</title><style>body{font-family:sans-serif;margin:20px;color:#222}"
            "h1{font-size:20px}h2{font-size:16px}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
            "padding:2px 6px;text-align:right}svg{background:#fff;border:1px solid #eee}"
            ".tick{font-size:11px}.label{font-size:12px}.fail{font-size:10px;fill:#d62728}"
            "</style></head><body>\n<h1>");
    svg_esc(out, title);
    size_t ok = 0, ran = 0;
    for (size_t p = 0; p < s->npoints; p++) ran += s->res[p].done, ok += s->res[p].done && !s->res[p].status;
    fprintf(out, "</h1>\n<p>%zu points, %zu ran, %zu completed with their check passed; failed "
            "points are red crosses with their exit code (3 deadlock or watchdog, 4 data check "
            "failed, 2 refused options, 1 error).</p>\n", s->npoints, ran, ok);
    for (size_t k = 0; k < s->nkeys; k++) plot(s, k, out);
    fprintf(out, "<h2>points</h2>\n<table><tr><th>point</th>");
    for (size_t k = 0; k < s->nkeys; k++) {
        fprintf(out, "<th>");
        svg_esc(out, s->keys[k].name);
        fprintf(out, "</th>");
    }
    fprintf(out, "<th>exit</th><th>end time</th><th>stall share</th></tr>\n");
    for (size_t p = 0; p < s->npoints; p++) {
        const point_result *r = &s->res[p];
        if (!r->done) continue;
        fprintf(out, "<tr><td>%zu</td>", p + 1);
        for (size_t k = 0; k < s->nkeys; k++) {
            fprintf(out, "<td>");
            svg_esc(out, s->keys[k].values[sweep_value_index(s, p, k)]);
            fprintf(out, "</td>");
        }
        if (r->outcome) fprintf(out, "<td>%d</td><td>%.3f us</td><td>%.1f%%</td></tr>\n", r->status,
                                (double)r->end_ps / 1e6, 100 * r->stall_share);
        else fprintf(out, "<td>%d</td><td>-</td><td>-</td></tr>\n", r->status);
    }
    fprintf(out, "</table>\n</body></html>\n");
    return ferror(out) ? -1 : 0;
}
