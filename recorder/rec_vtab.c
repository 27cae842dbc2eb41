/*
 * rec_vtab.c - the `events` virtual table: raw trace events from SQL.
 *
 * Events live only in trace.zst; the table decodes them on demand. The
 * planner hands xBestIndex every constraint on seq, time, rank, core
 * (=, <, <=, >, >=) and kind (=); xFilter turns them into ranges and
 * decodes only the chunks whose summary in index.db's chunks table (seq
 * and time ranges, rank and core ranges, kind mask) can hold a matching
 * row. Rows are still filtered by SQLite itself (constraints are not
 * omitted), so pruning only has to be conservative, never exact.
 * rec_events_vtab_chunks_decoded() counts decoded chunks, which is how the
 * tests prove the pruning works.
 *
 * A full scan runs at tens of millions of rows per second, so the per-row
 * path is kept minimal: a chunk is decoded once into an event array; a seq
 * range (seqs are dense) becomes an index range, so xNext is an increment
 * unless another constraint asks for a row test; xColumn reads one field
 * and hands kind and pipe names to SQLite as static text, never copied.
 * Decoding a chunk costs about half of what SQLite spends stepping through
 * its rows, so once a scan reaches its second chunk the cursor decodes the
 * next matching chunk ahead on a background thread (rec_worker.c) while
 * SQLite reads the current one. A scan of one chunk, and the one-seq probes
 * of a join, never start it: nothing is decoded that a query might not read,
 * except the one chunk ahead of a scan that stops early (LIMIT).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "recorder/rec_internal.h"

static uint64_t chunks_decoded;

uint64_t rec_events_vtab_chunks_decoded(void) {
    return __atomic_load_n(&chunks_decoded, __ATOMIC_RELAXED);
}

enum { C_SEQ, C_TIME, C_RANK, C_CORE, C_PIPE, C_KIND, C_SUB, C_ADDR, C_LEN, C_VALUE, C_AUX,
       C_LINK, C_SITE, C_OBJECT, C_PEER, C_SUB_NAME };

/* What `sub` means depends on the kind (engine.h): the transfer kind, the
 * hard event of a flag, the condition of a GM wait, the atomic operation or
 * the pipe a PipeBarrier waits for. NULL where sub means nothing. */
static const char *sub_name(const engine_event *e) {
    if (e->sub == 0 && e->kind != EV_PIPE_WAIT_BEGIN && e->kind != EV_PIPE_WAIT_END) return NULL;
    switch (e->kind) {
    case EV_XFER_ISSUE: case EV_XFER_DONE: return engine_xfer_name(e->sub);
    case EV_FLAG_SET: case EV_FLAG_WAIT_BEGIN: case EV_FLAG_WAIT_END:
        return engine_hard_event_name(e->sub);
    case EV_GM_WAIT_BEGIN: case EV_GM_WAIT_END: return engine_cond_name(e->sub);
    case EV_ATOMIC:
        return e->sub == ATOMIC_ADD ? "add" : e->sub == ATOMIC_CAS ? "cas"
               : e->sub == ATOMIC_MAX ? "max" : NULL;
    case EV_PIPE_WAIT_BEGIN: case EV_PIPE_WAIT_END: return rec_pipe_name(e->sub);
    default: return NULL;
    }
}

typedef struct ev_vtab {
    sqlite3_vtab base;
    rec_trace trace;
    rec_chunk_row *chunks;
    size_t nchunks;
} ev_vtab;

typedef struct range { uint64_t lo, hi; } range;

/* One decoded chunk and what decoding it takes. A cursor has two: the one
 * SQLite reads and the one decoded ahead; they swap. */
typedef struct ev_decoded {
    ev_vtab *vt;
    ZSTD_DCtx *dctx;
    rec_buf frame;
    rec_group g;                /* the chunk (a split run's group merged): g.evs */
    engine_event *evs;          /* g.evs once decoded */
    size_t n;
    size_t idx;                 /* chunk held in evs (SIZE_MAX: none): joins that
                                 * probe one seq at a time reuse it */
    int failed;
    char err[600];
} ev_decoded;

