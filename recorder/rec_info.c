/*
 * rec_info.c - `npurr info RUN`: what a run folder holds, from its index.
 *
 * Everything printed comes from index.db (meta, chunks, counts of the
 * derived tables) and the two files' sizes, so info is instant even for a
 * trace of billions of events. It also says when the index cannot be
 * trusted: missing (recording killed before close), stale (the trace
 * changed after indexing) or built from a truncated trace; in each case
 * it says how far the trace is complete and how to fix the index.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "recorder/rec_internal.h"

static void fmt_bytes(char *out, size_t n, uint64_t b) {
    if (b >= 10ull << 30) snprintf(out, n, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= 10ull << 20) snprintf(out, n, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= 10ull << 10) snprintf(out, n, "%.1f KiB", (double)b / (1ull << 10));
    else snprintf(out, n, "%llu B", (unsigned long long)b);
}

static void fmt_ps(char *out, size_t n, uint64_t ps) {
    if (ps >= 1000000000ull) snprintf(out, n, "%.3f ms", (double)ps / 1e9);
    else if (ps >= 1000000ull) snprintf(out, n, "%.3f us", (double)ps / 1e6);
    else if (ps >= 1000ull) snprintf(out, n, "%.3f ns", (double)ps / 1e3);
    else snprintf(out, n, "%llu ps", (unsigned long long)ps);
}

static int64_t query_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

static uint64_t meta_u64(const rec_kv *m, const char *key) {
    const char *v = rec_kv_get(m, key);
    return v ? strtoull(v, NULL, 10) : 0;
}

static const char *meta_str(const rec_kv *m, const char *key) {
    const char *v = rec_kv_get(m, key);
    return v ? v : "";
}

/* The chunks table in file order must cover seqs 1..events without a gap,
 * an overlap or a step back; out says what is missing ("" when whole). */
static void chunk_gaps(sqlite3 *db, uint64_t events, char *out, size_t len) {
    sqlite3_stmt *st;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, "SELECT offset, first_seq, last_seq, events FROM chunks "
                           "ORDER BY offset", -1, &st, NULL) != SQLITE_OK)
        return;
    uint64_t end = 0, total = 0;
    while (!out[0] && sqlite3_step(st) == SQLITE_ROW) {
        uint64_t off = (uint64_t)sqlite3_column_int64(st, 0);
        uint64_t first = (uint64_t)sqlite3_column_int64(st, 1);
        uint64_t last = (uint64_t)sqlite3_column_int64(st, 2);
        total += (uint64_t)sqlite3_column_int64(st, 3);
        if (first > end + 1)
            snprintf(out, len, "events %llu..%llu are missing (the chunk at byte %llu starts at "
                     "seq %llu)", (unsigned long long)end + 1, (unsigned long long)first - 1,
                     (unsigned long long)off, (unsigned long long)first);
        else if (first <= end)
            snprintf(out, len, "the chunk at byte %llu starts at seq %llu, at or before the end "
                     "of the previous one (seq %llu): chunks duplicated or out of order",
                     (unsigned long long)off, (unsigned long long)first,
                     (unsigned long long)end);
        end = last;
    }
    sqlite3_finalize(st);
    if (!out[0] && total != events)
        snprintf(out, len, "the run had %llu events but its chunks hold %llu",
                 (unsigned long long)events, (unsigned long long)total);
}

/* index.db is missing: read the trace to say how far it is complete. */
static int no_index(const char *run_dir, char *err, size_t errlen) {
    rec_reader *r;
    if (rec_reader_open(run_dir, &r, err, errlen)) return -1;
    engine_event ev;
    int k;
    while ((k = rec_reader_next(r, &ev)) == 1) {}
    if (k == 0)
        snprintf(err, errlen,
                 "%s/index.db is missing (the trace is complete: %llu events); "
                 "run `npurr reindex %s`",
                 run_dir, (unsigned long long)rec_reader_events(r), run_dir);
    else if (snprintf(err, errlen, "%s/index.db is missing and %s; run `npurr reindex %s`",
                      run_dir, rec_reader_error(r), run_dir) < 0)
        err[0] = 0;
    rec_reader_close(r);
    return -1;
}

