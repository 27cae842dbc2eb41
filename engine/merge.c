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
 * process: its own stream whole, the others' as skeletons (eng_capture_
 * skeleton: events as counts), so each numbers every event but shows its
 * observer only its own (me), with every declaration.
 *
 * Numbers are made global on the way: an event's seq is the merged count;
 * a link is a seq of its own process, or tagged with the process it came
 * from (partition.c); a run-time string or site keeps the id one process
 * would have given it, the next one at its first declaration in merged
 * order, found again by content when another process declares it later.
 * Ids from the setup, the same in every process, stay as they are.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct part_map {
    uint32_t *seq;           /* local seq -> global seq */
    uint64_t n_seq, cap_seq;
    uint32_t *str, *site;    /* run-time local id - n0 - 1 -> global id */
    uint32_t n_str, cap_str, n_site, cap_site;
} part_map;

typedef struct eng_merger {
    engine_observer out;
    int count;
    int me;                  /* -1: out sees every stream's events; else only stream me's */
    uint32_t n0_strings, n0_sites;
    part_map *parts;
    uint64_t seq;
    char **strings;          /* run-time strings, global id n0_strings + 1 + i */
    uint32_t n_strings, cap_strings;
    engine_site *sites;      /* run-time sites, global id n0_sites + 1 + i */
    int64_t *site_keys;      /* their file keys (site_file_key) */
    uint32_t n_sites, cap_sites;
    int cut, ended;
    uint64_t cut_time, last_time;
    const char *fault_text;
} eng_merger;

/* ------------------------------------------------------------ capture */
static void put_rec(engine_buf *b, uint8_t tag, const void *p, size_t n) {
    engine_buf_put(b, &tag, 1);
    engine_buf_put(b, p, n);
}

static void put_text(engine_buf *b, const char *text) {
    uint32_t n = (uint32_t)strlen(text);
    engine_buf_put(b, &n, sizeof n);
    engine_buf_put(b, text, n);
}

static void cap_string(void *ctx, uint32_t id, const char *text) {
    put_rec(ctx, 'T', &id, sizeof id);
    put_text(ctx, text);
}

/* The engine tells sites apart by (file pointer, line), and an unoptimized
 * build has several copies of one __FILE__ text: the key is the pointer's
 * distance to a literal of this binary, the same in every process of it. */
static const char site_anchor[] = "npurr site anchor";

static int64_t site_file_key(const char *file) {
    return (int64_t)((intptr_t)file - (intptr_t)site_anchor);
}

static void cap_site(void *ctx, const engine_site *s) {
    int64_t key = site_file_key(s->file);
    put_rec(ctx, 'I', &s->id, sizeof s->id);
    engine_buf_put(ctx, &s->line, sizeof s->line);
    engine_buf_put(ctx, &key, sizeof key);
    put_text(ctx, s->file ? s->file : "");
    put_text(ctx, s->func ? s->func : "");
}

static void cap_object(void *ctx, const engine_object *o) { put_rec(ctx, 'O', o, sizeof *o); }
static void cap_event(void *ctx, const engine_event *ev) { put_rec(ctx, 'E', ev, sizeof *ev); }

static void cap_segment(void *ctx, uint64_t time, uint64_t key) {
    uint64_t v[2] = {time, key};
    put_rec(ctx, 'S', v, sizeof v);
}

engine_observer eng_capture_observer(engine_buf *stream) {
    engine_observer o = {stream, cap_string, cap_site, cap_object, cap_event, NULL, cap_segment};
    return o;
}

void eng_capture_window_end(engine_buf *stream, int faulted) {
    uint8_t f = (uint8_t)faulted;
    put_rec(stream, 'F', &f, 1);
}

/* Bytes of the record at p (avail bytes from there), 0 if it is cut. */
static size_t record_size(const uint8_t *p, size_t avail) {
    size_t n;
    uint32_t t1, t2;
    switch (p[0]) {
    case 'S': n = 1 + 2 * sizeof(uint64_t); break;
    case 'E': n = 1 + sizeof(engine_event); break;
    case 'O': n = 1 + sizeof(engine_object); break;
    case 'F': n = 2; break;
    case 'T':
        if (avail < 1 + 2 * sizeof t1) return 0;
        memcpy(&t1, p + 1 + sizeof t1, sizeof t1);
        n = 1 + 2 * sizeof t1 + t1;
        break;
    case 'I': {
        size_t at = 1 + sizeof(uint32_t) + sizeof(int) + sizeof(int64_t);
        if (avail < at + sizeof t1) return 0;
        memcpy(&t1, p + at, sizeof t1);
        at += sizeof t1 + t1;
        if (avail < at + sizeof t2) return 0;
        memcpy(&t2, p + at, sizeof t2);
        n = at + sizeof t2 + t2;
        break;
    }
    default: return 0;
    }
    return n <= avail ? n : 0;
}

