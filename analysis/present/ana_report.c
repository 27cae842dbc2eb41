/*
 * ana_report.c - `npurr report RUN -o report.html`: the run as one
 * self-contained HTML page (inline CSS and SVG; no script, no network), in
 * the order a reader asks:
 *   outcome       how it ended, the check, the configuration
 *   wait-for      for a run that hung, the wait-for graph (ana_waitfor.c)
 *   stalls        a heat map of stall share by rank x role; the top stall
 *                 sites with kernel file:line
 *   critical path the end time by resource class, the path over time, its
 *                 longest segments (ana_report_critical.c)
 *   activity      per rank, the share of its cores waiting, by cause, on
 *                 one time axis (not waiting is the pale background)
 *   rings         occupancy over time of the most stalled rings
 *   links         bandwidth over time per link class, NIC egress by rank
 * Every plot summarises (per rank, per role, per bin, top N), so the page
 * stays readable and a few hundred KB at 16 ranks x 48 cores. Data come
 * from the analysis tables (docs/sql.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/present/present.h"
#include "analysis/present/ana_report.h"

#define PLOT_W 760.0        /* plot area width */
#define PLOT_X 170.0        /* left margin for row labels */
#define BINS 200            /* time bins of the strips and ring plots */
#define TOP_SITES 12
#define TOP_RINGS 6

typedef struct report {
    sqlite3 *db;
    FILE *out;
    ana_run run;
    char *err;
    size_t errlen;
} report;

/* sql prepared on the report's index; NULL with r->err set (ana_prepare). */
static sqlite3_stmt *prepare(report *r, const char *sql) {
    return ana_prepare(r->db, sql, r->err, r->errlen);
}

static char *meta(report *r, const char *key) {
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return v;
}

static double x_of(const report *r, uint64_t ps) {
    return PLOT_X + PLOT_W * (double)ps / (double)(r->run.end_time_ps > 0 ? r->run.end_time_ps : 1);
}

static const char *basename_of(const char *path) {
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path ? path : "?";
}

/* ------------------------------------------------------------ page */