int rec_info(const char *run_dir, FILE *out, char *err, size_t errlen) {
    struct stat st;
    if (stat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: no such run directory", run_dir);
        return -1;
    }
    char trace[4200], index[4200];
    if (rec_path(trace, sizeof trace, run_dir, "trace.zst") ||
        rec_path(index, sizeof index, run_dir, "index.db")) {
        snprintf(err, errlen, "%s: path too long", run_dir);
        return -1;
    }
    struct stat ts, is;
    if (stat(trace, &ts) != 0 || !rec_trace_is_npurr(trace)) {
        snprintf(err, errlen, "%s is not an npurr run (no npurr trace.zst)", run_dir);
        return -1;
    }
    if (stat(index, &is) != 0) return no_index(run_dir, err, errlen);

    sqlite3 *db = NULL;
    if (sqlite3_open_v2(index, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s: %s", index, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return -1;
    }
    rec_kv m = {0};
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &q, NULL) != SQLITE_OK) {
        rec_index_unreadable(run_dir, sqlite3_errmsg(db), err, errlen);
        sqlite3_close(db);
        return -1;
    }
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(q, 0);
        const char *v = (const char *)sqlite3_column_text(q, 1);
        if (k) rec_kv_set(&m, k, v ? v : "");
    }
    sqlite3_finalize(q);

    uint64_t events = meta_u64(&m, "events");
    int64_t chunks = query_i64(db, "SELECT count(*) FROM chunks");
    int64_t raw = query_i64(db, "SELECT coalesce(sum(raw_bytes),0) FROM chunks");
    int64_t comp = query_i64(db, "SELECT coalesce(sum(compressed_bytes),0) FROM chunks");
    int64_t waits = query_i64(db, "SELECT count(*) FROM waits");
    int64_t open_waits = query_i64(db, "SELECT count(*) FROM waits WHERE end_seq IS NULL");
    int64_t stall = query_i64(db, "SELECT coalesce(sum(dur_ps),0) FROM waits");
    /* transfers is an analysis table: the recorder's meta has their totals */
    int64_t xfers = (int64_t)meta_u64(&m, "events.xfer_issue");
    int64_t xbytes = (int64_t)meta_u64(&m, "transfer_bytes");
    char mismatch[1200] = "", gap[400] = "";
    if (rec_index_matches_trace(db, run_dir, NULL, 0, mismatch, sizeof mismatch) != 0 &&
        !mismatch[0])
        snprintf(mismatch, sizeof mismatch, "%s: cannot compare index and trace", run_dir);
    chunk_gaps(db, (uint64_t)meta_u64(&m, "events"), gap, sizeof gap);
    sqlite3_close(db);

    char a[64], b[64];
    fprintf(out, "run          %s\n", run_dir);
    fprintf(out, "kernel       %s\n", meta_str(&m, "kernel"));
    fprintf(out, "command      %s\n", meta_str(&m, "command_line"));
    fprintf(out, "cluster      %s nodes x %s NPUs (%s), %s cores per rank (%s AIC + %s AIV), "
                 "seed %s, jitter %s\n",
            meta_str(&m, "config.nodes"), meta_str(&m, "config.npus_per_node"),
            meta_str(&m, "config.chip"), meta_str(&m, "cores_per_rank"),
            meta_str(&m, "num_aic"), meta_str(&m, "num_aiv"), meta_str(&m, "config.seed"),
            meta_str(&m, "config.jitter"));
    fprintf(out, "versions     format %s, npurr %s\n", meta_str(&m, "format_version"),
            meta_str(&m, "npurr_version"));
    const char *outcome = meta_str(&m, "outcome");
    const char *omsg = meta_str(&m, "outcome_message");
    int say = *omsg && strcmp(omsg, outcome) != 0; /* "completed: completed" says nothing */
    fprintf(out, "outcome      %s%s%s\n", outcome, say ? ": " : "", say ? omsg : "");
    const char *cmsg = meta_str(&m, "check_message");
    fprintf(out, "check        %s%s%s\n", meta_str(&m, "check"), *cmsg ? ": " : "", cmsg);
    uint64_t end_ps = meta_u64(&m, "end_time_ps");
    fmt_ps(a, sizeof a, end_ps);
    fprintf(out, "duration     %s virtual (%llu ps)\n", a, (unsigned long long)end_ps);
    fprintf(out, "events       %llu in %lld chunks\n", (unsigned long long)events,
            (long long)chunks);
    for (int k = 1; k < EV_KIND_COUNT; k++) {
        char key[64];
        snprintf(key, sizeof key, "events.%s", rec_kind_name(k));
        uint64_t n = meta_u64(&m, key);
        if (n)
            fprintf(out, "  %-20s %12llu  %5.1f%%\n", rec_kind_name(k), (unsigned long long)n,
                    events ? 100.0 * (double)n / (double)events : 0.0);
    }
    fmt_ps(a, sizeof a, (uint64_t)stall);
    fprintf(out, "waits        %lld (%lld never ended), %s stalled in total\n", (long long)waits,
            (long long)open_waits, a);
    fmt_bytes(a, sizeof a, (uint64_t)xbytes);
    fprintf(out, "transfers    %lld, %s moved\n", (long long)xfers, a);
    fmt_bytes(a, sizeof a, (uint64_t)ts.st_size);
    fprintf(out, "trace        %s (%lld bytes), %.2f bytes/event\n", a, (long long)ts.st_size,
            events ? (double)ts.st_size / (double)events : 0.0);
    fmt_bytes(a, sizeof a, (uint64_t)is.st_size);
    fprintf(out, "index        %s (%lld bytes)\n", a, (long long)is.st_size);
    fmt_bytes(a, sizeof a, (uint64_t)raw);
    fmt_bytes(b, sizeof b, (uint64_t)comp);
    fprintf(out, "compression  %s of columns -> %s in chunk frames: %.2fx "
                 "(%.1fx against %zu-byte event records)\n",
            a, b, comp ? (double)raw / (double)comp : 0.0,
            comp ? (double)events * sizeof(engine_event) / (double)comp : 0.0,
            sizeof(engine_event));

    int status = 0;
    if (mismatch[0]) {
        snprintf(err, errlen, "%s", mismatch);
        status = 1;
    } else if (strcmp(outcome, "truncated") == 0) {
        if (snprintf(err, errlen, "%s/trace.zst is truncated: %s", run_dir, omsg) < 0) err[0] = 0;
        status = 1;
    } else if (gap[0]) {
        snprintf(err, errlen, "%s/index.db: %s; run `npurr reindex %s`", run_dir, gap, run_dir);
        status = 1;
    }
    rec_kv_free(&m);
    return status;
}
