/*
 * rec_chunk.c - the chunk payload codec: declarations + column-transposed
 * events.
 *
 * A chunk is self-contained (decodable without the chunks before it, which
 * the events virtual table relies on) and holds, in this order, the
 * declarations (strings, sites, objects) that arrived since the previous
 * chunk, then REC_COL_COUNT column streams. Transposing rows into columns,
 * delta-encoding each field against the previous value of the same stream
 * (a core's clock and call sites; addresses, lengths, values and objects
 * of the previous event of the same call site on the same rank, which is
 * one step of the same loop on another core as often as on this one),
 * predicting kind, pipe and sub from the call site, and storing a
 * transfer's completion as a reference to its issue plus its duration
 * turns the event stream into runs of tiny, repetitive varints that zstd
 * squeezes to a few bytes per event. The exact layout is documented in
 * traces/FORMAT.md; keep the two in step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_internal.h"

/* ---------------------------------------------------------------- declarations */

void rec_decl_string(rec_buf *b, uint32_t *prev_id, uint32_t id, const char *text) {
    if (id == *prev_id + 1) {
        rec_buf_byte(b, REC_DECL_STRING_NEXT);
    } else {
        rec_buf_byte(b, REC_DECL_STRING);
        rec_buf_varint(b, id);
    }
    *prev_id = id;
    rec_buf_bytes(b, text ? text : "", text ? strlen(text) : 0);
}

void rec_decl_site(rec_buf *b, const engine_site *s) {
    rec_buf_byte(b, REC_DECL_SITE);
    rec_buf_varint(b, s->id);
    rec_buf_varint(b, rec_zigzag(s->line));
    rec_buf_bytes(b, s->file ? s->file : "", s->file ? strlen(s->file) : 0);
    rec_buf_bytes(b, s->func ? s->func : "", s->func ? strlen(s->func) : 0);
}

/* Objects are declared in bursts of similar records (a ring, its head and
 * tail; one buffer per peer), so the writer stores each field as a
 * difference against the previous object record of the same chunk (type
 * 4), and the ring, head and tail ids, when set, against the object's own
 * id. Type 3 stores the fields as they are. */
static inline uint64_t zz32(uint32_t a, uint32_t b) {
    return rec_zigzag((int64_t)(int32_t)(a - b));
}
static inline uint32_t unzz32(uint32_t b, uint64_t v) {
    return b + (uint32_t)rec_unzigzag(v);
}
/* An optional id (0 = none) near id: 0, or its difference plus one. */
static inline uint64_t near_id(uint32_t x, uint32_t id) { return x ? zz32(x, id) + 1 : 0; }
static inline uint32_t un_near_id(uint32_t id, uint64_t v) { return v ? unzz32(id, v - 1) : 0; }

void rec_decl_object(rec_buf *b, const engine_object *o) {
    rec_buf_byte(b, REC_DECL_OBJECT);
    rec_buf_varint(b, o->id);
    rec_buf_varint(b, (uint64_t)o->kind);
    rec_buf_varint(b, o->name);
    rec_buf_varint(b, rec_zigzag(o->rank));
    rec_buf_varint(b, o->addr.a);
    rec_buf_varint(b, o->width);
    rec_buf_varint(b, o->size);
    rec_buf_varint(b, o->ring);
    rec_buf_varint(b, o->head);
    rec_buf_varint(b, o->tail);
    rec_buf_varint(b, rec_zigzag(o->producer_rank));
    rec_buf_varint(b, rec_zigzag(o->consumer_rank));
    rec_buf_varint(b, o->role);
}

void rec_decl_object_delta(rec_buf *b, engine_object *prev, const engine_object *o) {
    rec_buf_byte(b, REC_DECL_OBJECT_DELTA);
    rec_buf_varint(b, zz32(o->id, prev->id));
    rec_buf_varint(b, (uint64_t)o->kind);
    rec_buf_varint(b, zz32(o->name, prev->name));
    rec_buf_varint(b, rec_zigzag((int64_t)o->rank - prev->rank));
    rec_buf_varint(b, rec_zigzag((int64_t)(o->addr.a - prev->addr.a)));
    rec_buf_varint(b, o->width);
    rec_buf_varint(b, rec_zigzag((int64_t)(o->size - prev->size)));
    rec_buf_varint(b, near_id(o->ring, o->id));
    rec_buf_varint(b, near_id(o->head, o->id));
    rec_buf_varint(b, near_id(o->tail, o->id));
    rec_buf_varint(b, rec_zigzag((int64_t)o->producer_rank - prev->producer_rank));
    rec_buf_varint(b, rec_zigzag((int64_t)o->consumer_rank - prev->consumer_rank));
    rec_buf_varint(b, zz32(o->role, prev->role));
    *prev = *o;
}

