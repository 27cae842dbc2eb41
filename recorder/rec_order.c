/*
 * rec_order.c - which core each event of a chunk comes from, derived from
 * the cores' clocks instead of stored.
 *
 * The engine emits events in virtual-time order, and events of one time in
 * its tie order, which without jitter is (rank, core) almost always. So a
 * chunk stores, per core, how many events it holds and their times (each as
 * a difference from the core's previous event, core after core), and the
 * decoder rebuilds the interleaving by merging the cores on (time, rank,
 * core). Where the engine's order differs from that merge (ties under
 * jitter, which orders them by the seed), an exception names the event's
 * position and core. The rank, core and time columns then cost what the
 * core table, one stream of small time steps and the rare exceptions cost.
 *
 * Encoder and decoder run the same merge (order_merge), the encoder
 * checking each event against it and writing exceptions, the decoder
 * following it and reading them, so the two cannot drift apart.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_internal.h"

void rec_order_free(rec_order *o) {
    free(o->rank);
    free(o->core);
    free(o->count);
    free(o->start);
    free(o->pos);
    free(o->heap);
    free(o->heap_at);
    free(o->time);
    free(o->ev_core);
    free(o->pend_next);
    free(o->pend_head);
    free(o->pend_tail);
    free(o->hash);
    free(o->in_key);
    free(o->in_time);
    memset(o, 0, sizeof *o);
}

static int reserve_cores(rec_order *o, size_t cores) {
    size_t cap = o->cap_cores;
    if (rec_grow((void **)&o->rank, &cap, cores, sizeof *o->rank)) return -1;
    uint32_t **arrays[] = {&o->core,    &o->count,     &o->start,    &o->pos,
                           &o->heap,    &o->heap_at,   &o->pend_head, &o->pend_tail};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) {
        size_t c = o->cap_cores;
        if (rec_grow((void **)arrays[k], &c, cores, sizeof(uint32_t))) return -1;
    }
    o->cap_cores = cap;
    return 0;
}

static int reserve_events(rec_order *o, size_t n) {
    size_t cap = o->cap_ev;
    if (rec_grow((void **)&o->time, &cap, n, sizeof *o->time)) return -1;
    cap = o->cap_ev;
    if (rec_grow((void **)&o->ev_core, &cap, n, sizeof *o->ev_core)) return -1;
    cap = o->cap_ev;
    if (rec_grow((void **)&o->pend_next, &cap, n, sizeof *o->pend_next)) return -1;
    cap = o->cap_ev;
    if (rec_grow((void **)&o->in_key, &cap, n, sizeof *o->in_key)) return -1;
    cap = o->cap_ev;
    if (rec_grow((void **)&o->in_time, &cap, n, sizeof *o->in_time)) return -1;
    o->cap_ev = cap;
    return 0;
}

int rec_order_reserve(rec_order *o, size_t n) { return reserve_events(o, n); }

/* ------------------------------------------------------------ the merge */
/* A min-heap of cores with events left, keyed by (next event's time, core
 * index); heap_at[c] is c's position in it. */
static inline int before(const rec_order *o, uint32_t a, uint32_t b) {
    uint64_t ta = o->time[o->start[a] + o->pos[a]], tb = o->time[o->start[b] + o->pos[b]];
    return ta < tb || (ta == tb && a < b);
}

static void heap_set(rec_order *o, uint32_t at, uint32_t c) {
    o->heap[at] = c;
    o->heap_at[c] = at;
}

