/*
 * ana_waitfor.c - the wait-for graph of `npurr report` for a run that hung
 * (a deadlock, a watchdog, or any wait that never ended).
 *
 * Three columns, read left to right: the blocked core -> the word it waits
 * on (what it needs and the value now) -> the core that last wrote that
 * word, which is the one that should have advanced it. For a ring word
 * nobody wrote, the core blocked on the ring's other word stands in (the
 * producer for a tail, the consumer for a head), as README's cause rule 6
 * does. A writer that is itself blocked continues the chain: following it
 * either closes a cycle (drawn red) or stops at a core that is not blocked
 * or a word nobody wrote: the dead end (drawn orange). Above the graph, a
 * summary counts the edges by role so a hang over 16 ranks x 48 cores
 * reads in a few lines; the graph itself shows the first
 * ANA_WAITFOR_MAX_ROWS blocked waits.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_report.h"

/* A core of the graph: the blocked one, or the last writer of its word. */
typedef struct party {
    int64_t rank, core;
    char *name, *role;   /* "r0 AIV5", "RDMASender" ("" none) */
} party;

typedef struct bwait {
    party who;
    int64_t object, ring, seen;
    char *label, *cause, *obj_kind;
    int has_writer;
    party writer;
    int64_t w_time;
    char *w_how;
    int next;          /* the writer's own blocked wait, -1 none */
    int in_cycle;      /* 1: on a cycle */
    int dead_end;      /* 1: the chain from here ends at a core not blocked / nobody */
} bwait;

static char *dup_col(sqlite3_stmt *st, int c) {
    const char *t = (const char *)sqlite3_column_text(st, c);
    return strdup(t ? t : "");
}

/* rank, core, name, role from columns c..c+3. */
static party party_col(sqlite3_stmt *st, int c) {
    return (party){.rank = sqlite3_column_int64(st, c), .core = sqlite3_column_int64(st, c + 1),
                   .name = dup_col(st, c + 2), .role = dup_col(st, c + 3)};
}

static void party_free(party *p) {
    free(p->name), free(p->role);
}

static int same_core(const party *a, const party *b) {
    return a->rank == b->rank && a->core == b->core;
}

static void free_rows(bwait *w, int n) {
    for (int i = 0; i < n; i++) {
        party_free(&w[i].who), party_free(&w[i].writer);
        free(w[i].label), free(w[i].cause), free(w[i].obj_kind), free(w[i].w_how);
    }
    free(w);
}

static int load(sqlite3 *db, bwait **out, int *n, char *err, size_t errlen) {
    const char *sql =
        "SELECT w.rank, w.core, c.name, COALESCE(w.role, c.role, ''), COALESCE(l.label, w.kind),"
        " w.seen, COALESCE(w.cause, ''), COALESCE(w.object, -1), COALESCE(o.ring, -1),"
        " COALESCE(o.kind, ''), lw.rank, lw.core, lw.core_name, COALESCE(lw.role, ''),"
        " COALESCE(lw.xfer, lw.kind), lw.time_ps"
        " FROM waits w JOIN cores c ON c.rank = w.rank AND c.core = w.core"
        " LEFT JOIN wait_labels l ON l.begin_seq = w.begin_seq"
        " LEFT JOIN objects o ON o.id = w.object"
        " LEFT JOIN last_writers lw ON lw.object = w.object"
        " WHERE w.end_seq IS NULL ORDER BY w.rank, w.core, w.begin_seq";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (the blocked waits)", sqlite3_errmsg(db));
        return -1;
    }
    int cap = 0, rc;
    bwait *w = NULL;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            bwait *q = realloc(w, (size_t)cap * sizeof *q);
            if (!q) break;
            w = q;
        }
        bwait *b = &w[(*n)++];
        *b = (bwait){.who = party_col(st, 0), .label = dup_col(st, 4),
                     .seen = sqlite3_column_int64(st, 5), .cause = dup_col(st, 6),
                     .object = sqlite3_column_int64(st, 7), .ring = sqlite3_column_int64(st, 8),
                     .obj_kind = dup_col(st, 9),
                     .has_writer = sqlite3_column_type(st, 10) != SQLITE_NULL,
                     .writer = party_col(st, 10), .w_how = dup_col(st, 14),
                     .w_time = sqlite3_column_int64(st, 15), .next = -1};
    }
    sqlite3_finalize(st);
    *out = w;
    if (rc != SQLITE_DONE) {
        ana_err(err, errlen, "index.db: reading the blocked waits failed (out of memory?)");
        return -1;
    }
    return 0;
}

