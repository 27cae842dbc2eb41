/*
 * rec_index.c - the index builder: declarations and events in, the rows of
 * index.db's derived tables out.
 *
 * One builder serves both the live recorder (fed each chunk as it is
 * written) and `reindex` (fed each chunk as it is decoded), so an index
 * rebuilt from the trace is identical to the one written at record time.
 * It pairs WAIT_BEGIN/END per track into waits, sums the bytes of issued
 * transfers (the transfers table itself is derived by analysis on first
 * use: one row per two events would double the index and the recorder's
 * memory), remembers which tracks exist and the last role of every core, and
 * keeps everything in memory arrays until rec_ix_write_db turns them into
 * bulk inserts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_index.h"

const char *rec_wait_kind_name(int wk) {
    static const char *const names[WK_COUNT] = {"flag", "pipe", "xcore", "gm",
                                                "ring_space", "ring_data", "barrier"};
    return wk >= 0 && wk < WK_COUNT ? names[wk] : "gm";
}

const char *rec_object_kind_name(int kind) {
    switch (kind) {
    case OBJ_WORD: return "word";
    case OBJ_RING: return "ring";
    case OBJ_RING_HEAD: return "ring_head";
    case OBJ_RING_TAIL: return "ring_tail";
    case OBJ_FLAG: return "flag";
    case OBJ_BUFFER: return "buffer";
    case OBJ_XCORE_FLAG: return "xcore_flag";
    case OBJ_BARRIER: return "barrier";
    default: return "word";
    }
}

rec_index *rec_ix_new(void) {
    return calloc(1, sizeof(rec_index));
}

void rec_ix_free(rec_index *ix) {
    if (!ix) return;
    rec_ix_db_discard(ix);
    rec_kv_free(&ix->meta);
    for (size_t i = 0; i < ix->nstrings; i++) free(ix->strings[i]);
    free(ix->strings);
    for (size_t i = 0; i < ix->nsites; i++) {
        free(ix->sites[i].file);
        free(ix->sites[i].func);
    }
    free(ix->sites);
    free(ix->objects);
    free(ix->track_seen);
    free(ix->open_wait);
    free(ix->core_role);
    free(ix->waits);
    free(ix->ended_waits);
    free(ix->remap);
    free(ix->chunks);
    free(ix);
}

/* Grows a by-id array so that index idx exists (new entries zeroed). */
static int grow_to(rec_index *ix, void **arr, size_t *n, size_t elem, size_t idx) {
    if (idx < *n) return 0;
    size_t cap = *n ? *n : 64;
    while (cap <= idx) cap *= 2;
    void *p = realloc(*arr, cap * elem);
    if (!p) { ix->oom = 1; return -1; }
    memset((char *)p + *n * elem, 0, (cap - *n) * elem);
    *arr = p;
    *n = cap;
    return 0;
}

/* Appends one row to a growable row array; returns it or NULL. */
static void *push_row(rec_index *ix, void **arr, size_t *n, size_t *cap, size_t elem) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        void *p = realloc(*arr, nc * elem);
        if (!p) { ix->oom = 1; return NULL; }
        *arr = p;
        *cap = nc;
    }
    void *row = (char *)*arr + (*n)++ * elem;
    memset(row, 0, elem);
    return row;
}

void rec_ix_push_ended(rec_index *ix, size_t **arr, size_t *n, size_t *cap, size_t row) {
    size_t *slot = push_row(ix, (void **)arr, n, cap, sizeof **arr);
    if (slot) *slot = row;
}

