/*
 * ana_export.c - `npurr export RUN --chrome OUT.json`: the run as Chrome
 * trace event JSON, which ui.perfetto.dev and chrome://tracing open.
 *
 * Mapping (ts and dur are microseconds in the format; virtual ps / 10^6):
 *   process per rank        pid = rank, process_name "rank 3 (node 0)"
 *   thread per track        tid = track id; the core's scalar track is named
 *                           after the core and its role ("AIV5 RDMASender"),
 *                           queue tracks after the queue ("AIV5 MTE2")
 *   waits                   X slices "wait <what>" on the waiting track
 *   transfers               X slices on their queue's track ("MTE2 4096 B")
 *   wakers                  a zero-length X slice "wake: <event>" on the
 *                           waking track, and a flow arrow (s -> f, id =
 *                           waits.id) from it to the wait it ended
 *   ring occupancy          C counters "ring <name>" in the ring owner's
 *                           process
 * Slices on one thread must nest. Rows are read per track in start order
 * (longest first on ties) and checked against a stack of open slices; a
 * slice that would overlap without nesting (transfers sharing a queue's
 * bandwidth, typically) becomes an async b/e pair with its own id instead.
 *
 * Output streams: rows go from SQLite to the file one at a time, and the
 * only memory that grows is the per-thread nesting stack.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/ana_internal.h"

typedef struct exporter {
    sqlite3 *db;
    FILE *out;
    ana_run run;
    uint64_t from, to;
    uint8_t *ranks;        /* bitmap of included ranks */
    int first;             /* no event written yet (comma handling) */
    uint64_t *stack;       /* end times of the open slices of the current track */
    size_t depth, cap;
    int64_t cur_track;
    uint64_t async_id;
    uint64_t slices, asyncs, flows, counters;
    char *err;
    size_t errlen;
} exporter;

static int rank_in(const exporter *x, int64_t r) {
    return r >= 0 && r < x->run.ranks && (x->ranks[r / 8] >> (r % 8) & 1);
}

static void begin_event(exporter *x) {
    fputs(x->first ? "\n" : ",\n", x->out);
    x->first = 0;
}

static int sql_fail(exporter *x, const char *sql) {
    ana_err(x->err, x->errlen, "index.db: %s (in: %.300s)", sqlite3_errmsg(x->db), sql);
    return -1;
}

/* ------------------------------------------------------------ metadata */

static int write_metadata(exporter *x) {
    const char *sql =
        "SELECT t.id, t.rank, t.pipe, c.name, c.role FROM tracks t"
        " LEFT JOIN cores c ON c.rank = t.rank AND c.core = t.core ORDER BY t.rank, t.id";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(x, sql);
    const char *spipe = engine_pipe_name(PIPE_S);
    int64_t last_rank = -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t track = sqlite3_column_int64(st, 0), rank = sqlite3_column_int64(st, 1);
        if (!rank_in(x, rank)) continue;
        if (rank != last_rank) {
            last_rank = rank;
            begin_event(x);
            fprintf(x->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"tid\":0,"
                    "\"args\":{\"name\":\"rank %lld (node %lld)\"}}",
                    (long long)rank, (long long)rank, (long long)(rank / x->run.npus_per_node));
            begin_event(x);
            fprintf(x->out, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%lld,"
                    "\"tid\":0,\"args\":{\"sort_index\":%lld}}",
                    (long long)rank, (long long)rank);
        }
        const char *pipe = (const char *)sqlite3_column_text(st, 2);
        const char *core = (const char *)sqlite3_column_text(st, 3);
        const char *role = (const char *)sqlite3_column_text(st, 4);
        /* "r3 AIV5" -> "AIV5": the process already says the rank. */
        const char *sp = core ? strchr(core, ' ') : NULL;
        const char *label = sp ? sp + 1 : core ? core : "core";
        int scalar = pipe && spipe && !strcmp(pipe, spipe);
        char name[256];
        if (scalar) snprintf(name, sizeof name, "%s%s%s", label, role ? " " : "", role ? role : "");
        else snprintf(name, sizeof name, "%s %s", label, pipe ? pipe : "?");
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,"
                "\"args\":{\"name\":", (long long)rank, (long long)track);
        ana_json_str(x->out, name);
        fputs("}}", x->out);
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%lld,"
                "\"tid\":%lld,\"args\":{\"sort_index\":%lld}}",
                (long long)rank, (long long)track, (long long)track);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sql_fail(x, sql);
}