/* The stream's skeleton: every record but events, which become counts
 * ('N', a run of events) except faults, kept whole (their text ends the
 * run). Another process merges it as it merges the stream, numbering the
 * events without seeing them. -1 if the stream is corrupt. */
int eng_capture_skeleton(const engine_buf *stream, engine_buf *skel) {
    skel->n = 0;
    uint32_t run = 0;
    for (size_t at = 0; at < stream->n;) {
        const uint8_t *p = stream->p + at;
        size_t n = record_size(p, stream->n - at);
        if (!n) return -1;
        int whole = 1;
        if (p[0] == 'E') {
            engine_event ev;
            memcpy(&ev, p + 1, sizeof ev);
            whole = ev.kind == EV_FAULT;
        }
        if (!whole) {
            run++;
        } else {
            if (run) put_rec(skel, 'N', &run, sizeof run);
            run = 0;
            engine_buf_put(skel, p, n);
        }
        at += n;
    }
    if (run) put_rec(skel, 'N', &run, sizeof run);
    return 0;
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
        free(m->parts[q].seq);
        free(m->parts[q].str);
        free(m->parts[q].site);
    }
    free(m->parts);
    for (uint32_t i = 0; i < m->n_strings; i++) free(m->strings[i]);
    free(m->strings);
    for (uint32_t i = 0; i < m->n_sites; i++) {
        free((char *)m->sites[i].file);
        free((char *)m->sites[i].func);
    }
    free(m->sites);
    free(m->site_keys);
    free(m);
}

