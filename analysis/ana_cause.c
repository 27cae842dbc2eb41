/*
 * ana_cause.c - why each wait waited: waits.cause, in the spirit of
 * Scalasca's wait-state patterns (late sender, late receiver, wait at
 * barrier) and of its root-cause propagation.
 *
 * The rules, first match wins (docs/SQL.md states them for users):
 *   1. barrier waits                                   -> barrier
 *   2. ring_space waits on a credit ring               -> credit_starvation
 *      (a ring whose level is "rdma", or whose head word was ever advanced
 *      by an atomic: a local/HCCS atomic or a landed RDMA atomic - credits
 *      come back as remote adds, a plain consumer stores its head)
 *   3. other ring_space waits that ended               -> flow_control
 *   4. flag and pipe waits that ended                  -> transfer_slow
 *   5. ring_data / gm / xcore waits that ended:
 *      a. woken by a transfer completion (XFER_DONE) whose transfer was
 *         issued before the wait began: the data was in flight
 *                                                      -> transfer_slow
 *      b. the producer is the core that issued the waking store, atomic,
 *         flag or transfer; its producing action is that event, or the
 *         transfer's issue. If, between the wait's begin and the producing
 *         action, the producer itself spent at least half of that time in
 *         waits of its own, this wait inherits the cause that covers most
 *         of it (the delay propagated from upstream)
 *      c. woken by a transfer completion that was in flight for at least
 *         half of the wait                             -> transfer_slow
 *      d. otherwise (also when no waker is known)      -> producer_late
 *   6. waits that never ended (a deadlock or the end of the run) follow
 *      the wait-for chain: the last writer of the awaited word; for a ring
 *      word nobody wrote, the core blocked on the ring's other word (its
 *      producer for a tail, its consumer for a head). If that core is
 *      itself blocked forever, this wait takes that wait's cause
 *      (recursively). Ends of chains: a credit ring_space wait ->
 *      credit_starvation, barrier -> barrier, pipe -> transfer_slow. A
 *      chain that closes in a cycle takes flow_control if a ring_space wait
 *      is in the cycle (a ring deadlocked full) and producer_late if not.
 *      A chain that ends at a core that is not blocked, or at a word nobody
 *      wrote, gives each wait its own default: flow_control for ring_space,
 *      producer_late for everything else.
 * Ended waits are classified in end order, so a producer's waits (which
 * ended before the producing action, hence before this wait) are known
 * when rule 5b needs them.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/ana_internal.h"

enum { WK_FLAG, WK_PIPE, WK_XCORE, WK_GM, WK_RING_SPACE, WK_RING_DATA, WK_BARRIER, WK_OTHER };
enum { C_NONE = 0, C_PRODUCER_LATE, C_TRANSFER_SLOW, C_FLOW_CONTROL, C_CREDIT, C_BARRIER,
       C_COUNT };

static const char *const cause_names[C_COUNT] = {
    NULL, ANA_CAUSE_PRODUCER_LATE, ANA_CAUSE_TRANSFER_SLOW, ANA_CAUSE_FLOW_CONTROL,
    ANA_CAUSE_CREDIT_STARVATION, ANA_CAUSE_BARRIER,
};

typedef struct wrow {
    int64_t id;
    uint64_t corekey;
    int kind;
    int64_t object;
    uint64_t begin_seq, end_seq;       /* end_seq 0: never ended */
    int64_t begin_ps, end_ps, dur_ps;
    uint64_t waker_seq;
    int64_t waker_rank, waker_core;    /* -1 unknown */
    int cause;
    int state;                         /* never-ended resolution: 1 visiting, 2 done */
} wrow;

typedef struct wake {
    uint64_t seq;
    int is_xfer;
    uint64_t issue_seq;
    int64_t issue_ps;
    uint64_t corekey;
} wake;

