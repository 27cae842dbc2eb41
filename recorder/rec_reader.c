/*
 * rec_reader.c - reads trace.zst back: header, chunks, events, trailer.
 *
 * The trace is mapped and walked frame by frame; each chunk frame is
 * decompressed and decoded into an event array that rec_reader_next hands
 * out one by one. The reader is also what makes a damaged trace useful: a
 * file that ends inside a frame (the recorder was killed mid-chunk) or
 * without its trailer yields every event of the complete chunks, then -1
 * with rec_reader_truncated set and rec_reader_complete_seq saying how far
 * the trace is complete. reindex uses the chunk-level call rec_reader_chunk
 * to see the declarations and the chunk summary too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "recorder/rec_internal.h"

struct rec_reader {
    rec_trace t;
    ZSTD_DCtx *dctx;
    rec_buf frame;
    rec_group g;              /* the chunk handed out: g.evs */
    size_t n, pos;
    rec_kv header, trailer;
    uint64_t off, complete_seq, chunks, events;
    int truncated, ended, failed;
    char path[4200];
    char errmsg[4600];
    char **strings;
    size_t nstrings;
    /* Declared objects and sites by id (replay compares them with its own). */
    engine_object *objects;
    size_t nobjects;
    rec_site_decl *sites;
    size_t nsites;
};

static void reader_string(void *ctx, uint32_t id, const char *text, size_t len) {
    rec_reader *r = ctx;
    if (id >= r->nstrings) {
        size_t cap = r->nstrings ? r->nstrings : 64;
        while (cap <= id) cap *= 2;
        char **s = realloc(r->strings, cap * sizeof *s);
        if (!s) return;
        memset(s + r->nstrings, 0, (cap - r->nstrings) * sizeof *s);
        r->strings = s;
        r->nstrings = cap;
    }
    free(r->strings[id]);
    r->strings[id] = malloc(len + 1);
    if (r->strings[id]) {
        memcpy(r->strings[id], text, len);
        r->strings[id][len] = 0;
    }
}

/* Grows *arr (elem bytes each, *n of them) to hold index id. */
static int grow(void **arr, size_t *n, size_t elem, uint32_t id) {
    if (id < *n) return 0;
    size_t cap = *n ? *n : 64;
    while (cap <= id) cap *= 2;
    void *p = realloc(*arr, cap * elem);
    if (!p) return -1;
    memset((char *)p + *n * elem, 0, (cap - *n) * elem);
    *arr = p;
    *n = cap;
    return 0;
}

static void reader_object(void *ctx, const engine_object *o) {
    rec_reader *r = ctx;
    if (grow((void **)&r->objects, &r->nobjects, sizeof *r->objects, o->id) == 0)
        r->objects[o->id] = *o;
}

static void reader_site(void *ctx, uint32_t id, int line, const char *file, size_t file_len,
                        const char *func, size_t func_len) {
    rec_reader *r = ctx;
    if (grow((void **)&r->sites, &r->nsites, sizeof *r->sites, id)) return;
    rec_site_decl *s = &r->sites[id];
    s->declared = 1;
    s->line = line;
    snprintf(s->file, sizeof s->file, "%.*s", (int)file_len, file);
    snprintf(s->func, sizeof s->func, "%.*s", (int)func_len, func);
}