typedef struct ev_cursor {
    sqlite3_vtab_cursor base;
    ev_decoded cur, ahead;
    rec_worker *worker;         /* started by the first scan that needs it */
    int ahead_busy;             /* ahead was submitted to the worker */
    int worker_failed;          /* no thread could be made: decode in line */
    size_t n, pos;
    size_t next_chunk;
    size_t loads;               /* chunks loaded since xFilter */
    size_t end;                 /* rows of the loaded chunk past the seq range */
    range seq, time, rank, core;
    uint64_t kinds;
    int check;                  /* a constraint other than seq: test every row */
    int eof;
    /* kind and pipe names by number, with their lengths */
    const char *kind_name[256], *pipe_name[256];
    int kind_len[256], pipe_len[256];
} ev_cursor;

static int load_chunks(ev_vtab *vt, const char *run_dir, char **pzErr) {
    char path[4200];
    if (rec_path(path, sizeof path, run_dir, "index.db")) {
        *pzErr = sqlite3_mprintf("%s: path too long", run_dir);
        return SQLITE_ERROR;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char oerr[512] = "";
    if (rec_index_open_ro(path, &db, oerr, sizeof oerr) != 0 ||
        sqlite3_prepare_v2(db,
                           "SELECT first_seq, last_seq, first_time, last_time, offset,"
                           " compressed_bytes, raw_bytes, events, rank_min, rank_max, core_min,"
                           " core_max, kind_mask FROM chunks ORDER BY first_seq",
                           -1, &st, NULL) != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("events: cannot read the chunk index %s (%s); run `npurr "
                                 "reindex %s`",
                                 path,
                                 oerr[0] ? oerr : db ? sqlite3_errmsg(db) : "out of memory",
                                 run_dir);
        sqlite3_close(db);
        return SQLITE_ERROR;
    }
    size_t cap = 0;
    int rc = SQLITE_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (vt->nchunks == cap) {
            cap = cap ? cap * 2 : 256;
            rec_chunk_row *p = realloc(vt->chunks, cap * sizeof *p);
            if (!p) { rc = SQLITE_NOMEM; break; }
            vt->chunks = p;
        }
        rec_chunk_row *r = &vt->chunks[vt->nchunks++];
        r->first_seq = (uint64_t)sqlite3_column_int64(st, 0);
        r->last_seq = (uint64_t)sqlite3_column_int64(st, 1);
        r->first_time = (uint64_t)sqlite3_column_int64(st, 2);
        r->last_time = (uint64_t)sqlite3_column_int64(st, 3);
        r->offset = (uint64_t)sqlite3_column_int64(st, 4);
        r->compressed_bytes = (uint64_t)sqlite3_column_int64(st, 5);
        r->raw_bytes = (uint64_t)sqlite3_column_int64(st, 6);
        r->events = (uint64_t)sqlite3_column_int64(st, 7);
        r->rank_min = (uint32_t)sqlite3_column_int64(st, 8);
        r->rank_max = (uint32_t)sqlite3_column_int64(st, 9);
        r->core_min = (uint32_t)sqlite3_column_int64(st, 10);
        r->core_max = (uint32_t)sqlite3_column_int64(st, 11);
        r->kind_mask = (uint64_t)sqlite3_column_int64(st, 12);
    }
    sqlite3_finalize(st);
    /* What `info` checks: chunks that do not cover every event (an emptied
     * or edited chunks table) would make events answer with rows missing. */
    char events[32], gap[400];
    rec_index_meta_text(db, "events", events, sizeof events);
    if (rc == SQLITE_OK) {
        rec_index_chunk_gaps(db, strtoull(events, NULL, 10), gap, sizeof gap);
        if (gap[0]) {
            *pzErr = sqlite3_mprintf("events: %s: %s; run `npurr reindex %s`", path, gap,
                                     run_dir);
            rc = SQLITE_ERROR;
        }
    }
    sqlite3_close(db);
    return rc;
}