static void sift_up(rec_order *o, uint32_t at) {
    uint32_t c = o->heap[at];
    while (at > 0 && before(o, c, o->heap[(at - 1) / 2])) {
        heap_set(o, at, o->heap[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    heap_set(o, at, c);
}

static void sift_down(rec_order *o, uint32_t at) {
    uint32_t c = o->heap[at];
    for (;;) {
        uint32_t l = 2 * at + 1, m = l;
        if (l >= o->heap_n) break;
        if (l + 1 < o->heap_n && before(o, o->heap[l + 1], o->heap[l])) m = l + 1;
        if (!before(o, o->heap[m], c)) break;
        heap_set(o, at, o->heap[m]);
        at = m;
    }
    heap_set(o, at, c);
}

static void merge_start(rec_order *o) {
    o->heap_n = 0;
    for (uint32_t c = 0; c < o->ncores; c++) {
        o->pos[c] = 0;
        heap_set(o, o->heap_n++, c);
        sift_up(o, o->heap_n - 1);
    }
}

/* Core c's next event is taken: its key changes (grows, unless a core's
 * clock went back, which only a hostile stream does), or it leaves the heap. */
static void merge_take(rec_order *o, uint32_t c) {
    uint32_t at = o->heap_at[c];
    if (++o->pos[c] < o->count[c]) {
        sift_down(o, at);
        sift_up(o, o->heap_at[c]);
        return;
    }
    uint32_t last = o->heap[--o->heap_n];
    if (at == o->heap_n) return;
    heap_set(o, at, last);
    sift_down(o, at);
    sift_up(o, o->heap_at[last]);
}

/* ------------------------------------------------------------ encoding */
static inline uint64_t core_key(const engine_event *e) { return (uint64_t)e->rank << 32 | e->core; }

static int cmp_key(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The table through a slot per (rank, core) when they are small, as in any
 * run npurr makes: walking the slots in (rank, core) order sorts the cores,
 * and each event finds its index in one load. */
static int build_table_hashed(rec_order *o, const engine_event *evs, size_t n) {
    size_t slots = 1024;
    while (slots < 2 * n) slots *= 2;
    size_t hc = o->cap_hash;
    if (rec_grow((void **)&o->hash, &hc, slots, sizeof *o->hash)) return -1;
    o->cap_hash = hc;
    memset(o->hash, 0xff, slots * sizeof *o->hash);   /* empty: key all ones */
    uint64_t *keys = (uint64_t *)(void *)o->time;     /* scratch until times are laid out */
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = core_key(&evs[i]);
        size_t h = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (slots - 1);
        while (o->hash[h] != UINT64_MAX && o->hash[h] != k) h = (h + 1) & (slots - 1);
        if (o->hash[h] == UINT64_MAX) { o->hash[h] = k; keys[nk++] = k; }
    }
    if (nk > 1) qsort(keys, nk, sizeof *keys, cmp_key);   /* keys is NULL for an empty chunk */
    if (reserve_cores(o, nk)) return -1;
    o->ncores = (uint32_t)nk;
    for (uint32_t c = 0; c < nk; c++) {
        o->rank[c] = (uint32_t)(keys[c] >> 32);
        o->core[c] = (uint32_t)keys[c];
        o->count[c] = 0;
    }
    for (size_t i = 0; i < n; i++) {   /* binary search: cores are few */
        uint64_t k = core_key(&evs[i]);
        uint32_t lo = 0, hi = (uint32_t)nk;
        while (hi - lo > 1) {
            uint32_t mid = (lo + hi) / 2;
            if (((uint64_t)o->rank[mid] << 32 | o->core[mid]) <= k) lo = mid; else hi = mid;
        }
        o->ev_core[i] = lo;
        o->count[lo]++;
    }
    return 0;
}

/* The dense table from the scan's keys (rank << REC_ORDER_CORE_BITS | core):
 * the events themselves are not read again. */
static int build_table_keyed(rec_order *o, size_t n, uint32_t ranks) {
    size_t slots = (size_t)ranks << REC_ORDER_CORE_BITS, hc = o->cap_hash;
    if (rec_grow((void **)&o->hash, &hc, (slots + 1) / 2, sizeof *o->hash)) return -1;
    o->cap_hash = hc;
    uint32_t *slot = (uint32_t *)(void *)o->hash;
    const uint32_t *key = o->in_key;
    memset(slot, 0xff, slots * sizeof *slot);   /* absent: all ones */
    for (size_t i = 0; i < n; i++) slot[key[i]] = 0;
    uint32_t nk = 0;
    for (size_t k = 0; k < slots; k++)
        if (slot[k] == 0) nk++;
    if (reserve_cores(o, nk)) return -1;
    o->ncores = nk;
    uint32_t c = 0;
    for (size_t k = 0; k < slots; k++) {
        if (slot[k]) continue;
        o->rank[c] = (uint32_t)(k >> REC_ORDER_CORE_BITS);
        o->core[c] = (uint32_t)(k & ((1u << REC_ORDER_CORE_BITS) - 1));
        o->count[c] = 0;
        slot[k] = c++;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t x = slot[key[i]];
        o->ev_core[i] = x;
        o->count[x]++;
    }
    return 0;
}

/* Table index of every event's (rank, core), cores sorted by (rank, core).
 * The scan keyed the events when every rank and core fits the dense table;
 * a chunk encoded without that scan gets its keys here, else a hash. */
static int build_table(rec_order *o, const engine_event *evs, size_t n,
                       const rec_order_scan *scan) {
    uint32_t max_rank = scan->keyed ? scan->max_rank : 0, max_core = 0;
    int keyed = scan->keyed && n;
    if (!scan->keyed && n) {
        for (size_t i = 0; i < n; i++) {
            if (evs[i].rank > max_rank) max_rank = evs[i].rank;
            if (evs[i].core > max_core) max_core = evs[i].core;
        }
        keyed = max_core < (1u << REC_ORDER_CORE_BITS) && max_rank < REC_ORDER_MAX_RANK;
        for (size_t i = 0; keyed && i < n; i++)
            o->in_key[i] = evs[i].rank << REC_ORDER_CORE_BITS | evs[i].core;
    }
    if (keyed ? build_table_keyed(o, n, max_rank + 1) : build_table_hashed(o, evs, n)) return -1;
    uint32_t at = 0;
    for (uint32_t c = 0; c < o->ncores; c++) {
        o->start[c] = at;
        at += o->count[c];
    }
    return 0;
}

#define PUT(w, v) (*(w) += rec_varint_put(*(w), (v)))


/* The merge's exceptions without running it, for a chunk whose times never
 * go back (every chunk the engine writes): each core's next event is then
 * never earlier than the event at hand, so the merge takes, among the
 * events of one time, the lowest core first (each core's in its order). An
 * event is an exception exactly when a later event of its time is of a
 * lower core: a suffix minimum per run of equal times. */
static void exceptions_in_time_order(rec_order *o, const uint64_t *time, size_t n,
                                     uint8_t **exc_w) {
    uint32_t *lowest = o->pend_next;   /* scratch: the pending lists start after encoding */
    size_t last = 0;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && time[b] == time[a]; b++) {}
        if (b - a == 1) continue;
        uint32_t low = UINT32_MAX;
        for (size_t i = b; i-- > a;) {
            lowest[i] = low;   /* the lowest core after i in the run */
            if (o->ev_core[i] < low) low = o->ev_core[i];
        }
        for (size_t i = a; i < b; i++) {
            if (lowest[i] < o->ev_core[i]) {
                PUT(exc_w, i - last);
                PUT(exc_w, o->ev_core[i]);
                last = i;
            }
        }
    }
}

int rec_order_encode(rec_order *o, const engine_event *evs, size_t n, const rec_order_scan *scan,
                     uint8_t **cores_w, uint8_t **times_w, uint8_t **exc_w) {
    if (reserve_events(o, n) || build_table(o, evs, n, scan)) return -1;
    if (!scan->keyed)   /* the times too from the events */
        for (size_t i = 0; i < n; i++) o->in_time[i] = evs[i].time;
    const uint64_t *in_time = o->in_time;
    for (uint32_t c = 0; c < o->ncores; c++) o->pos[c] = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = o->ev_core[i];
        o->time[o->start[c] + o->pos[c]++] = in_time[i];
    }
    /* the core table: rank step, core (a step within one rank), count */
    PUT(cores_w, o->ncores);
    for (uint32_t c = 0; c < o->ncores; c++) {
        uint32_t dr = c ? o->rank[c] - o->rank[c - 1] : o->rank[c];
        PUT(cores_w, dr);
        PUT(cores_w, c && !dr ? o->core[c] - o->core[c - 1] : o->core[c]);
        PUT(cores_w, o->count[c]);
    }
    /* times, core after core: a core's first time against the previous
     * core's first, then steps within the core (never negative) */
    uint64_t prev_first = 0;
    for (uint32_t c = 0; c < o->ncores; c++) {
        const uint64_t *t = &o->time[o->start[c]];
        PUT(times_w, rec_zigzag((int64_t)(t[0] - prev_first)));
        prev_first = t[0];
        for (uint32_t j = 1; j < o->count[c]; j++) PUT(times_w, rec_zigzag((int64_t)(t[j] - t[j - 1])));
    }
    /* where the engine's order leaves the merge: position step, core */
    if (scan->ordered) {
        exceptions_in_time_order(o, in_time, n, exc_w);
        return 0;
    }
    merge_start(o);
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = o->ev_core[i];
        if (o->heap[0] != c) {
            PUT(exc_w, i - last);
            PUT(exc_w, c);
            last = i;
        }
        merge_take(o, c);
    }
    return 0;
}

