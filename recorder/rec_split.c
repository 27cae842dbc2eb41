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
 * writes frames. A part also carries its process's waits (rec_ix_parts.c):
 * the begin seqs of those begun in it and the rows of those that ended.
 * Writing a group, process 0 numbers the waits begun in it in begin order
 * over every process, as one process would, and writes the ended rows into
 * index.db.tmp with those numbers; the waits still open at the end and the
 * small tables are merged once after the run. A group lost with a process
 * is missing from the trace, which then ends at the groups before it, like
 * a killed recording.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_index.h"
#include "recorder/rec_writer.h"

/* A finished part as it travels: its group's range, the summary of its own
 * events (events 0: none), its frame's length, its waits' begins and
 * ended rows; then the frame, the begins (u64 seqs) and the rows
 * (ix_wait). */
typedef struct part_rec {
    uint64_t first_seq, last_seq;
    rec_chunk_row row;
    uint64_t frame_len, begins, rows;
} part_rec;

/* Process 0: per process, the parts handed in and not written yet, and
 * the run's id of each of its waits. */
struct rec_assembly {
    int parts;
    rec_buf *q;               /* [parts] part records, oldest first */
    size_t *head;             /* [parts] where the oldest starts */
    uint32_t **ids;           /* [parts] a process's wait id - 1 -> the run's */
    size_t *nids, *cap_ids;
    uint64_t last_id;         /* the run's last wait id given */
    ix_wait *rows;            /* numbered rows short of a batch (rec_ix_db_put_waits) */
    size_t nrows, cap_rows;
    int own_numbered;         /* process 0's own open waits have the run's ids */
};