int rec_decl_decode(const uint8_t *p, size_t len, const rec_decl_sink *sink) {
    rec_cur c = {p, p + len, 0};
    engine_object prev;
    memset(&prev, 0, sizeof prev);
    uint32_t prev_string = 0;
    while (c.p < c.end && !c.bad) {
        uint8_t type = rec_cur_byte(&c);
        if (type == REC_DECL_STRING || type == REC_DECL_STRING_NEXT) {
            uint32_t id = type == REC_DECL_STRING ? (uint32_t)rec_cur_varint(&c) : prev_string + 1;
            prev_string = id;
            size_t n;
            const char *s = rec_cur_bytes(&c, &n);
            if (!c.bad && sink->string) sink->string(sink->ctx, id, s, n);
        } else if (type == REC_DECL_SITE) {
            uint32_t id = (uint32_t)rec_cur_varint(&c);
            int line = (int)rec_unzigzag(rec_cur_varint(&c));
            size_t fl, fn;
            const char *file = rec_cur_bytes(&c, &fl);
            const char *func = rec_cur_bytes(&c, &fn);
            if (!c.bad && sink->site) sink->site(sink->ctx, id, line, file, fl, func, fn);
        } else if (type == REC_DECL_OBJECT) {
            engine_object o;
            memset(&o, 0, sizeof o);
            o.id = (uint32_t)rec_cur_varint(&c);
            o.kind = (engine_obj_kind)rec_cur_varint(&c);
            o.name = (uint32_t)rec_cur_varint(&c);
            o.rank = (int)rec_unzigzag(rec_cur_varint(&c));
            o.addr.a = rec_cur_varint(&c);
            o.width = (uint32_t)rec_cur_varint(&c);
            o.size = rec_cur_varint(&c);
            o.ring = (uint32_t)rec_cur_varint(&c);
            o.head = (uint32_t)rec_cur_varint(&c);
            o.tail = (uint32_t)rec_cur_varint(&c);
            o.producer_rank = (int)rec_unzigzag(rec_cur_varint(&c));
            o.consumer_rank = (int)rec_unzigzag(rec_cur_varint(&c));
            o.role = (uint32_t)rec_cur_varint(&c);
            prev = o;
            if (!c.bad && sink->object) sink->object(sink->ctx, &o);
        } else if (type == REC_DECL_OBJECT_DELTA) {
            engine_object o;
            memset(&o, 0, sizeof o);
            o.id = unzz32(prev.id, rec_cur_varint(&c));
            o.kind = (engine_obj_kind)rec_cur_varint(&c);
            o.name = unzz32(prev.name, rec_cur_varint(&c));
            o.rank = (int)((int64_t)prev.rank + rec_unzigzag(rec_cur_varint(&c)));
            o.addr.a = prev.addr.a + (uint64_t)rec_unzigzag(rec_cur_varint(&c));
            o.width = (uint32_t)rec_cur_varint(&c);
            o.size = prev.size + (uint64_t)rec_unzigzag(rec_cur_varint(&c));
            o.ring = un_near_id(o.id, rec_cur_varint(&c));
            o.head = un_near_id(o.id, rec_cur_varint(&c));
            o.tail = un_near_id(o.id, rec_cur_varint(&c));
            o.producer_rank = (int)((int64_t)prev.producer_rank + rec_unzigzag(rec_cur_varint(&c)));
            o.consumer_rank = (int)((int64_t)prev.consumer_rank + rec_unzigzag(rec_cur_varint(&c)));
            o.role = unzz32(prev.role, rec_cur_varint(&c));
            prev = o;
            if (!c.bad && sink->object) sink->object(sink->ctx, &o);
        } else {
            return -1;
        }
    }
    return c.bad ? -1 : 0;
}

/* ---------------------------------------------------------------- events */

void rec_codec_free(rec_codec *codec) {
    if (!codec) return;
    rec_buf_free(&codec->arena);
    rec_order_free(&codec->order);
    free(codec->seq_pos);
    free(codec->pend_bits);
    free(codec->pend_cnt);
    free(codec);
}

static inline unsigned hash_slot(uint32_t key) {
    return (unsigned)((key * 2654435761u) >> (32 - REC_CTX_BITS));
}
/* The field context of an event: its rank, call site and kind. */
static inline unsigned ctx_slot(const engine_event *e) {
    return hash_slot((e->rank << 20) ^ (e->site * 64u + (e->kind & 63u)));
}
static inline unsigned core_slot(const engine_event *e) {
    return hash_slot((e->rank << 7) | (e->core & 127));
}
static inline uint32_t site_pred(const engine_event *e) {
    return (uint32_t)e->kind | (uint32_t)e->pipe << 8 | (uint32_t)e->sub << 16 | 1u << 24;
}

/* Transfers carry their scheduled start time in value and a flag set its
 * fire time in aux: relative to the event's own time they are small. */
static inline int value_is_time(uint8_t kind) {
    return kind == EV_XFER_ISSUE || kind == EV_XFER_DONE;
}
static inline int aux_is_time(uint8_t kind) { return kind == EV_FLAG_SET; }

/* Pending XFER_ISSUEs of a chunk, by event position. The encoder asks
 * whether an issue is still pending (a second DONE of one issue is stored
 * in full); a format 4 copied DONE stores how many pending issues precede
 * its own, and the decoder finds the issue with that many before it
 * (select; format 5 ranks within the core instead, rec_order.c). Queues
 * complete nearly in order, so the pending issues cluster after the oldest
 * one still in flight. A bit per position, a count per block of 512
 * positions and one per group of 16 blocks make add/remove O(1) and
 * select a walk over at most a few group counts, 16 block counts and
 * 8 words, starting at the first group that still holds a pending issue. */
#define PEND_BLOCK_WORDS 8     /* 512 positions per block */
#define PEND_GROUP_BLOCKS 16   /* 8192 positions per group */

static int pend_reset(rec_codec *c, size_t n) {
    size_t words = n / 64 + 1, blocks = words / PEND_BLOCK_WORDS + 1,
           groups = blocks / PEND_GROUP_BLOCKS + 1;
    if (words > c->pend_cap) {
        uint64_t *b = realloc(c->pend_bits, words * sizeof *b);
        if (!b) return -1;
        c->pend_bits = b;
        uint32_t *k = realloc(c->pend_cnt, (blocks + groups) * sizeof *k);
        if (!k) return -1;
        c->pend_cnt = k;
        c->pend_cap = words;
    }
    memset(c->pend_bits, 0, words * sizeof *c->pend_bits);
    memset(c->pend_cnt, 0, (blocks + groups) * sizeof *c->pend_cnt);
    c->pend_words = words;
    c->pend_blocks = blocks;
    c->pend_groups = groups;
    c->pend_first = 0;
    return 0;
}
/* Group counts follow the block counts in pend_cnt. */
static inline uint32_t *pend_group(rec_codec *c) { return c->pend_cnt + c->pend_blocks; }