/* ------------------------------------------------------------ slices */

/* Columns of the slice query, per row type:
 *   type 0 wait:     name=label, a1=kind, a2=cause, n1=expected, n2=seen,
 *                    n3=waker rank, n4=waker name ("r0 AIV1 Consumer"), flow
 *   type 1 transfer: name=kind, a1=pipe, n1=bytes, n2=src rank, n3=dst rank,
 *                    n4=issue ps
 *   type 2 waker:    name=event kind, a1=xfer kind, a2=object name,
 *                    n1=waiting rank, flow id = id (the wait's id) */
static const char *const slice_sql =
    "SELECT * FROM ("
    " SELECT 0 AS type, w.track AS track, w.rank AS rank, w.begin_ps AS t0,"
    "  w.end_ps - w.begin_ps AS dur, w.id AS id, COALESCE(l.label, w.kind) AS name,"
    "  w.kind AS a1, w.cause AS a2, w.expected AS n1, w.seen AS n2, we.rank AS n3,"
    "  COALESCE(wc.name || COALESCE(' ' || wc.role, ''), 'r' || we.rank || ' core ' || we.core)"
    "  AS n4, s.file AS file, s.line AS line, s.function AS func,"
    "  (w.end_seq IS NOT NULL AND w.waker_track IS NOT NULL AND we.seq IS NOT NULL"
    "   AND w.end_ps > w.begin_ps) AS flow"
    " FROM waits w LEFT JOIN wait_labels l ON l.begin_seq = w.begin_seq"
    "  LEFT JOIN wake_events we ON we.seq = w.waker_seq"
    "  LEFT JOIN cores wc ON wc.rank = we.rank AND wc.core = we.core"
    "  LEFT JOIN sites s ON s.id = w.site"
    " WHERE w.begin_ps <= ?2 AND w.end_ps >= ?1"
    " UNION ALL"
    " SELECT 1, t.id, x.rank, COALESCE(x.start_ps, x.issue_ps),"
    "  COALESCE(x.done_ps, ?3) - COALESCE(x.start_ps, x.issue_ps), x.id, x.kind,"
    "  x.pipe, NULL, x.bytes, x.src_rank, x.dst_rank, x.issue_ps, s.file, s.line,"
    "  s.function, 0"
    " FROM transfers x JOIN tracks t ON t.rank = x.rank AND t.core = x.core AND t.pipe = x.pipe"
    "  LEFT JOIN sites s ON s.id = x.site"
    " WHERE COALESCE(x.start_ps, x.issue_ps) <= ?2 AND COALESCE(x.done_ps, ?3) >= ?1"
    " UNION ALL"
    " SELECT 2, w.waker_track, we.rank, we.time_ps, 0, w.id, we.kind, we.xfer, o.name,"
    "  w.rank, NULL, NULL, NULL, NULL, NULL, NULL, 1"
    " FROM waits w JOIN wake_events we ON we.seq = w.waker_seq"
    "  LEFT JOIN objects o ON o.id = we.object"
    " WHERE w.end_seq IS NOT NULL AND w.waker_track IS NOT NULL AND w.end_ps > w.begin_ps"
    "  AND w.begin_ps <= ?2 AND w.end_ps >= ?1"
    ") ORDER BY track, t0, dur DESC, type";

static int push_open(exporter *x, uint64_t end) {
    if (x->depth == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        uint64_t *p = realloc(x->stack, cap * sizeof *p);
        if (!p) return -1;
        x->stack = p;
        x->cap = cap;
    }
    x->stack[x->depth++] = end;
    return 0;
}

/* 1 if [t0, t0 + dur] nests in the open slices of its track (and is now
 * open), 0 if it must go async. */
static int nests(exporter *x, int64_t track, uint64_t t0, uint64_t dur, int *oom) {
    if (track != x->cur_track) {
        x->cur_track = track;
        x->depth = 0;
    }
    while (x->depth && x->stack[x->depth - 1] <= t0) x->depth--;
    uint64_t end = t0 + dur;
    if (x->depth && end > x->stack[x->depth - 1]) return 0;
    if (push_open(x, end)) *oom = 1;
    return 1;
}

static const char *col_text(sqlite3_stmt *st, int c) {
    return sqlite3_column_type(st, c) == SQLITE_NULL ? NULL
                                                     : (const char *)sqlite3_column_text(st, c);
}

