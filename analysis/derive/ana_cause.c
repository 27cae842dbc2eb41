/*
 * ana_cause.c - why each wait waited: waits.cause, in the spirit of
 * Scalasca's wait-state patterns (late sender, late receiver, wait at
 * barrier) and of its root-cause propagation.
 *
 * The rules, first match wins (docs/sql.md states them for users):
 *   1. barrier waits                                   -> barrier
 *   2. ring_space waits on a credit ring               -> credit_starvation
 *      (a ring of kind RING_RDMA, or whose head word was ever advanced
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
 *
 * The waits come from the recorder's table, everything else from the
 * events pass (ana_facts: the waking events, credit rings, last writers).
 * The causes go back in one UPDATE that asks a C function for each row's
 * cause, and wait_groups (the sums `stats` and the stall views read) is
 * summed here in a hash table rather than by a GROUP BY over every wait.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_steps.h"

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
    int64_t rank, core;
    int kind;                          /* WK_* */
    uint16_t kind_text, role;          /* interned waits.kind and waits.role, 0 NULL */
    int64_t object, site;              /* 0: NULL */
    uint64_t begin_seq, end_seq;       /* end_seq 0: never ended */
    int64_t begin_ps, end_ps, dur_ps;
    uint64_t waker_seq;
    uint8_t cause;
    uint8_t state;                     /* never-ended resolution: 1 visiting, 2 done */
} wrow;

typedef struct ana_causes {
    sqlite3 *db;
    const ana_run *run;
    const ana_facts *f;
    uint64_t *begins;       /* every begin_seq, sorted */
    uint64_t *wakers;       /* every distinct waker_seq > 0, sorted */
    size_t nwakers;
    wrow *w;
    size_t n;
    int dense;              /* w[i].id == i + 1 for every i */
    char **texts;           /* interned role and kind names, [0] unused */
    size_t ntexts;
    size_t *by_end;         /* ended waits sorted by end_seq */
    size_t nended;
    size_t *by_core;        /* ended waits sorted by (corekey, end_seq) */
    size_t *blocked_of;     /* by corekey: never-ended wait index + 1 */
    size_t ncores;
    size_t *blocked_on;     /* by object id: a never-ended wait on that word + 1 */
    size_t nblocked_on;
    int64_t cause_ids[C_COUNT]; /* a cause's string id where wait_rows stores ids, else 0 */
    char *err;
    size_t errlen;
} ana_causes;
typedef ana_causes ctx;

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

/* Index of text among the interned strings (roles, wait kinds: a handful),
 * 0 for NULL; -1 when out of memory. */
static int intern(ctx *c, const unsigned char *text) {
    if (!text) return 0;
    for (size_t i = 1; i < c->ntexts; i++)
        if (!strcmp(c->texts[i], (const char *)text)) return (int)i;
    if (c->ntexts >= 65535) return -1;
    if (!c->ntexts) c->ntexts = 1;
    char **p = realloc(c->texts, (c->ntexts + 1) * sizeof *p);
    if (!p) return -1;
    c->texts = p;
    if (!(c->texts[c->ntexts] = strdup((const char *)text))) return -1;
    return (int)c->ntexts++;
}