/* No -mpopcnt in the build: a branch-free count beats libgcc's call. */
static inline uint64_t popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (x * 0x0101010101010101ull) >> 56;
}

static inline int pend_has(const rec_codec *c, size_t pos) {
    return (int)((c->pend_bits[pos >> 6] >> (pos & 63)) & 1);
}
/* pos is never below a position already added (events come in order), so
 * pend_first, which only skips empty groups below queried positions, stays
 * at or below every pending position's group. */
static inline void pend_add(rec_codec *c, size_t pos) {
    c->pend_bits[pos >> 6] |= 1ull << (pos & 63);
    c->pend_cnt[pos >> 9]++;
    pend_group(c)[pos >> 13]++;
}
static inline void pend_del(rec_codec *c, size_t pos) {
    c->pend_bits[pos >> 6] &= ~(1ull << (pos & 63));
    c->pend_cnt[pos >> 9]--;
    pend_group(c)[pos >> 13]--;
}
/* The pending position with k pending positions below it, or SIZE_MAX. */
static inline size_t pend_select(rec_codec *c, uint64_t k) {
    const uint32_t *grp = pend_group(c);
    while (c->pend_first < c->pend_groups && grp[c->pend_first] == 0) c->pend_first++;
    size_t g = c->pend_first;
    while (g < c->pend_groups && grp[g] <= k) k -= grp[g++];
    if (g >= c->pend_groups) return SIZE_MAX;
    size_t b = g * PEND_GROUP_BLOCKS;
    while (c->pend_cnt[b] <= k) k -= c->pend_cnt[b++];
    size_t w = b * PEND_BLOCK_WORDS;
    for (;; w++) {
        uint64_t pc = popcount64(c->pend_bits[w]);
        if (k < pc) break;
        k -= pc;
    }
    uint64_t x = c->pend_bits[w];
    for (; k; k--) x &= x - 1;
    return w * 64 + (size_t)__builtin_ctzll(x);
}

/* The position in evs[0, i) of the event whose seq is seq, or -1. A
 * chunk's seqs are dense, a part's (format 6) ascend with gaps: its seqs'
 * positions are mapped (scan_events), or a binary search when the direct
 * place does not hold it. */
static inline long position_of(const rec_codec *c, const engine_event *evs, size_t i,
                               uint64_t seq) {
    if (seq < evs[0].seq) return -1;
    if (seq - evs[0].seq < i && evs[seq - evs[0].seq].seq == seq) return (long)(seq - evs[0].seq);
    if (c->seq_span) {
        uint64_t off = seq - evs[0].seq;
        return off < c->seq_span && c->seq_pos[off] < i ? (long)c->seq_pos[off] : -1;
    }
    size_t lo = 0, hi = i;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (evs[mid].seq < seq) lo = mid + 1; else hi = mid;
    }
    return lo < i && evs[lo].seq == seq ? (long)lo : -1;
}

/* The position of the XFER_ISSUE a DONE can be copied from, or -1. */
static inline long copy_source(const rec_codec *c, const engine_event *evs, size_t i) {
    const engine_event *d = &evs[i], *s;
    if (d->kind != EV_XFER_DONE) return -1;
    long at = position_of(c, evs, i, d->link);
    if (at < 0) return -1;
    s = &evs[at];
    if (s->seq != d->link || s->kind != EV_XFER_ISSUE || s->rank != d->rank ||
        s->core != d->core || s->pipe != d->pipe || s->sub != d->sub || s->addr != d->addr ||
        s->len != d->len || s->value != d->value || s->aux != d->aux || s->site != d->site ||
        s->object != d->object || s->peer != d->peer)
        return -1;
    return at;
}

/* Streams. Value-like columns get one stream per event group: the
 * addresses of one queue's transfers, the ids of flag sets or the values
 * of ring loads each form a far more regular sequence than one column of
 * all events interleaved, and each stream is a zstd block of its own with
 * its own entropy tables. The other columns (which event comes next, from
 * where) are single streams. */
static const uint8_t col_grouped[REC_COL_COUNT] = {
    [REC_COL_TIME] = 1, [REC_COL_ADDR] = 1, [REC_COL_LEN] = 1, [REC_COL_VALUE] = 1,
    [REC_COL_AUX] = 1, [REC_COL_LINK] = 1, [REC_COL_OBJECT] = 1, [REC_COL_PEER] = 1};

static inline unsigned event_group(const engine_event *e) {
    return (unsigned)(e->kind & 63u) << 5 | (e->sub & 31u);
}
/* A copied DONE stores its duration in the time stream of group sub and
 * its pending rank in the link stream of group 0 (kind 0: no event). */
static inline unsigned copy_group(uint8_t sub) { return sub & 31u; }
#define COPY_LINK_GROUP 0u

/* Where a stream lives in the codec's per-stream arrays: an event's
 * streams side by side. */
static inline size_t stream_slot(unsigned group, int col) {
    return (size_t)group * REC_COL_COUNT + (size_t)col;
}

/* The core table takes up to three varints per core, and a chunk may have
 * as many cores as events: room beyond the 11 bytes per event. */
static inline size_t ungrouped_extra(size_t n) { return n * 20 + 16; }

/* The events are read in order, one cache line each, with some work
 * between two: fetching a few ahead hides the trip to memory (each chunk's
 * events were written by the engine's thread on another core). A DONE also
 * reads its issue, far back: fetched as early. */
#define PREFETCH_AHEAD 16
static inline void prefetch_event(const rec_codec *c, const engine_event *evs, size_t i,
                                  size_t n) {
    if (i + PREFETCH_AHEAD < n) __builtin_prefetch(&evs[i + PREFETCH_AHEAD]);
    if (i + PREFETCH_AHEAD / 2 < n) {   /* fetched half the distance ago */
        const engine_event *e = &evs[i + PREFETCH_AHEAD / 2];
        uint64_t off = e->link - evs[0].seq;
        if (e->kind == EV_XFER_DONE && e->link >= evs[0].seq) {
            if (c->seq_span) off = off < c->seq_span ? c->seq_pos[off] : UINT32_MAX;
            if (off < i) __builtin_prefetch(&evs[off]);
        }
    }
}

