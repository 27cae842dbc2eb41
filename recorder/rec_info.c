/*
 * rec_info.c - what a run folder holds, from its index: the summary `npurr
 * info RUN` prints (cli/cmd_info.c does the printing).
 *
 * Everything comes from index.db (meta, chunks, counts of the derived
 * tables) and the two files' sizes, so it is instant even for a trace of
 * billions of events. It also says when the index cannot be trusted:
 * missing (recording killed before close), stale (the trace changed after
 * indexing) or built from a truncated trace; in each case it says how far
 * the trace is complete and how to fix the index.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "recorder/rec_internal.h"

/* The summary's text fields and the meta keys they copy. */
static const struct {
    const char *key;
    size_t at;
} text_fields[] = {
    {"kernel", offsetof(rec_run_summary, kernel)},
    {"command_line", offsetof(rec_run_summary, command_line)},
    {"config.nodes", offsetof(rec_run_summary, nodes)},
    {"config.npus_per_node", offsetof(rec_run_summary, npus_per_node)},
    {"config.chip", offsetof(rec_run_summary, chip)},
    {"cores_per_rank", offsetof(rec_run_summary, cores_per_rank)},
    {"num_aic", offsetof(rec_run_summary, num_aic)},
    {"num_aiv", offsetof(rec_run_summary, num_aiv)},
    {"config.seed", offsetof(rec_run_summary, seed)},
    {"config.jitter", offsetof(rec_run_summary, jitter)},
    {"format_version", offsetof(rec_run_summary, format_version)},
    {"npurr_version", offsetof(rec_run_summary, npurr_version)},
    {"outcome", offsetof(rec_run_summary, outcome)},
    {"outcome_message", offsetof(rec_run_summary, outcome_message)},
    {"check", offsetof(rec_run_summary, check)},
    {"check_message", offsetof(rec_run_summary, check_message)},
    {"plugin.name", offsetof(rec_run_summary, plugin_name)},
    {"plugin.file", offsetof(rec_run_summary, plugin_file)},
    {"plugin.sha256", offsetof(rec_run_summary, plugin_sha256)},
    {"plugin.source", offsetof(rec_run_summary, plugin_source)},
};
#define N_TEXT_FIELDS (sizeof text_fields / sizeof text_fields[0])

static char **text_field(rec_run_summary *s, size_t i) {
    return (char **)((char *)s + text_fields[i].at);
}