/* For a ring word nobody wrote: the core blocked on the ring's other word. */
static int partner_writers(sqlite3 *db, bwait *w, int n) {
    const char *sql = "SELECT CASE WHEN head_object = ?1 THEN tail_object ELSE head_object END"
                      " FROM rings WHERE id = ?2";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    for (int i = 0; i < n; i++) {
        if (w[i].has_writer || w[i].ring < 0) continue;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, w[i].object);
        sqlite3_bind_int64(st, 2, w[i].ring);
        if (sqlite3_step(st) != SQLITE_ROW) continue;
        int64_t other = sqlite3_column_int64(st, 0);
        for (int j = 0; j < n; j++) {
            if (w[j].object != other) continue;
            w[i].has_writer = 1;
            party_free(&w[i].writer);
            w[i].writer = (party){.rank = w[j].who.rank, .core = w[j].who.core,
                                  .name = strdup(w[j].who.name), .role = strdup(w[j].who.role)};
            free(w[i].w_how);
            w[i].w_how = strdup("nobody wrote it; blocked on the ring's other word");
            w[i].w_time = -1;
            break;
        }
    }
    sqlite3_finalize(st);
    return 0;
}

/* next[], then each chain followed to its cycle or dead end. */
static void follow_chains(bwait *w, int n) {
    for (int i = 0; i < n; i++) {
        if (!w[i].has_writer) continue;
        for (int j = 0; j < n; j++)
            if (same_core(&w[j].who, &w[i].writer)) {
                w[i].next = j;
                break;
            }
    }
    int *mark = calloc((size_t)n + 1, sizeof *mark);   /* 0 new, 1 on path, 2 done */
    if (!mark) return;
    for (int i = 0; i < n; i++) {
        int k = i;
        while (k >= 0 && mark[k] == 0) {
            mark[k] = 1;
            k = w[k].next;
        }
        if (k >= 0 && mark[k] == 1) {
            /* k is on the current path: the loop from k is a cycle. */
            int c = k;
            do {
                w[c].in_cycle = 1;
                c = w[c].next;
            } while (c != k && c >= 0);
        }
        int dead = k < 0;
        for (int c = i; c >= 0 && mark[c] == 1; c = w[c].next) {
            mark[c] = 2;
            w[c].dead_end = dead && !w[c].in_cycle;
        }
    }
    free(mark);
}