static void *grow(void *p, uint64_t n, uint64_t *cap, size_t size) {
    if (n < *cap) return p;
    uint64_t c = *cap ? *cap * 2 : 1024;
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

static int remap_seq(const eng_merger *m, int q, uint64_t v, uint64_t *out) {
    if (!v) { *out = 0; return 0; }
    uint64_t tag = v >> SPLIT_SEQ_SHIFT;
    if (tag) {
        q = (int)tag - 1;
        v &= (1ULL << SPLIT_SEQ_SHIFT) - 1;
    }
    if (q >= m->count || v > m->parts[q].n_seq) return -1;
    *out = m->parts[q].seq[v - 1];
    return 0;
}

static int remap_site(const eng_merger *m, int q, uint32_t v, uint32_t *out) {
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

static int remap_string(const eng_merger *m, int q, int64_t v, int64_t *out) {
    if (v <= (int64_t)m->n0_strings) { *out = v; return 0; }
    if (v - m->n0_strings > m->parts[q].n_str) return -1;
    *out = m->parts[q].str[v - m->n0_strings - 1];
    return 0;
}

static int merge_event(eng_merger *m, int q, cursor *c) {
    engine_event ev;
    if (take(c, &ev, sizeof ev)) return -1;
    part_map *pm = &m->parts[q];
    if (ev.seq != pm->n_seq + 1) return -1;
    if (m->seq + 1 > UINT32_MAX) return -1;   /* the maps hold 32-bit seqs */
    pm->seq = grow(pm->seq, pm->n_seq, &pm->cap_seq, sizeof *pm->seq);
    pm->seq[pm->n_seq++] = (uint32_t)(m->seq + 1);
    if (remap_seq(m, q, ev.link, &ev.link) || remap_site(m, q, ev.site, &ev.site)) return -1;
    int rc = 0;
    switch (ev.kind) {
    case EV_ROLE: case EV_FAULT: case EV_KERNEL_BEGIN: case EV_KERNEL_END:
        rc = remap_string(m, q, ev.value, &ev.value);
        break;
    case EV_NOTE:
        rc = remap_string(m, q, ev.aux, &ev.aux);
        break;
    default:
        break;
    }
    if (rc) return -1;
    if (ev.kind == EV_FAULT && ev.value > (int64_t)m->n0_strings)
        m->fault_text = m->strings[ev.value - m->n0_strings - 1];
    ev.seq = ++m->seq;
    if (m->out.on_event && (m->me < 0 || q == m->me)) m->out.on_event(m->out.ctx, &ev);
    return 0;
}

/* A run of n events of stream q seen as its skeleton's count: numbered,
 * not shown. */
static int merge_count(eng_merger *m, int q, cursor *c) {
    uint32_t n;
    if (take(c, &n, sizeof n) || !n) return -1;
    part_map *pm = &m->parts[q];
    if (m->seq + n > UINT32_MAX) return -1;
    for (uint32_t i = 0; i < n; i++) {
        pm->seq = grow(pm->seq, pm->n_seq, &pm->cap_seq, sizeof *pm->seq);
        pm->seq[pm->n_seq++] = (uint32_t)(++m->seq);
    }
    return 0;
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
    int64_t key;
    if (take(c, &id, sizeof id) || take(c, &line, sizeof line) || take(c, &key, sizeof key))
        return -1;
    char *file = take_text(c), *func = file ? take_text(c) : NULL;
    part_map *pm = &m->parts[q];
    if (!file || !func || id != m->n0_sites + pm->n_site + 1) {
        free(file);
        free(func);
        return -1;
    }
    uint32_t g = 0;
    for (uint32_t i = 0; i < m->n_sites && !g; i++)
        if (m->sites[i].line == line && m->site_keys[i] == key) g = m->n0_sites + i + 1;
    if (g) {
        free(file);
        free(func);
    } else {
        uint32_t cap = m->cap_sites;
        m->sites = grow32(m->sites, m->n_sites, &m->cap_sites, sizeof *m->sites);
        if (m->cap_sites != cap) {
            m->site_keys = realloc(m->site_keys, m->cap_sites * sizeof *m->site_keys);
            if (!m->site_keys) abort();
        }
        m->site_keys[m->n_sites] = key;
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

/* Records of q up to its next segment start or its window's end. */
static int merge_run(eng_merger *m, int q, cursor *c) {
    while (c->at < c->n && !at_tag(c, 'S') && !at_tag(c, 'F'))
        if (merge_record(m, q, c)) return -1;
    return 0;
}

static int peek_segment(const cursor *c, uint64_t *time, uint64_t *key) {
    if (!at_tag(c, 'S') || c->n - c->at < 1 + 2 * sizeof(uint64_t)) return 0;
    memcpy(time, c->p + c->at + 1, sizeof *time);
    memcpy(key, c->p + c->at + 1 + sizeof *time, sizeof *key);
    return 1;
}

static int faulted_here(const cursor *c) {
    return at_tag(c, 'F') && c->n - c->at >= 2 && c->p[c->at + 1];
}

int eng_merger_window(eng_merger *m, const engine_buf *streams, char *err, size_t errlen) {
    if (m->cut) return ENGINE_OK;   /* the run ended at a fault */
    cursor cur[256];
    int bad = -1;
    for (int q = 0; q < m->count; q++) {
        cur[q] = (cursor){streams[q].p, streams[q].n, 0};
        if (merge_run(m, q, &cur[q]) && bad < 0) bad = q;
    }
    while (bad < 0) {
        int best = -1;
        uint64_t bt = 0, bk = 0;
        for (int q = 0; q < m->count; q++) {
            uint64_t t, k;
            if (peek_segment(&cur[q], &t, &k) && (best < 0 || t < bt || (t == bt && k < bk))) {
                best = q;
                bt = t;
                bk = k;
            }
        }
        if (best < 0) break;
        cur[best].at += 1 + 2 * sizeof(uint64_t);
        if (m->out.on_segment) m->out.on_segment(m->out.ctx, bt, bk);
        m->last_time = bt;
        if (merge_run(m, best, &cur[best])) { bad = best; break; }
        if (faulted_here(&cur[best])) {
            m->cut = 1;
            m->cut_time = bt;
            return ENGINE_OK;
        }
    }
    for (int q = 0; q < m->count && bad < 0; q++)
        if (!at_tag(&cur[q], 'F') || cur[q].at + 2 != cur[q].n) bad = q;
    if (bad >= 0) {
        snprintf(err, errlen, "the event stream of process %d is corrupt or out of order", bad);
        return ENGINE_ERR;
    }
    return ENGINE_OK;
}

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
    engine_event end = {.kind = EV_RUN_END, .time = time, .value = outcome};
    end.seq = ++m->seq;
    if (m->out.on_event && m->me <= 0) m->out.on_event(m->out.ctx, &end);
}