void rec_run_summary_free(rec_run_summary *s) {
    for (size_t i = 0; i < N_TEXT_FIELDS; i++) {
        free(*text_field(s, i));
        *text_field(s, i) = NULL;
    }
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

/* Opens RUN/index.db read-only and reads its meta table into m; sizes
 * the two files. -1 with err when RUN is no readable npurr run. */
static int open_index(const char *run_dir, rec_run_summary *s, sqlite3 **db, rec_kv *m,
                      char *err, size_t errlen) {
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
    char why[200];
    if (stat(trace, &ts) == 0 && engine_check_input(trace, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", trace, why);
        return -1;
    }
    if (stat(trace, &ts) != 0 || !rec_trace_is_npurr(trace)) {
        snprintf(err, errlen, "%s is not an npurr run (no npurr trace.zst)", run_dir);
        return -1;
    }
    if (stat(index, &is) != 0) return no_index(run_dir, err, errlen);
    s->trace_bytes = (int64_t)ts.st_size;
    s->index_bytes = (int64_t)is.st_size;

    char oerr[1024];
    if (rec_index_open_ro(index, db, oerr, sizeof oerr) != 0) {
        snprintf(err, errlen, "cannot open %s", oerr);
        return -1;
    }
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(*db, "SELECT key, value FROM meta", -1, &q, NULL) != SQLITE_OK) {
        rec_index_unreadable(run_dir, sqlite3_errmsg(*db), err, errlen);
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(q, 0);
        const char *v = (const char *)sqlite3_column_text(q, 1);
        if (k) rec_kv_set(m, k, v ? v : "");
    }
    sqlite3_finalize(q);
    return 0;
}

/* The summary's fields from the meta m and the index's tables. */
static int fill_summary(rec_run_summary *s, sqlite3 *db, const rec_kv *m, char *err,
                        size_t errlen) {
    for (size_t i = 0; i < N_TEXT_FIELDS; i++) {
        *text_field(s, i) = strdup(meta_str(m, text_fields[i].key));
        if (!*text_field(s, i)) {
            snprintf(err, errlen, "out of memory reading the index's meta");
            return -1;
        }
    }
    s->end_time_ps = meta_u64(m, "end_time_ps");
    s->events = meta_u64(m, "events");
    for (int k = 1; k < EV_KIND_COUNT; k++) {
        char key[64];
        snprintf(key, sizeof key, "events.%s", rec_kind_name(k));
        s->kind_events[k] = meta_u64(m, key);
    }
    s->chunks = query_i64(db, "SELECT count(*) FROM chunks");
    s->raw_bytes = query_i64(db, "SELECT coalesce(sum(raw_bytes),0) FROM chunks");
    s->compressed_bytes = query_i64(db, "SELECT coalesce(sum(compressed_bytes),0) FROM chunks");
    s->waits = query_i64(db, "SELECT count(*) FROM waits");
    s->open_waits = query_i64(db, "SELECT count(*) FROM waits WHERE end_seq IS NULL");
    s->stall_ps = query_i64(db, "SELECT coalesce(sum(dur_ps),0) FROM waits");
    /* transfers is an analysis table: the recorder's meta has their totals */
    s->transfers = (int64_t)meta_u64(m, "events.xfer_issue");
    s->transfer_bytes = (int64_t)meta_u64(m, "transfer_bytes");
    return 0;
}

/* 1 with err when the index cannot be trusted: built from another trace,
 * from a truncated one, or with chunks missing; else 0. */
static int index_doubts(const char *run_dir, sqlite3 *db, const rec_run_summary *s,
                        char *err, size_t errlen) {
    char mismatch[1200] = "", gap[400] = "";
    if (rec_index_matches_trace(db, run_dir, NULL, 0, mismatch, sizeof mismatch) != 0 &&
        !mismatch[0])
        snprintf(mismatch, sizeof mismatch, "%s: cannot compare index and trace", run_dir);
    rec_index_chunk_gaps(db, s->events, gap, sizeof gap);
    if (mismatch[0]) {   /* the index describes another trace: nothing of it holds */
        snprintf(err, errlen, "%s", mismatch);
        return -1;
    }
    if (strcmp(s->outcome, "truncated") == 0) {
        if (snprintf(err, errlen, "%s/trace.zst is truncated: %s", run_dir,
                     s->outcome_message) < 0)
            err[0] = 0;
        return 1;
    }
    if (gap[0]) {
        snprintf(err, errlen, "%s/index.db: %s; run `npurr reindex %s`", run_dir, gap, run_dir);
        return 1;
    }
    return 0;
}

static int summary_read(const char *run_dir, rec_run_summary *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    sqlite3 *db = NULL;
    rec_kv m = {0};
    int status = open_index(run_dir, s, &db, &m, err, errlen);
    if (status == 0) status = fill_summary(s, db, &m, err, errlen);
    if (status == 0) status = index_doubts(run_dir, db, s, err, errlen);
    sqlite3_close(db);
    rec_kv_free(&m);
    if (status < 0) rec_run_summary_free(s);
    return status;
}

int rec_run_summary_read(const char *run_dir, rec_run_summary *s, char *err, size_t errlen) {
    /* A run swapped in by `record --force` between reading index.db and
     * trace.zst looks like a mismatch: read the run now in place again
     * (each retry needs another swap). */
    for (int attempt = 0;; attempt++) {
        uint64_t before = rec_run_identity(run_dir);
        int status = summary_read(run_dir, s, err, errlen);
        if (status == 0 || attempt == 3 || !before || rec_run_identity(run_dir) == before)
            return status;
        if (status > 0) rec_run_summary_free(s);
    }
}