static int ev_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **pzErr) {
    (void)argc;
    (void)argv;
    const char *run_dir = aux;
    int rc = sqlite3_declare_vtab(db,
                                  "CREATE TABLE x(seq INTEGER, time INTEGER, rank INTEGER,"
                                  " core INTEGER, pipe TEXT, kind TEXT, sub INTEGER,"
                                  " addr INTEGER, len INTEGER, value INTEGER, aux INTEGER,"
                                  " link INTEGER, site INTEGER, object INTEGER, peer INTEGER,"
                                  " sub_name TEXT)");
    if (rc != SQLITE_OK) return rc;
    ev_vtab *vt = sqlite3_malloc(sizeof *vt);
    if (!vt) return SQLITE_NOMEM;
    memset(vt, 0, sizeof *vt);
    vt->trace.fd = -1;
    rc = load_chunks(vt, run_dir, pzErr);
    char path[4200], err[512];
    if (rc == SQLITE_OK) {
        rec_path(path, sizeof path, run_dir, "trace.zst");
        /* Chunks are decoded by offset, without the reader's walk over the
         * header: check here that this npurr knows their layout. */
        if (rec_trace_map(path, &vt->trace, err, sizeof err) ||
            rec_trace_check_version(&vt->trace, path, err, sizeof err)) {
            *pzErr = sqlite3_mprintf("events: %s", err);
            rc = SQLITE_ERROR;
        }
    }
    if (rc != SQLITE_OK) {
        rec_trace_unmap(&vt->trace);
        free(vt->chunks);
        sqlite3_free(vt);
        return rc;
    }
    *out = &vt->base;
    return SQLITE_OK;
}

static int ev_disconnect(sqlite3_vtab *base) {
    ev_vtab *vt = (ev_vtab *)base;
    rec_trace_unmap(&vt->trace);
    free(vt->chunks);
    sqlite3_free(vt);
    return SQLITE_OK;
}

static int usable_op(int col, unsigned char op) {
    if (col == C_KIND) return op == SQLITE_INDEX_CONSTRAINT_EQ;
    if (col != C_SEQ && col != C_TIME && col != C_RANK && col != C_CORE) return 0;
    return op == SQLITE_INDEX_CONSTRAINT_EQ || op == SQLITE_INDEX_CONSTRAINT_GT ||
           op == SQLITE_INDEX_CONSTRAINT_GE || op == SQLITE_INDEX_CONSTRAINT_LT ||
           op == SQLITE_INDEX_CONSTRAINT_LE;
}

/* idxStr lists the constraints handed to xFilter, two characters each:
 * the column number as 'a'+column and the operator as one of "=<l>g". */
static int ev_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
    ev_vtab *vt = (ev_vtab *)base;
    char str[2 * 64 + 1];
    int n = 0;
    double selectivity = 1.0;
    for (int i = 0; i < info->nConstraint && n < 64; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (!c->usable || !usable_op(c->iColumn, c->op)) continue;
        char op = c->op == SQLITE_INDEX_CONSTRAINT_EQ   ? '='
                  : c->op == SQLITE_INDEX_CONSTRAINT_LT ? '<'
                  : c->op == SQLITE_INDEX_CONSTRAINT_LE ? 'l'
                  : c->op == SQLITE_INDEX_CONSTRAINT_GT ? '>'
                                                        : 'g';
        str[2 * n] = (char)('a' + c->iColumn);
        str[2 * n + 1] = op;
        info->aConstraintUsage[i].argvIndex = ++n;
        info->aConstraintUsage[i].omit = 0;
        selectivity *= op == '=' ? 0.05 : 0.3;
    }
    str[2 * n] = 0;
    info->idxNum = n;
    info->idxStr = sqlite3_mprintf("%s", str);
    info->needToFreeIdxStr = 1;
    double rows = 0;
    for (size_t i = 0; i < vt->nchunks; i++) rows += (double)vt->chunks[i].events;
    info->estimatedRows = (sqlite3_int64)(rows * selectivity) + 1;
    info->estimatedCost = rows * selectivity + 10.0;
    if (info->nOrderBy == 1 && !info->aOrderBy[0].desc &&
        (info->aOrderBy[0].iColumn == C_SEQ || info->aOrderBy[0].iColumn == -1))
        info->orderByConsumed = 1;
    return SQLITE_OK;
}

