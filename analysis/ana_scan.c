/*
 * ana_scan.c - the one pass of ana_derive over the `events` virtual table.
 *
 * Waits and transfers are already paired by the recorder; what they lack is
 * what the raw events know: which event ended a wait (a store? a transfer
 * completion? issued when?), what a wait waited for in words (object,
 * condition, expected value), who wrote each named word and when, and the
 * head/tail of every ring over time. One sequential scan materializes that
 * into plain tables, so the views and `sqlite3 RUN/index.db` never need the
 * virtual table:
 *   word_writes(seq, time_ps, object, rank, core, pipe, kind, xfer, value)
 *   wake_events(seq, time_ps, rank, core, pipe, kind, xfer, object, link)
 *   wait_labels(begin_seq, label)
 *   ring_counters(time_ps, seq, ring, head, tail, occupancy)
 * The values words take (word_writes.value, ring_counters) are replayed by
 * ana_words.c as the rows go by.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/ana_scan.h"

static const char *const create_sql =
    "DROP TABLE IF EXISTS word_writes;"
    "DROP TABLE IF EXISTS wake_events;"
    "DROP TABLE IF EXISTS wait_labels;"
    "DROP TABLE IF EXISTS ring_counters;"
    "CREATE TABLE word_writes(seq INTEGER PRIMARY KEY, time_ps INT, object INT, rank INT,"
    " core INT, pipe TEXT, kind TEXT, xfer TEXT, value INT);"
    "CREATE TABLE wake_events(seq INTEGER PRIMARY KEY, time_ps INT, rank INT, core INT,"
    " pipe TEXT, kind TEXT, xfer TEXT, object INT, link INT);"
    "CREATE TABLE wait_labels(begin_seq INTEGER PRIMARY KEY, label TEXT);"
    "CREATE TABLE ring_counters(time_ps INT, seq INT, ring INT, head INT, tail INT,"
    " occupancy INT);";

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int in_sorted(const uint64_t *a, size_t n, uint64_t v) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo] == v;
}

/* Reads one integer column of a query into a sorted array. */
static int load_seqs(sqlite3 *db, const char *sql, uint64_t **out, size_t *n, char *err,
                     size_t errlen) {
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        return -1;
    }
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            uint64_t *p = realloc(*out, cap * sizeof *p);
            if (!p) {
                sqlite3_finalize(st);
                ana_err(err, errlen, "out of memory loading wait sequence numbers");
                return -1;
            }
            *out = p;
        }
        (*out)[(*n)++] = (uint64_t)sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        return -1;
    }
    qsort(*out, *n, sizeof **out, cmp_u64);
    return 0;
}

static int obj_kind_code(const char *k) {
    if (!k) return OK_OTHER;
    if (!strcmp(k, "word") || !strcmp(k, "flag") || !strcmp(k, "xcore_flag") ||
        !strcmp(k, "barrier"))
        return OK_WORD;
    if (!strcmp(k, "ring")) return OK_RING;
    if (!strcmp(k, "ring_head")) return OK_HEAD;
    if (!strcmp(k, "ring_tail")) return OK_TAIL;
    if (!strcmp(k, "buffer")) return OK_BUFFER;
    return OK_OTHER;
}

static int load_objects(scan *s) {
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT id, kind, ring, name FROM objects WHERE id > 0 ORDER BY id";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(s->err, s->errlen, "index.db: %s (in: %s)", sqlite3_errmsg(s->db), sql);
        return -1;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id <= 0 || id > (1 << 26)) continue;
        if ((size_t)id >= s->nobj) {
            size_t n = s->nobj ? s->nobj : 64;
            while (n <= (size_t)id) n *= 2;
            obj_info *p = realloc(s->obj, n * sizeof *p);
            if (!p) {
                sqlite3_finalize(st);
                ana_err(s->err, s->errlen, "out of memory loading objects");
                return -1;
            }
            memset(p + s->nobj, 0, (n - s->nobj) * sizeof *p);
            s->obj = p;
            s->nobj = n;
        }
        obj_info *o = &s->obj[id];
        o->kind = (uint8_t)obj_kind_code((const char *)sqlite3_column_text(st, 1));
        o->ring = (uint32_t)sqlite3_column_int64(st, 2);
        o->known = 1;   /* GM is zero-filled at allocation */
        const char *name = (const char *)sqlite3_column_text(st, 3);
        o->name = strdup(name ? name : "");
        if (!o->name) {
            sqlite3_finalize(st);
            ana_err(s->err, s->errlen, "out of memory loading objects");
            return -1;
        }
    }
    sqlite3_finalize(st);
    s->ring = calloc(s->nobj ? s->nobj : 1, sizeof *s->ring);
    if (!s->ring) {
        ana_err(s->err, s->errlen, "out of memory loading rings");
        return -1;
    }
    return 0;
}

static const obj_info *obj_get(const scan *s, int64_t id) {
    return id > 0 && (size_t)id < s->nobj ? &s->obj[id] : NULL;
}