static const char *const css =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;"
    "max-width:1000px;color:#222;padding:0 12px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px "
    "solid #ddd;padding-bottom:3px}"
    ".badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:600}"
    ".ok{background:#3a7d44}.hung{background:#b03a2e}.other{background:#a66a00}"
    "table.data{border-collapse:collapse;margin:6px 0;font-size:13px}"
    "table.data td,table.data th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;"
    "vertical-align:top}#sites td{white-space:nowrap;"
    "}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "code{font-size:12px;background:#f4f4f4;padding:1px 4px;border-radius:3px}"
    ".note{color:#666;font-size:12px}.bad{color:#b03a2e;font-weight:600}"
    ".warn{color:#a66a00;font-weight:600}"
    "svg{display:block;margin:6px 0;font:11px system-ui,sans-serif}"
    "svg .axis{stroke:#888;stroke-width:1}svg .tick{fill:#555;font-size:10px}"
    "svg .lbl{fill:#333}svg .head{font-weight:600;fill:#333}"
    "svg .line{fill:none;stroke-width:1.3}svg .cap{stroke:#b03a2e;stroke-dasharray:3 3}"
    "svg .node rect{fill:#fff;stroke:#888}svg .blk rect{fill:#fdecea;stroke:#b03a2e}"
    "svg .word rect{fill:#eef3fb;stroke:#4c78a8}svg .dead rect{fill:#fff4e0;stroke:#e08a00;"
    "stroke-dasharray:4 2;stroke-width:2}svg .cyc rect{fill:#fbd5d0;stroke:#b03a2e;"
    "stroke-width:2}svg .n1{font-size:11px;fill:#222}svg .n2{font-size:10px;fill:#666}"
    "svg path.e{fill:none;stroke:#777;stroke-width:1.2}svg path.cyc{stroke:#b03a2e;"
    "stroke-width:2}svg path.dead{stroke:#e08a00}"
    ".legend span{display:inline-block;margin-right:12px;font-size:12px}"
    ".legend i{display:inline-block;width:11px;height:11px;margin-right:4px;"
    "vertical-align:-1px;border:1px solid #aaa}";

static int write_outcome(report *r, const char *run_name) {
    FILE *out = r->out;
    char *outcome = meta(r, "outcome"), *msg = meta(r, "outcome_message"), *check = meta(r, "check"),
         *check_msg = meta(r, "check_message"), *kernel = meta(r, "kernel"),
         *cmd = meta(r, "command_line"), *chip = meta(r, "config.chip"),
         *seed = meta(r, "config.seed"), *events = meta(r, "events"),
         *jitter = meta(r, "config.jitter"), *version = meta(r, "npurr_version");
    const char *o = outcome ? outcome : "unknown";
    const char *badge = !strcmp(o, "completed") ? "ok"
                        : !strcmp(o, "deadlock") || !strcmp(o, "watchdog") ? "hung" : "other";
    fputs("<h1>npurr report: ", out);
    svg_esc(out, run_name);
    fprintf(out, "</h1>\n<p><span class=\"badge %s\">", badge);
    svg_esc(out, o);
    fputs("</span> ", out);
    if (msg && *msg && strcmp(msg, o)) svg_esc(out, msg);
    fputs("</p>\n<table class=\"data\">\n<tr><th>check</th><td>", out);
    svg_esc(out, check ? check : "not recorded");
    if (check_msg && *check_msg) {
        fputs(": ", out);
        svg_esc(out, check_msg);
    }
    fputs("</td></tr>\n<tr><th>kernel</th><td>", out);
    svg_esc(out, kernel ? kernel : "?");
    fputs("</td></tr>\n<tr><th>command</th><td><code>", out);
    svg_esc(out, cmd ? cmd : "?");
    char vt[32];
    ana_format_ps((double)r->run.end_time_ps, vt, sizeof vt);
    long long nodes = r->run.npus_per_node > 0 ? r->run.ranks / r->run.npus_per_node : 0;
    fprintf(out, "</code></td></tr>\n<tr><th>cluster</th><td>%lld ranks (%lld node%s x %lld "
            "NPUs), chip ", (long long)r->run.ranks, nodes, nodes == 1 ? "" : "s",
            (long long)r->run.npus_per_node);
    svg_esc(out, chip ? chip : "?");
    fprintf(out, ", %lld cores per rank (%lld AIC)</td></tr>\n", (long long)r->run.cores_per_rank,
            (long long)r->run.num_aic);
    fputs("<tr><th>run</th><td>", out);
    svg_esc(out, events ? events : "?");
    fprintf(out, " events, %s of virtual time, seed ", vt);
    svg_esc(out, seed ? seed : "?");
    fputs(", jitter ", out);
    svg_esc(out, jitter ? jitter : "0");
    fputs(", npurr ", out);
    svg_esc(out, version ? version : "?");
    fputs("</td></tr>\n</table>\n", out);
    free(outcome), free(msg), free(check), free(check_msg), free(kernel), free(cmd);
    free(chip), free(seed), free(events), free(jitter), free(version);
    return 0;
}

static void legend(FILE *out) {
    static const char *const causes[] = {ANA_CAUSE_CREDIT_STARVATION, ANA_CAUSE_FLOW_CONTROL,
                                         ANA_CAUSE_PRODUCER_LATE, ANA_CAUSE_TRANSFER_SLOW,
                                         ANA_CAUSE_BARRIER, "unclassified"};
    fputs("<div class=\"legend\">", out);
    for (size_t i = 0; i < sizeof causes / sizeof causes[0]; i++)
        fprintf(out, "<span><i style=\"background:%s\"></i>%s</span>",
                svg_cause_color(causes[i]), causes[i]);
    fprintf(out, "<span><i style=\"background:%s\"></i>not waiting</span></div>\n",
            svg_cause_color("busy"));
}

/* ------------------------------------------------------------ stalls */

typedef struct heat_cell {
    char role[64];
    int64_t rank;
    double stall, cores;
} heat_cell;

/* The heat map's cells (stall and cores per rank and role) and its rows:
 * the roles, longest-waiting first, at most 32 of them. */
typedef struct heat_rows {
    heat_cell *cell;
    size_t n, cap;
    char roles[32][64];
    int nroles, more_roles;
} heat_rows;

static int load_heat(report *r, heat_rows *h) {
    sqlite3_stmt *st = prepare(r,
        "SELECT g.rank, COALESCE(g.role, '(no role)') AS role, SUM(g.total_ps),"
        " MAX(COUNT(DISTINCT g.core), COALESCE((SELECT COUNT(*) FROM cores c"
        "  WHERE c.rank = g.rank AND c.role IS g.role), 0)),"
        " SUM(SUM(g.total_ps)) OVER (PARTITION BY COALESCE(g.role, '(no role)')) AS role_total"
        " FROM wait_groups g GROUP BY g.rank, g.role ORDER BY role_total DESC, role, g.rank");
    if (!st) return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *role = (const char *)sqlite3_column_text(st, 1);
        int k = 0;
        while (k < h->nroles && strcmp(h->roles[k], role ? role : "")) k++;
        if (k == h->nroles) {
            if (h->nroles == 32) { h->more_roles = 1; continue; }
            snprintf(h->roles[h->nroles++], sizeof h->roles[0], "%s", role ? role : "");
        }
        if (h->n == h->cap) {
            h->cap = h->cap ? h->cap * 2 : 128;
            heat_cell *c = realloc(h->cell, h->cap * sizeof *c);
            if (!c) break;
            h->cell = c;
        }
        heat_cell *c = &h->cell[h->n++];
        snprintf(c->role, sizeof c->role, "%s", role ? role : "");
        c->rank = sqlite3_column_int64(st, 0);
        c->stall = sqlite3_column_double(st, 2);
        c->cores = sqlite3_column_double(st, 3);
    }
    sqlite3_finalize(st);
    return 0;
}

