/*
 * ana_words.c - the value of every named word over the run, replayed from
 * the events by ana_scan.c's pass: word_writes rows and ring_counters.
 *
 * Local stores carry the value they store, atomics their operand and the
 * old value. A store or atomic on another rank's word is an intent: its
 * event comes at issue time, immediately followed (next seq, same core,
 * same word) by the XFER_ISSUE of the remote_store / rdma_atomic that
 * carries it; the write happens when that transfer lands (its XFER_DONE),
 * which gets the intent's value. A landing whose value no event carries
 * (an RDMA atomic add: the engine does not record its operand) leaves the
 * word unknown until an event that reads it (a load, a wait's begin or
 * end, a deadlock report) shows the value, which is then filled into that
 * write's row and its ring counter (in the rows not yet stored when it
 * still is there, as a patch of the packed word_writes otherwise). Along the way it notes
 * what cause rule 2 and 6 need: which words an atomic ever wrote, and
 * every word's last writer.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_scan.h"

obj_info *ana_words_get(scan *s, int64_t object) {
    obj_info *o = object > 0 && (size_t)object < s->nobj ? &s->obj[object] : NULL;
    return o && (o->kind == OK_WORD || o->kind == OK_HEAD || o->kind == OK_TAIL) ? o : NULL;
}

static int ring_row(scan *s, obj_info *o, int64_t time, uint64_t seq) {
    if ((o->kind != OK_HEAD && o->kind != OK_TAIL) || !o->ring || o->ring >= s->nobj) return 0;
    ring_info *r = &s->ring[o->ring];
    if (o->kind == OK_HEAD) r->head = o->value;
    else r->tail = o->value;
    ana_bulk *c = s->rc;
    ana_bulk_int(c, time);
    ana_bulk_int(c, (int64_t)seq);
    ana_bulk_int(c, o->ring);
    ana_bulk_int(c, r->head);
    ana_bulk_int(c, r->tail);
    ana_bulk_int(c, r->tail - r->head);
    return ana_bulk_row_done(c, 0);
}

/* Records a write of e to its word: known says whether *after is the
 * value it left. */
static int record_write(scan *s, const evrow *e, obj_info *o, int known, int64_t after) {
    o->known = (uint8_t)known;
    if (known) {
        o->value = after;
        o->unknown_seq = 0;
    } else {
        o->unknown_seq = e->seq;
        o->unknown_time = e->time;
    }
    if (e->kind == EV_ATOMIC || (e->kind == EV_XFER_DONE && e->sub == XFER_RDMA_ATOMIC))
        o->atomic = 1;
    o->last_writer = e->rank * s->run->cores_per_rank + e->core + 1;
    o->last_seq = e->seq;
    o->last_time = e->time;
    o->last_rank = e->rank;
    o->last_core = e->core;
    o->last_kind = e->ktext;
    o->last_xfer = e->kind == EV_XFER_DONE ? engine_xfer_name(e->sub) : NULL;
    o->last_known = (uint8_t)known;
    o->last_value = known ? after : 0;
    ana_bulk *w = s->ww;
    ana_bulk_int(w, (int64_t)e->seq);
    ana_bulk_int(w, e->time);
    ana_bulk_int(w, e->object);
    ana_scan_bulk_source(w, e);
    if (known) ana_bulk_int(w, after);
    else ana_bulk_null(w);
    if (ana_bulk_row_done(w, (int64_t)e->seq)) return -1;
    return known ? ring_row(s, o, e->time, e->seq) : 0;
}

/* word_writes.value of the row of seq, known only now: set in the rows
 * not stored yet, else a patch of the packed table (ana_bulk_patch). */
static int fix_value(scan *s, uint64_t seq, int64_t value) {
    return ana_bulk_patch(s->ww, (int64_t)seq, 8, value);
}

/* A read of the word shows its value: resolves the last unknown write. */
static int observe(scan *s, const evrow *e, obj_info *o, int64_t value) {
    if (o->known && o->value == value) return 0;
    o->known = 1;
    o->value = value;
    uint64_t wseq = o->unknown_seq ? o->unknown_seq : e->seq;
    int64_t wtime = o->unknown_seq ? o->unknown_time : e->time;
    if (o->unknown_seq) {
        if (fix_value(s, o->unknown_seq, value)) return -1;
        if (o->last_seq == o->unknown_seq) {
            o->last_known = 1;
            o->last_value = value;
        }
        o->unknown_seq = 0;
    }
    return ring_row(s, o, wtime, wseq);
}