static int decoded_init(ev_decoded *d, ev_vtab *vt) {
    d->vt = vt;
    d->idx = SIZE_MAX;
    d->dctx = ZSTD_createDCtx();
    return d->dctx && !rec_group_init(&d->g) ? 0 : -1;
}

static void decoded_free(ev_decoded *d) {
    ZSTD_freeDCtx(d->dctx);
    rec_buf_free(&d->frame);
    rec_group_free(&d->g);
}

/* Decompresses and decodes chunk d->idx into d (either thread). */
static void decode_chunk(void *arg) {
    ev_decoded *d = arg;
    const rec_chunk_row *r = &d->vt->chunks[d->idx];
    const rec_trace *t = &d->vt->trace;
    char err[512];
    d->failed = 1;
    d->n = 0;
    uint64_t first, more;
    if (r->offset > t->size || r->compressed_bytes > t->size - r->offset ||
        rec_trace_frame(t, r->offset, &first) != 1 || first > r->compressed_bytes) {
        snprintf(d->err, sizeof d->err, "events: chunk at byte %llu lies past the end of "
                 "trace.zst (stale index? run npurr reindex)", (unsigned long long)r->offset);
        return;
    }
    if (rec_frame_decompress(d->dctx, t->base + r->offset, (size_t)first, &d->frame, err,
                             sizeof err) ||
        rec_group_decode(&d->g, d->frame.p, d->frame.len, t, r->offset + first, &more, err,
                         sizeof err)) {
        snprintf(d->err, sizeof d->err, "events: chunk at byte %llu: %s",
                 (unsigned long long)r->offset, err);
        return;
    }
    if (first + more != r->compressed_bytes) {
        snprintf(d->err, sizeof d->err, "events: chunk at byte %llu is not the %llu bytes the "
                 "index says (stale index? run npurr reindex)", (unsigned long long)r->offset,
                 (unsigned long long)r->compressed_bytes);
        return;
    }
    __atomic_fetch_add(&chunks_decoded, 1, __ATOMIC_RELAXED);
    d->evs = d->g.evs;
    d->n = d->g.n;
    d->failed = 0;
}

static void ahead_settle(ev_cursor *c) {
    if (!c->ahead_busy) return;
    rec_worker_wait(c->worker);
    c->ahead_busy = 0;
}

static int ev_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
    ev_cursor *c = calloc(1, sizeof *c);
    if (!c) return SQLITE_NOMEM;
    for (int i = 0; i < 256; i++) {
        c->kind_name[i] = rec_kind_name(i);
        c->kind_len[i] = (int)strlen(c->kind_name[i]);
        c->pipe_name[i] = rec_pipe_name(i);
        c->pipe_len[i] = (int)strlen(c->pipe_name[i]);
    }
    if (decoded_init(&c->cur, (ev_vtab *)base) || decoded_init(&c->ahead, (ev_vtab *)base)) {
        decoded_free(&c->cur);
        decoded_free(&c->ahead);
        free(c);
        return SQLITE_NOMEM;
    }
    *out = &c->base;
    return SQLITE_OK;
}

static int ev_close(sqlite3_vtab_cursor *cur) {
    ev_cursor *c = (ev_cursor *)cur;
    ahead_settle(c);
    rec_worker_stop(c->worker);
    decoded_free(&c->cur);
    decoded_free(&c->ahead);
    free(c);
    return SQLITE_OK;
}

