/*
 * rec_group.c - one chunk of a trace as its readers see it: a chunk frame
 * (NPRC), or the part frames (NPRP, format 6) that the processes of a run
 * split over MPI wrote for one range of seqs, each holding its own events.
 * The parts are decoded one after another and merged by seq into the one
 * event array a chunk of a one-process run would have held, their
 * declarations concatenated in part order. The reader (rec_reader.c) and
 * the events table (rec_vtab.c) both decode through here, so a split run's
 * trace reads as one process's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "recorder/rec_internal.h"

int rec_group_init(rec_group *g) {
    memset(g, 0, sizeof *g);
    g->codec = calloc(1, sizeof *g->codec);
    g->dctx = ZSTD_createDCtx();
    return g->codec && g->dctx ? 0 : -1;
}

void rec_group_free(rec_group *g) {
    rec_codec_free(g->codec);
    ZSTD_freeDCtx(g->dctx);
    rec_buf_free(&g->frame);
    rec_buf_free(&g->decls);
    free(g->evs);
    free(g->part);
    free(g->one);
    memset(g, 0, sizeof *g);
}

/* Part k of the group, decoded into g->one (view): its events are appended
 * to g->part and its declarations to g->decls. */
static int take_part(rec_group *g, const rec_chunk_view *view, const rec_part_head *want,
                     uint32_t k, size_t *starts, char *err, size_t errlen) {
    const rec_part_head *h = &view->part;
    if (!h->parts || h->part != k || h->parts != want->parts ||
        h->first_seq != want->first_seq || h->last_seq != want->last_seq) {
        snprintf(err, errlen, "part %u of a group of %u parts is missing or out of place", k,
                 want->parts);
        return -1;
    }
    for (size_t i = 0; i < view->n; i++)
        if (g->one[i].seq < h->first_seq || g->one[i].seq > h->last_seq ||
            (i && g->one[i].seq <= g->one[i - 1].seq)) {
            snprintf(err, errlen, "part %u holds seq %llu outside its range or out of order", k,
                     (unsigned long long)g->one[i].seq);
            return -1;
        }
    starts[k] = g->npart;
    if (rec_grow_events(&g->part, &g->part_cap, g->npart + view->n)) {
        snprintf(err, errlen, "out of memory decoding a group");
        return -1;
    }
    memcpy(g->part + g->npart, g->one, view->n * sizeof *g->one);
    g->npart += view->n;
    rec_buf_put(&g->decls, view->decls, view->decl_len);
    return 0;
}

/* The parts' events (each in seq order) merged into g->evs. */
static int merge_parts(rec_group *g, const size_t *starts, uint32_t parts, char *err,
                       size_t errlen) {
    size_t at[REC_MAX_PARTS + 1];
    for (uint32_t k = 0; k < parts; k++) at[k] = starts[k];
    if (rec_grow_events(&g->evs, &g->cap, g->npart)) {
        snprintf(err, errlen, "out of memory decoding a group");
        return -1;
    }
    for (size_t i = 0; i < g->npart; i++) {
        uint32_t best = parts;
        for (uint32_t k = 0; k < parts; k++) {
            size_t end = k + 1 < parts ? starts[k + 1] : g->npart;
            if (at[k] < end && (best == parts || g->part[at[k]].seq < g->part[at[best]].seq))
                best = k;
        }
        g->evs[i] = g->part[at[best]++];
    }
    g->n = g->npart;
    return 0;
}

int rec_group_decode(rec_group *g, const uint8_t *first, size_t first_len, const rec_trace *t,
                     uint64_t next, uint64_t *more, char *err, size_t errlen) {
    *more = 0;
    g->decls.len = 0;
    g->decls.oom = 0;
    g->npart = 0;
    g->n = 0;
    g->raw_bytes = first_len;
    rec_chunk_view view;
    if (rec_chunk_decode(g->codec, first, first_len, &view, &g->one, &g->one_cap, err, errlen))
        return -1;
    if (!view.part.parts) {   /* a whole chunk: its events are the group's */
        engine_event *e = g->evs;
        size_t c = g->cap;
        g->evs = g->one;
        g->cap = g->one_cap;
        g->one = e;
        g->one_cap = c;
        g->n = view.n;
        rec_buf_put(&g->decls, view.decls, view.decl_len);
        return g->decls.oom ? -1 : 0;
    }
    rec_part_head head = view.part;
    size_t starts[REC_MAX_PARTS];
    if (take_part(g, &view, &head, 0, starts, err, errlen)) return -1;
    for (uint32_t k = 1; k < head.parts; k++) {
        uint64_t len;
        if (rec_trace_frame(t, next, &len) != 1) {
            snprintf(err, errlen, "the trace ends before part %u of %u", k, head.parts);
            return -1;
        }
        if (rec_frame_decompress(g->dctx, t->base + next, (size_t)len, &g->frame, err, errlen) ||
            rec_chunk_decode(g->codec, g->frame.p, g->frame.len, &view, &g->one, &g->one_cap, err,
                             errlen) ||
            take_part(g, &view, &head, k, starts, err, errlen))
            return -1;
        g->raw_bytes += g->frame.len;
        next += len;
        *more += len;
    }
    if (g->decls.oom) {
        snprintf(err, errlen, "out of memory decoding a group");
        return -1;
    }
    return merge_parts(g, starts, head.parts, err, errlen);
}