static int write_heatmap(report *r) {
    heat_rows rows = {0};
    if (load_heat(r, &rows)) return -1;
    heat_cell *cell = rows.cell;
    size_t n = rows.n;
    const char (*roles)[64] = rows.roles;
    int nroles = rows.nroles;
    FILE *out = r->out;
    fputs("<h2>Where the cores wait</h2>\n<p>Share of each role's time spent waiting, per rank "
          "(stall time / (its cores x the run's virtual time)). Hover a cell for the figures.</p>\n",
          out);
    if (!nroles) {
        fputs("<p class=\"note\">No waits in this run.</p>\n", out);
        free(cell);
        return 0;
    }
    int64_t ranks = r->run.ranks > 0 ? r->run.ranks : 1;
    double cw = PLOT_W / (double)ranks;
    if (cw > 48) cw = 48;
    double ch = 20, top = 22;
    int h = (int)(top + ch * nroles + 8);
    svg_open(out, "heatmap", (int)(PLOT_X + cw * (double)ranks + 10), h,
             "stall share by rank and role");
    for (int64_t k = 0; k < ranks; k++) {
        char t[32];
        snprintf(t, sizeof t, "r%lld", (long long)k);
        if (ranks <= 24 || k % 4 == 0) svg_text(out, PLOT_X + cw * ((double)k + 0.5), 14, "middle", "tick", t);
    }
    for (int k = 0; k < nroles; k++)
        svg_text(out, PLOT_X - 6, top + ch * k + 14, "end", "lbl", roles[k]);
    for (size_t i = 0; i < n; i++) {
        int k = 0;
        while (k < nroles && strcmp(roles[k], cell[i].role)) k++;
        if (k == nroles || cell[i].rank < 0 || cell[i].rank >= ranks) continue;
        double share = cell[i].cores > 0 && r->run.end_time_ps > 0
                       ? cell[i].stall / (cell[i].cores * (double)r->run.end_time_ps) : 0;
        char color[8], title[200], st_txt[32];
        svg_heat(share, color);
        ana_format_ps(cell[i].stall, st_txt, sizeof st_txt);
        snprintf(title, sizeof title, "rank %lld %s: %.1f%% waiting (%s over %.0f cores)",
                 (long long)cell[i].rank, cell[i].role, 100 * share, st_txt, cell[i].cores);
        double x = PLOT_X + cw * (double)cell[i].rank, y = top + ch * k;
        svg_rect(out, x + 0.5, y + 0.5, cw - 1, ch - 1, color, title);
        if (cw >= 30) {
            char pct[16];
            snprintf(pct, sizeof pct, "%.0f%%", 100 * share);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\" "
                    "font-size=\"10\">%s</text>\n", x + cw / 2, y + 14,
                    share > 0.6 ? "#fff" : "#333", pct);
        }
    }
    svg_close(out);
    svg_heat_scale(out, "share of the role's time spent waiting", "0%", "100%");
    if (rows.more_roles) fputs("<p class=\"note\">Only the 32 roles that wait longest are shown.</p>\n", out);
    free(cell);
    return 0;
}