static void narrow(range *r, char op, sqlite3_value *v, int *empty) {
    int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_INTEGER) {
        int64_t i = sqlite3_value_int64(v);
        uint64_t u = i < 0 ? 0 : (uint64_t)i;
        switch (op) {
        case '=': if (i < 0) *empty = 1; else { if (u > r->lo) r->lo = u; if (u < r->hi) r->hi = u; } break;
        case '>': if (i >= 0 && u + 1 > r->lo) r->lo = u + 1; break;
        case 'g': if (u > r->lo) r->lo = u; break;
        case '<': if (i <= 0) *empty = 1; else if (u - 1 < r->hi) r->hi = u - 1; break;
        case 'l': if (i < 0) *empty = 1; else if (u < r->hi) r->hi = u; break;
        }
    } else if (type == SQLITE_FLOAT) {
        double d = sqlite3_value_double(v), lo, hi; /* admissible integers */
        switch (op) {
        case '=': if (d != floor(d)) { *empty = 1; return; } lo = hi = d; break;
        case '>': lo = floor(d) + 1; hi = INFINITY; break;
        case 'g': lo = ceil(d); hi = INFINITY; break;
        case '<': lo = -INFINITY; hi = ceil(d) - 1; break;
        default: lo = -INFINITY; hi = floor(d); break;
        }
        if (hi < 0) { *empty = 1; return; }
        if (lo > 1.8e19) { *empty = 1; return; }
        if (lo > 0 && (uint64_t)lo > r->lo) r->lo = (uint64_t)lo;
        if (hi < 1.8e19 && (uint64_t)hi < r->hi) r->hi = (uint64_t)hi;
    }
    else if (type == SQLITE_NULL) {
        *empty = 1; /* a comparison with NULL is never true */
    }
    /* Text or blob: no pruning; SQLite's own comparison decides. */
}

static int chunk_matches(const ev_cursor *c, const rec_chunk_row *r) {
    return r->last_seq >= c->seq.lo && r->first_seq <= c->seq.hi &&
           r->last_time >= c->time.lo && r->first_time <= c->time.hi &&
           r->rank_max >= c->rank.lo && r->rank_min <= c->rank.hi &&
           r->core_max >= c->core.lo && r->core_min <= c->core.hi && (r->kind_mask & c->kinds);
}

static int row_matches(const ev_cursor *c, const engine_event *e) {
    return e->seq >= c->seq.lo && e->seq <= c->seq.hi && e->time >= c->time.lo &&
           e->time <= c->time.hi && e->rank >= c->rank.lo && e->rank <= c->rank.hi &&
           e->core >= c->core.lo && e->core <= c->core.hi && ((c->kinds >> (e->kind & 63)) & 1);
}

/* The engine's seqs are dense, so in a chunk whose events run from seq f to
 * f + n - 1 the seq range is an index range [pos, end); a chunk that is not
 * dense (never written by npurr, but readable) is tested row by row. */
static void seq_window(ev_cursor *c) {
    c->pos = 0;
    c->end = c->n;
    if (c->n == 0) return;
    uint64_t f = c->cur.evs[0].seq;
    if (c->cur.evs[c->n - 1].seq - f != c->n - 1) {
        c->check = 1;
        return;
    }
    if (c->seq.lo > f) c->pos = c->seq.lo - f < c->n ? (size_t)(c->seq.lo - f) : c->n;
    if (c->seq.hi < f) c->end = 0;
    else if (c->seq.hi - f < c->n) c->end = (size_t)(c->seq.hi - f) + 1;
}

/* The first chunk at or after from that can hold a matching row, or
 * nchunks. */
static size_t next_match(const ev_cursor *c, size_t from) {
    const ev_vtab *vt = (const ev_vtab *)c->base.pVtab;
    while (from < vt->nchunks && !chunk_matches(c, &vt->chunks[from])) from++;
    return from;
}