void rec_split_free(rec_writer *w) {
    rec_assembly *a = w->assembly;
    rec_buf_free(&w->done);
    rec_buf_free(&w->ix_begins);
    rec_buf_free(&w->ix_rows);
    if (!a) return;
    for (int k = 0; k < a->parts; k++) {
        rec_buf_free(&a->q[k]);
        if (a->ids) free(a->ids[k]);
    }
    free(a->q);
    free(a->head);
    free(a->ids);
    free(a->nids);
    free(a->cap_ids);
    free(a->rows);
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
    w->ix_begins.len = w->ix_rows.len = 0;
    if (rec_ix_chunk(w->ix, w->job_decls.p, w->job_decls.len, evs, n, NULL) == 0)
        rec_ix_take_part(w->ix, &w->ix_begins, &w->ix_rows);
    pr.frame_len = w->comp.len;
    pr.begins = w->ix_begins.len / sizeof(uint64_t);
    pr.rows = w->ix_rows.len / sizeof(ix_wait);
    rec_buf_put(&w->done, &pr, sizeof pr);
    rec_buf_put(&w->done, w->comp.p, w->comp.len);
    rec_buf_put(&w->done, w->ix_begins.p, w->ix_begins.len);
    rec_buf_put(&w->done, w->ix_rows.p, w->ix_rows.len);
    if (w->done.oom || w->ix->oom || w->ix_begins.oom || w->ix_rows.oom)
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

static size_t part_bytes(const part_rec *pr) {
    return sizeof *pr + (size_t)pr->frame_len + (size_t)pr->begins * sizeof(uint64_t) +
           (size_t)pr->rows * sizeof(ix_wait);
}

/* Whether the whole part whose record is pr is among the avail bytes
 * (each length checked on its own: they come from another process). */
static int part_here(const part_rec *pr, size_t avail) {
    if (avail < sizeof *pr) return 0;
    avail -= sizeof *pr;
    if (pr->frame_len > avail) return 0;
    avail -= (size_t)pr->frame_len;
    if (pr->begins > avail / sizeof(uint64_t)) return 0;
    avail -= (size_t)pr->begins * sizeof(uint64_t);
    return pr->rows <= avail / sizeof(ix_wait);
}

static uint64_t load_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The run's id of process k's wait local (0: none given). */
static uint64_t run_id(const rec_assembly *a, int k, uint64_t local) {
    return local >= 1 && local <= a->nids[k] ? a->ids[k][local - 1] : 0;
}

typedef struct id_ctx {
    const rec_assembly *a;
    int k;
} id_ctx;

static uint64_t id_of(void *ctx, uint64_t local) {
    const id_ctx *c = ctx;
    return run_id(c->a, c->k, local);
}

/* The numbered rows into index.db.tmp, whole batches (all with final);
 * the rest wait for the next group's. */
static int put_rows(rec_writer *w, int final) {
    rec_assembly *a = w->assembly;
    size_t done = 0;
    char err[300];
    if (!a->nrows) return 0;   /* rows may be NULL yet */
    if (rec_ix_db_put_waits(w->ix, a->rows, a->nrows, &done, final, err, sizeof err)) {
        rec_writer_fail(w, "%s/index.db: %s", err);
        return -1;
    }
    if (done && done < a->nrows)
        memmove(a->rows, a->rows + done, (a->nrows - done) * sizeof *a->rows);
    a->nrows -= done;
    return 0;
}

/* The group's waits: those begun in it numbered in begin order over every
 * process (one process's builder numbers them so), then the ended rows,
 * by run id (each process's are in id order), into index.db.tmp. begins[k]
 * and rows[k] point into the queues. 0, or -1 failed. */
static int number_waits(rec_writer *w, const uint8_t *const *begins, const uint64_t *nbegins,
                        const uint8_t *const *rows, const uint64_t *nrows) {
    rec_assembly *a = w->assembly;
    size_t at[REC_MAX_PARTS] = {0};
    for (;;) {
        int best = -1;
        uint64_t bs = 0;
        for (int k = 0; k < a->parts; k++) {
            if (at[k] == nbegins[k]) continue;
            uint64_t s = load_u64(begins[k] + at[k] * sizeof(uint64_t));
            if (best < 0 || s < bs) best = k, bs = s;
        }
        if (best < 0) break;
        at[best]++;
        void *ids = a->ids[best];
        int grown = rec_grow(&ids, &a->cap_ids[best], a->nids[best] + 1, sizeof **a->ids);
        a->ids[best] = ids;
        if (a->last_id == UINT32_MAX || grown) {
            rec_writer_fail(w, "%s/index.db: cannot number the waits (%s)", "out of memory");
            return -1;
        }
        a->ids[best][a->nids[best]++] = (uint32_t)++a->last_id;
    }
    memset(at, 0, sizeof at);
    for (;;) {
        int best = -1;
        uint64_t bid = 0;
        for (int k = 0; k < a->parts; k++) {
            if (at[k] == nrows[k]) continue;
            uint64_t id = run_id(a, k, load_u64(rows[k] + at[k] * sizeof(ix_wait) +
                                                offsetof(ix_wait, id)));
            if (!id) {
                rec_writer_fail(w, "%s/index.db: a part's waits are corrupt (%s)",
                                "a row of a wait that never began");
                return -1;
            }
            if (best < 0 || id < bid) best = k, bid = id;
        }
        if (best < 0) break;
        void *all = a->rows;
        int grown = rec_grow(&all, &a->cap_rows, a->nrows + 1, sizeof *a->rows);
        a->rows = all;
        if (grown) {
            rec_writer_fail(w, "%s/index.db: cannot keep the waits (%s)", "out of memory");
            return -1;
        }
        ix_wait *r = &a->rows[a->nrows++];
        memcpy(r, rows[best] + at[best]++ * sizeof *r, sizeof *r);
        r->id = bid;
    }
    return put_rows(w, 0);
}

/* Writes the oldest group when every process's part of it has come: 1
 * written, 0 not yet, -1 failed. */
static int write_group(rec_writer *w) {
    rec_assembly *a = w->assembly;
    part_rec first;
    for (int k = 0; k < a->parts; k++) {
        part_rec pr;
        if (a->q[k].len - a->head[k] < sizeof pr) return 0;
        memcpy(&pr, a->q[k].p + a->head[k], sizeof pr);
        if (!part_here(&pr, a->q[k].len - a->head[k])) return 0;
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
    const uint8_t *begins[REC_MAX_PARTS], *rows[REC_MAX_PARTS];
    uint64_t nbegins[REC_MAX_PARTS], nrows[REC_MAX_PARTS];
    for (int k = 0; k < a->parts; k++) {
        part_rec pr;
        memcpy(&pr, a->q[k].p + a->head[k], sizeof pr);
        const uint8_t *frame = a->q[k].p + a->head[k] + sizeof pr;
        if (rec_writer_write(w, frame, (size_t)pr.frame_len)) return -1;
        begins[k] = frame + pr.frame_len;
        nbegins[k] = pr.begins;
        rows[k] = begins[k] + pr.begins * sizeof(uint64_t);
        nrows[k] = pr.rows;
        a->head[k] += part_bytes(&pr);
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
    if (number_waits(w, begins, nbegins, rows, nrows)) return -1;
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
        a->ids = calloc((size_t)parts, sizeof *a->ids);
        a->nids = calloc((size_t)parts, sizeof *a->nids);
        a->cap_ids = calloc((size_t)parts, sizeof *a->cap_ids);
    }
    if (!a || !a->q || !a->head || !a->ids || !a->nids || !a->cap_ids) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int rec_split(rec_writer *w, int parts, int here, char *err, size_t errlen) {
    if (w->nev || w->events) {
        snprintf(err, errlen, "rec_split: the writer has already recorded events");
        return -1;
    }
    if (w->worker && !rec_worker_has_cpu(here)) {   /* no job was handed to it yet */
        rec_worker_stop(w->worker);
        w->worker = NULL;
    }
    return make_split(w, 0, parts, err, errlen);
}

int rec_open_part(const rec_run_info *info, int part, int parts, int here, rec_writer **out,
                  char *err, size_t errlen) {
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
        w->worker = rec_worker_start_if_cpu(here);   /* NULL: parts are encoded in line */
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

/* Process 0's own open waits get the run's ids (once: before the others'
 * are merged in, or at close when they never came). */
static void number_own(rec_writer *w) {
    rec_assembly *a = w->assembly;
    if (!a || a->own_numbered) return;
    a->own_numbered = 1;
    id_ctx c = {a, 0};
    rec_ix_renumber(w->ix, id_of, &c);
}

int rec_split_index_merge(rec_writer *w, int part, const uint8_t *p, size_t n, char *err,
                          size_t errlen) {
    rec_writer_settle(w);
    rec_assembly *a = w->assembly;
    if (!a || part < 1 || part >= a->parts) {
        snprintf(err, errlen, "%s: no part %d of the index to merge", w->dir, part);
        return -1;
    }
    number_own(w);
    id_ctx c = {a, part};
    if (rec_ix_merge(w->ix, p, n, id_of, &c)) {
        snprintf(err, errlen, "%s: another process's part of the index is corrupt", w->dir);
        return -1;
    }
    return 0;
}

void rec_split_index_close(rec_writer *w) {
    if (!w->assembly) return;
    number_own(w);
    if (!w->failed) put_rows(w, 1);
}
