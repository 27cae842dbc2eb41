/*
 * ana_scan.c - the one pass of ana_derive over the run's events.
 *
 * Waits are already paired by the recorder; what they lack is what the raw
 * events know: which event ended a wait (a store? a transfer completion?
 * issued when?), what a wait waited for in words (object, condition,
 * expected value), who wrote each named word and when, the head/tail of
 * every ring over time, and the bytes each link carried. Transfers (one per
 * two events, too many to index while recording) are paired here. One
 * sequential pass materializes that into tables, so the views never need
 * the events virtual table (all but ring_counters and link_bytes are
 * packed tables, ana_pack.h, read through the npurr_packed module):
 *   transfers(id, issue_seq, done_seq, rank, core, pipe, kind, src_rank,
 *             dst_rank, src_addr, dst_addr, bytes, issue_ps, start_ps,
 *             done_ps, site)
 *   word_writes(seq, time_ps, object, rank, core, pipe, kind, xfer, value)
 *   wake_events(seq, time_ps, rank, core, pipe, kind, xfer, object, link)
 *   wait_labels(begin_seq, label)
 *   ring_counters(time_ps, seq, ring, head, tail, occupancy)
 *   link_bytes (ana_links.c)
 *   temp.ana_last_write, the last write of every word (ana_views.c makes
 *   last_writers of it once the cores are named)
 * and keeps for the classifier (ana_facts) what it learns about wakers,
 * credit rings and last writers. The pass reads RUN/trace.zst with the
 * recorder's sequential reader rather than through SQL: it needs every
 * event once, in order, and at tens of millions of events that is the
 * difference between seconds and a fraction of one. Rows go out through
 * ana_bulk batches. The values words take (word_writes.value,
 * ring_counters) are replayed by ana_words.c as the events go by.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_scan.h"
#include "recorder/recorder.h"

static const char *const create_sql =
    "DROP TABLE IF EXISTS ring_counters;"
    "CREATE TABLE ring_counters(time_ps INT, seq INT, ring INT, head INT, tail INT,"
    " occupancy INT);";

/* The packed tables (ana_pack.h): name, key, columns as the plain tables
 * they replace declared them. */
static const char *const packed_sql[][3] = {
    {"word_writes", "seq",
     "seq INTEGER, time_ps INT, object INT, rank INT, core INT, pipe TEXT, kind TEXT,"
     " xfer TEXT, value INT"},
    {"wake_events", "seq",
     "seq INTEGER, time_ps INT, rank INT, core INT, pipe TEXT, kind TEXT, xfer TEXT,"
     " object INT, link INT"},
    {"wait_labels", "begin_seq", "begin_seq INTEGER, label TEXT"},
    {"transfers", "id",
     "id INTEGER, issue_seq INT, done_seq INT, rank INT, core INT, pipe TEXT, kind TEXT,"
     " src_rank INT, dst_rank INT, src_addr INT, dst_addr INT, bytes INT, issue_ps INT,"
     " start_ps INT, done_ps INT, site INT"},
};
enum { PACKED_WRITES, PACKED_WAKES, PACKED_LABELS, PACKED_TRANSFERS };

static int create_packed(sqlite3 *db, int which, char *err, size_t errlen) {
    return ana_create_packed(db, packed_sql[which][0], packed_sql[which][1],
                             packed_sql[which][2], err, errlen);
}