static int load_waits(ctx *c) {
    const char *sql =
        "SELECT id, rank, core, kind, object, begin_seq, end_seq, begin_ps, end_ps, dur_ps,"
        " waker_seq, role, site FROM waits ORDER BY id";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(c, sql);
    size_t cap = 0;
    int rc;
    /* The previous row's role and kind: rows of one core repeat them. */
    const unsigned char *last_role = NULL, *last_kind = NULL;
    int last_role_len = -1, last_kind_len = -1;
    int role = 0, kind = 0, kt = 0;
    c->dense = 1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        wrow *p = grow(c->w, &cap, c->n + 1, sizeof *p);
        if (!p) break;
        c->w = p;
        wrow *r = &c->w[c->n++];
        r->id = sqlite3_column_int64(st, 0);
        if (r->id != (int64_t)c->n) c->dense = 0;
        r->rank = sqlite3_column_int64(st, 1);
        r->core = sqlite3_column_int64(st, 2);
        r->corekey = corekey(c, r->rank, r->core);
        const unsigned char *k = sqlite3_column_text(st, 3);
        int klen = sqlite3_column_bytes(st, 3);
        if (!last_kind || !k || klen != last_kind_len || memcmp(k, last_kind, (size_t)klen)) {
            kind = kind_code((const char *)k);
            if ((kt = intern(c, k)) < 0) break;
            last_kind = k ? (const unsigned char *)c->texts[kt] : NULL;
            last_kind_len = klen;
        }
        r->kind = kind;
        r->kind_text = (uint16_t)kt;
        r->object = sqlite3_column_int64(st, 4);
        r->begin_seq = (uint64_t)sqlite3_column_int64(st, 5);
        r->end_seq = sqlite3_column_type(st, 6) == SQLITE_NULL
                         ? 0 : (uint64_t)sqlite3_column_int64(st, 6);
        r->begin_ps = sqlite3_column_int64(st, 7);
        r->end_ps = sqlite3_column_int64(st, 8);
        r->dur_ps = sqlite3_column_int64(st, 9);
        r->waker_seq = (uint64_t)sqlite3_column_int64(st, 10);
        const unsigned char *ro = sqlite3_column_text(st, 11);
        int rlen = sqlite3_column_bytes(st, 11);
        if (!ro) {
            role = 0;
            last_role = NULL;
        } else if (!last_role || rlen != last_role_len ||
                   memcmp(ro, last_role, (size_t)rlen)) {
            if ((role = intern(c, ro)) < 0) break;
            last_role = (const unsigned char *)c->texts[role];
            last_role_len = rlen;
        }
        r->role = (uint16_t)role;
        r->site = sqlite3_column_int64(st, 12);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail_sql(c, sql);
    if (rc == SQLITE_ROW) {
        ana_err(c->err, c->errlen, "out of memory loading %zu waits", c->n);
        return -1;
    }
    return 0;
}

static const ana_wake *find_wake(const ctx *c, uint64_t seq) {
    const ana_wake *wk = c->f->wakes;
    size_t lo = 0, hi = c->f->nwakes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (wk[mid].seq < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->f->nwakes && wk[lo].seq == seq ? &wk[lo] : NULL;
}

static int is_credit_wait(const ctx *c, const wrow *r) {
    return r->kind == WK_RING_SPACE && r->object > 0 && (size_t)r->object < c->f->nobj &&
           c->f->word[r->object].credit_head;
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
    const ana_wake *k = r->waker_seq ? find_wake(c, r->waker_seq) : NULL;
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
    int64_t writer = (size_t)obj < c->f->nobj ? c->f->word[obj].last_writer : 0;
    if (writer > 0)
        return (size_t)(writer - 1) < c->ncores ? c->blocked_of[writer - 1] : 0;
    /* A ring word nobody wrote: who would write it is blocked on the
     * ring's other word. */
    int64_t other = (size_t)obj < c->f->nobj ? c->f->word[obj].other_word : 0;
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

/* npurr_cause(id): the cause computed for the wait with that id, for the
 * one UPDATE that stores them all: the id of its name in strings where
 * the index stores ids (index_version 3), else the name. */
static void cause_fn(sqlite3_context *sc, int argc, sqlite3_value **argv) {
    const ctx *c = sqlite3_user_data(sc);
    int64_t id = sqlite3_value_int64(argv[0]);
    const wrow *r = NULL;
    if (c->dense) {
        if (id >= 1 && (uint64_t)id <= c->n) r = &c->w[id - 1];
    } else {
        size_t lo = 0, hi = c->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (c->w[mid].id < id) lo = mid + 1;
            else hi = mid;
        }
        if (lo < c->n && c->w[lo].id == id) r = &c->w[lo];
    }
    if (!r || r->cause <= C_NONE) sqlite3_result_null(sc);
    else if (c->cause_ids[r->cause]) sqlite3_result_int64(sc, c->cause_ids[r->cause]);
    else sqlite3_result_text(sc, cause_names[r->cause], -1, SQLITE_STATIC);
}

/* Where wait_rows stores a cause as a string id (index_version 3), each
 * name's id in strings, added if it is not there yet. */
static int cause_string_ids(ctx *c) {
    memset(c->cause_ids, 0, sizeof c->cause_ids);
    if (ana_meta_i64(c->db, "index_version", 1) < 3) return 0;
    sqlite3_stmt *find = NULL, *add = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(c->db, "SELECT id FROM strings WHERE text = ?1", -1, &find, NULL) ||
        sqlite3_prepare_v2(c->db, "INSERT INTO strings(text) VALUES (?1)", -1, &add, NULL))
        goto done;
    for (int k = C_NONE + 1; k < C_COUNT; k++) {
        sqlite3_bind_text(find, 1, cause_names[k], -1, SQLITE_STATIC);
        if (sqlite3_step(find) == SQLITE_ROW) {
            c->cause_ids[k] = sqlite3_column_int64(find, 0);
        } else {
            sqlite3_bind_text(add, 1, cause_names[k], -1, SQLITE_STATIC);
            if (sqlite3_step(add) != SQLITE_DONE) goto done;
            sqlite3_reset(add);
            c->cause_ids[k] = sqlite3_last_insert_rowid(c->db);
        }
        sqlite3_reset(find);
    }
    rc = 0;
done:
    if (rc) rc = fail_sql(c, "strings (the causes' names)");
    sqlite3_finalize(find);
    sqlite3_finalize(add);
    return rc;
}