static int write_sites(report *r) {
    sqlite3_stmt *st = prepare(r,
        "SELECT s.file, s.line, s.function, COALESCE(g.role, ''), g.cause, SUM(g.count),"
        " SUM(g.total_ps), MAX(g.max_ps), COUNT(DISTINCT g.rank * 100000 + g.core)"
        " FROM wait_groups g LEFT JOIN sites s ON s.id = g.site"
        " GROUP BY g.site, g.role, g.cause ORDER BY 7 DESC LIMIT ?1");
    if (!st) return -1;
    sqlite3_bind_int(st, 1, TOP_SITES);
    FILE *out = r->out;
    fprintf(out, "<h3>Top %d stall sites</h3>\n<p>One row per kernel line, role and wait cause "
            "(a line waited on for two causes is two rows); `npurr stats RUN --by site` sums each "
            "kernel line over every role and cause.</p>\n", TOP_SITES);
    fprintf(out, "<table class=\"data\" id=\"sites\"><tr><th>kernel "
            "line</th><th>role</th><th>cause</th><th>waits</th><th>cores</th>"
            "<th>total</th><th>longest</th><th></th></tr>\n");
    double max_total = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double total = sqlite3_column_double(st, 6);
        if (max_total < 0) max_total = total > 0 ? total : 1;
        char t[32], m[32];
        ana_format_ps(total, t, sizeof t);
        ana_format_ps(sqlite3_column_double(st, 7), m, sizeof m);
        fputs("<tr><td><code title=\"", out);
        svg_esc(out, (const char *)sqlite3_column_text(st, 2));
        fputs("\">", out);
        svg_esc(out, basename_of((const char *)sqlite3_column_text(st, 0)));
        fprintf(out, ":%d</code></td><td>", sqlite3_column_int(st, 1));
        svg_esc(out, (const char *)sqlite3_column_text(st, 3));
        const char *cause = (const char *)sqlite3_column_text(st, 4);
        fprintf(out, "</td><td><i style=\"display:inline-block;width:9px;height:9px;"
                "background:%s\"></i> ", svg_cause_color(cause));
        svg_esc(out, cause ? cause : "unclassified");
        fprintf(out, "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td>"
                "<td class=\"num\">%s</td><td class=\"num\">%s</td><td>"
                "<svg width=\"100\" height=\"10\"><rect width=\"%.0f\" height=\"10\" "
                "fill=\"%s\"/></svg></td></tr>\n",
                (long long)sqlite3_column_int64(st, 5), (long long)sqlite3_column_int64(st, 8),
                t, m, 100 * total / max_total, svg_cause_color(cause));
    }
    sqlite3_finalize(st);
    fputs("</table>\n", out);
    return 0;
}

/* ------------------------------------------------------------ rings */

/* Highest occupancy of ring id per pixel column (has[q]: column q has a
 * value), carrying the level across columns; the highest overall. */
static double ring_columns(report *r, sqlite3_stmt *ss, int64_t id, double col_max[BINS],
                           int has[BINS]) {
    double level = 0, peak = 0;
    sqlite3_reset(ss);
    sqlite3_bind_int64(ss, 1, id);
    int prev_bin = 0;
    while (sqlite3_step(ss) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(ss, 0);
        double v = (double)sqlite3_column_int64(ss, 1);
        int b = (int)((double)BINS * (double)t / (double)(r->run.end_time_ps + 1));
        if (b >= BINS) b = BINS - 1;
        if (b < 0) b = 0;
        for (int q = prev_bin; q < b; q++)
            if (!has[q]) col_max[q] = level, has[q] = 1;
        if (!has[b] || v > col_max[b]) col_max[b] = v;
        if (!has[b] && level > col_max[b]) col_max[b] = level;
        has[b] = 1;
        level = v;
        if (v > peak) peak = v;
        prev_bin = b;
    }
    for (int q = prev_bin + 1; q < BINS; q++) col_max[q] = level, has[q] = 1;
    return peak;
}

/* One ring's occupancy plot, ph high at y0: its name and figures on the
 * left, the capacity dashed. ss reads its ring_counters samples. */