typedef struct ctx {
    sqlite3 *db;
    const ana_run *run;
    wrow *w;
    size_t n;
    size_t *by_end;         /* ended waits sorted by end_seq */
    size_t nended;
    size_t *by_core;        /* ended waits sorted by (corekey, end_seq) */
    wake *wk;
    size_t nwk;
    uint8_t *credit_head;   /* by object id: head word of a credit ring */
    size_t ncredit;
    int64_t *last_writer;   /* by object id: corekey + 1 of the last writer, 0 none */
    size_t nlast;
    size_t *blocked_of;     /* by corekey: never-ended wait index + 1 */
    size_t ncores;
    int64_t *other_word;    /* by object id: the ring's other word (head <-> tail) */
    size_t nother;
    size_t *blocked_on;     /* by object id: a never-ended wait on that word + 1 */
    size_t nblocked_on;
    char *err;
    size_t errlen;
} ctx;

static int kind_code(const char *k) {
    static const char *const names[] = {"flag", "pipe", "xcore", "gm", "ring_space",
                                        "ring_data", "barrier"};
    for (int i = 0; k && i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(k, names[i])) return i;
    return WK_OTHER;
}

static int fail_sql(ctx *c, const char *sql) {
    ana_err(c->err, c->errlen, "index.db: %s (in: %.200s)", sqlite3_errmsg(c->db), sql);
    return -1;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *q = realloc(p, n * elem);
    if (!q) return NULL;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *cap = n;
    return q;
}

static uint64_t corekey(const ctx *c, int64_t rank, int64_t core) {
    return (uint64_t)rank * (uint64_t)c->run->cores_per_rank + (uint64_t)core;
}

static int load_waits(ctx *c) {
    const char *sql =
        "SELECT id, rank, core, kind, object, begin_seq, end_seq, begin_ps, end_ps, dur_ps,"
        " waker_seq, waker_rank, waker_core FROM waits";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, sql);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        wrow *p = grow(c->w, &cap, c->n + 1, sizeof *p);
        if (!p) break;
        c->w = p;
        wrow *r = &c->w[c->n++];
        r->id = sqlite3_column_int64(st, 0);
        r->corekey = corekey(c, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
        r->kind = kind_code((const char *)sqlite3_column_text(st, 3));
        r->object = sqlite3_column_int64(st, 4);
        r->begin_seq = (uint64_t)sqlite3_column_int64(st, 5);
        r->end_seq = sqlite3_column_type(st, 6) == SQLITE_NULL
                         ? 0 : (uint64_t)sqlite3_column_int64(st, 6);
        r->begin_ps = sqlite3_column_int64(st, 7);
        r->end_ps = sqlite3_column_int64(st, 8);
        r->dur_ps = sqlite3_column_int64(st, 9);
        r->waker_seq = (uint64_t)sqlite3_column_int64(st, 10);
        r->waker_rank = sqlite3_column_type(st, 11) == SQLITE_NULL ? -1
                                                                   : sqlite3_column_int64(st, 11);
        r->waker_core = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1
                                                                   : sqlite3_column_int64(st, 12);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail_sql(c, sql);
    if (rc == SQLITE_ROW) {
        ana_err(c->err, c->errlen, "out of memory loading %zu waits", c->n);
        return -1;
    }
    return 0;
}

/* The event that ended each wait; for a transfer completion, when and by
 * which core the transfer was issued. */
static int load_wakes(ctx *c) {
    const char *kdone = engine_event_kind_name(EV_XFER_DONE);
    const char *sql =
        "SELECT we.seq, we.kind = ?1, we.link, t.issue_ps, we.rank, we.core"
        " FROM wake_events we LEFT JOIN transfers t ON t.issue_seq = we.link AND we.kind = ?1"
        " ORDER BY we.seq";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, sql);
    sqlite3_bind_text(st, 1, kdone, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        wake *p = grow(c->wk, &cap, c->nwk + 1, sizeof *p);
        if (!p) break;
        c->wk = p;
        wake *k = &c->wk[c->nwk++];
        k->seq = (uint64_t)sqlite3_column_int64(st, 0);
        k->is_xfer = sqlite3_column_int(st, 1);
        k->issue_seq = (uint64_t)sqlite3_column_int64(st, 2);
        k->issue_ps = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
        k->corekey = corekey(c, sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5));
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW) {
        ana_err(c->err, c->errlen, "out of memory loading wake events");
        return -1;
    }
    return rc == SQLITE_DONE ? 0 : fail_sql(c, sql);
}