static int fail(rec_reader *r, int truncated, const char *msg) {
    r->failed = 1;
    r->truncated = truncated;
    /* A message cut at sizeof errmsg is still the right message. */
    if (snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", r->path, msg) < 0) r->errmsg[0] = 0;
    return -1;
}

/* Decompresses the frame at r->off into r->frame and advances. */
static int next_frame(rec_reader *r) {
    uint64_t len;
    int k = rec_trace_frame(&r->t, r->off, &len);
    char msg[512];
    if (k == 0) {
        snprintf(msg, sizeof msg,
                 "truncated: the trace ends after %llu complete chunk%s without its trailer; "
                 "complete up to seq %llu",
                 (unsigned long long)r->chunks, r->chunks == 1 ? "" : "s",
                 (unsigned long long)r->complete_seq);
        return fail(r, 1, msg);
    }
    if (k < 0) {
        snprintf(msg, sizeof msg,
                 "truncated: the trace ends inside a frame at byte %llu of %llu; "
                 "complete up to seq %llu (%llu complete chunk%s)",
                 (unsigned long long)r->off, (unsigned long long)r->t.size,
                 (unsigned long long)r->complete_seq, (unsigned long long)r->chunks,
                 r->chunks == 1 ? "" : "s");
        return fail(r, 1, msg);
    }
    char derr[256];
    if (rec_frame_decompress(r->dctx, r->t.base + r->off, (size_t)len, &r->frame, derr,
                             sizeof derr)) {
        snprintf(msg, sizeof msg, "corrupt frame at byte %llu: %s", (unsigned long long)r->off,
                 derr);
        return fail(r, 0, msg);
    }
    r->off += len;
    return 0;
}

int rec_reader_open(const char *run_dir, rec_reader **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat st;
    if (stat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: no such run directory", run_dir);
        return -1;
    }
    rec_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->dctx = ZSTD_createDCtx()) || rec_group_init(&r->g)) {
        snprintf(err, errlen, "rec_reader_open: out of memory");
        rec_reader_close(r);
        return -1;
    }
    r->t.fd = -1;
    if (rec_path(r->path, sizeof r->path, run_dir, "trace.zst")) {
        snprintf(err, errlen, "%s: path too long", run_dir);
        rec_reader_close(r);
        return -1;
    }
    if (stat(r->path, &st) != 0) {
        snprintf(err, errlen, "%s is not an npurr run: %s is missing", run_dir, r->path);
        rec_reader_close(r);
        return -1;
    }
    if (rec_trace_map(r->path, &r->t, err, errlen)) {
        rec_reader_close(r);
        return -1;
    }
    if (next_frame(r) || r->frame.len < 4 || memcmp(r->frame.p, REC_TAG_HEADER, 4) != 0) {
        snprintf(err, errlen, "%s is not an npurr run: %s does not start with an npurr header frame",
                 run_dir, r->path);
        rec_reader_close(r);
        return -1;
    }
    rec_cur c = {r->frame.p + 4, r->frame.p + r->frame.len, 0};
    uint64_t version = rec_cur_varint(&c);
    if (c.bad || version < REC_FORMAT_OLDEST || version > REC_FORMAT_VERSION) {
        snprintf(err, errlen, "%s: trace format version %llu is not supported (this npurr reads "
                 "%d to %d)", r->path, (unsigned long long)version, REC_FORMAT_OLDEST,
                 REC_FORMAT_VERSION);
        rec_reader_close(r);
        return -1;
    }
    if (rec_kv_decode(&r->header, &c)) {
        snprintf(err, errlen, "%s: the header frame is corrupt", r->path);
        rec_reader_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

/* Seqs are dense from 1: every chunk must continue exactly where the
 * previous one ended. A gap is a lost chunk, a step back a duplicated or
 * reordered one; either way the events are not the run's, so the reader
 * stops there and says which seqs are at fault. */
static int check_seqs(rec_reader *r, uint64_t start, size_t n) {
    if (!n) return 0;
    const engine_event *evs = r->g.evs;
    uint64_t want = r->complete_seq + 1, first = evs[0].seq;
    char msg[400];
    if (first > want) {
        snprintf(msg, sizeof msg,
                 "the chunk at byte %llu starts at seq %llu but the trace so far ends at seq "
                 "%llu: events %llu..%llu are missing here (a chunk was lost, or chunks are out of "
                 "order)",
                 (unsigned long long)start, (unsigned long long)first,
                 (unsigned long long)want - 1, (unsigned long long)want,
                 (unsigned long long)first - 1);
        return fail(r, 0, msg);
    }
    if (first < want) {
        snprintf(msg, sizeof msg,
                 "the chunk at byte %llu starts at seq %llu, which the trace already had (it "
                 "ends at seq %llu): chunks are duplicated or out of order",
                 (unsigned long long)start, (unsigned long long)first,
                 (unsigned long long)want - 1);
        return fail(r, 0, msg);
    }
    for (size_t i = 1; i < n; i++)
        if (evs[i].seq != evs[i - 1].seq + 1) {
            snprintf(msg, sizeof msg, "the chunk at byte %llu jumps from seq %llu to %llu",
                     (unsigned long long)start, (unsigned long long)evs[i - 1].seq,
                     (unsigned long long)evs[i].seq);
            return fail(r, 0, msg);
        }
    return 0;
}

int rec_reader_chunk(rec_reader *r, rec_chunk_view *view, const engine_event **evs,
                     rec_chunk_row *row) {
    if (r->failed) return -1;
    if (r->ended) return 0;
    uint64_t start = r->off;
    if (next_frame(r)) return -1;
    if (r->frame.len >= 4 && memcmp(r->frame.p, REC_TAG_TRAILER, 4) == 0) {
        rec_cur c = {r->frame.p + 4, r->frame.p + r->frame.len, 0};
        if (rec_kv_decode(&r->trailer, &c)) return fail(r, 0, "the trailer frame is corrupt");
        if (r->off != r->t.size) return fail(r, 0, "unexpected data after the trailer frame");
        const char *said = rec_kv_get(&r->trailer, "events");
        if (!said || strtoull(said, NULL, 10) != r->events) {
            char msg[300];
            unsigned long long n = said ? strtoull(said, NULL, 10) : 0;
            snprintf(msg, sizeof msg,
                     "the trailer says the run had %s events but the chunks hold %llu%s",
                     said ? said : "(no count of)", (unsigned long long)r->events,
                     said && n > r->events ? ": the chunks holding the rest are missing" : "");
            return fail(r, 0, msg);
        }
        r->ended = 1;
        return 0;
    }
    char derr[512];
    uint64_t more;
    if (rec_group_decode(&r->g, r->frame.p, r->frame.len, &r->t, r->off, &more, derr,
                         sizeof derr)) {
        char msg[700];
        snprintf(msg, sizeof msg, "chunk frame at byte %llu: %s", (unsigned long long)start,
                 derr);
        return fail(r, 0, msg);
    }
    r->off += more;
    view->decls = r->g.decls.p;
    view->decl_len = r->g.decls.len;
    view->n = r->g.n;
    memset(&view->part, 0, sizeof view->part);
    rec_decl_sink sink = {r, reader_string, reader_site, reader_object};
    if (rec_decl_decode(view->decls, view->decl_len, &sink)) {
        char msg[128];
        snprintf(msg, sizeof msg, "corrupt declarations in the chunk at byte %llu",
                 (unsigned long long)start);
        return fail(r, 0, msg);
    }
    if (check_seqs(r, start, view->n)) return -1;
    rec_chunk_summarize(r->g.evs, view->n, row);
    row->offset = start;
    row->compressed_bytes = r->off - start;
    row->raw_bytes = r->g.raw_bytes;
    *evs = r->g.evs;
    r->chunks++;
    r->events += view->n;
    if (view->n) r->complete_seq = r->g.evs[view->n - 1].seq;
    return 1;
}

int rec_reader_next(rec_reader *r, engine_event *ev) {
    while (r->pos >= r->n) {
        rec_chunk_view view;
        const engine_event *evs;
        rec_chunk_row row;
        int k = rec_reader_chunk(r, &view, &evs, &row);
        if (k <= 0) return k;
        r->n = view.n;
        r->pos = 0;
    }
    *ev = r->g.evs[r->pos++];
    return 1;
}

const char *rec_reader_meta(rec_reader *r, const char *key) {
    const char *v = rec_kv_get(&r->header, key);
    return v ? v : rec_kv_get(&r->trailer, key);
}

const char *rec_reader_meta_at(rec_reader *r, size_t i, const char **value) {
    if (i >= r->header.n) {
        *value = NULL;
        return NULL;
    }
    *value = r->header.values[i];
    return r->header.keys[i];
}

const rec_kv *rec_reader_header(const rec_reader *r) { return &r->header; }
const rec_kv *rec_reader_trailer(const rec_reader *r) { return &r->trailer; }
uint64_t rec_reader_size(const rec_reader *r) { return r->t.size; }
uint64_t rec_reader_events(const rec_reader *r) { return r->events; }

int rec_reader_truncated(const rec_reader *r) { return r->truncated; }
uint64_t rec_reader_complete_seq(const rec_reader *r) { return r->complete_seq; }
const char *rec_reader_error(const rec_reader *r) { return r->failed ? r->errmsg : ""; }

const char *rec_reader_string(rec_reader *r, uint32_t id) {
    return id < r->nstrings ? r->strings[id] : NULL;
}

const engine_object *rec_reader_object(rec_reader *r, uint32_t id) {
    return id && id < r->nobjects && r->objects[id].id == id ? &r->objects[id] : NULL;
}

const rec_site_decl *rec_reader_site(rec_reader *r, uint32_t id) {
    return id < r->nsites && r->sites[id].declared ? &r->sites[id] : NULL;
}

uint32_t rec_reader_decl_bound(const rec_reader *r) {
    size_t n = r->nstrings > r->nobjects ? r->nstrings : r->nobjects;
    if (r->nsites > n) n = r->nsites;
    return (uint32_t)n;
}

void rec_reader_close(rec_reader *r) {
    if (!r) return;
    if (r->t.fd >= 0 || r->t.base) rec_trace_unmap(&r->t);
    ZSTD_freeDCtx(r->dctx);
    rec_buf_free(&r->frame);
    rec_group_free(&r->g);
    rec_kv_free(&r->header);
    rec_kv_free(&r->trailer);
    for (size_t i = 0; i < r->nstrings; i++) free(r->strings[i]);
    free(r->strings);
    free(r->objects);
    free(r->sites);
    free(r);
}

int rec_reader_header_matches(rec_reader *r, const rec_run_info *info, char *what, size_t len) {
    rec_kv mine = {0};
    char err[256];
    if (rec_meta_from_info(&mine, info, err, sizeof err)) {
        snprintf(what, len, "%s", err);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < mine.n && !rc; i++) {
        /* how the trace was written, not what ran: an older format replays */
        if (!strcmp(mine.keys[i], "npurr_version") || !strcmp(mine.keys[i], "format_version"))
            continue;
        const char *rec = rec_kv_get(&r->header, mine.keys[i]);
        /* a timing parameter added after the recording: the replay set it
         * as that engine behaved (rec_meta_config.c), or warns it could not;
         * a kernel option added since: the run had its default */
        if (!rec && (!strncmp(mine.keys[i], "hw.", 3) || !strncmp(mine.keys[i], "opt.", 4)))
            continue;
        /* a run from before the typed keys has none of the newer ones */
        if (!rec && !rec_kv_get(&r->header, "spec_version")) continue;
        if (!rec || strcmp(rec, mine.values[i]) != 0) {
            snprintf(what, len, "header %s: recorded '%s', the replayed run has '%s'",
                     mine.keys[i], rec ? rec : "(missing)", mine.values[i]);
            rc = -1;
        }
    }
    rec_kv_free(&mine);
    return rc;
}