int rec_ix_drop_marked(rec_index *ix) {
    if (ix->nwaits > ix->cap_remap) {
        size_t cap = ix->cap_remap ? ix->cap_remap : 4096;
        while (cap < ix->nwaits) cap *= 2;
        size_t *p = realloc(ix->remap, cap * sizeof *p);
        if (!p) return -1;
        ix->remap = p;
        ix->cap_remap = cap;
    }
    size_t left = 0;   /* the ended list first: it reads the marks */
    for (size_t k = 0; k < ix->nended_waits; k++)
        if (!ix->waits[ix->ended_waits[k]].written) ix->ended_waits[left++] = ix->ended_waits[k];
    ix->nended_waits = left;
    size_t kept = 0;
    for (size_t i = 0; i < ix->nwaits; i++) {
        if (ix->waits[i].written) continue;
        ix->remap[i] = kept;
        if (kept != i) ix->waits[kept] = ix->waits[i];
        kept++;
    }
    ix->nwaits = kept;
    for (size_t t = 0; t < ix->nopen; t++)
        if (ix->open_wait[t]) ix->open_wait[t] = ix->remap[ix->open_wait[t] - 1] + 1;
    for (size_t k = 0; k < ix->nended_waits; k++)
        ix->ended_waits[k] = ix->remap[ix->ended_waits[k]];
    return 0;
}

