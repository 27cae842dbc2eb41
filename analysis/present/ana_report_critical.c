/*
 * ana_report_critical.c - the critical-path section of `npurr report`: one
 * stacked bar of the end time by resource class (the shares add up to the
 * whole run), the path over time as a strip coloured by class (each pixel
 * column the class that held most of it), and the longest segments with
 * their resource, core, role and kernel line. From the critical_path table
 * (ana_critical.c).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_report.h"
#include "recorder/recorder.h"

#define BAR_X 170.0
#define BAR_W 760.0
#define STRIP_BINS 380
#define TOP_SEGMENTS 12

static const struct { const char *cls, *color; } palette[] = {
    {"hbm", "#8c564b"},     {"mte", "#1f77b4"},      {"hccs", "#2ca02c"},
    {"hccs_latency", "#98df8a"}, {"nic", "#d62728"}, {"rdma_latency", "#ff9896"},
    {"scalar", "#9467bd"},  {"vector", "#c5b0d5"},   {"cube", "#e377c2"},
    {"aicpu", "#bcbd22"},   {"sync", "#ff7f0e"},     {"jitter", "#7f7f7f"},
    {"launch", "#c7c7c7"},  {"blocked", "#111111"},  {"idle", "#eeeeee"},
};
#define NPAL (sizeof palette / sizeof palette[0])

static size_t class_index(const char *cls) {
    for (size_t i = 0; cls && i < NPAL; i++)
        if (!strcmp(palette[i].cls, cls)) return i;
    return NPAL - 1;
}

static int fail(sqlite3 *db, const char *sql, char *err, size_t errlen) {
    ana_err(err, errlen, "index.db: %s (in: %.200s)", sqlite3_errmsg(db), sql);
    return -1;
}

static void bar(FILE *out, sqlite3 *db, double end) {
    const char *sql = "SELECT class, SUM(dur_ps) FROM critical_path GROUP BY class"
                      " ORDER BY SUM(dur_ps) DESC";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    svg_open(out, "critical-bar", (int)(BAR_X + BAR_W + 10), 34, "critical path by resource class");
    svg_text(out, BAR_X - 8, 17, "end", "lbl", "end time");
    double x = BAR_X;
    char legend[NPAL][160];
    size_t nl = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *cls = (const char *)sqlite3_column_text(st, 0);
        double ps = sqlite3_column_double(st, 1);
        double w = end > 0 ? BAR_W * ps / end : 0;
        char title[160], t[32];
        ana_format_ps(ps, t, sizeof t);
        snprintf(title, sizeof title, "%s: %s (%.1f%%)", cls ? cls : "?", t,
                 end > 0 ? 100 * ps / end : 0);
        svg_rect(out, x, 4, w, 20, palette[class_index(cls)].color, title);
        x += w;
        if (nl < NPAL) snprintf(legend[nl++], sizeof legend[0], "%s", title);
    }
    sqlite3_finalize(st);
    svg_close(out);
    fputs("<div class=\"legend\">", out);
    for (size_t i = 0; i < nl; i++) {
        char cls[64];
        sscanf(legend[i], "%63[^:]", cls);
        fprintf(out, "<span><i style=\"background:%s\"></i>", palette[class_index(cls)].color);
        svg_esc(out, legend[i]);
        fputs("</span>", out);
    }
    fputs("</div>\n", out);
}

/* The path over time: per pixel column, the class with most time in it. */
static void strip(FILE *out, sqlite3 *db, uint64_t end) {
    double (*acc)[NPAL] = calloc(STRIP_BINS, sizeof *acc);
    if (!acc || !end) {
        free(acc);
        return;
    }
    const char *sql = "SELECT start_ps, end_ps, class FROM critical_path ORDER BY seg";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        free(acc);
        return;
    }
    double binw = (double)end / STRIP_BINS;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double a = sqlite3_column_double(st, 0), b = sqlite3_column_double(st, 1);
        size_t c = class_index((const char *)sqlite3_column_text(st, 2));
        for (size_t k = (size_t)(a / binw); k < STRIP_BINS && (double)k * binw < b; k++) {
            double lo = (double)k * binw, hi = lo + binw;
            double part = (b < hi ? b : hi) - (a > lo ? a : lo);
            if (part > 0) acc[k][c] += part;
        }
    }
    sqlite3_finalize(st);
    svg_open(out, "critical-strip", (int)(BAR_X + BAR_W + 10), 46, "critical path over time");
    svg_text(out, BAR_X - 8, 15, "end", "lbl", "path over time");
    double pw = BAR_W / STRIP_BINS;
    for (size_t k = 0; k < STRIP_BINS; k++) {
        size_t best = 0;
        for (size_t c = 1; c < NPAL; c++)
            if (acc[k][c] > acc[k][best]) best = c;
        if (acc[k][best] <= 0) continue;
        svg_rect(out, BAR_X + pw * (double)k, 4, pw + 0.05, 16, palette[best].color,
                 palette[best].cls);
    }
    svg_time_axis(out, BAR_X, BAR_W, 22, end);
    svg_close(out);
    free(acc);
}