/* What a wait waits for, as the export names its slice and the docs'
 * queries print it: "<word> >= 42", "flag MTE3_S 0", "BarrierAll". The
 * engine's begin events carry: GM waits cond in sub, expected in aux;
 * flags the hard event in sub and the id in value; cross-core flags the
 * id in value; barriers all_ranks in value; PipeBarrier/RdmaQuiet the pipe
 * in sub. */
static void wait_label(const scan *s, int kind, int sub, int64_t value, uint64_t addr,
                       int64_t expected, int64_t object, char *buf, size_t len) {
    const obj_info *o = obj_get(s, object);
    const char *name = o && o->name && *o->name ? o->name : NULL;
    char where[160];
    if (name) snprintf(where, sizeof where, "%s", name);
    else if (addr >> 63)
        snprintf(where, sizeof where, "local 0x%llx", (unsigned long long)(addr & GM_OFFSET_MASK));
    else
        snprintf(where, sizeof where, "gm r%d+0x%llx", (int)(addr >> GM_RANK_SHIFT),
                 (unsigned long long)(addr & GM_OFFSET_MASK));
    switch (kind) {
    case EV_FLAG_WAIT_BEGIN: {
        const char *ev = engine_hard_event_name(sub);
        snprintf(buf, len, "flag %s %lld", ev && *ev ? ev : "?", (long long)value);
        return;
    }
    case EV_XCORE_WAIT_BEGIN:
        snprintf(buf, len, "xcore flag %lld", (long long)value);
        return;
    case EV_PIPE_WAIT_BEGIN:
        snprintf(buf, len, "%s", sub == PIPE_NIC ? "RdmaQuiet" : "PipeBarrier PIPE_ALL");
        return;
    case EV_BARRIER_BEGIN:
        snprintf(buf, len, "%s", value ? "BarrierAll" : "SyncAll");
        return;
    case EV_BLOCKED:
        /* A deadlock report of a core with no open wait: the engine fills
         * the GM wait's fields when it waits on a word. */
        if (name || addr) break;
        snprintf(buf, len, "blocked (deadlock report)");
        return;
    default:
        break;
    }
    snprintf(buf, len, "%s %s %lld", where, ana_cond_op(sub), (long long)expected);
}

static int is_begin_kind(int kind) {
    return kind == EV_FLAG_WAIT_BEGIN || kind == EV_XCORE_WAIT_BEGIN ||
           kind == EV_GM_WAIT_BEGIN || kind == EV_BARRIER_BEGIN || kind == EV_PIPE_WAIT_BEGIN ||
           kind == EV_BLOCKED;
}

int ana_scan_step(scan *s, sqlite3_stmt *st, const char *table) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        ana_err(s->err, s->errlen, "index.db: inserting into %s: %s", table,
                sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

/* SQLITE_STATIC: every text bound here outlives the statement's step. */
void ana_scan_bind_text(sqlite3_stmt *st, int i, const char *t) {
    if (t && *t) sqlite3_bind_text(st, i, t, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, i);
}

static int prepare(scan *s, sqlite3_stmt **st, const char *sql) {
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
        ana_err(s->err, s->errlen, "index.db: %s (in: %s)", sqlite3_errmsg(s->db), sql);
        return -1;
    }
    return 0;
}

static int insert_wake(scan *s, const evrow *e) {
    sqlite3_stmt *w = s->ins_wake;
    sqlite3_bind_int64(w, 1, (sqlite3_int64)e->seq);
    sqlite3_bind_int64(w, 2, e->time);
    sqlite3_bind_int64(w, 3, e->rank);
    sqlite3_bind_int64(w, 4, e->core);
    ana_scan_bind_text(w, 5, e->pipe);
    ana_scan_bind_text(w, 6, e->ktext);
    ana_scan_bind_text(w, 7, e->kind == EV_XFER_DONE ? engine_xfer_name(e->sub) : NULL);
    if (e->object > 0) sqlite3_bind_int64(w, 8, e->object);
    else sqlite3_bind_null(w, 8);
    sqlite3_bind_int64(w, 9, e->link);
    return ana_scan_step(s, w, "wake_events");
}

static int insert_label(scan *s, const evrow *e) {
    char label[320];
    wait_label(s, e->kind, e->sub, e->value, e->addr, e->aux, e->object, label, sizeof label);
    sqlite3_bind_int64(s->ins_label, 1, (sqlite3_int64)e->seq);
    sqlite3_bind_text(s->ins_label, 2, label, -1, SQLITE_STATIC);
    return ana_scan_step(s, s->ins_label, "wait_labels");
}

static void copy_text(char *dst, size_t len, const unsigned char *src) {
    snprintf(dst, len, "%s", src ? (const char *)src : "");
}