static void write_site_arg(exporter *x, sqlite3_stmt *st) {
    const char *file = col_text(st, 13);
    if (!file) return;
    char site[512];
    snprintf(site, sizeof site, "%s:%d %s", file, sqlite3_column_int(st, 14),
             col_text(st, 15) ? col_text(st, 15) : "?");
    fputs(",\"site\":", x->out);
    ana_json_str(x->out, site);
}

/* The common head of a slice: X, or the b half of an async pair. */
static void slice_head(exporter *x, const char *ph, int64_t rank, int64_t track, uint64_t t0,
                       const char *cat, const char *name) {
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"ts\":", ph, (long long)rank,
            (long long)track);
    ana_json_us(x->out, t0);
    fprintf(x->out, ",\"cat\":\"%s\",\"name\":", cat);
    ana_json_str(x->out, name);
}

static void slice_tail(exporter *x, int async, int64_t rank, int64_t track, uint64_t t0,
                       uint64_t dur, const char *cat, const char *name, uint64_t id) {
    if (!async) return;
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"e\",\"pid\":%lld,\"tid\":%lld,\"ts\":", (long long)rank,
            (long long)track);
    ana_json_us(x->out, t0 + dur);
    fprintf(x->out, ",\"cat\":\"%s\",\"id\":%llu,\"name\":", cat, (unsigned long long)id);
    ana_json_str(x->out, name);
    fputs("}", x->out);
}

static void write_flow(exporter *x, const char *ph, int64_t rank, int64_t track, uint64_t ts,
                       int64_t id) {
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"%s\",%s\"pid\":%lld,\"tid\":%lld,\"ts\":", ph,
            ph[0] == 'f' ? "\"bp\":\"e\"," : "", (long long)rank, (long long)track);
    ana_json_us(x->out, ts);
    fprintf(x->out, ",\"cat\":\"wake\",\"name\":\"wake\",\"id\":%lld}", (long long)id);
}

static int write_slices(exporter *x) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(x->db, slice_sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, slice_sql);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)x->from);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(x->to > INT64_MAX ? INT64_MAX : x->to));
    sqlite3_bind_int64(st, 3, x->run.end_time_ps);
    x->cur_track = -1;
    int rc, oom = 0;
    while (!oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int type = sqlite3_column_int(st, 0);
        int64_t track = sqlite3_column_int64(st, 1), rank = sqlite3_column_int64(st, 2);
        int64_t t0s = sqlite3_column_int64(st, 3), durs = sqlite3_column_int64(st, 4);
        uint64_t t0 = t0s > 0 ? (uint64_t)t0s : 0, dur = durs > 0 ? (uint64_t)durs : 0;
        int64_t id = sqlite3_column_int64(st, 5);
        const char *name = col_text(st, 6);
        int flow = sqlite3_column_int(st, 16);
        if (!rank_in(x, rank)) continue;
        if (type == 2) {
            /* Waker marker: rank here is the waker's; column n1 the waiter's. */
            if (!rank_in(x, sqlite3_column_int64(st, 9))) continue;
            nests(x, track, t0, 0, &oom);
            const char *xk = col_text(st, 7), *obj = col_text(st, 8);
            char label[320];
            snprintf(label, sizeof label, "wake: %s%s%s%s%s", name ? name : "?", xk ? " " : "",
                     xk ? xk : "", obj ? " " : "", obj ? obj : "");
            slice_head(x, "X", rank, track, t0, "wake", label);
            fprintf(x->out, ",\"dur\":0,\"args\":{\"wait\":%lld}}", (long long)id);
            write_flow(x, "s", rank, track, t0, id);
            x->flows++;
            continue;
        }
        int fits = nests(x, track, t0, dur, &oom);
        uint64_t aid = fits ? 0 : ++x->async_id;
        const char *cat = type == 0 ? "wait" : "transfer";
        char label[400];
        if (type == 0) {
            snprintf(label, sizeof label, "wait %s", name ? name : "?");
        } else {
            long long bytes = sqlite3_column_int64(st, 9);
            if (sqlite3_column_type(st, 10) != SQLITE_NULL &&
                sqlite3_column_int64(st, 10) != sqlite3_column_int64(st, 11))
                snprintf(label, sizeof label, "%s %lld B r%lld->r%lld", name ? name : "?", bytes,
                         (long long)sqlite3_column_int64(st, 10),
                         (long long)sqlite3_column_int64(st, 11));
            else
                snprintf(label, sizeof label, "%s %lld B", name ? name : "?", bytes);
        }
        slice_head(x, fits ? "X" : "b", rank, track, t0, cat, label);
        if (fits) {
            fputs(",\"dur\":", x->out);
            ana_json_us(x->out, dur);
        } else {
            fprintf(x->out, ",\"id\":%llu", (unsigned long long)aid);
        }
        fputs(",\"args\":{", x->out);
        if (type == 0) {
            fputs("\"kind\":", x->out);
            ana_json_str(x->out, col_text(st, 7));
            if (col_text(st, 8)) {
                fputs(",\"cause\":", x->out);
                ana_json_str(x->out, col_text(st, 8));
            }
            fprintf(x->out, ",\"expected\":%lld,\"seen\":%lld,\"wait\":%lld",
                    (long long)sqlite3_column_int64(st, 9),
                    (long long)sqlite3_column_int64(st, 10), (long long)id);
            if (sqlite3_column_type(st, 11) != SQLITE_NULL) {
                fputs(",\"waker\":", x->out);
                ana_json_str(x->out, col_text(st, 12));
            }
        } else {
            fputs("\"pipe\":", x->out);
            ana_json_str(x->out, col_text(st, 7));
            fprintf(x->out, ",\"bytes\":%lld,\"issue_us\":", (long long)sqlite3_column_int64(st, 9));
            ana_json_us(x->out, (uint64_t)sqlite3_column_int64(st, 12));
        }
        write_site_arg(x, st);
        fputs("}}", x->out);
        slice_tail(x, !fits, rank, track, t0, dur, cat, label, aid);
        if (fits) x->slices++;
        else x->asyncs++;
        /* The arrow lands inside the wait, just before it ends, so viewers
         * bind it to this slice and not to one that starts as it ends. */
        if (type == 0 && flow && rank_in(x, sqlite3_column_int64(st, 11))) {
            uint64_t back = dur / 2 < 1000 ? dur / 2 : 1000;
            write_flow(x, "f", rank, track, t0 + dur - back, id);
        }
    }
    sqlite3_finalize(st);
    if (oom) {
        ana_err(x->err, x->errlen, "out of memory tracking slice nesting");
        return -1;
    }
    return rc == SQLITE_DONE ? 0 : sql_fail(x, slice_sql);
}