/* Loads the next chunk that can hold a matching row; 0 when none is left. */
static int load_next_chunk(ev_cursor *c) {
    ev_vtab *vt = (ev_vtab *)c->base.pVtab;
    size_t idx = next_match(c, c->next_chunk);
    if (idx >= vt->nchunks) {
        c->next_chunk = idx;
        return 0;
    }
    c->next_chunk = idx + 1;
    if (idx != c->cur.idx) {
        ahead_settle(c);
        if (c->ahead.idx == idx) {
            ev_decoded t = c->cur;
            c->cur = c->ahead;
            c->ahead = t;
        } else {
            c->cur.idx = idx;
            decode_chunk(&c->cur);
        }
        c->ahead.idx = SIZE_MAX; /* its buffers are about to be reused */
        if (c->cur.failed) {
            c->cur.idx = SIZE_MAX;
            vt->base.zErrMsg = sqlite3_mprintf("%s", c->cur.err);
            return -1;
        }
    }
    c->n = c->cur.n;
    seq_window(c);
    /* A scan that needs a second chunk probably needs the next one too. */
    if (++c->loads >= 2 && !c->worker_failed) {
        size_t next = next_match(c, c->next_chunk);
        if (next < vt->nchunks) {
            if (!c->worker && !(c->worker = rec_worker_start())) c->worker_failed = 1;
            if (c->worker) {
                c->ahead.idx = next;
                c->ahead_busy = 1;
                rec_worker_submit(c->worker, decode_chunk, &c->ahead);
            }
        }
    }
    return 1;
}

/* Moves to the first matching row at or after pos. */
static int seek(ev_cursor *c) {
    for (;;) {
        if (!c->check && c->pos < c->end) return SQLITE_OK;
        while (c->pos < c->end) {
            if (row_matches(c, &c->cur.evs[c->pos])) return SQLITE_OK;
            c->pos++;
        }
        int k = load_next_chunk(c);
        if (k < 0) return SQLITE_ERROR;
        if (k == 0) {
            c->eof = 1;
            return SQLITE_OK;
        }
    }
}

static int ev_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
    ev_cursor *c = (ev_cursor *)cur;
    c->seq = c->time = (range){0, UINT64_MAX};
    c->rank = c->core = (range){0, UINT32_MAX};
    c->kinds = ~0ULL;
    c->n = c->pos = c->end = 0; /* cur may still hold a chunk, reused if it matches */
    c->next_chunk = 0;
    c->loads = 0;
    c->eof = 0;
    int empty = 0;
    for (int i = 0; i < idxNum && i < argc && idxStr && idxStr[2 * i]; i++) {
        int col = idxStr[2 * i] - 'a';
        char op = idxStr[2 * i + 1];
        switch (col) {
        case C_SEQ: narrow(&c->seq, op, argv[i], &empty); break;
        case C_TIME: narrow(&c->time, op, argv[i], &empty); break;
        case C_RANK: narrow(&c->rank, op, argv[i], &empty); break;
        case C_CORE: narrow(&c->core, op, argv[i], &empty); break;
        case C_KIND:
            if (sqlite3_value_type(argv[i]) == SQLITE_TEXT) {
                int k = rec_kind_from_name((const char *)sqlite3_value_text(argv[i]));
                c->kinds &= k < 0 ? 0 : 1ULL << k;
            } else if (sqlite3_value_type(argv[i]) == SQLITE_NULL) {
                empty = 1;
            }
            break;
        }
    }
    if (empty || c->kinds == 0 || c->seq.lo > c->seq.hi || c->time.lo > c->time.hi ||
        c->rank.lo > c->rank.hi || c->core.lo > c->core.hi) {
        c->eof = 1;
        return SQLITE_OK;
    }
    c->check = c->time.lo > 0 || c->time.hi < UINT64_MAX || c->rank.lo > 0 ||
               c->rank.hi < UINT32_MAX || c->core.lo > 0 || c->core.hi < UINT32_MAX ||
               c->kinds != ~0ULL;
    return seek(c);
}