static void plot_ring(report *r, sqlite3_stmt *ss, int64_t id, const char *name, int64_t capacity,
                      double waited, double y0, double ph) {
    FILE *out = r->out;
    double cap = capacity > 0 ? (double)capacity : 1;
    double col_max[BINS];
    int has[BINS] = {0};
    double peak = ring_columns(r, ss, id, col_max, has);
    double scale = peak > cap ? peak : cap;
    char title[300], wt[32];
    ana_format_ps(waited, wt, sizeof wt);
    svg_text(out, PLOT_X - 6, y0 + 12, "end", "lbl", name);
    snprintf(title, sizeof title, "cap %lld, waited %s", (long long)capacity, wt);
    svg_text(out, PLOT_X - 6, y0 + 26, "end", "tick", title);
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"cap\"/>\n",
            PLOT_X, y0 + ph - ph * cap / scale, PLOT_X + PLOT_W, y0 + ph - ph * cap / scale);
    fprintf(out, "<path class=\"line\" stroke=\"#4c78a8\" d=\"M%.1f %.1f", PLOT_X, y0 + ph);
    for (int q = 0; q < BINS; q++) {
        double y = y0 + ph - ph * (has[q] ? col_max[q] : 0) / scale;
        fprintf(out, " L%.1f %.1f L%.1f %.1f", PLOT_X + PLOT_W * q / BINS, y,
                PLOT_X + PLOT_W * (q + 1) / BINS, y);
    }
    fprintf(out, " L%.1f %.1f Z\"/>\n", PLOT_X + PLOT_W, y0 + ph);
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n",
            PLOT_X, y0 + ph, PLOT_X + PLOT_W, y0 + ph);
}

static int write_rings(report *r) {
    sqlite3_stmt *st = prepare(r,
        "SELECT rg.id, rg.name, rg.capacity, SUM(w.dur_ps) AS t, COUNT(*)"
        " FROM waits w JOIN objects o ON o.id = w.object JOIN rings rg ON rg.id = o.ring"
        " WHERE w.kind IN ('ring_space', 'ring_data') GROUP BY rg.id ORDER BY t DESC LIMIT ?1");
    sqlite3_stmt *ss = st ? prepare(r, "SELECT time_ps, occupancy FROM ring_counters"
                                       " WHERE ring = ?1 ORDER BY time_ps, seq")
                          : NULL;
    if (!ss) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_int(st, 1, TOP_RINGS);
    FILE *out = r->out;
    fprintf(out, "<h2>Ring occupancy</h2>\n<p>The %d rings whose head or tail were waited on "
            "longest: occupancy (tail - head) over time, highest value per pixel column; the "
            "dashed line is the capacity.</p>\n", TOP_RINGS);
    int64_t ids[TOP_RINGS];
    char names[TOP_RINGS][128];
    int64_t caps[TOP_RINGS];
    double waited[TOP_RINGS];
    int nr = 0;
    while (nr < TOP_RINGS && sqlite3_step(st) == SQLITE_ROW) {
        ids[nr] = sqlite3_column_int64(st, 0);
        snprintf(names[nr], sizeof names[0], "%s",
                 sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "?");
        caps[nr] = sqlite3_column_int64(st, 2);
        waited[nr] = sqlite3_column_double(st, 3);
        nr++;
    }
    sqlite3_finalize(st);
    if (!nr) {
        fputs("<p class=\"note\">No ring was waited on.</p>\n", out);
        sqlite3_finalize(ss);
        return 0;
    }
    const double ph = 56, gap = 22, top = 8;
    int h = (int)(top + (ph + gap) * nr + 22);
    svg_open(out, "rings", (int)(PLOT_X + PLOT_W + 10), h, "ring occupancy over time");
    for (int k = 0; k < nr; k++)
        plot_ring(r, ss, ids[k], names[k], caps[k], waited[k], top + (ph + gap) * k, ph);
    svg_time_axis(out, PLOT_X, PLOT_W, top + (ph + gap) * nr - gap + 2, (uint64_t)r->run.end_time_ps);
    svg_close(out);
    sqlite3_finalize(ss);
    return 0;
}

/* ------------------------------------------------------------ links */

static int64_t link_src_rank(const char *link) {
    const char *p = link ? strchr(link, 'r') : NULL;
    while (p && (p[1] < '0' || p[1] > '9')) p = strchr(p + 1, 'r');
    return p ? strtoll(p + 1, NULL, 10) : -1;
}

/* NIC egress per rank (nic[rank * nb + bucket], GB/s) as a heat map
 * against the NIC's line rate. */
