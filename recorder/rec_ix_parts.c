/*
 * rec_ix_parts.c - the index of a run split over processes and recorded
 * where it runs: each process's builder sees only its own events (with the
 * run's seqs) and every declaration, so its waits, tracks, roles and counts
 * are its own nodes'.
 *
 * The waits travel with the parts (rec_ix_take_part): each part carries the
 * begin seqs of the waits its process began in it, and the rows of those
 * that ended, which then leave the process's memory (as the live recorder's
 * do once written: EP64 has 0.7 GB of them). Process 0 numbers them as one
 * process would, in begin order over every process (rec_split.c), and
 * writes them while the run goes on. After the run each packs the rest
 * (rec_ix_pack: the waits still open, tracks, roles, counts) and process 0
 * merges them into its own (rec_ix_merge): waits by begin seq, tracks and
 * roles side by side (every core is one process's), counts summed. The
 * chunks table is process 0's alone: it writes every group (rec_split.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_index.h"

static void put_u64(engine_buf *b, uint64_t v) { engine_buf_put(b, &v, sizeof v); }

void rec_ix_pack(const rec_index *ix, engine_buf *out) {
    put_u64(out, ix->nwaits);
    engine_buf_put(out, ix->waits, ix->nwaits * sizeof *ix->waits);
    put_u64(out, ix->ntracks);
    engine_buf_put(out, ix->track_seen, ix->ntracks);
    put_u64(out, ix->ncores);
    engine_buf_put(out, ix->core_role, ix->ncores * sizeof *ix->core_role);
    engine_buf_put(out, ix->kind_count, sizeof ix->kind_count);
    put_u64(out, ix->events);
    put_u64(out, ix->xfer_bytes);
    put_u64(out, ix->max_time);
    put_u64(out, ix->last_seq);
}

void rec_ix_take_part(rec_index *ix, rec_buf *begins, rec_buf *rows) {
    /* the waits begun since the last part are the array's last, in id order */
    size_t first = ix->nwaits;
    while (first && ix->waits[first - 1].id > ix->begins_taken) first--;
    for (size_t i = first; i < ix->nwaits; i++)
        rec_buf_put(begins, &ix->waits[i].begin_seq, sizeof ix->waits[i].begin_seq);
    ix->begins_taken = ix->wait_ids;
    if (!ix->nended_waits) return;
    for (size_t k = 0; k < ix->nended_waits; k++) ix->waits[ix->ended_waits[k]].written = 1;
    for (size_t i = 0; i < ix->nwaits; i++)   /* in id order, as process 0 merges them */
        if (ix->waits[i].written) rec_buf_put(rows, &ix->waits[i], sizeof ix->waits[i]);
    if (rec_ix_drop_marked(ix)) ix->oom = 1;
}

typedef struct cur {
    const uint8_t *p;
    size_t n, at;
} cur;

static const void *take(cur *c, size_t n) {
    if (c->n - c->at < n) return NULL;
    const void *p = c->p + c->at;
    c->at += n;
    return p;
}

static int take_u64(cur *c, uint64_t *v) {
    const void *p = take(c, sizeof *v);
    if (!p) return -1;
    memcpy(v, p, sizeof *v);
    return 0;
}

/* Grows a by-id byte array to n entries (new ones zero). */
static int widen(void **arr, size_t *have, size_t n, size_t elem) {
    if (n <= *have) return 0;
    void *p = realloc(*arr, n * elem);
    if (!p) return -1;
    memset((char *)p + *have * elem, 0, (n - *have) * elem);
    *arr = p;
    *have = n;
    return 0;
}

void rec_ix_renumber(rec_index *ix, rec_ix_id_fn id_of, void *ctx) {
    for (size_t i = 0; i < ix->nwaits; i++) {
        uint64_t id = id_of(ctx, ix->waits[i].id);
        ix->waits[i].id = id;
        ix->waits[i].written = id == 0;
    }
    if (rec_ix_drop_marked(ix)) ix->oom = 1;
}

/* ix's waits and the incoming ones, both by begin seq (so by run id),
 * merged in place: from the back, into ix's array grown to hold both. */