/* The one pass over the events before encoding them (a chunk's events are
 * far larger than a core's cache, so each pass over them costs a walk
 * through memory): the events of each group, the chunk's summary row, and
 * for the order (rec_order.c) each event's core key and time and whether
 * times ever go back. */
static void scan_events(rec_codec *c, const engine_event *evs, size_t n, rec_order_scan *scan) {
    memset(c->group_events, 0, sizeof c->group_events);
    rec_chunk_row *row = &c->summary;
    memset(row, 0, sizeof *row);
    row->events = n;
    scan->keyed = 1;
    scan->ordered = 1;
    scan->max_rank = 0;
    c->seq_span = 0;
    if (n == 0) return;
    row->first_seq = evs[0].seq;
    row->last_seq = evs[n - 1].seq;
    /* a part's seqs have gaps: map them to positions (not when the range is
     * far wider than the part, or memory is short: then position_of
     * searches) */
    uint64_t first = evs[0].seq, span = evs[n - 1].seq - first + 1;
    uint32_t *pos = NULL;
    if (evs[n - 1].seq >= first && span != n && span <= 4 * (uint64_t)n + 65536) {
        if (span > c->cap_seq_pos) {
            free(c->seq_pos);
            c->seq_pos = malloc(span * sizeof *c->seq_pos);
            c->cap_seq_pos = c->seq_pos ? span : 0;
        }
        if (c->seq_pos) {
            memset(c->seq_pos, 0xff, span * sizeof *c->seq_pos);
            c->seq_span = span;
            pos = c->seq_pos;
        }
    }
    uint64_t tmin = evs[0].time, tmax = evs[0].time, prev_time = evs[0].time, mask = 0;
    uint32_t rmin = evs[0].rank, rmax = evs[0].rank, cmin = evs[0].core, cmax = evs[0].core;
    uint32_t *key = c->order.in_key;
    uint64_t *time = c->order.in_time;
    uint32_t done = 0;
    int ordered = 1;
    for (size_t i = 0; i < n; i++) {
        const engine_event *e = &evs[i];
        uint64_t t = e->time;
        if (i + PREFETCH_AHEAD < n) __builtin_prefetch(&evs[i + PREFETCH_AHEAD]);
        uint32_t r = e->rank, k = e->core;
        c->group_events[event_group(e)]++;
        done += e->kind == EV_XFER_DONE;
        mask |= 1ULL << (e->kind & 63);
        tmin = t < tmin ? t : tmin;
        tmax = t > tmax ? t : tmax;
        rmin = r < rmin ? r : rmin;
        rmax = r > rmax ? r : rmax;
        cmin = k < cmin ? k : cmin;
        cmax = k > cmax ? k : cmax;
        ordered &= t >= prev_time;
        prev_time = t;
        key[i] = r << REC_ORDER_CORE_BITS | (k & ((1u << REC_ORDER_CORE_BITS) - 1));
        time[i] = t;
        if (pos && e->seq - first < span) pos[e->seq - first] = (uint32_t)i;
    }
    c->group_events[COPY_LINK_GROUP] += done;   /* each DONE maybe a copy */
    row->first_time = tmin;
    row->last_time = tmax;
    row->rank_min = rmin;
    row->rank_max = rmax;
    row->core_min = cmin;
    row->core_max = cmax;
    row->kind_mask = mask;
    scan->ordered = ordered;
    scan->keyed = cmax < (1u << REC_ORDER_CORE_BITS) && rmax < REC_ORDER_MAX_RANK;
    scan->max_rank = rmax;
}

/* Carves a worst-case write area for every stream the groups' events can
 * touch out of one arena, so the encoder writes with plain pointer bumps. */
static int streams_reserve(rec_codec *c, size_t n) {
    size_t grouped = 0, events = 0;
    for (int col = 0; col < REC_COL_COUNT; col++) grouped += col_grouped[col];
    for (unsigned g = 0; g < REC_GROUPS; g++) events += c->group_events[g];
    /* A varint takes at most 10 bytes; sub may hold an escaped kind too. */
    size_t need = events * 10 * grouped + n * 11 * (REC_COL_COUNT - grouped) + ungrouped_extra(n);
    c->arena.len = 0;
    if (rec_buf_reserve(&c->arena, need)) return -1;
    uint8_t *at = c->arena.p;
    for (int col = 0; col < REC_COL_COUNT; col++) {
        if (col_grouped[col]) continue;
        c->w[stream_slot(0, col)] = c->w0[stream_slot(0, col)] = at;
        at += n * 11 + (col == REC_COL_ORDER_CORES ? ungrouped_extra(n) : 0);
    }
    for (unsigned g = 0; g < REC_GROUPS; g++) {
        if (!c->group_events[g]) continue;
        for (int col = 0; col < REC_COL_COUNT; col++) {
            if (!col_grouped[col]) continue;
            c->w[stream_slot(g, col)] = c->w0[stream_slot(g, col)] = at;
            at += (size_t)c->group_events[g] * 10;
        }
    }
    return 0;
}

/* Appends the directory (non-empty streams in id order: id, length) and
 * the streams to out, recording where each starts. */