/* Credit rings (rule 2) and the last writer of every word (rule 6). */
static int load_objects(ctx *c) {
    const char *katom = engine_event_kind_name(EV_ATOMIC);
    const char *xatom = engine_xfer_name(XFER_RDMA_ATOMIC);
    /* The head word is found through objects.ring as well: a ring declared
     * before its words were named has no rings.head_object. */
    const char *sql =
        "SELECT h.id FROM objects h JOIN rings r ON r.id = h.ring"
        " WHERE h.kind = 'ring_head' AND (r.level = 'rdma' OR h.level = 'rdma'"
        " OR EXISTS (SELECT 1 FROM word_writes ww WHERE ww.object = h.id"
        " AND (ww.kind = ?1 OR ww.xfer = ?2)))";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, sql);
    sqlite3_bind_text(st, 1, katom, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, xatom, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id <= 0 || id > (1 << 26)) continue;
        uint8_t *p = grow(c->credit_head, &c->ncredit, (size_t)id + 1, 1);
        if (!p) break;
        c->credit_head = p;
        c->credit_head[id] = 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        if (rc == SQLITE_ROW) ana_err(c->err, c->errlen, "out of memory loading credit rings");
        return rc == SQLITE_ROW ? -1 : fail_sql(c, sql);
    }

    const char *pairs = "SELECT h.id, t.id FROM objects h JOIN objects t ON t.ring = h.ring"
                        " WHERE h.kind = 'ring_head' AND t.kind = 'ring_tail' AND h.ring > 0";
    if (sqlite3_prepare_v2(c->db, pairs, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, pairs);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t h = sqlite3_column_int64(st, 0), t = sqlite3_column_int64(st, 1);
        if (h <= 0 || t <= 0 || h > (1 << 26) || t > (1 << 26)) continue;
        size_t need = (size_t)(h > t ? h : t) + 1;
        int64_t *p = grow(c->other_word, &c->nother, need, sizeof *p);
        if (!p) break;
        c->other_word = p;
        c->other_word[h] = t;
        c->other_word[t] = h;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        if (rc == SQLITE_ROW) ana_err(c->err, c->errlen, "out of memory loading rings");
        return rc == SQLITE_ROW ? -1 : fail_sql(c, pairs);
    }

    const char *lw = "SELECT object, rank, core FROM word_writes WHERE seq IN"
                     " (SELECT MAX(seq) FROM word_writes GROUP BY object)";
    if (sqlite3_prepare_v2(c->db, lw, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, lw);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id <= 0 || id > (1 << 26)) continue;
        int64_t *p = grow(c->last_writer, &c->nlast, (size_t)id + 1, sizeof *p);
        if (!p) break;
        c->last_writer = p;
        c->last_writer[id] =
            (int64_t)corekey(c, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)) + 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        if (rc == SQLITE_ROW) ana_err(c->err, c->errlen, "out of memory loading writers");
        return rc == SQLITE_ROW ? -1 : fail_sql(c, lw);
    }
    return 0;
}

static const ctx *sort_ctx;

static int cmp_end(const void *a, const void *b) {
    const wrow *x = &sort_ctx->w[*(const size_t *)a], *y = &sort_ctx->w[*(const size_t *)b];
    return x->end_seq < y->end_seq ? -1 : x->end_seq > y->end_seq;
}

static int cmp_core_end(const void *a, const void *b) {
    const wrow *x = &sort_ctx->w[*(const size_t *)a], *y = &sort_ctx->w[*(const size_t *)b];
    if (x->corekey != y->corekey) return x->corekey < y->corekey ? -1 : 1;
    return x->end_seq < y->end_seq ? -1 : x->end_seq > y->end_seq;
}

static const wake *find_wake(const ctx *c, uint64_t seq) {
    size_t lo = 0, hi = c->nwk;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->wk[mid].seq < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->nwk && c->wk[lo].seq == seq ? &c->wk[lo] : NULL;
}

static int is_credit_wait(const ctx *c, const wrow *r) {
    return r->kind == WK_RING_SPACE && r->object > 0 && (size_t)r->object < c->ncredit &&
           c->credit_head[r->object];
}

/* Rule 5b: the cause that covers most of the producer's own waiting
 * between this wait's begin and the producing action, if that waiting is
 * at least half of that window; C_NONE otherwise. */