/* ------------------------------------------------------------ counters */

static void write_counter(exporter *x, int64_t rank, const char *ring, uint64_t ts,
                          int64_t occupancy) {
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"C\",\"pid\":%lld,\"tid\":0,\"ts\":", (long long)rank);
    ana_json_us(x->out, ts);
    char name[300];
    snprintf(name, sizeof name, "ring %s", ring ? ring : "?");
    fputs(",\"name\":", x->out);
    ana_json_str(x->out, name);
    fprintf(x->out, ",\"args\":{\"occupancy\":%lld}}", (long long)occupancy);
    x->counters++;
}

static int write_counters(exporter *x) {
    /* The value each ring had when the window opens, then every change in
     * it, so a counter track starts at the right level. The whole run reads
     * ring_counters in one pass; a window reads each ring's samples in it
     * through the (ring, time_ps) index (CROSS JOIN keeps rings outer). */
    const char *sql_all =
        "SELECT ts, rank, name, occupancy FROM ("
        " SELECT ?1 AS ts, COALESCE(NULLIF(r.owner_rank, -1), o.rank) AS rank, r.name AS name,"
        "  (SELECT rc.occupancy FROM ring_counters rc WHERE rc.ring = r.id AND rc.time_ps < ?1"
        "   ORDER BY rc.time_ps DESC, rc.seq DESC LIMIT 1) AS occupancy, 0 AS seq"
        " FROM rings r LEFT JOIN objects o ON o.id = r.id WHERE ?1 > 0"
        " UNION ALL"
        " SELECT rc.time_ps, COALESCE(NULLIF(r.owner_rank, -1), o.rank), r.name, rc.occupancy,"
        "  rc.seq"
        " FROM ring_counters rc JOIN rings r ON r.id = rc.ring LEFT JOIN objects o ON o.id = r.id"
        " WHERE rc.time_ps >= ?1 AND rc.time_ps <= ?2"
        ") WHERE occupancy IS NOT NULL ORDER BY ts, seq";
    const char *sql_window =
        "SELECT ts, rank, name, occupancy FROM ("
        " SELECT ?1 AS ts, COALESCE(NULLIF(r.owner_rank, -1), o.rank) AS rank, r.name AS name,"
        "  (SELECT rc.occupancy FROM ring_counters rc WHERE rc.ring = r.id AND rc.time_ps < ?1"
        "   ORDER BY rc.time_ps DESC, rc.seq DESC LIMIT 1) AS occupancy, 0 AS seq"
        " FROM rings r LEFT JOIN objects o ON o.id = r.id WHERE ?1 > 0"
        " UNION ALL"
        " SELECT rc.time_ps, COALESCE(NULLIF(r.owner_rank, -1), o.rank), r.name, rc.occupancy,"
        "  rc.seq"
        " FROM rings r CROSS JOIN ring_counters rc ON rc.ring = r.id"
        "  LEFT JOIN objects o ON o.id = r.id"
        " WHERE rc.time_ps >= ?1 AND rc.time_ps <= ?2"
        ") WHERE occupancy IS NOT NULL ORDER BY ts, seq";
    int whole = x->from == 0 && (x->to == UINT64_MAX || x->to >= (uint64_t)x->run.end_time_ps);
    const char *sql = whole ? sql_all : sql_window;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(x, sql);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)x->from);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(x->to > INT64_MAX ? INT64_MAX : x->to));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(st, 1);
        if (!rank_in(x, rank)) continue;
        write_counter(x, rank, col_text(st, 2), (uint64_t)sqlite3_column_int64(st, 0),
                      sqlite3_column_int64(st, 3));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sql_fail(x, sql);
}