#undef PUT

/* ------------------------------------------------------------ decoding */
static int read_table(rec_order *o, size_t n, rec_cur *cores) {
    uint64_t nc = rec_cur_varint(cores);
    if (cores->bad || nc > n || nc > UINT32_MAX || reserve_cores(o, (size_t)nc)) return -1;
    o->ncores = (uint32_t)nc;
    uint64_t total = 0;
    for (uint32_t c = 0; c < o->ncores; c++) {
        uint64_t dr = rec_cur_varint(cores), dc = rec_cur_varint(cores);
        uint64_t cnt = rec_cur_varint(cores);
        uint64_t r = c ? o->rank[c - 1] + dr : dr;
        uint64_t k = c && !dr ? o->core[c - 1] + dc : dc;
        if (cores->bad || !cnt || r > UINT32_MAX || k > UINT32_MAX ||
            (c && !dr && !dc) || cnt > n - total)
            return -1;
        o->rank[c] = (uint32_t)r;
        o->core[c] = (uint32_t)k;
        o->count[c] = (uint32_t)cnt;
        o->start[c] = (uint32_t)total;
        total += cnt;
    }
    return total == n ? 0 : -1;
}

static int read_times(rec_order *o, rec_cur *times) {
    uint64_t prev_first = 0;
    for (uint32_t c = 0; c < o->ncores; c++) {
        uint64_t *t = &o->time[o->start[c]];
        t[0] = prev_first + (uint64_t)rec_unzigzag(rec_cur_varint(times));
        prev_first = t[0];
        for (uint32_t j = 1; j < o->count[c]; j++)
            t[j] = t[j - 1] + (uint64_t)rec_unzigzag(rec_cur_varint(times));
    }
    return times->bad ? -1 : 0;
}