static void summary(FILE *out, const bwait *w, int n) {
    fputs("<table class=\"data\"><tr><th>blocked cores</th><th>role</th><th>waiting on</th>"
          "<th>last writer (should advance it)</th><th>chain</th></tr>\n", out);
    int *done = calloc((size_t)n + 1, sizeof *done);
    for (int i = 0; i < n && done; i++) {
        if (done[i]) continue;
        int count = 0;
        for (int j = i; j < n; j++) {
            if (done[j] || strcmp(w[j].who.role, w[i].who.role) ||
                strcmp(w[j].obj_kind, w[i].obj_kind) ||
                strcmp(w[j].writer.role, w[i].writer.role) || w[j].has_writer != w[i].has_writer ||
                (w[j].next >= 0) != (w[i].next >= 0) || w[j].in_cycle != w[i].in_cycle)
                continue;
            done[j] = 1;
            count++;
        }
        fprintf(out, "<tr><td class=\"num\">%d</td><td>", count);
        svg_esc(out, *w[i].who.role ? w[i].who.role : "(no role)");
        fputs("</td><td>", out);
        svg_esc(out, *w[i].obj_kind ? w[i].obj_kind : "flag/pipe/barrier");
        fputs(" (e.g. ", out);
        svg_esc(out, w[i].label);
        fputs(")</td><td>", out);
        const party *wr = &w[i].writer;
        if (w[i].has_writer) svg_esc(out, *wr->role ? wr->role : wr->name);
        else fputs("nobody", out);
        fprintf(out, "</td><td>%s</td></tr>\n",
                w[i].in_cycle ? "<span class=\"bad\">cycle</span>"
                : w[i].next >= 0 ? "writer blocked too"
                : "<span class=\"warn\">dead end: writer not blocked</span>");
    }
    free(done);
    fputs("</table>\n", out);
}

static void node(FILE *out, double x, double y, double w, const char *cls, const char *l1,
                 const char *l2, const char *title) {
    fprintf(out, "<g class=\"%s\"><title>", cls);
    svg_esc(out, title);
    fprintf(out, "</title><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"26\" rx=\"4\"/>", x,
            y, w);
    char a[80];
    snprintf(a, sizeof a, "%.*s%s", 52, l1, strlen(l1) > 52 ? "..." : "");
    svg_text(out, x + 5, y + (l2 ? 11 : 17), "start", "n1", a);
    if (l2) {
        snprintf(a, sizeof a, "%.*s%s", 60, l2, strlen(l2) > 60 ? "..." : "");
        svg_text(out, x + 5, y + 22, "start", "n2", a);
    }
    fputs("</g>\n", out);
}

static void edge(FILE *out, double x1, double y1, double x2, double y2, const char *cls) {
    double mx = (x1 + x2) / 2;
    fprintf(out, "<path class=\"%s\" d=\"M%.0f %.0f C%.0f %.0f %.0f %.0f %.0f %.0f\" "
            "marker-end=\"url(#arrow)\"/>\n", cls, x1, y1, mx, y1, mx, y2, x2 - 2, y2);
}