static int inherited_cause(const ctx *c, const wrow *r, uint64_t producer, uint64_t action_seq,
                           int64_t action_ps) {
    /* Last ended wait of the producer with end_seq < action_seq. */
    size_t lo = 0, hi = c->nended;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const wrow *m = &c->w[c->by_core[mid]];
        if (m->corekey < producer || (m->corekey == producer && m->end_seq < action_seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t win_lo = r->begin_ps, win_hi = action_ps < r->end_ps ? action_ps : r->end_ps;
    if (win_hi <= win_lo || r->dur_ps <= 0) return C_NONE;
    int64_t covered[C_COUNT] = {0};
    for (size_t i = lo; i-- > 0;) {
        const wrow *m = &c->w[c->by_core[i]];
        if (m->corekey != producer || m->end_ps <= win_lo) break;
        int64_t a = m->begin_ps > win_lo ? m->begin_ps : win_lo;
        int64_t b = m->end_ps < win_hi ? m->end_ps : win_hi;
        if (b > a && m->cause > C_NONE) covered[m->cause] += b - a;
    }
    int best = C_NONE;
    int64_t total = 0;
    for (int k = 1; k < C_COUNT; k++) {
        total += covered[k];
        if (best == C_NONE || covered[k] > covered[best]) best = k;
    }
    if (best == C_NONE || covered[best] == 0 || 2 * total < win_hi - win_lo) return C_NONE;
    return best;
}

static int classify_ended(const ctx *c, const wrow *r) {
    switch (r->kind) {
    case WK_BARRIER: return C_BARRIER;
    case WK_RING_SPACE: return is_credit_wait(c, r) ? C_CREDIT : C_FLOW_CONTROL;
    case WK_FLAG: case WK_PIPE: return C_TRANSFER_SLOW;
    default: break;
    }
    const wake *k = r->waker_seq ? find_wake(c, r->waker_seq) : NULL;
    if (!k) return C_PRODUCER_LATE;
    uint64_t action_seq = k->seq;
    int64_t action_ps = r->end_ps;
    if (k->is_xfer) {
        if (k->issue_seq && k->issue_seq < r->begin_seq) return C_TRANSFER_SLOW;
        action_seq = k->issue_seq ? k->issue_seq : k->seq;
        if (k->issue_ps >= 0) action_ps = k->issue_ps;
    }
    int inherited = inherited_cause(c, r, k->corekey, action_seq, action_ps);
    if (inherited != C_NONE) return inherited;
    if (k->is_xfer && 2 * (r->end_ps - action_ps) >= r->dur_ps) return C_TRANSFER_SLOW;
    return C_PRODUCER_LATE;
}

static int default_never_ended(const ctx *c, const wrow *r) {
    switch (r->kind) {
    case WK_BARRIER: return C_BARRIER;
    case WK_PIPE: return C_TRANSFER_SLOW;
    case WK_RING_SPACE: return is_credit_wait(c, r) ? C_CREDIT : C_FLOW_CONTROL;
    default: return C_PRODUCER_LATE;
    }
}

/* The next wait along rule 6's chain from r, or 0: index + 1. */
static size_t chain_next(const ctx *c, const wrow *r) {
    int64_t obj = r->object;
    if (obj <= 0) return 0;
    int64_t writer = (size_t)obj < c->nlast ? c->last_writer[obj] : 0;
    if (writer > 0)
        return (size_t)(writer - 1) < c->ncores ? c->blocked_of[writer - 1] : 0;
    /* A ring word nobody wrote: who would write it is blocked on the
     * ring's other word. */
    int64_t other = (size_t)obj < c->nother ? c->other_word[obj] : 0;
    return other > 0 && (size_t)other < c->nblocked_on ? c->blocked_on[other] : 0;
}

/* Rule 6, iteratively along the chain (a deadlock chain can be long). */
static int resolve_never_ended(ctx *c, size_t start) {
    size_t chain_cap = 0, chain_n = 0;
    size_t *chain = NULL;
    size_t i = start;
    int cause = C_NONE;
    for (;;) {
        wrow *r = &c->w[i];
        if (r->state == 2) { cause = r->cause; break; }
        if (r->state == 1) {
            /* A cycle: from i's place in the chain to its end. */
            cause = C_PRODUCER_LATE;
            for (size_t j = chain_n; j-- > 0;) {
                if (c->w[chain[j]].kind == WK_RING_SPACE) cause = C_FLOW_CONTROL;
                if (chain[j] == i) break;
            }
            break;
        }
        size_t *p = grow(chain, &chain_cap, chain_n + 1, sizeof *p);
        if (!p) { free(chain); return -1; }
        chain = p;
        chain[chain_n++] = i;
        r->state = 1;
        int terminal = r->kind == WK_BARRIER || r->kind == WK_PIPE || is_credit_wait(c, r);
        if (terminal) { cause = default_never_ended(c, r); r->state = 2; r->cause = cause; break; }
        size_t next = chain_next(c, r);
        if (!next || next - 1 == i) { cause = C_NONE; break; }
        i = next - 1;
    }
    /* Everything on the chain takes the cause found at its end, or its own
     * default when the chain ended without one. */
    for (size_t j = chain_n; j-- > 0;) {
        wrow *r = &c->w[chain[j]];
        if (r->state == 2) continue;
        r->cause = cause != C_NONE ? cause : default_never_ended(c, r);
        r->state = 2;
    }
    free(chain);
    return 0;
}

static int store_causes(ctx *c) {
    const char *sql = "UPDATE waits SET cause = ?1 WHERE id = ?2";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, sql);
    for (size_t i = 0; i < c->n; i++) {
        const char *name = c->w[i].cause > C_NONE ? cause_names[c->w[i].cause] : NULL;
        if (name) sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        else sqlite3_bind_null(st, 1);
        sqlite3_bind_int64(st, 2, c->w[i].id);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return fail_sql(c, sql);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return 0;
}

int ana_derive_causes(sqlite3 *db, const ana_run *run, char *err, size_t errlen) {
    ctx c = {.db = db, .run = run, .err = err, .errlen = errlen};
    int rc = -1;
    if (load_waits(&c) || load_wakes(&c) || load_objects(&c)) goto out;

    c.by_end = malloc((c.n ? c.n : 1) * sizeof *c.by_end);
    c.by_core = malloc((c.n ? c.n : 1) * sizeof *c.by_core);
    c.ncores = (size_t)(run->ranks * run->cores_per_rank);
    c.blocked_of = calloc(c.ncores ? c.ncores : 1, sizeof *c.blocked_of);
    if (!c.by_end || !c.by_core || !c.blocked_of) {
        ana_err(err, errlen, "out of memory classifying %zu waits", c.n);
        goto out;
    }
    for (size_t i = 0; i < c.n; i++) {
        if (c.w[i].end_seq) {
            c.by_end[c.nended] = i;
            c.by_core[c.nended++] = i;
        } else {
            if (c.w[i].corekey < c.ncores) {
                size_t *slot = &c.blocked_of[c.w[i].corekey];
                if (!*slot || c.w[*slot - 1].begin_seq < c.w[i].begin_seq) *slot = i + 1;
            }
            int64_t obj = c.w[i].object;
            if (obj > 0 && obj <= (1 << 26)) {
                size_t *p = grow(c.blocked_on, &c.nblocked_on, (size_t)obj + 1, sizeof *p);
                if (!p) {
                    ana_err(err, errlen, "out of memory indexing blocked waits");
                    goto out;
                }
                c.blocked_on = p;
                if (!c.blocked_on[obj]) c.blocked_on[obj] = i + 1;
            }
        }
    }
    sort_ctx = &c;
    qsort(c.by_end, c.nended, sizeof *c.by_end, cmp_end);
    qsort(c.by_core, c.nended, sizeof *c.by_core, cmp_core_end);
    sort_ctx = NULL;

    for (size_t j = 0; j < c.nended; j++) {
        wrow *r = &c.w[c.by_end[j]];
        r->cause = classify_ended(&c, r);
    }
    for (size_t i = 0; i < c.n; i++)
        if (!c.w[i].end_seq && c.w[i].state != 2 && resolve_never_ended(&c, i)) {
            ana_err(err, errlen, "out of memory following a deadlock chain");
            goto out;
        }
    rc = store_causes(&c);
out:
    free(c.w);
    free(c.wk);
    free(c.by_end);
    free(c.by_core);
    free(c.credit_head);
    free(c.last_writer);
    free(c.blocked_of);
    free(c.other_word);
    free(c.blocked_on);
    return rc;
}