/* Follows the merge, taking the exceptions' cores at their positions. */
static int follow(rec_order *o, size_t n, rec_cur *exc) {
    merge_start(o);
    size_t next_exc = SIZE_MAX, last = 0;
    uint32_t exc_core = 0;
    if (exc->p < exc->end) {
        next_exc = (size_t)rec_cur_varint(exc);
        exc_core = (uint32_t)rec_cur_varint(exc);
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t c = o->heap[0];
        if (i == next_exc) {
            if (exc->bad || exc_core >= o->ncores || o->pos[exc_core] >= o->count[exc_core])
                return -1;
            c = exc_core;
            last = i;
            next_exc = SIZE_MAX;
            if (exc->p < exc->end) {
                uint64_t step = rec_cur_varint(exc);
                next_exc = step && step <= n ? last + (size_t)step : n + 1;
                exc_core = (uint32_t)rec_cur_varint(exc);
            }
        }
        o->ev_core[i] = c;
        merge_take(o, c);
    }
    return exc->bad || next_exc != SIZE_MAX ? -1 : 0;
}

int rec_order_decode(rec_order *o, size_t n, rec_cur *cores, rec_cur *times, rec_cur *exc) {
    if (reserve_events(o, n) || read_table(o, n, cores) || read_times(o, times) ||
        follow(o, n, exc))
        return -1;
    for (uint32_t c = 0; c < o->ncores; c++) o->pos[c] = 0;
    return 0;
}

void rec_order_event(rec_order *o, size_t i, engine_event *e) {
    uint32_t c = o->ev_core[i];
    e->rank = o->rank[c];
    e->core = o->core[c];
    e->time = o->time[o->start[c] + o->pos[c]++];
}

/* ------------------------------------------------------------ pending issues per core */
/* A copied DONE names its issue by its rank among its own core's pending
 * issues, oldest first: a queue completes in order, so that is nearly
 * always 0, where the rank among every pending issue of the chunk is not.
 * Each core's pending issues are a list linked through pend_next. */
#define NONE UINT32_MAX

void rec_order_pending_reset(rec_order *o) {
    for (uint32_t c = 0; c < o->ncores; c++) o->pend_head[c] = o->pend_tail[c] = NONE;
}

void rec_order_pending_add(rec_order *o, size_t i) {
    uint32_t c = o->ev_core[i];
    o->pend_next[i] = NONE;
    if (o->pend_tail[c] == NONE) o->pend_head[c] = (uint32_t)i;
    else o->pend_next[o->pend_tail[c]] = (uint32_t)i;
    o->pend_tail[c] = (uint32_t)i;
}

/* Unlinks the k-th pending issue of core c (or the one at src when k is
 * NONE), returning its position (NONE if absent) and *rank its rank. */
static uint32_t pending_unlink(rec_order *o, uint32_t c, uint64_t k, uint32_t src, uint64_t *rank) {
    uint32_t prev = NONE, at = o->pend_head[c];
    uint64_t r = 0;
    while (at != NONE && (k == NONE ? at != src : r != k)) {
        prev = at;
        at = o->pend_next[at];
        r++;
    }
    if (at == NONE) return NONE;
    if (prev == NONE) o->pend_head[c] = o->pend_next[at];
    else o->pend_next[prev] = o->pend_next[at];
    if (o->pend_tail[c] == at) o->pend_tail[c] = prev;
    *rank = r;
    return at;
}

uint64_t rec_order_pending_take(rec_order *o, size_t i, size_t src) {
    uint64_t rank = 0;
    pending_unlink(o, o->ev_core[i], NONE, (uint32_t)src, &rank);
    return rank;
}

size_t rec_order_pending_select(rec_order *o, size_t i, uint64_t k) {
    uint64_t rank;
    if (k >= NONE) return SIZE_MAX;
    uint32_t at = pending_unlink(o, o->ev_core[i], k, NONE, &rank);
    return at == NONE ? SIZE_MAX : at;
}