/* ------------------------------------------------------------ entry */

static void write_header(exporter *x) {
    sqlite3_stmt *st = NULL;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"npurr export\","
          "\"time\":\"virtual; ts in us = ps / 1e6\"",
          x->out);
    const char *sql = "SELECT key, value FROM meta WHERE key IN ('kernel', 'outcome',"
                      " 'npurr_version', 'command_line', 'end_time_ps') ORDER BY key";
    if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            fputc(',', x->out);
            ana_json_str(x->out, (const char *)sqlite3_column_text(st, 0));
            fputc(':', x->out);
            ana_json_str(x->out, (const char *)sqlite3_column_text(st, 1));
        }
    }
    sqlite3_finalize(st);
    fputs("},\"traceEvents\":[", x->out);
}

int ana_export_chrome(sqlite3 *db, const ana_export_opts *opts, FILE *out,
                      ana_export_counts *counts, char *err, size_t errlen) {
    exporter x = {.db = db, .out = out, .first = 1, .err = err, .errlen = errlen};
    if (ana_run_load(db, &x.run, err, errlen)) return -1;
    if (!ana_has_table(db, "wait_labels") || !ana_has_table(db, "cores")) {
        ana_err(err, errlen, "index.db lacks the analysis tables (wait_labels, cores): open "
                "it with ana_open_derived, as `npurr export` does");
        return -1;
    }
    x.from = opts ? opts->from_ps : 0;
    x.to = opts && opts->to_ps ? opts->to_ps : UINT64_MAX;
    if (x.to < x.from) {
        ana_err(err, errlen, "--to (%llu ps) is before --from (%llu ps)",
                (unsigned long long)x.to, (unsigned long long)x.from);
        return -1;
    }
    x.ranks = malloc((size_t)(x.run.ranks + 7) / 8);
    if (!x.ranks) {
        ana_err(err, errlen, "out of memory");
        return -1;
    }
    if (opts && opts->ranks && *opts->ranks) {
        if (ana_parse_ranks(opts->ranks, x.ranks, (size_t)x.run.ranks, err, errlen)) {
            free(x.ranks);
            return -1;
        }
    } else {
        memset(x.ranks, 0xff, (size_t)(x.run.ranks + 7) / 8);
    }
    write_header(&x);
    int rc = write_metadata(&x) || write_slices(&x) || write_counters(&x) ? -1 : 0;
    fputs("\n]}\n", out);
    free(x.ranks);
    free(x.stack);
    if (counts) {
        counts->slices = x.slices;
        counts->asyncs = x.asyncs;
        counts->flows = x.flows;
        counts->counters = x.counters;
    }
    if (rc == 0 && ferror(out)) {
        ana_err(err, errlen, "writing the trace failed (disk full?)");
        rc = -1;
    }
    return rc;
}