void ana_facts_free(ana_facts *f) {
    free(f->wakes);
    free(f->word);
    memset(f, 0, sizeof *f);
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
    const char *sql = "SELECT id, kind, ring, name, level FROM objects WHERE id > 0"
                      " ORDER BY id";
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
        o->ring_kind = (uint8_t)engine_ring_kind_from_name(
            (const char *)sqlite3_column_text(st, 4));
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
/* Appends s to buf (NUL-terminated, cut at len) from offset at. Labels are
 * made for every wait, millions of them on a big run: plain copies instead
 * of snprintf's format parsing. */
static size_t put_str(char *buf, size_t len, size_t at, const char *s) {
    while (*s && at + 1 < len) buf[at++] = *s++;
    buf[at < len ? at : len - 1] = 0;
    return at;
}

static size_t put_i64(char *buf, size_t len, size_t at, int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do tmp[n++] = (char)('0' + u % 10); while ((u /= 10) && n < 23);
    if (v < 0) tmp[n++] = '-';
    char digits[24];
    for (int i = 0; i < n; i++) digits[i] = tmp[n - 1 - i];
    digits[n] = 0;
    return put_str(buf, len, at, digits);
}

static void wait_label(const scan *s, int kind, int sub, int64_t value, uint64_t addr,
                       int64_t expected, int64_t object, char *buf, size_t len) {
    const obj_info *o = obj_get(s, object);
    const char *name = o && o->name && *o->name ? o->name : NULL;
    size_t at = 0;
    switch (kind) {
    case EV_FLAG_WAIT_BEGIN: {
        const char *ev = engine_hard_event_name(sub);
        at = put_str(buf, len, 0, "flag ");
        at = put_str(buf, len, at, ev && *ev ? ev : "?");
        at = put_str(buf, len, at, " ");
        put_i64(buf, len, at, value);
        return;
    }
    case EV_XCORE_WAIT_BEGIN:
        put_i64(buf, len, put_str(buf, len, 0, "xcore flag "), value);
        return;
    case EV_PIPE_WAIT_BEGIN:
        put_str(buf, len, 0, sub == PIPE_NIC ? "RdmaQuiet" : "PipeBarrier PIPE_ALL");
        return;
    case EV_BARRIER_BEGIN:
        put_str(buf, len, 0, value ? "BarrierAll" : "SyncAll");
        return;
    case EV_BLOCKED:
        /* A deadlock report of a core with no open wait: the engine fills
         * the GM wait's fields when it waits on a word. */
        if (name || addr) break;
        put_str(buf, len, 0, "blocked (deadlock report)");
        return;
    default:
        break;
    }
    if (name) {
        at = put_str(buf, len, 0, name);
    } else {
        char where[64];
        if (addr >> 63)
            snprintf(where, sizeof where, "local 0x%llx",
                     (unsigned long long)(addr & GM_OFFSET_MASK));
        else
            snprintf(where, sizeof where, "gm r%d+0x%llx", (int)(addr >> GM_RANK_SHIFT),
                     (unsigned long long)(addr & GM_OFFSET_MASK));
        at = put_str(buf, len, 0, where);
    }
    at = put_str(buf, len, at, " ");
    at = put_str(buf, len, at, ana_cond_op(sub));
    at = put_str(buf, len, at, " ");
    put_i64(buf, len, at, expected);
}

static int is_begin_kind(int kind) {
    return kind == EV_FLAG_WAIT_BEGIN || kind == EV_XCORE_WAIT_BEGIN ||
           kind == EV_GM_WAIT_BEGIN || kind == EV_BARRIER_BEGIN || kind == EV_PIPE_WAIT_BEGIN ||
           kind == EV_BLOCKED;
}

/* ------------------------------------------------------------ transfers */

static size_t fl_slot(uint64_t seq, size_t cap) {
    return (size_t)((seq * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static int fl_put(scan *s, const engine_event *ev) {
    if (2 * (s->fln + 1) > s->flcap) {
        size_t cap = s->flcap ? s->flcap * 2 : 1024;
        inflight *n = calloc(cap, sizeof *n);
        if (!n) {
            ana_err(s->err, s->errlen, "out of memory tracking transfers in flight");
            return -1;
        }
        for (size_t i = 0; i < s->flcap; i++) {
            if (!s->fl[i].seq) continue;
            size_t j = fl_slot(s->fl[i].seq, cap);
            while (n[j].seq) j = (j + 1) & (cap - 1);
            n[j] = s->fl[i];
        }
        free(s->fl);
        s->fl = n;
        s->flcap = cap;
    }
    size_t j = fl_slot(ev->seq, s->flcap);
    while (s->fl[j].seq && s->fl[j].seq != ev->seq) j = (j + 1) & (s->flcap - 1);
    if (!s->fl[j].seq) s->fln++;
    s->fl[j] = (inflight){ev->seq, ev->time, (uint64_t)ev->value, ev->len, (uint64_t)ev->aux,
                          ev->addr, ++s->issued, ev->rank, ev->core, ev->site, ev->sub, ev->pipe};
    return 0;
}

/* Removes the transfer issued at seq into *out; 0 if it is not in flight. */
static int fl_take(scan *s, uint64_t seq, inflight *out) {
    if (!s->flcap || !seq) return 0;
    size_t mask = s->flcap - 1, j = fl_slot(seq, s->flcap);
    while (s->fl[j].seq && s->fl[j].seq != seq) j = (j + 1) & mask;
    if (!s->fl[j].seq) return 0;
    *out = s->fl[j];
    /* Backward-shift deletion keeps every probe chain unbroken. */
    size_t hole = j;
    for (size_t k = (j + 1) & mask; s->fl[k].seq; k = (k + 1) & mask) {
        size_t home = fl_slot(s->fl[k].seq, s->flcap);
        if (((k - home) & mask) >= ((k - hole) & mask)) {
            s->fl[hole] = s->fl[k];
            hole = k;
        }
    }
    s->fl[hole].seq = 0;
    s->fln--;
    return 1;
}

/* ------------------------------------------------------------ rows */

/* One transfers row; done 0 when it never completed. */
static int insert_transfer(scan *s, const inflight *x, uint64_t done_seq, uint64_t done_ps) {
    ana_bulk *b = s->tr;
    if (!b) return 0;   /* the transfers part is not being derived */
    const char *kind = engine_xfer_name(x->sub);
    int64_t src, dst;
    rec_transfer_ranks(x->sub, x->rank, x->src_addr, x->dst_addr, &src, &dst);
    ana_bulk_int(b, (int64_t)x->id);
    ana_bulk_int(b, (int64_t)x->seq);
    if (done_seq) ana_bulk_int(b, (int64_t)done_seq); else ana_bulk_null(b);
    ana_bulk_int(b, x->rank);
    ana_bulk_int(b, x->core);
    ana_bulk_text(b, rec_pipe_name(x->pipe));
    ana_bulk_text(b, kind ? kind : "?");
    ana_bulk_int(b, src);
    ana_bulk_int(b, dst);
    ana_bulk_int(b, (int64_t)x->src_addr);
    ana_bulk_int(b, (int64_t)x->dst_addr);
    ana_bulk_int(b, (int64_t)x->bytes);
    ana_bulk_int(b, (int64_t)x->time);
    ana_bulk_int(b, (int64_t)x->start);
    if (done_seq) ana_bulk_int(b, (int64_t)done_ps); else ana_bulk_null(b);
    if (x->site) ana_bulk_int(b, x->site); else ana_bulk_null(b);
    return ana_bulk_row_done(b, 0);
}

/* Transfers complete out of issue order, and the table is read in id
 * (issue) order: a packed table stores its rows in key order. A done
 * transfer waits in s->ord until every transfer issued before it is done;
 * what waits is the span between the oldest transfer in flight and the
 * newest done, a few thousand on the kernels here. */
static int transfer_done(scan *s, const inflight *x, uint64_t done_seq, uint64_t done_ps) {
    if (!s->tr) return 0;
    if (!s->ord_next) s->ord_next = 1;
    if (x->id - s->ord_next >= s->ordcap) {
        size_t cap = s->ordcap ? s->ordcap : 1024;
        while (x->id - s->ord_next >= cap) cap *= 2;
        xfer_done *n = calloc(cap, sizeof *n);
        if (!n) {
            ana_err(s->err, s->errlen, "out of memory ordering transfers");
            return -1;
        }
        for (size_t i = 0; i < s->ordcap; i++)
            if (s->ord[i].x.seq) n[s->ord[i].x.id & (cap - 1)] = s->ord[i];
        free(s->ord);
        s->ord = n;
        s->ordcap = cap;
    }
    size_t mask = s->ordcap - 1;
    s->ord[x->id & mask] = (xfer_done){*x, done_seq, done_ps};
    for (xfer_done *d; (d = &s->ord[s->ord_next & mask])->x.seq && d->x.id == s->ord_next;) {
        if (insert_transfer(s, &d->x, d->done_seq, d->done_ps)) return -1;
        d->x.seq = 0;
        s->ord_next++;
    }
    return 0;
}

/* Transfers still in flight when the trace ends (done 0), and with them
 * every done one still waiting. */
static int insert_unfinished(scan *s) {
    if (!s->tr) return 0;
    for (size_t i = 0; i < s->flcap; i++)
        if (s->fl[i].seq && transfer_done(s, &s->fl[i], 0, 0)) return -1;
    return 0;
}

void ana_scan_bulk_source(ana_bulk *w, const evrow *e) {
    ana_bulk_int(w, e->rank);
    ana_bulk_int(w, e->core);
    ana_bulk_text(w, e->pipe);
    ana_bulk_text(w, e->ktext);
    ana_bulk_text(w, e->kind == EV_XFER_DONE ? engine_xfer_name(e->sub) : NULL);
}

static int insert_wake(scan *s, const evrow *e, int64_t issue_ps) {
    ana_bulk *w = s->we;
    ana_bulk_int(w, (int64_t)e->seq);
    ana_bulk_int(w, e->time);
    ana_scan_bulk_source(w, e);
    if (e->object > 0) ana_bulk_int(w, e->object);
    else ana_bulk_null(w);
    ana_bulk_int(w, e->link);
    if (ana_bulk_row_done(w, 0)) return -1;

    ana_facts *f = s->facts;
    if (ana_grow((void **)&f->wakes, &s->capwakes, f->nwakes + 1, sizeof *f->wakes, 1024)) {
        ana_err(s->err, s->errlen, "out of memory keeping waking events");
        return -1;
    }
    f->wakes[f->nwakes++] = (ana_wake){
        e->seq, (uint64_t)e->link, issue_ps,
        (uint64_t)(e->rank * s->run->cores_per_rank + e->core), e->kind == EV_XFER_DONE};
    return 0;
}

static int insert_label(scan *s, const evrow *e) {
    char label[320];
    wait_label(s, e->kind, e->sub, e->value, e->addr, e->aux, e->object, label, sizeof label);
    ana_bulk_int(s->wl, (int64_t)e->seq);
    ana_bulk_text_copy(s->wl, label);
    return ana_bulk_row_done(s->wl, 0);
}

static int scan_events(scan *s, const char *run_dir) {
    rec_reader *r = NULL;
    char rerr[1024];
    if (rec_reader_open(run_dir, &r, rerr, sizeof rerr)) {
        ana_err(s->err, s->errlen, "%s", rerr);
        return -1;
    }
    engine_event ev;
    evrow e;
    int k;
    while ((k = rec_reader_next(r, &ev)) == 1) {
        int64_t issue_ps = -1;
        if (ev.kind == EV_XFER_ISSUE) {
            if (fl_put(s, &ev)) goto fail;
        } else if (ev.kind == EV_XFER_DONE) {
            inflight x;
            if (fl_take(s, ev.link, &x)) {
                issue_ps = (int64_t)x.time;
                if (transfer_done(s, &x, ev.seq, ev.time)) goto fail;
                if (s->transfers_only) continue;
                int64_t src, dst;
                rec_transfer_ranks(x.sub, x.rank, x.src_addr, x.dst_addr, &src, &dst);
                int code = engine_xfer_name(x.sub) ? x.sub : 0;
                if (ana_links_add(s->links, code, x.rank, src, dst, x.bytes, x.start, ev.time)) {
                    ana_err(s->err, s->errlen, "out of memory summing link bytes");
                    goto fail;
                }
            }
        }
        if (s->transfers_only) continue;
        while (s->next_waker < s->nwakers && s->wakers[s->next_waker] < ev.seq) s->next_waker++;
        while (s->next_begin < s->nbegins && s->begins[s->next_begin] < ev.seq) s->next_begin++;
        int waker = s->next_waker < s->nwakers && s->wakers[s->next_waker] == ev.seq;
        int begin = is_begin_kind(ev.kind) && s->next_begin < s->nbegins &&
                    s->begins[s->next_begin] == ev.seq;
        obj_info *o = ana_words_get(s, ev.object);
        if (!waker && !begin && !o && !s->has_held) continue;

        e.seq = ev.seq;
        e.kind = ev.kind;
        e.object = ev.object;
        e.time = (int64_t)ev.time;
        e.rank = ev.rank;
        e.core = ev.core;
        e.pipe = rec_pipe_name(ev.pipe);
        e.ktext = rec_kind_name(ev.kind);
        e.sub = ev.sub;
        e.addr = ev.addr;
        e.value = ev.value;
        e.aux = ev.aux;
        e.link = (int64_t)ev.link;
        e.peer = ev.peer;

        if (ana_words_settle(s, &e)) goto fail;
        if (waker && insert_wake(s, &e, issue_ps)) goto fail;
        if (begin && insert_label(s, &e)) goto fail;
        if (o && ana_words_event(s, &e, o)) goto fail;
    }
    /* A truncated trace ends after its last complete chunk, as the index
     * built from it does. */
    if (k < 0 && !rec_reader_truncated(r)) {
        ana_err(s->err, s->errlen, "reading the events: %s", rec_reader_error(r));
        goto fail;
    }
    if ((!s->transfers_only && ana_words_settle(s, NULL)) || insert_unfinished(s)) goto fail;
    rec_reader_close(r);
    return 0;
fail:
    rec_reader_close(r);
    return -1;
}

int ana_scan_transfers(sqlite3 *db, const ana_run *run, const char *run_dir, char *err,
                       size_t errlen) {
    scan s = {.db = db, .run = run, .err = err, .errlen = errlen, .transfers_only = 1};
    ana_bulk b;
    if (create_packed(db, PACKED_TRANSFERS, err, errlen)) return -1;
    s.wr = rec_worker_start();
    int rc = ana_bulk_open_packed(&b, db, "transfers", 16, 0, s.wr, err, errlen);
    if (!rc) {
        s.tr = &b;
        rc = scan_events(&s, run_dir);
        if (!rc) rc = ana_bulk_finish(&b);
        ana_bulk_close(&b);
    }
    rec_worker_stop(s.wr);
    free(s.fl);
    free(s.ord);
    return rc;
}

/* Credit rings, ring word partners and last writers, by object id. */
static int fill_facts(scan *s) {
    ana_facts *f = s->facts;
    size_t n = s->nobj ? s->nobj : 1;
    f->nobj = n;
    f->word = calloc(n, sizeof *f->word);
    if (!f->word) {
        ana_err(s->err, s->errlen, "out of memory keeping word facts");
        return -1;
    }
    for (size_t id = 1; id < s->nobj; id++) {
        const obj_info *o = &s->obj[id];
        f->word[id].last_writer = o->last_writer;
        if (!o->ring || o->ring >= s->nobj || s->obj[o->ring].kind != OK_RING) continue;
        if (o->kind == OK_HEAD &&
            (o->ring_kind == RING_RDMA || s->obj[o->ring].ring_kind == RING_RDMA || o->atomic))
            f->word[id].credit_head = 1;
    }
    /* The partner of a ring's head is its tail and back. */
    int64_t *head = calloc(n, sizeof *head), *tail = calloc(n, sizeof *tail);
    if (!head || !tail) {
        free(head);
        free(tail);
        ana_err(s->err, s->errlen, "out of memory pairing ring words");
        return -1;
    }
    for (size_t id = 1; id < s->nobj; id++) {
        uint32_t ring = s->obj[id].ring;
        if (!ring || ring >= s->nobj) continue;
        if (s->obj[id].kind == OK_HEAD) head[ring] = (int64_t)id;
        if (s->obj[id].kind == OK_TAIL) tail[ring] = (int64_t)id;
    }
    for (size_t id = 1; id < s->nobj; id++) {
        uint32_t ring = s->obj[id].ring;
        if (!ring || ring >= s->nobj || !head[ring] || !tail[ring]) continue;
        if (s->obj[id].kind == OK_HEAD) f->word[id].other_word = tail[ring];
        if (s->obj[id].kind == OK_TAIL) f->word[id].other_word = head[ring];
    }
    free(head);
    free(tail);
    return 0;
}

/* The last write of every word, for last_writers. */
static int write_last_writes(scan *s) {
    if (ana_create_table(s->db, "temp.ana_last_write",
                         "object INTEGER PRIMARY KEY, seq INT, time_ps INT, rank INT, core INT,"
                         " kind TEXT, xfer TEXT, value INT",
                         s->err, s->errlen))
        return -1;
    ana_bulk *b = malloc(sizeof *b);
    if (!b) {
        ana_err(s->err, s->errlen, "out of memory");
        return -1;
    }
    int rc = ana_bulk_open(b, s->db, "temp.ana_last_write", 8, NULL, s->err, s->errlen);
    for (size_t id = 1; !rc && id < s->nobj; id++) {
        const obj_info *o = &s->obj[id];
        if (!o->last_seq) continue;
        ana_bulk_int(b, (int64_t)id);
        ana_bulk_int(b, (int64_t)o->last_seq);
        ana_bulk_int(b, o->last_time);
        ana_bulk_int(b, o->last_rank);
        ana_bulk_int(b, o->last_core);
        ana_bulk_text(b, o->last_kind);
        ana_bulk_text(b, o->last_xfer);
        if (o->last_known) ana_bulk_int(b, o->last_value);
        else ana_bulk_null(b);
        rc = ana_bulk_row_done(b, 0);
    }
    if (!rc) rc = ana_bulk_finish(b);
    ana_bulk_close(b);
    free(b);
    return rc;
}

int ana_scan_events(sqlite3 *db, const ana_run *run, const char *run_dir, const ana_causes *c,
                    int with_transfers, ana_facts *facts, char *err, size_t errlen) {
    scan s = {.db = db, .run = run, .err = err, .errlen = errlen, .facts = facts};
    s.begins = ana_causes_begins(c, &s.nbegins);
    s.wakers = ana_causes_wakers(c, &s.nwakers);
    ana_bulk *b = calloc(5, sizeof *b);
    int rc = -1;
    memset(facts, 0, sizeof *facts);
    if (!b) {
        ana_err(err, errlen, "out of memory");
        return -1;
    }
    s.ww = &b[0];
    s.we = &b[1];
    s.wl = &b[2];
    s.rc = &b[3];
    s.tr = with_transfers ? &b[4] : NULL;
    double t = ana_step_clock(NULL, 0);
    if (ana_exec(db, create_sql, err, errlen) || create_packed(db, PACKED_WRITES, err, errlen) ||
        create_packed(db, PACKED_WAKES, err, errlen) ||
        create_packed(db, PACKED_LABELS, err, errlen) ||
        (with_transfers && create_packed(db, PACKED_TRANSFERS, err, errlen)))
        goto out;
    if (load_objects(&s)) goto out;
    t = ana_step_clock("scan: load", t);
    if (!(s.links = ana_links_new(run))) {
        ana_err(err, errlen, "out of memory");
        goto out;
    }
    /* The four tables' rows go through one writer thread (NULL: in line). */
    s.wr = rec_worker_start();
    if (ana_bulk_open_packed(s.ww, db, "word_writes", 9, 0, s.wr, err, errlen) ||
        ana_bulk_open_packed(s.we, db, "wake_events", 9, 0, s.wr, err, errlen) ||
        ana_bulk_open_packed(s.wl, db, "wait_labels", 2, 0, s.wr, err, errlen) ||
        ana_bulk_open(s.rc, db, "ring_counters", 6, s.wr, err, errlen) ||
        (s.tr && ana_bulk_open_packed(s.tr, db, "transfers", 16, 0, s.wr, err, errlen)))
        goto out;
    if (scan_events(&s, run_dir)) goto out;
    if (ana_bulk_finish(s.ww) || ana_bulk_finish(s.we) || ana_bulk_finish(s.wl) ||
        ana_bulk_finish(s.rc) || (s.tr && ana_bulk_finish(s.tr)))
        goto out;
    if (ana_links_write(s.links, db, err, errlen)) goto out;
    t = ana_step_clock("scan: events", t);
    /* The ring index serves ring_occupancy by ring and time, and the
     * export's per-ring and time-window reads of ring_counters. */
    if (write_last_writes(&s) ||
        ana_exec(db, "CREATE INDEX ring_counters_ring ON ring_counters(ring, time_ps);", err,
                 errlen))
        goto out;
    t = ana_step_clock("scan: indexes", t);
    if (fill_facts(&s)) goto out;
    rc = 0;
out:
    for (int i = 0; i < 5; i++) ana_bulk_close(&b[i]);
    rec_worker_stop(s.wr);
    free(b);
    ana_links_free(s.links);
    free(s.land);
    free(s.fl);
    free(s.ord);
    for (size_t i = 0; i < s.nobj; i++) free(s.obj[i].name);
    free(s.obj);
    free(s.ring);
    if (rc) ana_facts_free(facts);
    return rc;
}
