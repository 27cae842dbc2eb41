/*
 * merge.c - a split run's event streams made into the one stream a single
 * process gives (engine.h, "split runs").
 *
 * Each process captures its window as records: 'S' a scheduling segment
 * (time, tie key), 'E' an event, 'T' a string, 'I' a site and 'O' an object
 * declared at run time, and 'F' the window's end (did a core fault in it).
 * Process 0 merges the windows as they come:
 *
 *  - records before a stream's first segment (the closing BLOCKED events)
 *    go first, in process order, which is core order;
 *  - then the stream whose next segment has the smaller (time, key) gives
 *    its whole segment, as the one scheduler would pop that item next: at
 *    that moment its queue holds exactly the parts' queue heads (keys name
 *    their core, so no two parts tie);
 *  - a stream that faulted ends the run after its faulting segment, as one
 *    process stops there; what the others ran past it is dropped.
 *
 * A run recorded where it runs (engine_split_record) merges on every
 * process: the others' windows as skeletons (built while capturing, events
 * as counts: skel_flush says the form), its own whole, so each numbers
 * every event but shows its observer only its own (me), with every
 * declaration. An observer that renumbers (engine.h, on_renumber) takes
 * its own events as they are made instead: the merge then reads this
 * process's skeleton too, and after the window hands the observer the fix
 * that gives each event the run's numbers (fix_merged), so no event is
 * copied after the engine made it.
 *
 * Numbers are made global on the way: an event's seq is the merged count;
 * a link is a seq of its own process, or tagged with the process it came
 * from (partition.c); a run-time string or site keeps the id one process
 * would have given it, the next one at its first declaration in merged
 * order, found again by content when another process declares it later.
 * Ids from the setup, the same in every process, stay as they are.
 */
#include "engine/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct part_map {
    seq_map seq;             /* local seq -> global seq */
    uint32_t *str, *site;    /* run-time local id - n0 - 1 -> global id */
    uint32_t n_str, cap_str, n_site, cap_site;
    uint64_t *counters;      /* its skeleton's counter table (skel_flush) */
    size_t n_counters;
    uint64_t base_time;      /* its skeleton's last segment's time */
} part_map;

typedef struct eng_merger {
    engine_observer out;
    int count;
    int me;                  /* -1: out sees every stream's events; else only stream me's */
    int direct;              /* me's events went to out as made: numbered here, fixed by
                              * out.on_renumber (engine.h) */
    uint32_t n0_strings, n0_sites;
    part_map *parts;
    uint64_t seq;
    char **strings;          /* run-time strings, global id n0_strings + 1 + i */
    uint32_t n_strings, cap_strings;
    engine_site *sites;      /* run-time sites, global id n0_sites + 1 + i */
    uint32_t n_sites, cap_sites;
    int cut, ended;
    uint64_t cut_time, last_time;
    const char *fault_text;
} eng_merger;

/* ------------------------------------------------------------ capture */
/* A record of fixed size: one reservation and one copy whose size the
 * compiler sees (events and segments are most of a window). */
static inline void put_rec(engine_buf *b, uint8_t tag, const void *p, size_t n) {
    uint8_t *at = eng_buf_room(b, 1 + n);
    at[0] = tag;
    memcpy(at + 1, p, n);
    b->n += 1 + n;
}

