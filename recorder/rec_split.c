/*
 * rec_split.c - a run split over processes, recorded where it runs (trace
 * format 6; engine_split_record says what each process's observer sees).
 *
 * Every process has a writer: process 0 the run folder's (rec_open, then
 * rec_split), the others one without a folder (rec_open_part). Each sees
 * its own events, with the run's seqs, and every declaration. The seqs
 * are cut into groups of chunk_events, the ranges one process's chunks
 * would cover; when a group ends (an event of a later one, or a window
 * whose merged count passed it) the writer hands its events of the group
 * to its worker, which encodes and compresses them as one part frame
 * (process k's is part k; only process 0's carries the declarations),
 * indexes them, and appends the frame and its summary to `done`. After
 * each window the finished parts go to process 0 (the sink), which queues
 * them per process (the assembly) and writes every group whose parts have
 * all come, in part order, as one row of the chunks table. So each process
 * encodes, compresses and indexes its own events; process 0 orders and
 * writes frames, and merges the index parts once at the end
 * (rec_ix_parts.c). A group lost with a process is missing from the trace,
 * which then ends at the groups before it, like a killed recording.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_index.h"
#include "recorder/rec_writer.h"

/* A finished part as it travels: its group's range, the summary of its own
 * events (events 0: none), its frame's length; then the frame. */
typedef struct part_rec {
    uint64_t first_seq, last_seq;
    rec_chunk_row row;
    uint64_t frame_len;
} part_rec;

/* Process 0: per process, the parts handed in and not written yet. */
struct rec_assembly {
    int parts;
    rec_buf *q;               /* [parts] part records, oldest first */
    size_t *head;             /* [parts] where the oldest starts */
};

void rec_split_free(rec_writer *w) {
    rec_assembly *a = w->assembly;
    rec_buf_free(&w->done);
    if (!a) return;
    for (int k = 0; k < a->parts; k++) rec_buf_free(&a->q[k]);
    free(a->q);
    free(a->head);
    free(a);
    w->assembly = NULL;
}

/* ------------------------------------------------------------ parts */

/* The job: encodes, compresses and indexes job_evs as the part job_head. */
static void encode_part(void *arg) {
    rec_writer *w = arg;
    const engine_event *evs = w->job_evs;
    size_t n = w->job_nev;
    int declares = w->part == 0;
    w->raw.len = 0;
    rec_chunk_encode_part(w->codec, &w->job_head, declares ? w->job_decls.p : NULL,
                          declares ? w->job_decls.len : 0, evs, n, &w->raw);
    part_rec pr;
    memset(&pr, 0, sizeof pr);
    pr.first_seq = w->job_head.first_seq;
    pr.last_seq = w->job_head.last_seq;
    pr.row = w->codec->summary;   /* found while encoding */
    pr.row.raw_bytes = w->raw.len;
    if (w->raw.oom || rec_frame_compress_cut(w->cctx, &w->raw, w->codec->stream_at,
                                             w->codec->nstreams, &w->comp)) {
        rec_writer_fail(w, "%s/trace.zst: cannot compress a part (%s)", "out of memory");
        return;
    }
    pr.frame_len = w->comp.len;
    rec_buf_put(&w->done, &pr, sizeof pr);
    rec_buf_put(&w->done, w->comp.p, w->comp.len);
    if (w->done.oom || rec_ix_chunk(w->ix, w->job_decls.p, w->job_decls.len, evs, n, NULL))
        rec_writer_fail(w, "%s: cannot keep a part of the trace or index (%s)", "out of memory");
    if (n && pr.row.last_time > w->max_time) w->max_time = pr.row.last_time;
}

/* Hands over the first n events, those of the group ending at group_last,
 * as the part of seqs up to last (the group's end, or the run's last seq). */
static void hand_part(rec_writer *w, uint64_t last, size_t n) {
    rec_writer_settle(w);
    w->job_head = (rec_part_head){w->group_last - w->chunk_events + 1, last, (uint32_t)w->part,
                                  (uint32_t)w->parts};
    rec_writer_hand_over(w, encode_part, n);
}

void rec_split_settle(rec_writer *w, size_t from) {
    for (size_t i = from; i < w->nev;) {
        if (w->evs[i].seq <= w->group_last) {
            i++;
            continue;
        }
        hand_part(w, w->group_last, i);   /* the events from i on stay, first */
        w->group_last += w->chunk_events;
        i = 0;
    }
}

/* ------------------------------------------------------------ process 0 */

/* Writes the oldest group when every process's part of it has come: 1
 * written, 0 not yet, -1 failed. */