static int ev_next(sqlite3_vtab_cursor *cur) {
    ev_cursor *c = (ev_cursor *)cur;
    if (++c->pos < c->end && !c->check) return SQLITE_OK;
    return seek(c);
}

static int ev_eof(sqlite3_vtab_cursor *cur) { return ((ev_cursor *)cur)->eof; }

static int ev_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    ev_cursor *c = (ev_cursor *)cur;
    const engine_event *e = &c->cur.evs[c->pos];
    switch (col) {
    case C_SEQ: sqlite3_result_int64(ctx, (sqlite3_int64)e->seq); break;
    case C_TIME: sqlite3_result_int64(ctx, (sqlite3_int64)e->time); break;
    case C_RANK: sqlite3_result_int64(ctx, e->rank); break;
    case C_CORE: sqlite3_result_int64(ctx, e->core); break;
    case C_PIPE:
        sqlite3_result_text(ctx, c->pipe_name[e->pipe], c->pipe_len[e->pipe], SQLITE_STATIC);
        break;
    case C_KIND:
        sqlite3_result_text(ctx, c->kind_name[e->kind], c->kind_len[e->kind], SQLITE_STATIC);
        break;
    case C_SUB: sqlite3_result_int64(ctx, e->sub); break;
    case C_ADDR: sqlite3_result_int64(ctx, (sqlite3_int64)e->addr); break;
    case C_LEN: sqlite3_result_int64(ctx, (sqlite3_int64)e->len); break;
    case C_VALUE: sqlite3_result_int64(ctx, e->value); break;
    case C_AUX: sqlite3_result_int64(ctx, e->aux); break;
    case C_LINK: sqlite3_result_int64(ctx, (sqlite3_int64)e->link); break;
    case C_SITE: sqlite3_result_int64(ctx, e->site); break;
    case C_OBJECT: sqlite3_result_int64(ctx, e->object); break;
    case C_PEER: sqlite3_result_int64(ctx, e->peer); break;
    case C_SUB_NAME: {
        const char *n = sub_name(e);
        if (n) sqlite3_result_text(ctx, n, -1, SQLITE_STATIC);
        else sqlite3_result_null(ctx);
        break;
    }
    default: sqlite3_result_null(ctx); break;
    }
    return SQLITE_OK;
}

static int ev_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    ev_cursor *c = (ev_cursor *)cur;
    *rowid = (sqlite3_int64)c->cur.evs[c->pos].seq;
    return SQLITE_OK;
}

static const sqlite3_module events_module = {
    .iVersion = 0,
    .xCreate = ev_connect,
    .xConnect = ev_connect,
    .xBestIndex = ev_best_index,
    .xDisconnect = ev_disconnect,
    .xDestroy = ev_disconnect,
    .xOpen = ev_open,
    .xClose = ev_close,
    .xFilter = ev_filter,
    .xNext = ev_next,
    .xEof = ev_eof,
    .xColumn = ev_column,
    .xRowid = ev_rowid,
};

int rec_register_events_vtab(sqlite3 *db, const char *run_dir, char *err, size_t errlen) {
    char *dir = strdup(run_dir);
    if (!dir) {
        snprintf(err, errlen, "events: out of memory");
        return -1;
    }
    /* Re-registering (another run on the same connection) replaces both the
     * module and its temp table. */
    sqlite3_exec(db, "DROP TABLE IF EXISTS temp.events", NULL, NULL, NULL);
    if (sqlite3_create_module_v2(db, "npurr_events", &events_module, dir, free) != SQLITE_OK) {
        snprintf(err, errlen, "events: cannot register the module: %s", sqlite3_errmsg(db));
        return -1;
    }
    char *msg = NULL;
    if (sqlite3_exec(db, "CREATE VIRTUAL TABLE temp.events USING npurr_events", NULL, NULL,
                     &msg) != SQLITE_OK) {
        if (snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db)) < 0) err[0] = 0;
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}
