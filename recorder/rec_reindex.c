/*
 * rec_reindex.c - rebuilds RUN/index.db from RUN/trace.zst alone.
 *
 * Decodes the trace chunk by chunk and feeds the very index builder the
 * live recorder uses, so the rebuilt tables equal the recorded ones. A
 * truncated trace still gives an index: every complete chunk is indexed,
 * the outcome becomes "truncated" and its message says how far the trace
 * is complete. The new index.db is put in place under the run folder's
 * exclusive lock (rec_run_lock.c), never in the middle of a reader's derive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_internal.h"

/* Every chunk of r into ix: 0 the trace is whole, 1 it is truncated
 * (every complete chunk indexed), -1 with err. */
static int index_chunks(rec_reader *r, rec_index *ix, const char *run_dir, char *err,
                        size_t errlen) {
    for (;;) {
        rec_chunk_view view;
        const engine_event *evs;
        rec_chunk_row row;
        int k = rec_reader_chunk(r, &view, &evs, &row);
        if (k == 0) return 0;
        if (k < 0) {
            if (rec_reader_truncated(r)) return 1;
            snprintf(err, errlen, "%s", rec_reader_error(r));
            return -1;
        }
        if (rec_ix_chunk(ix, view.decls, view.decl_len, evs, view.n, &row)) {
            snprintf(err, errlen, "%s/trace.zst: cannot index the chunk at byte %llu (corrupt "
                     "declarations or out of memory)", run_dir, (unsigned long long)row.offset);
            return -1;
        }
    }
}

/* The run ends with its run_end event, stamped with the end time the
 * trailer repeats: an end time elsewhere is not this run's, and every
 * figure measured against it (shares, bandwidths) would be wrong, or
 * overflow. 0, or -1 with err. */
static int check_end_time(const rec_kv *trailer, rec_index *ix, const char *run_dir, char *err,
                          size_t errlen) {
    const char *end = rec_kv_get(trailer, "end_time_ps");
    char *stop = NULL;
    errno = 0;
    unsigned long long t = end ? strtoull(end, &stop, 10) : 0;
    if (!end || (!errno && stop != end && !*stop && rec_ix_end_time_fits(ix, t))) return 0;
    snprintf(err, errlen, "%s/trace.zst: the trailer's end time (end_time_ps %s) "
             "disagrees with the events (the run_end event, or the last event at %llu "
             "ps): the trailer does not belong to them", run_dir, end,
             (unsigned long long)rec_ix_last_time(ix));
    return -1;
}

/* The outcome the run really had is lost with the trailer: the trailer of
 * a truncated trace says what is known, and how far it can be trusted.
 * 0, or -1 out of memory. */
static int truncated_trailer(rec_reader *r, rec_kv *t) {
    int rc = rec_kv_set(t, "outcome", "truncated");
    rc |= rec_kv_set(t, "outcome_message", rec_reader_error(r));
    rc |= rec_kv_setf(t, "events", "%llu", (unsigned long long)rec_reader_events(r));
    rc |= rec_kv_setf(t, "complete_seq", "%llu", (unsigned long long)rec_reader_complete_seq(r));
    rc |= rec_kv_set(t, "check", "skipped");
    rc |= rec_kv_set(t, "check_message", "the trace is truncated");
    return rc ? -1 : 0;
}

static int reindex_locked(const char *run_dir, char *err, size_t errlen) {
    rec_reader *r;
    if (rec_reader_open(run_dir, &r, err, errlen)) return -1;
    if (errlen) err[0] = 0;
    rec_index *ix = rec_ix_new();
    if (!ix) {
        snprintf(err, errlen, "reindex %s: out of memory", run_dir);
        rec_reader_close(r);
        return -1;
    }
    int status = -1;
    rec_kv truncated = {0};
    if (rec_ix_header(ix, rec_reader_header(r))) {
        snprintf(err, errlen, "%s/trace.zst: the header has no valid cores_per_rank", run_dir);
        goto out;
    }
    status = index_chunks(r, ix, run_dir, err, errlen);
    const rec_kv *trailer = rec_reader_trailer(r);
    if (status == 0 && check_end_time(trailer, ix, run_dir, err, errlen)) status = -1;
    if (status == 1) {
        if (truncated_trailer(r, &truncated)) {
            snprintf(err, errlen, "reindex %s: out of memory", run_dir);
            status = -1;
        }
        trailer = &truncated;
    }
    if (status < 0) goto out;
    char path[4200];
    rec_fingerprint fp;
    rec_path(path, sizeof path, run_dir, "trace.zst");
    if (rec_trace_fingerprint(path, &fp, err, errlen)) {
        status = -1;
        goto out;
    }
    rec_path(path, sizeof path, run_dir, "index.db");
    if (rec_ix_finish(ix, trailer, &fp) || rec_ix_write_db(ix, path, err, errlen)) {
        if (!*err) snprintf(err, errlen, "%s: out of memory building the index", path);
        status = -1;
        goto out;
    }
    if (status == 1 && snprintf(err, errlen, "%s", rec_reader_error(r)) < 0) err[0] = 0;
out:
    rec_kv_free(&truncated);
    rec_ix_free(ix);
    rec_reader_close(r);
    return status;
}

int rec_reindex(const char *run_dir, char *err, size_t errlen) {
    int lock = rec_run_lock(run_dir, 1, err, errlen);
    if (lock < 0) return -1;
    int rc = reindex_locked(run_dir, err, errlen);
    rec_run_unlock(lock);
    return rc;
}