int rec_ix_header(rec_index *ix, const rec_kv *header) {
    for (size_t i = 0; i < header->n; i++)
        if (rec_kv_set(&ix->meta, header->keys[i], header->values[i])) ix->oom = 1;
    const char *cpr = rec_kv_get(header, "cores_per_rank");
    const char *aic = rec_kv_get(header, "num_aic");
    ix->cpr = cpr ? (uint32_t)strtoul(cpr, NULL, 10) : 0;
    ix->num_aic = aic ? (uint32_t)strtoul(aic, NULL, 10) : 0;
    return ix->cpr == 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- declarations */

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static void on_string(void *ctx, uint32_t id, const char *text, size_t len) {
    rec_index *ix = ctx;
    if (grow_to(ix, (void **)&ix->strings, &ix->nstrings, sizeof(char *), id)) return;
    free(ix->strings[id]);
    ix->strings[id] = dup_n(text, len);
    if (!ix->strings[id]) ix->oom = 1;
}

static void on_site(void *ctx, uint32_t id, int line, const char *file, size_t fl,
                    const char *func, size_t fn) {
    rec_index *ix = ctx;
    if (grow_to(ix, (void **)&ix->sites, &ix->nsites, sizeof(ix_site), id)) return;
    ix_site *s = &ix->sites[id];
    free(s->file);
    free(s->func);
    s->file = dup_n(file, fl);
    s->func = dup_n(func, fn);
    s->line = line;
    s->present = 1;
    if (!s->file || !s->func) ix->oom = 1;
}

static void on_object(void *ctx, const engine_object *o) {
    rec_index *ix = ctx;
    if (o->id == 0) return;
    if (grow_to(ix, (void **)&ix->objects, &ix->nobjects, sizeof(engine_object), o->id)) return;
    ix->objects[o->id] = *o;
}

/* ---------------------------------------------------------------- events */

static inline uint32_t track_of(const rec_index *ix, const engine_event *ev) {
    return engine_track_id(ix->cpr, ev->rank, ev->core, ev->pipe);
}

static int object_kind(const rec_index *ix, uint32_t id) {
    return id && id < ix->nobjects ? (int)ix->objects[id].kind : 0;
}

static uint32_t role_of(const rec_index *ix, const engine_event *ev) {
    size_t c = (size_t)ev->rank * ix->cpr + ev->core;
    return c < ix->ncores ? ix->core_role[c] : 0;
}

static int wait_kind(const rec_index *ix, const engine_event *ev) {
    switch (ev->kind) {
    case EV_FLAG_WAIT_BEGIN: return WK_FLAG;
    case EV_PIPE_WAIT_BEGIN: return WK_PIPE;
    case EV_XCORE_WAIT_BEGIN: return WK_XCORE;
    case EV_BARRIER_BEGIN: return WK_BARRIER;
    default: break;
    }
    /* GM waits and deadlock reports: the named word says what is awaited. */
    switch (object_kind(ix, ev->object)) {
    case OBJ_RING_HEAD: return WK_RING_SPACE;
    case OBJ_RING_TAIL: return WK_RING_DATA;
    case OBJ_FLAG: return ev->kind == EV_BLOCKED ? WK_FLAG : WK_GM;
    case OBJ_XCORE_FLAG: return ev->kind == EV_BLOCKED ? WK_XCORE : WK_GM;
    case OBJ_BARRIER: return ev->kind == EV_BLOCKED ? WK_BARRIER : WK_GM;
    default: return WK_GM;
    }
}

static void wait_begin(rec_index *ix, const engine_event *ev, uint32_t track) {
    if (grow_to(ix, (void **)&ix->open_wait, &ix->nopen, sizeof(uint64_t), track)) return;
    ix_wait *w = push_row(ix, (void **)&ix->waits, &ix->nwaits, &ix->cap_waits, sizeof *w);
    if (!w) return;
    w->id = ++ix->wait_ids;
    w->track = track;
    w->rank = ev->rank;
    w->core = ev->core;
    w->role = role_of(ix, ev);
    w->kind = (uint8_t)wait_kind(ix, ev);
    w->object = ev->object;
    w->site = ev->site;
    w->begin_seq = ev->seq;
    w->begin_ps = ev->time;
    w->expected = ev->aux;
    w->seen = ev->value;
    ix->open_wait[track] = ix->nwaits;
}

static void wait_end(rec_index *ix, const engine_event *ev, uint32_t track) {
    if (track >= ix->nopen || ix->open_wait[track] == 0) return;
    size_t row = (size_t)ix->open_wait[track] - 1;
    ix_wait *w = &ix->waits[row];
    ix->open_wait[track] = 0;
    rec_ix_push_ended(ix, &ix->ended_waits, &ix->nended_waits, &ix->cap_ended_waits, row);
    w->end_seq = ev->seq;
    w->end_ps = ev->time;
    w->seen = ev->value;
    w->waker_seq = ev->link;
    w->waker_peer = ev->peer;
}

/* A deadlock report names a core that is blocked: it usually already has an
 * open wait (then the report only refreshes the value it sees); a core
 * blocked without one gets a wait that never ends. */
static void blocked(rec_index *ix, const engine_event *ev, uint32_t track) {
    for (uint32_t p = 0; p < PIPE_COUNT; p++) {
        uint32_t t = engine_track_id(ix->cpr, ev->rank, ev->core, p);
        if (t < ix->nopen && ix->open_wait[t]) {
            ix->waits[ix->open_wait[t] - 1].seen = ev->value;
            return;
        }
    }
    wait_begin(ix, ev, track);
}

static void consume(rec_index *ix, const engine_event *ev) {
    uint32_t track = track_of(ix, ev);
    /* RUN_END is the engine's, not a core's: it carries rank 0 core 0 only
     * because an event needs a track id, so it must not make that core
     * appear (a phantom "r0 AIC0" in cores and the export). */
    if (ev->kind != EV_RUN_END &&
        (track < ix->ntracks || !grow_to(ix, (void **)&ix->track_seen, &ix->ntracks, 1, track)))
        ix->track_seen[track] = 1;
    ix->kind_count[ev->kind & 63]++;
    ix->events++;
    ix->last_seq = ev->seq;
    if (ev->time > ix->max_time) ix->max_time = ev->time;
    if (ev->kind == EV_RUN_END) ix->ended = 1, ix->end_event_time = ev->time;
    switch (ev->kind) {
    case EV_FLAG_WAIT_BEGIN: case EV_XCORE_WAIT_BEGIN: case EV_GM_WAIT_BEGIN:
    case EV_BARRIER_BEGIN: case EV_PIPE_WAIT_BEGIN:
        wait_begin(ix, ev, track);
        break;
    case EV_FLAG_WAIT_END: case EV_XCORE_WAIT_END: case EV_GM_WAIT_END:
    case EV_BARRIER_END: case EV_PIPE_WAIT_END:
        wait_end(ix, ev, track);
        break;
    case EV_BLOCKED:
        blocked(ix, ev, track);
        break;
    case EV_XFER_ISSUE:
        ix->xfer_bytes += ev->len;
        break;
    case EV_ROLE: {
        size_t c = (size_t)ev->rank * ix->cpr + ev->core;
        if (!grow_to(ix, (void **)&ix->core_role, &ix->ncores, sizeof(uint32_t), c))
            ix->core_role[c] = (uint32_t)ev->value;
        break;
    }
    default:
        break;
    }
}

int rec_ix_chunk(rec_index *ix, const uint8_t *decls, size_t decl_len, const engine_event *evs,
                 size_t n, const rec_chunk_row *row) {
    rec_decl_sink sink = {ix, on_string, on_site, on_object};
    if (decl_len && rec_decl_decode(decls, decl_len, &sink)) return -1;
    for (size_t i = 0; i < n; i++) {
        /* a chunk's events are far larger than the cache: fetched ahead */
        if (i + 16 < n) __builtin_prefetch(&evs[i + 16]);
        consume(ix, &evs[i]);
    }
    if (n && row) {
        rec_chunk_row *r =
            push_row(ix, (void **)&ix->chunks, &ix->nchunks, &ix->cap_chunks, sizeof *r);
        if (r) *r = *row;
    }
    return ix->oom ? -1 : 0;
}

uint64_t rec_ix_last_time(const rec_index *ix) {
    return ix->max_time;
}

int rec_ix_end_time_fits(const rec_index *ix, uint64_t end_ps) {
    if (ix->ended) return end_ps == ix->end_event_time;
    return end_ps >= ix->max_time && end_ps <= (uint64_t)INT64_MAX;
}

int rec_ix_finish(rec_index *ix, const rec_kv *trailer, const rec_fingerprint *trace) {
    for (size_t i = 0; i < trailer->n; i++)
        if (rec_kv_set(&ix->meta, trailer->keys[i], trailer->values[i])) ix->oom = 1;
    const char *end = rec_kv_get(&ix->meta, "end_time_ps");
    uint64_t end_ps = end ? strtoull(end, NULL, 10) : ix->max_time;
    if (end_ps < ix->max_time) end_ps = ix->max_time;
    for (size_t i = 0; i < ix->nwaits; i++) {
        ix_wait *w = &ix->waits[i];
        if (w->end_seq == 0) w->end_ps = end_ps;
    }
    if (!end && rec_kv_setf(&ix->meta, "end_time_ps", "%llu", (unsigned long long)end_ps))
        ix->oom = 1;
    if (!rec_kv_get(&ix->meta, "events") &&
        rec_kv_setf(&ix->meta, "events", "%llu", (unsigned long long)ix->events))
        ix->oom = 1;
    char fp[128];
    rec_fingerprint_format(trace, fp, sizeof fp);
    if (rec_kv_setf(&ix->meta, "trace_bytes", "%llu", (unsigned long long)trace->bytes) ||
        rec_kv_setf(&ix->meta, "transfer_bytes", "%llu", (unsigned long long)ix->xfer_bytes) ||
        rec_kv_set(&ix->meta, "trace_fingerprint", fp))
        ix->oom = 1;
    /* Per-kind counts let `npurr info` and `stats` avoid decoding every chunk. */
    for (int k = 0; k < 64; k++) {
        if (!ix->kind_count[k]) continue;
        char key[64];
        snprintf(key, sizeof key, "events.%s", rec_kind_name(k));
        if (rec_kv_setf(&ix->meta, key, "%llu", (unsigned long long)ix->kind_count[k]))
            ix->oom = 1;
    }
    return ix->oom ? -1 : 0;
}