static void streams_emit(rec_codec *c, rec_buf *out) {
    c->nstreams = 0;
    size_t total = 0;
    for (int col = 0; col < REC_COL_COUNT; col++) {
        for (unsigned g = 0; g < (col_grouped[col] ? REC_GROUPS : 1u); g++) {
            if (col_grouped[col] && !c->group_events[g]) continue;
            size_t s = stream_slot(g, col), len = (size_t)(c->w[s] - c->w0[s]);
            if (!len) continue;
            c->stream_id[c->nstreams] = (uint32_t)col << REC_GROUP_BITS | g;
            c->stream_len[c->nstreams++] = len;
            total += len;
        }
    }
    rec_buf_varint(out, c->nstreams);
    for (size_t k = 0; k < c->nstreams; k++) {
        rec_buf_varint(out, c->stream_id[k]);
        rec_buf_varint(out, c->stream_len[k]);
    }
    if (rec_buf_reserve(out, total)) return;
    for (size_t k = 0; k < c->nstreams; k++) {
        uint32_t id = c->stream_id[k];
        c->stream_at[k] = out->len;
        rec_buf_put(out, c->w0[stream_slot(id & (REC_GROUPS - 1), (int)(id >> REC_GROUP_BITS))],
                    c->stream_len[k]);
    }
}

#define PUT(col, v) (gw[col] += rec_varint_put(gw[col], (v)))

static void encode_body(rec_codec *codec, const uint8_t *decls, size_t decl_len,
                        const engine_event *evs, size_t n, rec_buf *out);

void rec_chunk_encode(rec_codec *codec, const uint8_t *decls, size_t decl_len,
                      const engine_event *evs, size_t n, rec_buf *out) {
    rec_buf_put(out, REC_TAG_CHUNK, 4);
    encode_body(codec, decls, decl_len, evs, n, out);
}

void rec_chunk_encode_part(rec_codec *codec, const rec_part_head *h, const uint8_t *decls,
                           size_t decl_len, const engine_event *evs, size_t n, rec_buf *out) {
    rec_buf_put(out, REC_TAG_PART, 4);
    rec_buf_varint(out, h->first_seq);
    rec_buf_varint(out, h->last_seq - h->first_seq);
    rec_buf_varint(out, h->part);
    rec_buf_varint(out, h->parts);
    encode_body(codec, decls, decl_len, evs, n, out);
}

/* Every per-chunk context back to zero, in the encoder and the decoder
 * alike: a chunk decodes on its own. */
static void reset_context(rec_codec *codec) {
    memset(codec->ctx, 0, sizeof codec->ctx);
    memset(codec->time, 0, sizeof codec->time);
    memset(codec->prev_site, 0, sizeof codec->prev_site);
    memset(codec->next_site, 0, sizeof codec->next_site);
    memset(codec->flag_aux, 0, sizeof codec->flag_aux);
    memset(codec->site, 0, sizeof codec->site);
}

/* The event's kind, pipe and sub: one REC_KIND_SITE byte when the site's
 * last event had the same three. */
static inline void encode_kind(rec_codec *codec, const engine_event *e, uint8_t **uw) {
    uint32_t *sp = &codec->site[e->site % REC_SITE_SLOTS];
    if (*sp == site_pred(e)) {
        *uw[REC_COL_KIND]++ = REC_KIND_SITE;
        return;
    }
    *sp = site_pred(e);
    if (e->kind < REC_KIND_ESCAPE) {
        *uw[REC_COL_KIND]++ = e->kind;
    } else {
        *uw[REC_COL_KIND]++ = REC_KIND_ESCAPE;
        *uw[REC_COL_SUB]++ = e->kind;
    }
    *uw[REC_COL_PIPE]++ = e->pipe;
    *uw[REC_COL_SUB]++ = e->sub;
}

/* The event's site, then its fields as changes from its context's last
 * event (address, length, value, aux, link, object, peer) into its group's
 * streams. */
static inline void encode_fields(rec_codec *codec, const engine_event *e, uint8_t **uw) {
    uint8_t **gw = uw;
    unsigned cs = core_slot(e);
    /* A core's code walks the same cycle of sites as its siblings:
     * 0 when the site is the one that followed the core's previous
     * site last time. */
    uint32_t *next = &codec->next_site[hash_slot(codec->prev_site[cs])];
    PUT(REC_COL_SITE, *next == e->site ? 0 : zz32(e->site, codec->prev_site[cs]) + 1);
    *next = e->site;
    codec->prev_site[cs] = e->site;
    gw = &codec->w[stream_slot(event_group(e), 0)];
    rec_ctx *c = &codec->ctx[ctx_slot(e)];
    PUT(REC_COL_ADDR, rec_zigzag((int64_t)(e->addr - c->addr)));
    c->addr = e->addr;
    PUT(REC_COL_LEN, rec_zigzag((int64_t)(e->len - c->len)));
    c->len = e->len;
    uint64_t v = value_is_time(e->kind) ? (uint64_t)e->value - e->time : (uint64_t)e->value;
    PUT(REC_COL_VALUE, rec_zigzag((int64_t)(v - c->value)));
    c->value = v;
    if (e->kind == EV_FLAG_WAIT_BEGIN) {
        /* Waits on the fire time of the core's last FLAG_SET. */
        PUT(REC_COL_AUX, rec_zigzag((int64_t)((uint64_t)e->aux - codec->flag_aux[cs])));
    } else {
        uint64_t a = aux_is_time(e->kind) ? (uint64_t)e->aux - e->time : (uint64_t)e->aux;
        PUT(REC_COL_AUX, rec_zigzag((int64_t)(a - c->aux)));
        c->aux = a;
        if (e->kind == EV_FLAG_SET) codec->flag_aux[cs] = (uint64_t)e->aux;
    }
    PUT(REC_COL_LINK, e->link ? rec_zigzag((int64_t)(e->seq - e->link)) + 1 : 0);
    PUT(REC_COL_OBJECT, zz32(e->object, c->object));
    c->object = e->object;
    PUT(REC_COL_PEER, zz32(e->peer, c->peer));
    c->peer = e->peer;
}