static void write_nic_egress(report *r, const double *nic, int64_t nb, int64_t ranks,
                             int64_t width) {
    FILE *out = r->out;
    /* the timing table's name; runs recorded before it was renamed say roce_gbps */
    char *roce = meta(r, "hw.roce_gbytes_per_s");
    if (!roce) roce = meta(r, "hw.roce_gbps");
    double line = roce ? atof(roce) : 0;
    free(roce);
    double nic_peak = 0;
    for (int64_t i = 0; i < nb * ranks; i++) nic_peak = nic[i] > nic_peak ? nic[i] : nic_peak;
    if (nic_peak <= 0) {
        fputs("<p class=\"note\">No RDMA traffic (one node).</p>\n", out);
        return;
    }
    if (line <= 0) line = nic_peak;
    fprintf(out, "<p>NIC egress (RDMA bytes leaving each rank) as a share of the %.0f GB/s "
            "line rate, per time bucket.</p>\n", line);
    double rh = ranks > 32 ? 8 : 14;
    svg_open(out, "nic", (int)(PLOT_X + PLOT_W + 10), (int)(rh * (double)ranks + 26),
             "NIC egress by rank over time");
    for (int64_t k = 0; k < ranks; k++) {
        char t[32];
        snprintf(t, sizeof t, "rank %lld", (long long)k);
        if (rh >= 12 || k % 4 == 0) svg_text(out, PLOT_X - 6, rh * (double)k + rh - 3, "end", "tick", t);
        for (int64_t b = 0; b < nb; b++) {
            double g = nic[k * nb + b];
            if (g <= 0) continue;
            char color[8], title[96];
            svg_heat(g / line, color);
            snprintf(title, sizeof title, "rank %lld: %.1f GB/s", (long long)k, g);
            double x0 = x_of(r, (uint64_t)(b * width)), x1 = x_of(r, (uint64_t)((b + 1) * width));
            svg_rect(out, x0, rh * (double)k, x1 - x0, rh - 1, color, title);
        }
    }
    svg_time_axis(out, PLOT_X, PLOT_W, rh * (double)ranks + 2, (uint64_t)r->run.end_time_ps);
    svg_close(out);
    char hi[64];
    snprintf(hi, sizeof hi, "%.0f GB/s, the line rate", line);
    svg_heat_scale(out, "NIC egress", "0 GB/s", hi);
}

static int write_links(report *r) {
    FILE *out = r->out;
    fputs("<h2>Links</h2>\n", out);
    if (!ana_has_table(r->db, "link_bandwidth")) {
        fputs("<p class=\"note\">No link_bandwidth table.</p>\n", out);
        return 0;
    }
    int64_t width = ana_meta_i64(r->db, "analysis.bucket_ps", 0);
    int64_t nb = width > 0 ? (r->run.end_time_ps + width - 1) / width : 0;
    if (nb <= 0 || nb > 100000) {
        fputs("<p class=\"note\">No link traffic.</p>\n", out);
        return 0;
    }
    int64_t ranks = r->run.ranks > 0 ? r->run.ranks : 1;
    enum { HBM = 0, HCCS, RDMA, CLASSES };
    static const char *const cls_name[CLASSES] = {"hbm", "hccs", "rdma"};
    static const char *const cls_color[CLASSES] = {"#9d9d9d", "#4c78a8", "#e45756"};
    double *cls = calloc((size_t)nb * CLASSES, sizeof *cls);
    double *nic = calloc((size_t)nb * (size_t)ranks, sizeof *nic);
    sqlite3_stmt *st = NULL;
    if (!cls || !nic) ana_err(r->err, r->errlen, "out of memory");
    else st = prepare(r, "SELECT bucket_ps, link, gbps FROM link_bandwidth");
    if (!st) {
        free(cls);
        free(nic);
        return -1;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t b = sqlite3_column_int64(st, 0) / width;
        const char *link = (const char *)sqlite3_column_text(st, 1);
        double g = sqlite3_column_double(st, 2);
        if (b < 0 || b >= nb || !link) continue;
        int c = !strncmp(link, "hccs", 4) ? HCCS : !strncmp(link, "rdma", 4) ? RDMA : HBM;
        cls[b * CLASSES + c] += g;
        int64_t src = link_src_rank(link);
        if (c == RDMA && src >= 0 && src < ranks) nic[src * nb + b] += g;
    }
    sqlite3_finalize(st);
    /* One panel per link class, each on its own axis: an HBM's thousands
     * of GB/s would flatten the NICs' tens to a line at zero. */
    fputs("<p>Bandwidth summed over all links of a class (GB/s, per time bucket), one panel "
          "per class, each scaled to its own peak.</p>\n", out);
    const double ph = 60, gap = 14, top = 8;
    svg_open(out, "bandwidth", (int)(PLOT_X + PLOT_W + 10), (int)(top + (ph + gap) * CLASSES + 20),
             "link bandwidth over time, one panel per link class");
    for (int c = 0; c < CLASSES; c++) {
        double peak = 0, y0 = top + (ph + gap) * c;
        for (int64_t b = 0; b < nb; b++) peak = cls[b * CLASSES + c] > peak ? cls[b * CLASSES + c] : peak;
        char lab[64];
        svg_text(out, PLOT_X - 6, y0 + 12, "end", "lbl", cls_name[c]);
        snprintf(lab, sizeof lab, "%.4g GB/s", peak);
        svg_text(out, PLOT_X - 6, y0 + 26, "end", "tick", lab);
        svg_text(out, PLOT_X - 6, y0 + ph, "end", "tick", "0");
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n",
                PLOT_X, y0 + ph, PLOT_X + PLOT_W, y0 + ph);
        if (peak <= 0) {
            svg_text(out, PLOT_X + 6, y0 + ph - 6, "start", "tick", "no traffic");
            continue;
        }
        fprintf(out, "<path class=\"line\" id=\"bandwidth-%s\" stroke=\"%s\" d=\"", cls_name[c],
                cls_color[c]);
        for (int64_t b = 0; b < nb; b++) {
            double x0 = x_of(r, (uint64_t)(b * width)), x1 = x_of(r, (uint64_t)((b + 1) * width));
            if (x1 > PLOT_X + PLOT_W) x1 = PLOT_X + PLOT_W;
            double y = y0 + ph - ph * cls[b * CLASSES + c] / peak;
            fprintf(out, "%s%.1f %.1f L%.1f %.1f", b ? " L" : "M", x0, y, x1, y);
        }
        fputs("\"/>\n", out);
    }
    svg_time_axis(out, PLOT_X, PLOT_W, top + (ph + gap) * CLASSES - gap + 2,
                  (uint64_t)r->run.end_time_ps);
    svg_close(out);
    write_nic_egress(r, nic, nb, ranks, width);
    free(cls);
    free(nic);
    return 0;
}