static int store_causes(ctx *c) {
    if (cause_string_ids(c)) return -1;
    if (sqlite3_create_function(c->db, "npurr_cause", 1, SQLITE_UTF8, c, cause_fn, NULL,
                                NULL) != SQLITE_OK)
        return fail_sql(c, "npurr_cause");
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE %s SET cause = npurr_cause(id)", ana_waits_table(c->db));
    int rc = ana_exec(c->db, sql, c->err, c->errlen);
    sqlite3_create_function(c->db, "npurr_cause", 1, SQLITE_UTF8, NULL, NULL, NULL, NULL);
    return rc;
}

/* ---------------------------------------------------------- wait_groups */

typedef struct group {
    const wrow *key;        /* a wait of the group: its keys are the group's */
    uint64_t count;
    int64_t total, max;
} group;

static int same_group(const wrow *a, const wrow *b) {
    return a->role == b->role && a->rank == b->rank && a->core == b->core &&
           a->kind_text == b->kind_text && a->site == b->site && a->object == b->object &&
           a->cause == b->cause;
}

static uint64_t group_hash(const wrow *r) {
    uint64_t h = 1469598103934665603ull;
    uint64_t k[7] = {r->role, (uint64_t)r->rank, (uint64_t)r->core, r->kind_text,
                     (uint64_t)r->site, (uint64_t)r->object, r->cause};
    for (int i = 0; i < 7; i++) h = (h ^ k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* The waits summed per (role, rank, core, kind, site, object, cause). */
static int write_groups(ctx *c) {
    if (ana_create_table(c->db, "wait_groups",
                         "role TEXT, rank INT, core INT, kind TEXT, site INT, object INT,"
                         " cause TEXT, count INT, total_ps INT, max_ps INT",
                         c->err, c->errlen))
        return -1;
    size_t cap = 1024, n = 0;
    group *g = calloc(cap, sizeof *g);
    if (!g) goto oom;
    for (size_t i = 0; i < c->n; i++) {
        const wrow *r = &c->w[i];
        if (2 * (n + 1) > cap) {
            group *ng = calloc(2 * cap, sizeof *ng);
            if (!ng) goto oom;
            for (size_t j = 0; j < cap; j++) {
                if (!g[j].key) continue;
                size_t k = (size_t)group_hash(g[j].key) & (2 * cap - 1);
                while (ng[k].key) k = (k + 1) & (2 * cap - 1);
                ng[k] = g[j];
            }
            free(g);
            g = ng;
            cap *= 2;
        }
        size_t k = (size_t)group_hash(r) & (cap - 1);
        while (g[k].key && !same_group(g[k].key, r)) k = (k + 1) & (cap - 1);
        if (!g[k].key) {
            g[k].key = r;
            g[k].max = r->dur_ps;
            n++;
        }
        g[k].count++;
        g[k].total += r->dur_ps;
        if (r->dur_ps > g[k].max) g[k].max = r->dur_ps;
    }
    ana_bulk *b = malloc(sizeof *b);
    if (!b) goto oom;
    int rc = ana_bulk_open(b, c->db, "wait_groups", 10, NULL, c->err, c->errlen);
    for (size_t j = 0; !rc && j < cap; j++) {
        const wrow *r = g[j].key;
        if (!r) continue;
        ana_bulk_text(b, r->role ? c->texts[r->role] : NULL);
        ana_bulk_int(b, r->rank);
        ana_bulk_int(b, r->core);
        ana_bulk_text(b, r->kind_text ? c->texts[r->kind_text] : NULL);
        if (r->site) ana_bulk_int(b, r->site);
        else ana_bulk_null(b);
        if (r->object) ana_bulk_int(b, r->object);
        else ana_bulk_null(b);
        ana_bulk_text(b, r->cause > C_NONE ? cause_names[r->cause] : NULL);
        ana_bulk_int(b, (int64_t)g[j].count);
        ana_bulk_int(b, g[j].total);
        ana_bulk_int(b, g[j].max);
        rc = ana_bulk_row_done(b, 0);
    }
    if (!rc) rc = ana_bulk_finish(b);
    ana_bulk_close(b);
    free(b);
    free(g);
    return rc;
oom:
    free(g);
    ana_err(c->err, c->errlen, "out of memory summing %zu waits into groups", c->n);
    return -1;
}

/* Sorted begin seqs and distinct waker seqs, for the events pass. */
static int index_seqs(ctx *c) {
    c->begins = malloc((c->n ? c->n : 1) * sizeof *c->begins);
    c->wakers = malloc((c->n ? c->n : 1) * sizeof *c->wakers);
    if (!c->begins || !c->wakers) return -1;
    int sorted = 1;
    for (size_t i = 0; i < c->n; i++) {
        c->begins[i] = c->w[i].begin_seq;
        if (i && c->begins[i] < c->begins[i - 1]) sorted = 0;
        if (c->w[i].waker_seq) c->wakers[c->nwakers++] = c->w[i].waker_seq;
    }
    if ((!sorted && ana_radix_sort(c->begins, NULL, c->n)) ||
        ana_radix_sort(c->wakers, NULL, c->nwakers))
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < c->nwakers; i++)
        if (!m || c->wakers[i] != c->wakers[m - 1]) c->wakers[m++] = c->wakers[i];
    c->nwakers = m;
    return 0;
}

ana_causes *ana_causes_load(sqlite3 *db, const ana_run *run, char *err, size_t errlen) {
    ctx *c = calloc(1, sizeof *c);
    if (!c) {
        ana_err(err, errlen, "out of memory");
        return NULL;
    }
    c->db = db;
    c->run = run;
    c->err = err;
    c->errlen = errlen;
    if (load_waits(c)) {
        ana_causes_free(c);
        return NULL;
    }
    if (index_seqs(c)) {
        ana_err(err, errlen, "out of memory sorting %zu waits", c->n);
        ana_causes_free(c);
        return NULL;
    }
    return c;
}

const uint64_t *ana_causes_begins(const ana_causes *c, size_t *n) {
    *n = c->n;
    return c->begins;
}

const uint64_t *ana_causes_wakers(const ana_causes *c, size_t *n) {
    *n = c->nwakers;
    return c->wakers;
}

void ana_causes_free(ana_causes *c) {
    if (!c) return;
    free(c->w);
    for (size_t i = 1; i < c->ntexts; i++) free(c->texts[i]);
    free(c->texts);
    free(c->begins);
    free(c->wakers);
    free(c->by_end);
    free(c->by_core);
    free(c->blocked_of);
    free(c->blocked_on);
    free(c);
}

/* by_end: ended waits by end_seq; by_core: the same by (core, end_seq). */
static int order_ended(ctx *c) {
    uint64_t *key = malloc((c->nended ? c->nended : 1) * sizeof *key);
    uint32_t *idx = malloc((c->nended ? c->nended : 1) * sizeof *idx);
    int rc = -1;
    if (!key || !idx || c->n > UINT32_MAX) goto out;
    for (size_t j = 0; j < c->nended; j++) {
        idx[j] = (uint32_t)c->by_end[j];
        key[j] = c->w[idx[j]].end_seq;
    }
    if (ana_radix_sort(key, idx, c->nended)) goto out;
    for (size_t j = 0; j < c->nended; j++) {
        c->by_end[j] = idx[j];
        key[j] = c->w[idx[j]].corekey;
    }
    /* Stable: equal cores keep their end order. */
    if (ana_radix_sort(key, idx, c->nended)) goto out;
    for (size_t j = 0; j < c->nended; j++) c->by_core[j] = idx[j];
    rc = 0;
out:
    free(key);
    free(idx);
    return rc;
}

int ana_causes_derive(ana_causes *cx, const ana_facts *facts) {
    ctx *c = cx;
    char *err = c->err;
    size_t errlen = c->errlen;
    c->f = facts;
    double t = ana_step_clock(NULL, 0);
    c->by_end = malloc((c->n ? c->n : 1) * sizeof *c->by_end);
    c->by_core = malloc((c->n ? c->n : 1) * sizeof *c->by_core);
    c->ncores = (size_t)(c->run->ranks * c->run->cores_per_rank);
    c->blocked_of = calloc(c->ncores ? c->ncores : 1, sizeof *c->blocked_of);
    if (!c->by_end || !c->by_core || !c->blocked_of) {
        ana_err(err, errlen, "out of memory classifying %zu waits", c->n);
        return -1;
    }
    for (size_t i = 0; i < c->n; i++) {
        if (c->w[i].end_seq) {
            c->by_end[c->nended++] = i;
        } else {
            if (c->w[i].corekey < c->ncores) {
                size_t *slot = &c->blocked_of[c->w[i].corekey];
                if (!*slot || c->w[*slot - 1].begin_seq < c->w[i].begin_seq) *slot = i + 1;
            }
            int64_t obj = c->w[i].object;
            if (obj > 0 && obj <= (1 << 26)) {
                size_t *p = grow(c->blocked_on, &c->nblocked_on, (size_t)obj + 1, sizeof *p);
                if (!p) {
                    ana_err(err, errlen, "out of memory indexing blocked waits");
                    return -1;
                }
                c->blocked_on = p;
                if (!c->blocked_on[obj]) c->blocked_on[obj] = i + 1;
            }
        }
    }
    if (order_ended(c)) {
        ana_err(err, errlen, "out of memory sorting %zu waits", c->nended);
        return -1;
    }
    for (size_t j = 0; j < c->nended; j++) {
        wrow *r = &c->w[c->by_end[j]];
        r->cause = (uint8_t)classify_ended(c, r);
    }
    for (size_t i = 0; i < c->n; i++)
        if (!c->w[i].end_seq && c->w[i].state != 2 && resolve_never_ended(c, i)) {
            ana_err(err, errlen, "out of memory following a deadlock chain");
            return -1;
        }
    t = ana_step_clock("causes: rules", t);
    int rc = store_causes(c);
    t = ana_step_clock("causes: store", t);
    if (!rc) rc = write_groups(c);
    ana_step_clock("causes: groups", t);
    return rc;
}