static int write_group(rec_writer *w) {
    rec_assembly *a = w->assembly;
    part_rec first;
    for (int k = 0; k < a->parts; k++) {
        part_rec pr;
        if (a->q[k].len - a->head[k] < sizeof pr) return 0;
        memcpy(&pr, a->q[k].p + a->head[k], sizeof pr);
        if (k == 0) first = pr;
        else if (pr.first_seq != first.first_seq || pr.last_seq != first.last_seq) {
            rec_writer_fail(w, "%s/trace.zst: the processes' parts do not cover the same seqs "
                               "(%s)", "a part is missing");
            return -1;
        }
    }
    rec_chunk_row row;
    memset(&row, 0, sizeof row);
    row.offset = w->offset;
    for (int k = 0; k < a->parts; k++) {
        part_rec pr;
        memcpy(&pr, a->q[k].p + a->head[k], sizeof pr);
        const uint8_t *frame = a->q[k].p + a->head[k] + sizeof pr;
        if (rec_writer_write(w, frame, (size_t)pr.frame_len)) return -1;
        a->head[k] += sizeof pr + (size_t)pr.frame_len;
        row.compressed_bytes += pr.frame_len;
        row.raw_bytes += pr.row.raw_bytes;
        if (!pr.row.events) continue;
        const rec_chunk_row *p = &pr.row;
        if (!row.events) {
            row.first_seq = p->first_seq, row.last_seq = p->last_seq;
            row.first_time = p->first_time, row.last_time = p->last_time;
            row.rank_min = p->rank_min, row.rank_max = p->rank_max;
            row.core_min = p->core_min, row.core_max = p->core_max;
        }
        row.events += p->events;
        row.kind_mask |= p->kind_mask;
#define LOWER(f) if (p->f < row.f) row.f = p->f
#define HIGHER(f) if (p->f > row.f) row.f = p->f
        LOWER(first_seq); HIGHER(last_seq); LOWER(first_time); HIGHER(last_time);
        LOWER(rank_min); HIGHER(rank_max); LOWER(core_min); HIGHER(core_max);
#undef LOWER
#undef HIGHER
    }
    for (int k = 0; k < a->parts; k++) {   /* keep each queue from growing without end */
        if (a->head[k] == a->q[k].len) {
            a->head[k] = a->q[k].len = 0;
        } else if (a->head[k] > a->q[k].len / 2) {
            memmove(a->q[k].p, a->q[k].p + a->head[k], a->q[k].len - a->head[k]);
            a->q[k].len -= a->head[k];
            a->head[k] = 0;
        }
    }
    rec_ix_chunk_row(w->ix, &row);
    __atomic_store_n(&w->events, w->events + row.events, __ATOMIC_RELAXED);   /* the trailer's */
    return 1;
}

static void sink_receive(void *ctx, int from, const uint8_t *p, size_t n) {
    rec_writer *w = ctx;
    rec_assembly *a = w->assembly;
    if (!a || w->failed || from < 0 || from >= a->parts) return;
    rec_buf_put(&a->q[from], p, n);
    if (a->q[from].oom) {
        rec_writer_fail(w, "%s/trace.zst: cannot keep the parts (%s)", "out of memory");
        return;
    }
    while (write_group(w) == 1) {}
}

/* ------------------------------------------------------------ windows */

static void sink_window(void *ctx, uint64_t events, int final, engine_buf *out) {
    rec_writer *w = ctx;
    while (w->group_last <= events) {
        hand_part(w, w->group_last, w->nev);
        w->group_last += w->chunk_events;
    }
    if (final) {
        if (events + w->chunk_events > w->group_last) hand_part(w, events, w->nev);   /* the last, cut */
        w->group_last = UINT64_MAX;
        rec_writer_settle(w);
    }
    /* what the worker finished (it owns done while it runs) */
    if (!final && w->worker && !rec_worker_idle(w->worker)) return;
    engine_buf_put(out, w->done.p, w->done.len);
    w->done.len = 0;
}

engine_split_sink rec_split_sink(rec_writer *w) {
    engine_split_sink s = {w, sink_window, sink_receive};
    return s;
}

/* ------------------------------------------------------------ opening */

static int make_split(rec_writer *w, int part, int parts, char *err, size_t errlen) {
    if (parts < 1 || parts > REC_MAX_PARTS || part < 0 || part >= parts) {
        snprintf(err, errlen, "a split run of %d processes cannot be recorded (1 to %d)", parts,
                 REC_MAX_PARTS);
        return -1;
    }
    w->part = part;
    w->parts = parts;
    w->group_last = w->chunk_events;
    if (part != 0) return 0;
    rec_assembly *a = w->assembly = calloc(1, sizeof *a);
    if (a) {
        a->parts = parts;
        a->q = calloc((size_t)parts, sizeof *a->q);
        a->head = calloc((size_t)parts, sizeof *a->head);
    }
    if (!a || !a->q || !a->head) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int rec_split(rec_writer *w, int parts, char *err, size_t errlen) {
    if (w->nev || w->events) {
        snprintf(err, errlen, "rec_split: the writer has already recorded events");
        return -1;
    }
    return make_split(w, 0, parts, err, errlen);
}

int rec_open_part(const rec_run_info *info, int part, int parts, rec_writer **out, char *err,
                  size_t errlen) {
    *out = NULL;
    rec_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "rec_open_part: out of memory");
        return -1;
    }
    w->fd = -1;
    snprintf(w->dir, sizeof w->dir, "(process %d)", part);
    if (part == 0) {
        snprintf(err, errlen, "rec_open_part: process 0 records into the run folder (rec_split)");
    } else if (!rec_writer_alloc(w, info, err, errlen) && !make_split(w, part, parts, err, errlen)) {
        rec_ix_header(w->ix, &w->header);
        w->worker = rec_worker_start();   /* NULL: parts are encoded in line */
        *out = w;
        return 0;
    }
    rec_writer_free(w);
    return -1;
}

/* ------------------------------------------------------------ the index */

void rec_split_index_pack(rec_writer *w, engine_buf *out) {
    rec_writer_settle(w);
    rec_ix_pack(w->ix, out);
}

int rec_split_index_merge(rec_writer *w, const uint8_t *p, size_t n, char *err, size_t errlen) {
    rec_writer_settle(w);
    if (rec_ix_merge(w->ix, p, n)) {
        snprintf(err, errlen, "%s: another process's part of the index is corrupt", w->dir);
        return -1;
    }
    return 0;
}