static void graph(FILE *out, const bwait *w, int n) {
    int rows = n < ANA_WAITFOR_MAX_ROWS ? n : ANA_WAITFOR_MAX_ROWS;
    /* Writers, deduplicated, in order of first use. */
    int *writer_of = calloc((size_t)rows + 1, sizeof *writer_of), nwriters = 0;
    int *first = calloc((size_t)rows + 1, sizeof *first);
    if (!writer_of || !first) {
        free(writer_of);
        free(first);
        return;
    }
    for (int i = 0; i < rows; i++) {
        writer_of[i] = -1;
        if (!w[i].has_writer) continue;
        for (int k = 0; k < nwriters; k++)
            if (same_core(&w[first[k]].writer, &w[i].writer))
                writer_of[i] = k;
        if (writer_of[i] < 0) {
            first[nwriters] = i;
            writer_of[i] = nwriters++;
        }
    }
    const double rh = 32, top = 34, c0 = 10, c1 = 300, c2 = 680, bw0 = 250, bw1 = 330, bw2 = 300;
    int h = (int)(top + rh * rows + 20);
    char label[128];
    snprintf(label, sizeof label, "wait-for graph of %d blocked waits", n);
    svg_open(out, "waitfor", 990, h, label);
    fputs("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
          "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
          "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#555\"/></marker></defs>\n", out);
    svg_text(out, c0, 16, "start", "head", "blocked core");
    svg_text(out, c1, 16, "start", "head", "waits on (needs, value now)");
    svg_text(out, c2, 16, "start", "head", "last writer: should have advanced it");
    double wy0 = top, wstep = nwriters > 0 ? rh * rows / nwriters : rh;
    if (wstep > rh * 2) wstep = rh;
    for (int i = 0; i < rows; i++) {
        const bwait *b = &w[i];
        double y = top + rh * i;
        const char *cls = b->in_cycle ? "node cyc" : "node blk";
        char l1[200], t[600];
        snprintf(l1, sizeof l1, "%s %s", b->who.name, b->who.role);
        snprintf(t, sizeof t, "%s (%s) blocked forever; cause %s", b->who.name, b->who.role,
                 b->cause);
        node(out, c0, y, bw0, cls, l1, NULL, t);
        char l2[300];
        snprintf(l1, sizeof l1, "%s", b->label);
        snprintf(l2, sizeof l2, "now %lld", (long long)b->seen);
        snprintf(t, sizeof t, "%s, current value %lld", b->label, (long long)b->seen);
        node(out, c1, y, bw1, b->in_cycle ? "node cyc" : "node word", l1, l2, t);
        edge(out, c0 + bw0, y + 13, c1, y + 13, b->in_cycle ? "e cyc" : "e");
        if (writer_of[i] < 0) {
            svg_text(out, c1 + bw1 + 8, y + 15, "start", "warn", "nobody wrote it: dead end");
            continue;
        }
        double wy = wy0 + wstep * writer_of[i];
        edge(out, c1 + bw1, y + 13, c2, wy + 13, b->in_cycle ? "e cyc" : b->dead_end ? "e dead" : "e");
    }
    for (int k = 0; k < nwriters; k++) {
        const bwait *b = &w[first[k]];
        double y = wy0 + wstep * k;
        char l1[200], l2[200], t[600], when[32] = "";
        if (b->w_time >= 0) ana_format_ps((double)b->w_time, when, sizeof when);
        snprintf(l1, sizeof l1, "%s %s", b->writer.name, b->writer.role);
        if (b->in_cycle) snprintf(l2, sizeof l2, "blocked too: cycle");
        else if (b->next >= 0) snprintf(l2, sizeof l2, "blocked too (see its own wait)");
        else snprintf(l2, sizeof l2, "not blocked: dead end%s%s", *when ? ", last write " : "",
                      when);
        snprintf(t, sizeof t, "%s (%s): %s%s%s", b->writer.name, b->writer.role, b->w_how,
                 *when ? " at " : "", when);
        node(out, c2, y, bw2, b->in_cycle ? "node cyc" : b->next >= 0 ? "node blk" : "node dead",
             l1, l2, t);
    }
    svg_close(out);
    free(writer_of);
    free(first);
}

int ana_report_waitfor(sqlite3 *db, const ana_run *run, FILE *out, char *err, size_t errlen) {
    (void)run;
    bwait *w = NULL;
    int n = 0;
    if (load(db, &w, &n, err, errlen)) {
        free_rows(w, n);
        return -1;
    }
    if (n == 0) {
        free_rows(w, n);
        return 0;
    }
    partner_writers(db, w, n);
    follow_chains(w, n);
    int cycles = 0, dead = 0;
    for (int i = 0; i < n; i++) cycles += w[i].in_cycle, dead += w[i].dead_end;
    fprintf(out, "<section id=\"waitfor-section\"><h2>Wait-for graph</h2>\n<p>%d waits never "
            "ended. Each blocked core waits on a word; the core that last wrote it is the one "
            "that should have advanced it. %d are on a cycle; %d chains end at a core that is "
            "not blocked or a word nobody wrote (the dead end: look there).</p>\n", n, cycles,
            dead);
    summary(out, w, n);
    if (n > ANA_WAITFOR_MAX_ROWS)
        fprintf(out, "<p class=\"note\">The graph shows the first %d of %d blocked waits "
                "(by rank, core).</p>\n", ANA_WAITFOR_MAX_ROWS, n);
    graph(out, w, n);
    fputs("</section>\n", out);
    free_rows(w, n);
    return 0;
}