static void encode_body(rec_codec *codec, const uint8_t *decls, size_t decl_len,
                        const engine_event *evs, size_t n, rec_buf *out) {
    rec_buf_bytes(out, (const char *)decls, decl_len);
    rec_buf_varint(out, n);
    rec_order_scan scan;
    if (rec_order_reserve(&codec->order, n)) {
        out->oom = 1;
        return;
    }
    scan_events(codec, evs, n, &scan);
    if (streams_reserve(codec, n) || pend_reset(codec, n) ||
        rec_order_encode(&codec->order, evs, n, &scan,
                         &codec->w[stream_slot(0, REC_COL_ORDER_CORES)],
                         &codec->w[stream_slot(0, REC_COL_ORDER_TIMES)],
                         &codec->w[stream_slot(0, REC_COL_ORDER_EXC)])) {
        out->oom = 1;
        return;
    }
    rec_order_pending_reset(&codec->order);
    reset_context(codec);
    uint8_t **uw = &codec->w[stream_slot(0, 0)];   /* the ungrouped columns */
    uint64_t prev_seq = 0;
    for (size_t i = 0; i < n; i++) {
        const engine_event *e = &evs[i];
        uint8_t **gw = uw;
        prefetch_event(codec, evs, i, n);
        PUT(REC_COL_SEQ, rec_zigzag((int64_t)(e->seq - prev_seq)));
        prev_seq = e->seq;
        long src = copy_source(codec, evs, i);
        /* Its issue must still be pending (a second DONE of one issue is
         * stored in full). */
        if (src >= 0 && !pend_has(codec, (size_t)src)) src = -1;
        if (src >= 0) {
            /* The issue's rank among pending issues, as a change from the
             * previous copy's; the duration (done - start) repeats. */
            uint64_t k = rec_order_pending_take(&codec->order, i, (size_t)src);
            *uw[REC_COL_KIND]++ = (uint8_t)(REC_KIND_COPY | EV_XFER_DONE);
            gw = &codec->w[stream_slot(COPY_LINK_GROUP, 0)];
            PUT(REC_COL_LINK, k);
            pend_del(codec, (size_t)src);
            continue;
        }
        encode_kind(codec, e, uw);
        if (e->kind == EV_XFER_ISSUE) {
            pend_add(codec, i);
            rec_order_pending_add(&codec->order, i);
        }
        encode_fields(codec, e, uw);
    }
    streams_emit(codec, out);
}

#undef PUT

/* Decoder cursors: every stream's is empty outside a decode, so reading a
 * stream the chunk does not hold marks that cursor bad. */
static const uint8_t no_bytes[1];
static void cursors_clear(rec_codec *c) {
    if (!c->cur_ready) {
        for (size_t s = 0; s < REC_STREAMS; s++) c->cur[s] = (rec_cur){no_bytes, no_bytes, 0};
        c->cur_ready = 1;
        c->nstreams = 0;
        memset(c->group_seen, 1, sizeof c->group_seen);
    }
    for (size_t k = 0; k < c->nstreams; k++) {
        uint32_t id = c->stream_id[k];
        c->cur[stream_slot(id & (REC_GROUPS - 1), (int)(id >> REC_GROUP_BITS))] =
            (rec_cur){no_bytes, no_bytes, 0};
    }
    c->nstreams = 0;
    for (unsigned g = 0; g < REC_GROUPS; g++) {
        if (!c->group_seen[g]) continue;
        for (int col = 0; col < REC_COL_COUNT; col++)
            c->cur[stream_slot(g, col)] = (rec_cur){no_bytes, no_bytes, 0};
    }
    memset(c->group_seen, 0, sizeof c->group_seen);
}

/* Reads the directory and points each listed stream's cursor at its bytes. */
static int streams_open(rec_codec *c, rec_cur *in, char *err, size_t errlen) {
    uint64_t ns = rec_cur_varint(in);
    if (in->bad || ns > REC_STREAMS) {
        snprintf(err, errlen, "chunk stream directory is corrupt (%llu streams)",
                 (unsigned long long)ns);
        return -1;
    }
    uint64_t prev_id = 0;
    for (uint64_t k = 0; k < ns; k++) {
        uint64_t id = rec_cur_varint(in), len = rec_cur_varint(in);
        unsigned col = (unsigned)(id >> REC_GROUP_BITS), g = (unsigned)(id & (REC_GROUPS - 1));
        if (in->bad || col >= REC_COL_COUNT || (k && id <= prev_id) ||
            (!col_grouped[col] && g != 0)) {
            snprintf(err, errlen, "chunk stream directory is corrupt (entry %llu, stream %llu)",
                     (unsigned long long)k, (unsigned long long)id);
            return -1;
        }
        prev_id = id;
        c->stream_id[k] = (uint32_t)id;
        c->stream_len[k] = (size_t)len;
    }
    for (uint64_t k = 0; k < ns; k++) {
        const uint8_t *s = rec_cur_take(in, c->stream_len[k]);
        if (!s) {
            snprintf(err, errlen, "chunk stream %u overruns the frame", c->stream_id[k]);
            return -1;
        }
        uint32_t id = c->stream_id[k];
        c->cur[stream_slot(id & (REC_GROUPS - 1), (int)(id >> REC_GROUP_BITS))] =
            (rec_cur){s, s + c->stream_len[k], 0};
        c->nstreams = (size_t)k + 1;
    }
    return 0;
}

/* Every listed stream consumed exactly, and no stream the chunk lacks read. */
static int streams_check(rec_codec *c, uint64_t n, char *err, size_t errlen) {
    for (size_t k = 0; k < c->nstreams; k++) {
        uint32_t id = c->stream_id[k];
        const rec_cur *s = &c->cur[stream_slot(id & (REC_GROUPS - 1), (int)(id >> REC_GROUP_BITS))];
        if (s->bad || s->p != s->end) {
            snprintf(err, errlen, "chunk stream %u (column %u) does not hold exactly %llu events",
                     id, id >> REC_GROUP_BITS, (unsigned long long)n);
            return -1;
        }
    }
    for (unsigned g = 0; g < REC_GROUPS; g++) {
        if (!c->group_seen[g]) continue;
        for (int col = 0; col < REC_COL_COUNT; col++) {
            if (c->cur[stream_slot(g, col)].bad) {
                snprintf(err, errlen, "chunk lacks stream %u (column %d) that its events read",
                         (unsigned)col << REC_GROUP_BITS | g, col);
                return -1;
            }
        }
    }
    return 0;
}