static int merge_waits(rec_index *ix, const ix_wait *in, size_t n) {
    size_t had = ix->nwaits, total = had + n;
    if (total > ix->cap_waits) {
        ix_wait *p = realloc(ix->waits, (total ? total : 1) * sizeof *p);
        if (!p) return -1;
        ix->waits = p;
        ix->cap_waits = total;
    }
    ix_wait *all = ix->waits;
    size_t a = had, b = n, k = total;
    while (b) {
        int mine = a && all[a - 1].begin_seq > in[b - 1].begin_seq;
        all[--k] = mine ? all[--a] : in[--b];
    }
    ix->nwaits = total;
    /* rows moved: the ended list is rebuilt, in row order (rec_db.c sorts) */
    ix->nended_waits = 0;
    for (size_t i = 0; i < total; i++)
        if (all[i].end_seq)
            rec_ix_push_ended(ix, &ix->ended_waits, &ix->nended_waits, &ix->cap_ended_waits, i);
    /* no track's wait is open any more: the run is over */
    if (ix->open_wait) memset(ix->open_wait, 0, ix->nopen * sizeof *ix->open_wait);
    return ix->oom ? -1 : 0;
}

int rec_ix_merge(rec_index *ix, const uint8_t *p, size_t len, rec_ix_id_fn id_of, void *ctx) {
    cur c = {p, len, 0};
    uint64_t nw, nt, nc, events, bytes, max_time, last_seq;
    const uint8_t *waits;
    const uint8_t *seen;
    const uint32_t *roles;
    const uint64_t *kinds;
    if (take_u64(&c, &nw) || nw > len / sizeof(ix_wait) ||
        !(waits = take(&c, nw * sizeof(ix_wait))) || take_u64(&c, &nt) || nt > len ||
        !(seen = take(&c, nt)) || take_u64(&c, &nc) || nc > len / sizeof *roles ||
        !(roles = take(&c, nc * sizeof *roles)) ||
        !(kinds = take(&c, sizeof ix->kind_count)) || take_u64(&c, &events) ||
        take_u64(&c, &bytes) || take_u64(&c, &max_time) || take_u64(&c, &last_seq) ||
        c.at != c.n)
        return -1;
    /* the waits still open when the run ended: few, copied to get the run's
     * ids (a wait without one began in a group that was never written) */
    ix_wait *in = malloc((nw ? nw : 1) * sizeof *in);
    if (!in) return -1;
    size_t n = 0;
    for (uint64_t i = 0; i < nw; i++) {
        memcpy(&in[n], waits + i * sizeof *in, sizeof *in);
        in[n].id = id_of(ctx, in[n].id);
        if (in[n].id) n++;
    }
    int rc = merge_waits(ix, in, n);
    free(in);
    if (rc || widen((void **)&ix->track_seen, &ix->ntracks, nt, 1) ||
        widen((void **)&ix->core_role, &ix->ncores, nc, sizeof *ix->core_role))
        return -1;
    for (size_t t = 0; t < nt; t++) ix->track_seen[t] |= seen[t];
    for (size_t k = 0; k < nc; k++) {
        uint32_t r;
        memcpy(&r, (const uint8_t *)roles + k * sizeof r, sizeof r);
        if (r) ix->core_role[k] = r;
    }
    for (int k = 0; k < 64; k++) {
        uint64_t v;
        memcpy(&v, (const uint8_t *)kinds + (size_t)k * sizeof v, sizeof v);
        ix->kind_count[k] += v;
    }
    ix->events += events;
    ix->xfer_bytes += bytes;
    if (max_time > ix->max_time) ix->max_time = max_time;
    if (last_seq > ix->last_seq) ix->last_seq = last_seq;
    return 0;
}

void rec_ix_chunk_row(rec_index *ix, const rec_chunk_row *row) {
    rec_chunk_row *r = NULL;
    if (ix->nchunks == ix->cap_chunks) {
        size_t cap = ix->cap_chunks ? 2 * ix->cap_chunks : 1024;
        rec_chunk_row *p = realloc(ix->chunks, cap * sizeof *p);
        if (!p) {
            ix->oom = 1;
            return;
        }
        ix->chunks = p;
        ix->cap_chunks = cap;
    }
    r = &ix->chunks[ix->nchunks++];
    *r = *row;
}