/* ------------------------------------------------------------ activity */

static int cause_index(const char *cause) {
    static const char *const order[] = {ANA_CAUSE_CREDIT_STARVATION, ANA_CAUSE_FLOW_CONTROL,
                                        ANA_CAUSE_PRODUCER_LATE, ANA_CAUSE_TRANSFER_SLOW,
                                        ANA_CAUSE_BARRIER};
    for (int i = 0; cause && i < 5; i++)
        if (!strcmp(cause, order[i])) return i;
    return 5;
}

/* The strips' layers, in cause_index order. */
enum { NC = 6 };
static const char *const activity_layers[NC] = {ANA_CAUSE_CREDIT_STARVATION, ANA_CAUSE_FLOW_CONTROL,
                                                ANA_CAUSE_PRODUCER_LATE, ANA_CAUSE_TRANSFER_SLOW,
                                                ANA_CAUSE_BARRIER, "unclassified"};

/* One rank's strip at y0, rh high: its waiting time per bin and cause
 * (acc[q * NC + c]) over denom (its cores x the bin width), stacked. */
static void activity_strip(FILE *out, const double *acc, double denom, int64_t rank, double y0,
                           double rh) {
    char t[32];
    snprintf(t, sizeof t, "rank %lld", (long long)rank);
    svg_text(out, PLOT_X - 6, y0 + rh / 2 + 4, "end", "tick", t);
    svg_rect(out, PLOT_X, y0, PLOT_W, rh, svg_cause_color("busy"), NULL);
    double base[BINS] = {0};
    for (int c = 0; c < NC; c++) {
        int any = 0;
        for (int q = 0; q < BINS; q++) any |= acc[(size_t)q * NC + (size_t)c] > 0;
        if (!any) continue;
        /* A step outline: top edge left to right, base edge back (V/H
         * commands only where the level changes, to keep the page small). */
        fprintf(out, "<path fill=\"%s\" d=\"M%.1f %.1f", svg_cause_color(activity_layers[c]),
                PLOT_X, y0 + rh - rh * base[0]);
        double top[BINS], last = -1;
        for (int q = 0; q < BINS; q++) {
            double v = acc[(size_t)q * NC + (size_t)c] / denom;
            top[q] = base[q] + v > 1 ? 1 : base[q] + v;
            double y = y0 + rh - rh * top[q];
            if (y != last) fprintf(out, "V%.1f", y);
            fprintf(out, "H%.1f", PLOT_X + PLOT_W * (q + 1) / BINS);
            last = y;
        }
        last = -1;
        for (int q = BINS - 1; q >= 0; q--) {
            double y = y0 + rh - rh * base[q];
            if (y != last) fprintf(out, "V%.1f", y);
            fprintf(out, "H%.1f", PLOT_X + PLOT_W * q / BINS);
            last = y;
        }
        fprintf(out, " Z\"><title>rank %lld: %s</title></path>\n", (long long)rank,
                activity_layers[c]);
        memcpy(base, top, sizeof base);
    }
}