/* A local store or atomic: the value is in the event. */
static int apply_direct(scan *s, const evrow *e, obj_info *o) {
    switch (e->kind) {
    case EV_GM_STORE: case EV_RING_HEAD: case EV_RING_TAIL:
        return record_write(s, e, o, 1, e->value);
    case EV_ATOMIC:
        /* aux is the old value, value the operand. */
        if (e->sub == ATOMIC_ADD) return record_write(s, e, o, 1, e->aux + e->value);
        if (e->sub == ATOMIC_MAX)
            return record_write(s, e, o, 1, e->aux > e->value ? e->aux : e->value);
        return record_write(s, e, o, 0, 0);   /* CAS: the comparand is not recorded */
    default:
        return 0;
    }
}

static landing *find_landing(scan *s, uint64_t issue_seq) {
    size_t lo = s->land_done, hi = s->nland;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->land[mid].issue_seq < issue_seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->nland && s->land[lo].issue_seq == issue_seq && !s->land[lo].done ? &s->land[lo]
                                                                                 : NULL;
}

static int add_landing(scan *s, uint64_t issue_seq, int add, int64_t operand) {
    if (s->land_done > 4096 && s->land_done * 2 > s->nland) {
        /* drop the prefix of landings whose transfers completed */
        memmove(s->land, s->land + s->land_done, (s->nland - s->land_done) * sizeof *s->land);
        s->nland -= s->land_done;
        s->land_done = 0;
    }
    if (ana_grow((void **)&s->land, &s->capland, s->nland + 1, sizeof *s->land, 256)) {
        ana_err(s->err, s->errlen, "out of memory tracking remote writes");
        return -1;
    }
    s->land[s->nland++] = (landing){issue_seq, add, 0, operand};
    return 0;
}

/* A transfer completion that lands on a named word. */
static int apply_landing(scan *s, const evrow *e, obj_info *o) {
    landing *l = find_landing(s, (uint64_t)e->link);
    if (l) {
        int64_t operand = l->operand;
        int add = l->add;
        l->done = 1;
        while (s->land_done < s->nland && s->land[s->land_done].done) s->land_done++;
        if (add) return o->known ? record_write(s, e, o, 1, o->value + operand)
                                 : record_write(s, e, o, 0, 0);
        return record_write(s, e, o, 1, operand);
    }
    return record_write(s, e, o, 0, 0);
}

/* The held row was a remote intent iff this row is the XFER_ISSUE that
 * posts it (same core, same word, the very next seq). */
int ana_words_settle(scan *s, const evrow *e) {
    if (!s->has_held) return 0;
    s->has_held = 0;
    evrow *h = &s->held;
    if (e && e->kind == EV_XFER_ISSUE && e->seq == h->seq + 1 && e->object == h->object &&
        e->rank == h->rank && e->core == h->core &&
        (e->sub == XFER_REMOTE_STORE || e->sub == XFER_RDMA_ATOMIC)) {
        int add = h->kind == EV_ATOMIC;
        if (add && h->sub != ATOMIC_ADD) add = -1;
        if (add < 0) return 0;
        return add_landing(s, e->seq, add, h->value);
    }
    obj_info *o = ana_words_get(s, h->object);
    return o ? apply_direct(s, h, o) : 0;
}

int ana_words_event(scan *s, const evrow *e, obj_info *o) {
    switch (e->kind) {
    case EV_GM_STORE: case EV_RING_HEAD: case EV_RING_TAIL: case EV_ATOMIC:
        if (e->peer != e->rank) {
            /* maybe an intent: the next row says */
            s->held = *e;
            s->has_held = 1;
            return 0;
        }
        return apply_direct(s, e, o);
    case EV_XFER_DONE:
        return apply_landing(s, e, o);
    case EV_GM_LOAD: case EV_GM_WAIT_BEGIN: case EV_GM_WAIT_END:
        return observe(s, e, o, e->value);
    case EV_BLOCKED:
        return e->addr ? observe(s, e, o, e->value) : 0;
    default:
        return 0;
    }
}