#define GET(col) rec_cur_varint(&gc[col])

/* Tag, declarations, event count, stream directory; *evs grown to n. */
static int decode_open(rec_codec *codec, const uint8_t *p, size_t len, rec_chunk_view *view,
                       engine_event **evs, size_t *cap, char *err, size_t errlen) {
    rec_cur c = {p, p + len, 0};
    const uint8_t *tag = rec_cur_take(&c, 4);
    memset(&view->part, 0, sizeof view->part);
    if (tag && memcmp(tag, REC_TAG_PART, 4) == 0) {
        rec_part_head *h = &view->part;
        h->first_seq = rec_cur_varint(&c);
        h->last_seq = h->first_seq + rec_cur_varint(&c);
        h->part = (uint32_t)rec_cur_varint(&c);
        h->parts = (uint32_t)rec_cur_varint(&c);
        if (c.bad || h->last_seq < h->first_seq || !h->parts || h->part >= h->parts ||
            h->parts > REC_MAX_PARTS) {
            snprintf(err, errlen, "part header is corrupt");
            return -1;
        }
    } else if (!tag || memcmp(tag, REC_TAG_CHUNK, 4) != 0) {
        snprintf(err, errlen, "frame is not a chunk (bad tag)");
        return -1;
    }
    size_t dl;
    view->decls = (const uint8_t *)rec_cur_bytes(&c, &dl);
    view->decl_len = dl;
    uint64_t n = rec_cur_varint(&c);
    if (c.bad || n > (uint64_t)len) {
        snprintf(err, errlen, "chunk header is corrupt (%llu events)", (unsigned long long)n);
        return -1;
    }
    cursors_clear(codec);
    if (streams_open(codec, &c, err, errlen)) return -1;
    if (n > *cap) {
        engine_event *ne = realloc(*evs, (size_t)n * sizeof *ne);
        if (!ne) {
            snprintf(err, errlen, "out of memory decoding a chunk of %llu events",
                     (unsigned long long)n);
            return -1;
        }
        *evs = ne;
        *cap = (size_t)n;
    }
    if (pend_reset(codec, (size_t)n)) {
        snprintf(err, errlen, "out of memory decoding a chunk of %llu events",
                 (unsigned long long)n);
        return -1;
    }
    view->n = (size_t)n;
    return 0;
}

/* Format 5 chunks derive rank, core and time (rec_order.c); format 4
 * chunks store them as columns. A chunk with events says which by holding
 * the core table or not. */
static int decode_order(rec_codec *codec, size_t n, int *derived, char *err, size_t errlen) {
    rec_cur *cores = &codec->cur[stream_slot(0, REC_COL_ORDER_CORES)];
    *derived = cores->p != cores->end;
    if (!*derived) return 0;
    if (rec_order_decode(&codec->order, n, cores, &codec->cur[stream_slot(0, REC_COL_ORDER_TIMES)],
                         &codec->cur[stream_slot(0, REC_COL_ORDER_EXC)])) {
        snprintf(err, errlen, "chunk event order (core table, times or exceptions) is corrupt");
        return -1;
    }
    rec_order_pending_reset(&codec->order);
    return 0;
}

/* A DONE copied from its pending ISSUE: the issue's rank among its core's
 * pending issues (format 5) or among all pending issues, as a change from
 * the previous copy's (format 4), and (format 4) its duration. */
static int decode_copy(rec_codec *codec, engine_event *all, size_t i, uint8_t kb, int derived,
                       uint64_t *prev_k, char *err, size_t errlen) {
    engine_event *e = &all[i];
    rec_cur *gc = &codec->cur[stream_slot(COPY_LINK_GROUP, 0)];
    size_t src;
    if (derived) {
        src = rec_order_pending_select(&codec->order, i, GET(REC_COL_LINK));
    } else {
        uint64_t k = *prev_k + (uint64_t)rec_unzigzag(GET(REC_COL_LINK));
        *prev_k = k;
        src = pend_select(codec, k);
        if (src < i) pend_del(codec, src);
    }
    if (src >= i) {
        snprintf(err, errlen, "event %zu of the chunk copies a transfer it does not hold", i);
        return -1;
    }
    uint64_t seq = e->seq;
    *e = all[src];
    e->kind = (uint8_t)(kb & ~REC_KIND_COPY);
    e->link = e->seq;
    e->seq = seq;
    if (derived) {
        rec_order_event(&codec->order, i, e);
        return 0;
    }
    unsigned g = copy_group(e->sub);
    codec->group_seen[g] = 1;
    gc = &codec->cur[stream_slot(g, 0)];
    e->time = (uint64_t)e->value + (uint64_t)rec_unzigzag(GET(REC_COL_TIME));
    codec->time[core_slot(e)] = e->time;
    return 0;
}

/* Site (predicted from the core's previous one), then kind, pipe and sub
 * (predicted from the site, or stored). */