static int top_segments(FILE *out, sqlite3 *db, char *err, size_t errlen) {
    const char *sql =
        "SELECT p.start_ps, p.dur_ps, p.class, p.resource, COALESCE(p.role, ''), s.file, s.line,"
        " s.function FROM critical_path p LEFT JOIN sites s ON s.id = p.site"
        " ORDER BY p.dur_ps DESC, p.seg LIMIT ?1";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return fail(db, sql, err, errlen);
    sqlite3_bind_int(st, 1, TOP_SEGMENTS);
    fprintf(out, "<h3>Longest segments of the path</h3>\n<table class=\"data\" id=\"critical-top\">"
            "<tr><th>from</th><th>duration</th><th>class</th><th>resource</th><th>role</th>"
            "<th>kernel line</th></tr>\n");
    while (sqlite3_step(st) == SQLITE_ROW) {
        char from[32], dur[32];
        ana_format_ps(sqlite3_column_double(st, 0), from, sizeof from);
        ana_format_ps(sqlite3_column_double(st, 1), dur, sizeof dur);
        const char *cls = (const char *)sqlite3_column_text(st, 2);
        fprintf(out, "<tr><td class=\"num\">%s</td><td class=\"num\">%s</td><td><i style=\""
                "display:inline-block;width:9px;height:9px;background:%s\"></i> ", from, dur,
                palette[class_index(cls)].color);
        svg_esc(out, cls);
        fputs("</td><td>", out);
        svg_esc(out, (const char *)sqlite3_column_text(st, 3));
        fputs("</td><td>", out);
        svg_esc(out, (const char *)sqlite3_column_text(st, 4));
        fputs("</td><td>", out);
        if (sqlite3_column_text(st, 5)) {
            const char *f = (const char *)sqlite3_column_text(st, 5);
            const char *slash = strrchr(f, '/');
            fputs("<code title=\"", out);
            svg_esc(out, (const char *)sqlite3_column_text(st, 7));
            fputs("\">", out);
            svg_esc(out, slash ? slash + 1 : f);
            fprintf(out, ":%d</code>", sqlite3_column_int(st, 6));
        }
        fputs("</td></tr>\n", out);
    }
    sqlite3_finalize(st);
    fputs("</table>\n", out);
    return 0;
}

int ana_report_critical(sqlite3 *db, const ana_run *run, FILE *out, char *err, size_t errlen) {
    if (!ana_has_table(db, "critical_path")) return 0;
    char ending[400] = "";
    rec_index_meta_text(db, "critical.ending", ending, sizeof ending);
    fputs("<h2 id=\"critical\">Critical path: what bounded the end time</h2>\n"
          "<p class=\"note\">Every picosecond of the run's end time on one resource, walked back "
          "from ", out);
    svg_esc(out, ending[0] ? ending : "the event that ended the run");
    fputs(" (npurr critical; npurr whatif re-runs with the top classes twice as fast).</p>\n", out);
    bar(out, db, (double)run->end_time_ps);
    strip(out, db, run->end_time_ps > 0 ? (uint64_t)run->end_time_ps : 0);
    return top_segments(out, db, err, errlen);
}