static int write_activity(report *r) {
    FILE *out = r->out;
    int64_t ranks = r->run.ranks > 0 ? r->run.ranks : 1;
    double *acc = calloc((size_t)ranks * BINS * NC, sizeof *acc);
    double *cores = calloc((size_t)ranks, sizeof *cores);
    if (!acc || !cores) {
        free(acc);
        free(cores);
        ana_err(r->err, r->errlen, "out of memory");
        return -1;
    }
    sqlite3_stmt *st = NULL;
    const char *csql = "SELECT rank, COUNT(*) FROM cores GROUP BY rank";
    if (sqlite3_prepare_v2(r->db, csql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t k = sqlite3_column_int64(st, 0);
            if (k >= 0 && k < ranks) cores[k] = sqlite3_column_double(st, 1);
        }
    }
    sqlite3_finalize(st);
    st = prepare(r, "SELECT rank, cause, begin_ps, end_ps FROM waits");
    if (!st) {
        free(acc);
        free(cores);
        return -1;
    }
    double binw = (double)(r->run.end_time_ps > 0 ? r->run.end_time_ps : 1) / BINS;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t k = sqlite3_column_int64(st, 0);
        if (k < 0 || k >= ranks) continue;
        int c = cause_index((const char *)sqlite3_column_text(st, 1));
        double b0 = sqlite3_column_double(st, 2), b1 = sqlite3_column_double(st, 3);
        for (int q = (int)(b0 / binw); q < BINS && q * binw < b1; q++) {
            double lo = q * binw > b0 ? q * binw : b0, hi = (q + 1) * binw < b1 ? (q + 1) * binw : b1;
            if (q >= 0 && hi > lo) acc[((size_t)k * BINS + (size_t)q) * NC + (size_t)c] += hi - lo;
        }
    }
    sqlite3_finalize(st);
    fputs("<h2>Activity per rank</h2>\n<p>For each rank, the share of its cores waiting at each "
          "moment, stacked by cause; the pale background is time not spent waiting.</p>\n", out);
    legend(out);
    double rh = ranks > 32 ? 14 : 26, gap = 3;
    svg_open(out, "activity", (int)(PLOT_X + PLOT_W + 10), (int)((rh + gap) * (double)ranks + 24),
             "per-rank activity strips");
    for (int64_t k = 0; k < ranks; k++)
        activity_strip(out, acc + (size_t)k * BINS * NC, (cores[k] > 0 ? cores[k] : 1) * binw, k,
                       (rh + gap) * (double)k, rh);
    svg_time_axis(out, PLOT_X, PLOT_W, (rh + gap) * (double)ranks + 2, (uint64_t)r->run.end_time_ps);
    svg_close(out);
    free(acc);
    free(cores);
    return 0;
}

/* ------------------------------------------------------------ entry */

int ana_report_html(sqlite3 *db, const char *run_name, FILE *out, char *err, size_t errlen) {
    report r = {.db = db, .out = out, .err = err, .errlen = errlen};
    if (ana_run_load(db, &r.run, err, errlen)) return -1;
    if (!ana_has_table(db, "wait_groups") || !ana_has_table(db, "cores")) {
        ana_err(err, errlen, "index.db lacks the analysis tables (wait_groups, cores): open it "
                "with ana_open, as `npurr report` does");
        return -1;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>npurr "
          "report: ", out);
    svg_esc(out, run_name);
    fprintf(out, "</title>\n<style>%s</style>\n</head><body>\n", css);
    int rc = write_outcome(&r, run_name);
    /* A run that hung: the graph that explains it comes right after the outcome. */
    if (!rc) rc = ana_report_waitfor(db, &r.run, out, err, errlen);
    if (!rc) rc = write_heatmap(&r);
    if (!rc) rc = write_sites(&r);
    if (!rc) rc = ana_report_critical(db, &r.run, out, err, errlen);
    if (!rc) rc = write_activity(&r);
    if (!rc) rc = write_rings(&r);
    if (!rc) rc = write_links(&r);
    fputs("<p class=\"note\">Written by npurr report from the run's index.db; every figure is "
          "also a query away (docs/sql.md).</p>\n</body></html>\n", out);
    if (!rc && ferror(out)) {
        ana_err(err, errlen, "writing the report failed (disk full?)");
        rc = -1;
    }
    return rc;
}