static int decode_site_kind(rec_codec *codec, engine_event *e, size_t i, uint8_t kb, char *err,
                            size_t errlen) {
    rec_cur *uc = &codec->cur[stream_slot(0, 0)];
    unsigned cs = core_slot(e);
    uint32_t *next = &codec->next_site[hash_slot(codec->prev_site[cs])];
    uint64_t sv = rec_cur_varint(&uc[REC_COL_SITE]);
    e->site = sv ? unzz32(codec->prev_site[cs], sv - 1) : *next;
    *next = e->site;
    codec->prev_site[cs] = e->site;
    uint32_t *sp = &codec->site[e->site % REC_SITE_SLOTS];
    if (kb == REC_KIND_SITE) {
        if (!*sp) {
            snprintf(err, errlen, "event %zu of the chunk repeats a site never seen", i);
            return -1;
        }
        e->kind = (uint8_t)*sp;
        e->pipe = (uint8_t)(*sp >> 8);
        e->sub = (uint8_t)(*sp >> 16);
    } else {
        e->kind = kb == REC_KIND_ESCAPE ? rec_cur_byte(&uc[REC_COL_SUB]) : kb;
        e->pipe = rec_cur_byte(&uc[REC_COL_PIPE]);
        e->sub = rec_cur_byte(&uc[REC_COL_SUB]);
        *sp = site_pred(e);
    }
    e->pad = 0;
    return 0;
}

/* The value-like fields, each against its context. */
static void decode_values(rec_codec *codec, engine_event *e, rec_cur *gc) {
    unsigned cs = core_slot(e);
    rec_ctx *x = &codec->ctx[ctx_slot(e)];
    e->addr = x->addr + (uint64_t)rec_unzigzag(GET(REC_COL_ADDR));
    x->addr = e->addr;
    e->len = x->len + (uint64_t)rec_unzigzag(GET(REC_COL_LEN));
    x->len = e->len;
    uint64_t v = x->value + (uint64_t)rec_unzigzag(GET(REC_COL_VALUE));
    x->value = v;
    e->value = (int64_t)(value_is_time(e->kind) ? v + e->time : v);
    if (e->kind == EV_FLAG_WAIT_BEGIN) {
        e->aux = (int64_t)(codec->flag_aux[cs] + (uint64_t)rec_unzigzag(GET(REC_COL_AUX)));
    } else {
        uint64_t a = x->aux + (uint64_t)rec_unzigzag(GET(REC_COL_AUX));
        x->aux = a;
        e->aux = (int64_t)(aux_is_time(e->kind) ? a + e->time : a);
        if (e->kind == EV_FLAG_SET) codec->flag_aux[cs] = (uint64_t)e->aux;
    }
    uint64_t link = GET(REC_COL_LINK);
    e->link = link ? e->seq - (uint64_t)rec_unzigzag(link - 1) : 0;
    e->object = unzz32(x->object, GET(REC_COL_OBJECT));
    x->object = e->object;
    e->peer = unzz32(x->peer, GET(REC_COL_PEER));
    x->peer = e->peer;
}

/* An event stored in full (not a copy). */
static int decode_full(rec_codec *codec, engine_event *e, size_t i, uint8_t kb, int derived,
                       char *err, size_t errlen) {
    rec_cur *uc = &codec->cur[stream_slot(0, 0)];
    if (derived) {
        rec_order_event(&codec->order, i, e);
    } else {
        e->rank = (uint32_t)rec_cur_varint(&uc[REC_COL_RANK]);
        e->core = (uint32_t)rec_cur_varint(&uc[REC_COL_CORE]);
    }
    if (decode_site_kind(codec, e, i, kb, err, errlen)) return -1;
    if (e->kind == EV_XFER_ISSUE) {
        if (derived) rec_order_pending_add(&codec->order, i);
        else pend_add(codec, i);
    }
    unsigned g = event_group(e);
    codec->group_seen[g] = 1;
    rec_cur *gc = &codec->cur[stream_slot(g, 0)];
    if (!derived) {
        uint64_t *t = &codec->time[core_slot(e)];
        e->time = *t + (uint64_t)rec_unzigzag(GET(REC_COL_TIME));
        *t = e->time;
    }
    decode_values(codec, e, gc);
    return 0;
}

int rec_chunk_decode(rec_codec *codec, const uint8_t *p, size_t len, rec_chunk_view *view,
                     engine_event **evs, size_t *cap, char *err, size_t errlen) {
    if (decode_open(codec, p, len, view, evs, cap, err, errlen)) return -1;
    size_t n = view->n;
    int derived;
    if (decode_order(codec, n, &derived, err, errlen)) return -1;
    engine_event *all = *evs;
    reset_context(codec);
    rec_cur *uc = &codec->cur[stream_slot(0, 0)];   /* the ungrouped columns */
    codec->group_seen[0] = 1;
    uint64_t prev_seq = 0, prev_k = 0;
    for (size_t i = 0; i < n; i++) {
        engine_event *e = &all[i];
        e->seq = prev_seq + (uint64_t)rec_unzigzag(rec_cur_varint(&uc[REC_COL_SEQ]));
        prev_seq = e->seq;
        uint8_t kb = rec_cur_byte(&uc[REC_COL_KIND]);
        int rc = kb & REC_KIND_COPY ? decode_copy(codec, all, i, kb, derived, &prev_k, err, errlen)
                                    : decode_full(codec, e, i, kb, derived, err, errlen);
        if (rc) return -1;
    }
    return streams_check(codec, n, err, errlen);
}

#undef GET

void rec_chunk_summarize(const engine_event *evs, size_t n, rec_chunk_row *row) {
    memset(row, 0, sizeof *row);
    row->events = n;
    if (n == 0) return;
    row->first_seq = evs[0].seq;
    row->last_seq = evs[n - 1].seq;
    row->first_time = row->last_time = evs[0].time;
    row->rank_min = row->rank_max = evs[0].rank;
    row->core_min = row->core_max = evs[0].core;
    for (size_t i = 0; i < n; i++) {
        const engine_event *e = &evs[i];
        if (e->time < row->first_time) row->first_time = e->time;
        if (e->time > row->last_time) row->last_time = e->time;
        if (e->rank < row->rank_min) row->rank_min = e->rank;
        if (e->rank > row->rank_max) row->rank_max = e->rank;
        if (e->core < row->core_min) row->core_min = e->core;
        if (e->core > row->core_max) row->core_max = e->core;
        row->kind_mask |= 1ULL << (e->kind & 63);
    }
}