static void put_text(engine_buf *b, const char *text) {
    uint32_t n = (uint32_t)strlen(text);
    engine_buf_put(b, &n, sizeof n);
    engine_buf_put(b, text, n);
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/*
 * The skeleton, built while the window is captured: the stream without its
 * events, which become counts, except faults, kept whole (their text ends
 * the run). A segment is one record with the count of the events right
 * after it, since a segment holds about one event: 's' is 9 bytes of fixed
 * fields (its time less the previous segment's, u32; its key's priority,
 * u16; its counter less the last one of that priority, u8; the count, u8:
 * no varint's data-dependent branches in the merge, which decodes every
 * segment of every process), 'K' the same as varints when a field does
 * not fit; a segment was 22 bytes before. 'N' counts events not right
 * after a segment (before the first, after a declaration). Times and
 * counters follow on from window to window.
 * Another process merges it as it merges the stream, numbering the events
 * without seeing them.
 */
#define SKEL_PRIOS 65536   /* priorities with a counter table entry */

static uint64_t *grow_counters(uint64_t **table, size_t *n, uint64_t prio) {
    size_t want = *n ? *n : 64;
    while (want <= prio) want *= 2;
    uint64_t *t = realloc(*table, want * sizeof *t);
    if (!t) abort();
    memset(t + *n, 0, (want - *n) * sizeof *t);
    *table = t;
    *n = want;
    return &t[prio];
}

/* The counter table entry of prio (< SKEL_PRIOS), grown to hold it; inline
 * when it is there (once a segment, in capture and in every merge). */
static inline uint64_t *counter_of(uint64_t **table, size_t *n, uint64_t prio) {
    return prio < *n ? &(*table)[prio] : grow_counters(table, n, prio);
}

static void skel_flush(eng_capture *c) {
    engine_buf *b = &c->skel;
    if (c->pending) {
        /* once a segment: the room found without a call when there is one */
        uint8_t *at = b->cap - b->n >= 1 + 3 * 10 ? b->p + b->n : eng_buf_room(b, 1 + 3 * 10);
        uint64_t prio = c->seg_key >> ENG_KEY_COUNTER_BITS;
        uint64_t counter = c->seg_key & ((1ULL << ENG_KEY_COUNTER_BITS) - 1);
        uint64_t *last = prio < SKEL_PRIOS ? counter_of(&c->counters, &c->n_counters, prio) : NULL;
        uint64_t dt = c->seg_time - c->base_time, dc = last ? counter - *last : 0;
        if (last && c->seg_time >= c->base_time && dt <= UINT32_MAX && counter >= *last &&
            dc <= UINT8_MAX && c->run <= UINT8_MAX) {
            uint32_t t32 = (uint32_t)dt;
            uint16_t p16 = (uint16_t)prio;
            at[0] = 's';
            memcpy(at + 1, &t32, 4);
            memcpy(at + 5, &p16, 2);
            at[7] = (uint8_t)dc;
            at[8] = (uint8_t)c->run;
            b->n += 9;
        } else {
            size_t n = 1;
            at[0] = 'K';
            n += eng_varint_put(at + n, zigzag((int64_t)(c->seg_time - c->base_time)));
            n += eng_varint_put(at + n, c->seg_key);
            n += eng_varint_put(at + n, c->run);
            b->n += n;
        }
        if (last) *last = counter;
        c->base_time = c->seg_time;
    } else if (c->run) {
        put_rec(b, 'N', &c->run, sizeof c->run);
    }
    c->pending = 0;
    c->run = 0;
}

/* A record other than an event or a segment: the skeleton keeps it whole. */
static void skel_whole(eng_capture *c, const uint8_t *rec, size_t n) {
    if (!c->skeleton) return;
    skel_flush(c);
    engine_buf_put(&c->skel, rec, n);
}

static void cap_string(void *ctx, uint32_t id, const char *text) {
    eng_capture *c = ctx;
    size_t at = c->stream.n;
    put_rec(&c->stream, 'T', &id, sizeof id);
    put_text(&c->stream, text);
    skel_whole(c, c->stream.p + at, c->stream.n - at);
}

/* A site is its file name and line (engine/cluster.c eng_site), so the
 * merge tells the processes' sites apart by those. */
static void cap_site(void *ctx, const engine_site *s) {
    eng_capture *c = ctx;
    size_t at = c->stream.n;
    put_rec(&c->stream, 'I', &s->id, sizeof s->id);
    engine_buf_put(&c->stream, &s->line, sizeof s->line);
    put_text(&c->stream, s->file ? s->file : "");
    put_text(&c->stream, s->func ? s->func : "");
    skel_whole(c, c->stream.p + at, c->stream.n - at);
}

static void cap_object(void *ctx, const engine_object *o) {
    eng_capture *c = ctx;
    put_rec(&c->stream, 'O', o, sizeof *o);
    skel_whole(c, c->stream.p + c->stream.n - 1 - sizeof *o, 1 + sizeof *o);
}

static void cap_event(void *ctx, const engine_event *ev) {
    eng_capture *c = ctx;
    if (c->direct.on_event) c->direct.on_event(c->direct.ctx, ev);
    else put_rec(&c->stream, 'E', ev, sizeof *ev);
    if (!c->skeleton) return;
    if (ev->kind == EV_FAULT) {
        skel_flush(c);
        put_rec(&c->skel, 'E', ev, sizeof *ev);
    } else {
        c->run++;
    }
}

static void cap_segment(void *ctx, uint64_t time, uint64_t key) {
    eng_capture *c = ctx;
    uint64_t v[2] = {time, key};
    if (!c->direct.on_event) put_rec(&c->stream, 'S', v, sizeof v);
    if (!c->skeleton) return;
    skel_flush(c);
    c->pending = 1;
    c->seg_time = time;
    c->seg_key = key;
}

engine_observer eng_capture_observer(eng_capture *c) {
    engine_observer o = {c, cap_string, cap_site, cap_object, cap_event, NULL, cap_segment, NULL};
    return o;
}

void eng_capture_window_end(eng_capture *c, int faulted) {
    uint8_t f = (uint8_t)faulted;
    put_rec(&c->stream, 'F', &f, 1);
    skel_whole(c, c->stream.p + c->stream.n - 2, 2);
}

/* After the window's merge: both buffers start again (the skeleton's times
 * and counters go on from the last segment, as a merger's do). */
void eng_capture_reset(eng_capture *c) {
    c->stream.n = 0;
    c->skel.n = 0;
    c->pending = 0;
    c->run = 0;
}

void eng_capture_free(eng_capture *c) {
    engine_buf_free(&c->stream);
    engine_buf_free(&c->skel);
    free(c->counters);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ merger */
eng_merger *eng_merger_new(const engine_observer *out, int count, int me, uint32_t n0_strings,
                           uint32_t n0_sites) {
    eng_merger *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->out = *out;
    m->count = count;
    m->me = me;
    m->n0_strings = n0_strings;
    m->n0_sites = n0_sites;
    m->parts = calloc((size_t)count, sizeof *m->parts);
    if (!m->parts) abort();
    return m;
}

void eng_merger_free(eng_merger *m) {
    for (int q = 0; q < m->count; q++) {
        seq_map_free(&m->parts[q].seq);
        free(m->parts[q].str);
        free(m->parts[q].site);
        free(m->parts[q].counters);
    }
    free(m->parts);
    for (uint32_t i = 0; i < m->n_strings; i++) free(m->strings[i]);
    free(m->strings);
    for (uint32_t i = 0; i < m->n_sites; i++) {
        free((char *)m->sites[i].file);
        free((char *)m->sites[i].func);
    }
    free(m->sites);
    free(m);
}

/* p with room for index n (capacity doubled until it is). */
static void *grow(void *p, uint64_t n, uint64_t *cap, size_t size) {
    if (n < *cap) return p;
    uint64_t c = *cap ? *cap * 2 : 1024;
    while (c <= n) c *= 2;
    void *np = realloc(p, c * size);
    if (!np) abort();
    *cap = c;
    return np;
}

static void *grow32(void *p, uint32_t n, uint32_t *cap, size_t size) {
    uint64_t c = *cap;
    p = grow(p, n, &c, size);
    *cap = (uint32_t)c;
    return p;
}

typedef struct cursor {
    const uint8_t *p;
    size_t n, at;
    /* the segment at `at` once peek_segment decoded it (head 1) */
    int head, has_prio;
    uint64_t t, k, prio, counter;
    uint32_t count;           /* a skeleton's: the events right after it */
    size_t next;              /* where the record after it starts */
} cursor;

static int take(cursor *c, void *out, size_t n) {
    if (c->n - c->at < n) return -1;
    memcpy(out, c->p + c->at, n);
    c->at += n;
    return 0;
}

/* A text record's body; NUL-terminated copy in buf (malloc'd). */
static char *take_text(cursor *c) {
    uint32_t n;
    if (take(c, &n, sizeof n) || c->n - c->at < n) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) abort();
    memcpy(s, c->p + c->at, n);
    s[n] = 0;
    c->at += n;
    return s;
}

static inline int remap_seq(const eng_merger *m, int q, uint64_t v, uint64_t *out) {
    if (!v) { *out = 0; return 0; }
    uint64_t tag = v >> SPLIT_SEQ_SHIFT;
    if (tag) {
        q = (int)tag - 1;
        v &= (1ULL << SPLIT_SEQ_SHIFT) - 1;
    }
    if (q >= m->count || v > m->parts[q].seq.n) return -1;
    *out = seq_map_get(&m->parts[q].seq, v);
    return 0;
}

static inline int remap_site(const eng_merger *m, int q, uint32_t v, uint32_t *out) {
    uint32_t tag = v >> SPLIT_SITE_SHIFT;
    if (tag) {
        q = (int)tag - 1;
        v &= (1u << SPLIT_SITE_SHIFT) - 1;
    }
    if (v <= m->n0_sites) { *out = v; return 0; }
    if (q >= m->count || v - m->n0_sites > m->parts[q].n_site) return -1;
    *out = m->parts[q].site[v - m->n0_sites - 1];
    return 0;
}

static inline int remap_string(const eng_merger *m, int q, int64_t v, int64_t *out) {
    if (v <= (int64_t)m->n0_strings) { *out = v; return 0; }
    if (v - m->n0_strings > m->parts[q].n_str) return -1;
    *out = m->parts[q].str[v - m->n0_strings - 1];
    return 0;
}

/* ev's link, site and run-time strings as the run numbers them. */
static inline int remap_event(const eng_merger *m, int q, engine_event *ev) {
    if (remap_seq(m, q, ev->link, &ev->link) || remap_site(m, q, ev->site, &ev->site)) return -1;
    switch (ev->kind) {
    case EV_ROLE: case EV_FAULT: case EV_KERNEL_BEGIN: case EV_KERNEL_END:
        return remap_string(m, q, ev->value, &ev->value);
    case EV_NOTE:
        return remap_string(m, q, ev->aux, &ev->aux);
    default:
        return 0;
    }
}

static int merge_event(eng_merger *m, int q, cursor *c) {
    engine_event ev;
    if (take(c, &ev, sizeof ev)) return -1;
    part_map *pm = &m->parts[q];
    if (ev.seq != pm->seq.n + 1) return -1;
    if (m->seq + 1 > UINT32_MAX) return -1;   /* the maps hold 32-bit seqs */
    seq_map_add(&pm->seq, m->seq + 1, 1);
    if (remap_event(m, q, &ev)) return -1;
    if (ev.kind == EV_FAULT && ev.value > (int64_t)m->n0_strings)
        m->fault_text = m->strings[ev.value - m->n0_strings - 1];
    ev.seq = ++m->seq;
    int shown = m->me < 0 || (q == m->me && !m->direct);
    if (m->out.on_event && shown) m->out.on_event(m->out.ctx, &ev);
    return 0;
}

/* out.on_renumber's fix for me's events (direct): the numbers the merge
 * gave; 1 for an event no merge numbered (past a cut, or in a window that
 * was not merged). */
static int fix_merged(void *ctx, engine_event *ev) {
    const eng_merger *m = ctx;
    const part_map *pm = &m->parts[m->me];
    /* in place, not through a copy: this runs on every event of a split
     * recording (an event dropped may be left half fixed) */
    if (ev->seq == 0 || ev->seq > pm->seq.n || remap_event(m, m->me, ev)) return 1;
    ev->seq = seq_map_get(&pm->seq, ev->seq);
    return 0;
}

/* The run's end event is numbered when made. */
static int fix_none(void *ctx, engine_event *ev) {
    (void)ctx, (void)ev;
    return 0;
}

static void renumber(eng_merger *m, int (*fix)(void *, engine_event *)) {
    if (m->direct && m->out.on_renumber) m->out.on_renumber(m->out.ctx, fix, m);
}

/* A run of n events of stream q seen as its skeleton's count: numbered,
 * not shown. */
static int count_events(eng_merger *m, int q, uint32_t n) {
    part_map *pm = &m->parts[q];
    if (m->seq + n > UINT32_MAX) return -1;
    seq_map_add(&pm->seq, m->seq + 1, n);
    m->seq += n;
    return 0;
}

static int merge_count(eng_merger *m, int q, cursor *c) {
    uint32_t n;
    if (take(c, &n, sizeof n) || !n) return -1;
    return count_events(m, q, n);
}

static int merge_string(eng_merger *m, int q, cursor *c) {
    uint32_t id;
    if (take(c, &id, sizeof id)) return -1;
    char *text = take_text(c);
    part_map *pm = &m->parts[q];
    if (!text || id != m->n0_strings + pm->n_str + 1) { free(text); return -1; }
    uint32_t g = 0;
    for (uint32_t i = 0; i < m->n_strings && !g; i++)
        if (!strcmp(m->strings[i], text)) g = m->n0_strings + i + 1;
    if (g) {
        free(text);
    } else {
        m->strings = grow32(m->strings, m->n_strings, &m->cap_strings, sizeof *m->strings);
        m->strings[m->n_strings++] = text;
        g = m->n0_strings + m->n_strings;
        if (m->out.on_string) m->out.on_string(m->out.ctx, g, text);
    }
    pm->str = grow32(pm->str, pm->n_str, &pm->cap_str, sizeof *pm->str);
    pm->str[pm->n_str++] = g;
    return 0;
}

static int merge_site(eng_merger *m, int q, cursor *c) {
    uint32_t id;
    int line;
    if (take(c, &id, sizeof id) || take(c, &line, sizeof line)) return -1;
    char *file = take_text(c), *func = file ? take_text(c) : NULL;
    part_map *pm = &m->parts[q];
    if (!file || !func || id != m->n0_sites + pm->n_site + 1) {
        free(file);
        free(func);
        return -1;
    }
    uint32_t g = 0;
    for (uint32_t i = 0; i < m->n_sites && !g; i++)
        if (m->sites[i].line == line && !strcmp(m->sites[i].file, file)) g = m->n0_sites + i + 1;
    if (g) {
        free(file);
        free(func);
    } else {
        m->sites = grow32(m->sites, m->n_sites, &m->cap_sites, sizeof *m->sites);
        g = m->n0_sites + m->n_sites + 1;
        m->sites[m->n_sites++] = (engine_site){g, file, line, func};
        if (m->out.on_site) m->out.on_site(m->out.ctx, &m->sites[m->n_sites - 1]);
    }
    pm->site = grow32(pm->site, pm->n_site, &pm->cap_site, sizeof *pm->site);
    pm->site[pm->n_site++] = g;
    return 0;
}

/* One record of stream q that is not a segment start or the window's end. */
static int merge_record(eng_merger *m, int q, cursor *c) {
    uint8_t tag = c->p[c->at++];
    switch (tag) {
    case 'E': return merge_event(m, q, c);
    case 'N': return merge_count(m, q, c);
    case 'T': return merge_string(m, q, c);
    case 'I': return merge_site(m, q, c);
    case 'O': {
        engine_object o;
        if (take(c, &o, sizeof o)) return -1;
        if (m->out.on_object) m->out.on_object(m->out.ctx, &o);
        return 0;
    }
    default: return -1;
    }
}

static int at_tag(const cursor *c, uint8_t tag) { return c->at < c->n && c->p[c->at] == tag; }

static int at_segment_or_end(const cursor *c) {
    if (c->at >= c->n) return 1;
    uint8_t t = c->p[c->at];
    return t == 'S' || t == 's' || t == 'K' || t == 'F';
}

/* Records of q up to its next segment start or its window's end. */
static int merge_run(eng_merger *m, int q, cursor *c) {
    while (!at_segment_or_end(c))
        if (merge_record(m, q, c)) return -1;
    return 0;
}

/* An 's' record's 8 bytes after its tag (skel_flush says the form), into
 * c's head fields: its time and counter follow on from stream q's last
 * segment taken. */
static inline void decode_short(const part_map *pm, const uint8_t *r, cursor *c) {
    uint32_t t32;
    uint16_t p16;
    memcpy(&t32, r, 4);
    memcpy(&p16, r + 4, 2);
    c->t = pm->base_time + t32;
    c->prio = p16;
    c->counter = (c->prio < pm->n_counters ? pm->counters[c->prio] : 0) + r[6];
    c->k = c->prio << ENG_KEY_COUNTER_BITS | c->counter;
    c->has_prio = 1;
    c->count = r[7];
}

/* Decodes the segment at c->at into c (once): 1 if there is one, 0 if the
 * next record is none (or is cut: the window's check then fails). */
static int peek_segment(const eng_merger *m, int q, cursor *c) {
    if (c->head) return 1;
    if (c->at >= c->n) return 0;
    uint8_t tag = c->p[c->at];
    size_t at = c->at + 1;
    uint64_t v, n;
    c->has_prio = 0;
    c->count = 0;
    if (tag == 'S') {
        if (c->n - at < 2 * sizeof(uint64_t)) return 0;
        memcpy(&c->t, c->p + at, sizeof c->t);
        memcpy(&c->k, c->p + at + sizeof c->t, sizeof c->k);
        at += 2 * sizeof(uint64_t);
    } else if (tag == 's') {
        if (c->n - at < 8) return 0;
        decode_short(&m->parts[q], c->p + at, c);
        at += 8;
    } else if (tag == 'K') {
        if (eng_varint_get(c->p, c->n, &at, &v)) return 0;
        c->t = m->parts[q].base_time + (uint64_t)unzigzag(v);
        if (eng_varint_get(c->p, c->n, &at, &c->k) || eng_varint_get(c->p, c->n, &at, &n) ||
            n > UINT32_MAX)
            return 0;
        c->prio = c->k >> ENG_KEY_COUNTER_BITS;
        c->counter = c->k & ((1ULL << ENG_KEY_COUNTER_BITS) - 1);
        c->has_prio = c->prio < SKEL_PRIOS;
        c->count = (uint32_t)n;
    } else {
        return 0;
    }
    c->next = at;
    c->head = 1;
    return 1;
}

/* Steps past the peeked segment: a skeleton's counter table follows it,
 * and the events right after it are numbered. */
static int take_segment(eng_merger *m, int q, cursor *c) {
    part_map *pm = &m->parts[q];
    if (c->has_prio) *counter_of(&pm->counters, &pm->n_counters, c->prio) = c->counter;
    if (c->p[c->at] != 'S') pm->base_time = c->t;
    c->at = c->next;
    c->head = 0;
    return c->count ? count_events(m, q, c->count) : 0;
}

/*
 * The common case of the loop below, on every segment of every process:
 * 's' records back to back while they come before the others' first
 * (others, at nt/nk), with no observer of segments. Decoded, numbered and
 * counted in one pass, the events as one run of the seq map (a segment
 * holds about one event, so this is most of a split recording's merge).
 * Takes the decoded head, then each next 's' that still comes first; stops
 * with c's head decoded at the first that does not, or with no head at a
 * record of another kind (merge_run's), as take_segment would leave it.
 */
static int take_short_run(eng_merger *m, int q, cursor *c, int others, uint64_t nt,
                          uint64_t nk) {
    part_map *pm = &m->parts[q];
    uint64_t events = 0;
    for (;;) {
        *counter_of(&pm->counters, &pm->n_counters, c->prio) = c->counter;
        pm->base_time = c->t;
        events += c->count;
        m->last_time = c->t;
        c->at = c->next;
        c->head = 0;
        if (c->n - c->at < 9 || c->p[c->at] != 's') break;
        decode_short(pm, c->p + c->at + 1, c);
        c->next = c->at + 9;
        if (others && !(c->t < nt || (c->t == nt && c->k < nk))) {
            c->head = 1;
            break;
        }
    }
    if (events > UINT32_MAX) return -1;
    return events ? count_events(m, q, (uint32_t)events) : 0;
}

static int faulted_here(const cursor *c) {
    return at_tag(c, 'F') && c->n - c->at >= 2 && c->p[c->at + 1];
}

static int merge_window(eng_merger *m, const engine_buf *streams, char *err, size_t errlen) {
    if (m->cut) return ENGINE_OK;   /* the run ended at a fault */
    cursor cur[256];
    int bad = -1;
    for (int q = 0; q < m->count; q++) {
        cur[q] = (cursor){.p = streams[q].p, .n = streams[q].n};
        if (merge_run(m, q, &cur[q]) && bad < 0) bad = q;
    }
    while (bad < 0) {
        /* the stream with the smallest head, and the smallest of the others' */
        int best = -1, others = 0;
        uint64_t bt = 0, bk = 0, nt = UINT64_MAX, nk = UINT64_MAX;
        for (int q = 0; q < m->count; q++) {
            cursor *c = &cur[q];
            if (!peek_segment(m, q, c)) continue;
            if (best < 0 || c->t < bt || (c->t == bt && c->k < bk)) {
                if (best >= 0) nt = bt, nk = bk, others = 1;
                best = q;
                bt = c->t;
                bk = c->k;
            } else if (c->t < nt || (c->t == nt && c->k < nk)) {
                nt = c->t, nk = c->k, others = 1;
            }
        }
        if (best < 0) break;
        /* best's segments go one after another until one passes the
         * others' first: their heads do not move meanwhile */
        cursor *c = &cur[best];
        do {
            int rc;
            if (!m->out.on_segment && c->p[c->at] == 's') {
                /* stopped at a head that passes the others' first, it
                 * leaves nothing for merge_run and ends the loop below */
                rc = take_short_run(m, best, c, others, nt, nk);
            } else {
                if (m->out.on_segment) m->out.on_segment(m->out.ctx, c->t, c->k);
                m->last_time = c->t;
                rc = take_segment(m, best, c);
            }
            if (rc || merge_run(m, best, c)) {
                bad = best;
                break;
            }
            if (faulted_here(c)) {
                m->cut = 1;
                m->cut_time = m->last_time;
                return ENGINE_OK;
            }
        } while (peek_segment(m, best, c) && (!others || c->t < nt || (c->t == nt && c->k < nk)));
    }
    for (int q = 0; q < m->count && bad < 0; q++)
        if (!at_tag(&cur[q], 'F') || cur[q].at + 2 != cur[q].n) bad = q;
    if (bad >= 0) {
        snprintf(err, errlen, "the event stream of process %d is corrupt or out of order", bad);
        return ENGINE_ERR;
    }
    return ENGINE_OK;
}

int eng_merger_window(eng_merger *m, const engine_buf *streams, char *err, size_t errlen) {
    int rc = merge_window(m, streams, err, errlen);
    renumber(m, fix_merged);
    return rc;
}

void eng_merger_direct(eng_merger *m) { m->direct = m->me >= 0; }

int eng_merger_cut(const eng_merger *m, uint64_t *time, const char **message) {
    if (!m->cut) return 0;
    *time = m->cut_time;
    *message = m->fault_text ? m->fault_text : "a core faulted";
    return 1;
}

uint64_t eng_merger_events(const eng_merger *m) { return m->seq; }
uint64_t eng_merger_seq(const eng_merger *m, int q, uint64_t local) {
    uint64_t g;
    return remap_seq(m, q, local, &g) ? 0 : g;
}
uint64_t eng_merger_last_time(const eng_merger *m) { return m->last_time; }

/* The run's last event, as engine_run emits it. */
void eng_merger_end(eng_merger *m, uint64_t time, engine_outcome outcome) {
    if (m->ended) return;
    m->ended = 1;
    renumber(m, fix_merged);   /* what a window that was not merged showed goes */
    engine_event end = {.kind = EV_RUN_END, .time = time, .value = outcome};
    end.seq = ++m->seq;
    if (m->out.on_event && m->me <= 0) m->out.on_event(m->out.ctx, &end);
    renumber(m, fix_none);
}