static int scan_rows(scan *s) {
    /* SQLite evaluates the WHERE on the two columns it names before it
     * asks the virtual table for the others, so rows no table here needs
     * (kernel begin/end, notes, bulk copies nobody waited on...) cost only
     * their decoding. The row after a remote store intent, its
     * XFER_ISSUE, names the same word, so it passes too. */
    char q[1024];
    snprintf(q, sizeof q,
             "SELECT seq, time, rank, core, pipe, kind, sub, addr, value, aux, link, object, "
             "peer FROM events WHERE object > 0 OR kind IN ('%s', '%s', '%s', '%s', '%s', '%s')"
             " OR seq IN (SELECT waker_seq FROM waits WHERE waker_seq > 0)",
             engine_event_kind_name(EV_FLAG_WAIT_BEGIN), engine_event_kind_name(EV_XCORE_WAIT_BEGIN),
             engine_event_kind_name(EV_GM_WAIT_BEGIN), engine_event_kind_name(EV_BARRIER_BEGIN),
             engine_event_kind_name(EV_PIPE_WAIT_BEGIN), engine_event_kind_name(EV_BLOCKED));
    sqlite3_stmt *st = NULL;
    if (prepare(s, &st, q)) return -1;
    int rc;
    evrow e;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *ktext = (const char *)sqlite3_column_text(st, 5);
        int kind = ana_kind_from_text(ktext, (size_t)sqlite3_column_bytes(st, 5));
        uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
        int64_t object = sqlite3_column_int64(st, 11);
        int waker = s->nwakers && in_sorted(s->wakers, s->nwakers, seq);
        int begin = is_begin_kind(kind) && in_sorted(s->begins, s->nbegins, seq);
        obj_info *o = ana_words_get(s, object);
        if (!waker && !begin && !o && !s->has_held) continue;

        e.seq = seq;
        e.kind = kind;
        e.object = object;
        e.time = sqlite3_column_int64(st, 1);
        e.rank = sqlite3_column_int64(st, 2);
        e.core = sqlite3_column_int64(st, 3);
        copy_text(e.pipe, sizeof e.pipe, sqlite3_column_text(st, 4));
        copy_text(e.ktext, sizeof e.ktext, (const unsigned char *)ktext);
        e.sub = sqlite3_column_int(st, 6);
        e.addr = (uint64_t)sqlite3_column_int64(st, 7);
        e.value = sqlite3_column_int64(st, 8);
        e.aux = sqlite3_column_int64(st, 9);
        e.link = sqlite3_column_int64(st, 10);
        e.peer = sqlite3_column_int64(st, 12);

        if (ana_words_settle(s, &e)) goto fail;
        if (waker && insert_wake(s, &e)) goto fail;
        if (begin && insert_label(s, &e)) goto fail;
        if (o && ana_words_event(s, &e, o)) goto fail;
    }
    if (rc != SQLITE_DONE) {
        ana_err(s->err, s->errlen, "reading events: %s", sqlite3_errmsg(s->db));
        goto fail;
    }
    if (ana_words_settle(s, NULL)) goto fail;
    sqlite3_finalize(st);
    return 0;
fail:
    sqlite3_finalize(st);
    return -1;
}

int ana_scan_events(sqlite3 *db, const ana_run *run, char *err, size_t errlen) {
    scan s = {.db = db, .run = run, .err = err, .errlen = errlen};
    int rc = -1;
    if (ana_exec(db, create_sql, err, errlen)) return -1;
    if (load_seqs(db, "SELECT DISTINCT waker_seq FROM waits WHERE waker_seq > 0", &s.wakers,
                  &s.nwakers, err, errlen))
        goto out;
    if (load_seqs(db, "SELECT begin_seq FROM waits", &s.begins, &s.nbegins, err, errlen))
        goto out;
    if (load_objects(&s)) goto out;
    if (prepare(&s, &s.ins_write,
                "INSERT INTO word_writes VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)") ||
        prepare(&s, &s.ins_wake,
                "INSERT INTO wake_events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)") ||
        prepare(&s, &s.ins_label, "INSERT INTO wait_labels VALUES (?1, ?2)") ||
        prepare(&s, &s.ins_ring, "INSERT INTO ring_counters VALUES (?1, ?2, ?3, ?4, ?5, ?6)") ||
        prepare(&s, &s.fix_write, "UPDATE word_writes SET value = ?1 WHERE seq = ?2"))
        goto out;
    if (scan_rows(&s)) goto out;
    if (ana_exec(db,
                 "CREATE INDEX word_writes_object ON word_writes(object, seq);"
                 "CREATE INDEX ring_counters_ring ON ring_counters(ring, time_ps);"
                 "CREATE INDEX ring_counters_time ON ring_counters(time_ps);",
                 err, errlen))
        goto out;
    rc = 0;
out:
    sqlite3_finalize(s.ins_write);
    sqlite3_finalize(s.ins_wake);
    sqlite3_finalize(s.ins_label);
    sqlite3_finalize(s.ins_ring);
    sqlite3_finalize(s.fix_write);
    free(s.land);
    for (size_t i = 0; i < s.nobj; i++) free(s.obj[i].name);
    free(s.obj);
    free(s.ring);
    free(s.wakers);
    free(s.begins);
    return rc;
}
