/*
 * rec_writer.c - the live recorder: engine observer -> trace.zst, and
 * index.db at close.
 *
 * The observer callbacks are on the engine's hot path, so an event is one
 * struct copy into a fixed chunk buffer and a declaration is a few bytes
 * appended to a buffer; nothing allocates per event and nothing touches
 * SQLite. When REC_CHUNK_EVENTS events (or NPURR_CHUNK_EVENTS) have accumulated, the chunk is
 * encoded into columns, compressed into one zstd frame and written with a
 * single write(), then handed to the index builder. rec_close only has to
 * flush the last one, append the trailer and write index.db.
 *
 * The encoding, compression, write and indexing of a chunk run on a
 * background thread (rec_worker.c) while the engine fills the next chunk
 * into a second buffer: on a machine with a spare core the engine only pays
 * for copying events. The engine thread waits for the previous chunk before
 * handing over the next, so one chunk at most is in flight, and everything
 * the worker writes (file offset, index builder, failure) is read by the
 * engine thread only after such a wait. A crash can lose the chunk being
 * filled and the one being compressed; rec_close (also on a fault or
 * Ctrl-C) waits for both. Without a thread the chunk is written in line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "recorder/rec_writer.h"


/* NPURR_CHUNK_EVENTS cuts chunks smaller than REC_CHUNK_EVENTS: a killed
 * process then loses fewer events, at some cost in trace size (the tests
 * use it to get several chunks from small runs). */
static int chunk_events(size_t *out, char *err, size_t errlen) {
    const char *v = getenv("NPURR_CHUNK_EVENTS");
    *out = REC_CHUNK_EVENTS;
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || v[0] == '-' || n < 1024 || n > REC_CHUNK_EVENTS) {
        snprintf(err, errlen, "NPURR_CHUNK_EVENTS=%s: expected a number of events from 1024 to %d",
                 v, REC_CHUNK_EVENTS);
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

static int mkdir_p(const char *dir, char *err, size_t errlen) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "run directory path too long: %s", dir);
        return -1;
    }
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(path, 0755) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
                return -1;
            }
            *p = c;
            if (c == 0) break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a directory", dir);
        return -1;
    }
    return 0;
}

/* A run directory may be reused only if it is empty or already an npurr
 * run (its trace.zst starts with an npurr header frame): recording over
 * anything else would silently mix a run with unrelated files. */
static int prepare_dir(const char *dir, char *err, size_t errlen) {
    if (mkdir_p(dir, err, errlen)) return -1;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    int empty = 1;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            empty = 0;
            break;
        }
    }
    closedir(d);
    if (empty) return 0;
    char trace[4200], index[4200], tmp[4200];
    if (rec_path(trace, sizeof trace, dir, "trace.zst") ||
        rec_path(index, sizeof index, dir, "index.db") ||
        rec_path(tmp, sizeof tmp, dir, "index.db.tmp")) {
        snprintf(err, errlen, "run directory path too long: %s", dir);
        return -1;
    }
    if (!rec_trace_is_npurr(trace)) {
        snprintf(err, errlen,
                 "%s is not empty and is not an npurr run (no npurr trace.zst); "
                 "choose another -o directory",
                 dir);
        return -1;
    }
    unlink(index);
    unlink(tmp);
    return 0;
}

void rec_writer_fail(rec_writer *w, const char *fmt, const char *detail) {
    if (w->failed) return;
    w->failed = 1;
    snprintf(w->fail_msg, sizeof w->fail_msg, fmt, w->dir, detail);
}
#define fail rec_writer_fail

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Compresses raw into one frame (a chunk's with a block per column) and
 * writes it. */
static int write_frame_cut(rec_writer *w, const size_t *cuts, size_t ncuts) {
    if (w->raw.oom || (ncuts ? rec_frame_compress_cut(w->cctx, &w->raw, cuts, ncuts, &w->comp)
                             : rec_frame_compress(w->cctx, &w->raw, &w->comp))) {
        fail(w, "%s/trace.zst: cannot compress a frame (%s)", "out of memory");
        return -1;
    }
    if (write_all(w->fd, w->comp.p, w->comp.len)) {
        fail(w, "%s/trace.zst: write failed: %s", strerror(errno));
        return -1;
    }
    __atomic_store_n(&w->offset, w->offset + w->comp.len, __ATOMIC_RELAXED);
    return 0;
}

static int write_frame(rec_writer *w) { return write_frame_cut(w, NULL, 0); }

int rec_writer_write(rec_writer *w, const uint8_t *p, size_t n) {
    if (w->failed) return -1;
    if (write_all(w->fd, p, n)) {
        fail(w, "%s/trace.zst: write failed: %s", strerror(errno));
        return -1;
    }
    __atomic_store_n(&w->offset, w->offset + n, __ATOMIC_RELAXED);
    return 0;
}

/* The job: encodes, compresses, writes and indexes job_evs/job_decls. */
static void encode_and_write(void *arg) {
    rec_writer *w = arg;
    const engine_event *evs = w->job_evs;
    size_t n = w->job_nev;
    w->raw.len = 0;
    rec_chunk_encode(w->codec, w->job_decls.p, w->job_decls.len, evs, n, &w->raw);
    rec_chunk_row row = w->codec->summary;   /* found while encoding */
    row.offset = w->offset;
    if (write_frame_cut(w, w->codec->stream_at, w->codec->nstreams)) return;
    row.compressed_bytes = w->comp.len;
    row.raw_bytes = w->raw.len;
    if (rec_ix_chunk(w->ix, w->job_decls.p, w->job_decls.len, evs, n, &row)) {
        fail(w, "%s/index.db: cannot index a chunk (%s)", "out of memory");
    } else {
        char err[200];
        if (rec_ix_db_flush(w->ix, err, sizeof err)) fail(w, "%s/index.db: %s", err);
    }
    __atomic_store_n(&w->events, w->events + n, __ATOMIC_RELAXED);
    if (n && row.last_time > w->max_time) w->max_time = row.last_time;
}

/* Waits until the chunk in flight (if any) is written: after this the
 * engine thread may read what the worker writes. */
void rec_writer_settle(rec_writer *w) {
    if (w->worker) rec_worker_wait(w->worker);
}
#define settle rec_writer_settle

/* Hands the buffered chunk (or part: its first n events) to the worker (or
 * writes it in line) and starts empty buffers but for the events after n.
 * After a failure (reported by rec_close) events are dropped, never
 * written past the chunk buffer. */
void rec_writer_hand_over(rec_writer *w, void (*fn)(void *), size_t n) {
    settle(w);
    size_t keep = w->nev - n;
    if (!w->failed && w->decls.oom)
        fail(w, "%s/trace.zst: cannot buffer declarations (%s)", "out of memory");
    if (!w->failed && keep && rec_grow_events(&w->job_evs, &w->cap_job_evs, keep))
        fail(w, "%s/trace.zst: cannot buffer events (%s)", "out of memory");
    if (!w->failed) {
        engine_event *e = w->job_evs;
        size_t cap = w->cap_job_evs;
        w->job_evs = w->evs;
        w->cap_job_evs = w->cap_evs;
        w->evs = e;
        w->cap_evs = cap;
        w->job_nev = n;
        if (keep) memcpy(w->evs, w->job_evs + n, keep * sizeof *w->evs);   /* before the worker runs */
        rec_buf d = w->job_decls;
        w->job_decls = w->decls;
        w->decls = d;
        if (w->worker) rec_worker_submit(w->worker, fn, w);
        else fn(w);
        w->nev = keep;
        w->pend = w->pend > n ? w->pend - n : 0;
    } else {
        w->nev = w->pend = 0;
    }
    w->decls.len = 0;
    w->decls.oom = 0;
    memset(&w->prev_obj, 0, sizeof w->prev_obj);
    w->prev_string = 0;
}

static void flush_chunk(rec_writer *w) {
    if (w->nev || w->decls.len) rec_writer_hand_over(w, encode_and_write, w->nev);
}

/* A split run's parts are handed over at group ends and windows
 * (rec_split.c), never as a chunk. */
void rec_flush(rec_writer *w) {
    if (w && !w->parts) flush_chunk(w);
}

/* ---------------------------------------------------------------- observer */

static void obs_string(void *ctx, uint32_t id, const char *text) {
    rec_writer *w = ctx;
    rec_decl_string(&w->decls, &w->prev_string, id, text);
}

static void obs_site(void *ctx, const engine_site *site) {
    rec_decl_site(&((rec_writer *)ctx)->decls, site);
}

static void obs_object(void *ctx, const engine_object *obj) {
    rec_writer *w = ctx;
    rec_decl_object_delta(&w->decls, &w->prev_obj, obj);
}

static void obs_event(void *ctx, const engine_event *ev) {
    rec_writer *w = ctx;
    if (w->parts) {
        /* numbered at the window's end (obs_renumber): a window may hold
         * more than a chunk */
        if (w->nev == w->cap_evs && rec_grow_events(&w->evs, &w->cap_evs, w->nev + 1)) {
            fail(w, "%s/trace.zst: cannot buffer events (%s)", "out of memory");
            return;
        }
        w->evs[w->nev++] = *ev;
        return;
    }
    w->evs[w->nev++] = *ev;
    if (w->nev == w->chunk_events) flush_chunk(w);
}

/* A split run's window was merged: the events since the last call get the
 * run's numbers (those the run was cut before go), then fall into their
 * groups' parts. */
static void obs_renumber(void *ctx, int (*fix)(void *, engine_event *), void *fix_ctx) {
    rec_writer *w = ctx;
    size_t k = w->pend;
    for (size_t i = w->pend; i < w->nev; i++) {
        if (fix(fix_ctx, &w->evs[i])) continue;
        if (k != i) w->evs[k] = w->evs[i];
        k++;
    }
    w->nev = k;
    if (w->parts) rec_split_settle(w, w->pend);
    w->pend = w->nev;
}

void rec_observer(rec_writer *w, engine_observer *obs) {
    memset(obs, 0, sizeof *obs);
    obs->ctx = w;
    obs->on_string = obs_string;
    obs->on_site = obs_site;
    obs->on_object = obs_object;
    obs->on_event = obs_event;
    obs->on_renumber = obs_renumber;
}

void rec_attach(rec_writer *w, engine *e) {
    for (uint32_t id = 1; id <= engine_string_count(e); id++)
        obs_string(w, id, engine_string(e, id));
    /* Object names and roles are among the strings just declared. */
    for (uint32_t id = 1; id <= engine_object_count(e); id++) {
        const engine_object *o = engine_object_get(e, id);
        if (o) obs_object(w, o);
    }
    engine_observer obs;
    rec_observer(w, &obs);
    engine_set_observer(e, &obs);
}

/* ---------------------------------------------------------------- open/close */

int rec_writer_alloc(rec_writer *w, const rec_run_info *info, char *err, size_t errlen) {
    if (chunk_events(&w->chunk_events, err, errlen)) return -1;
    w->evs = rec_big_alloc(w->chunk_events * sizeof *w->evs);
    w->job_evs = rec_big_alloc(w->chunk_events * sizeof *w->job_evs);
    w->cap_evs = w->cap_job_evs = w->chunk_events;
    w->codec = calloc(1, sizeof *w->codec);
    w->cctx = ZSTD_createCCtx();
    w->ix = rec_ix_new();
    if (!w->evs || !w->job_evs || !w->codec || !w->cctx || !w->ix) {
        snprintf(err, errlen, "rec_open: out of memory");
        return -1;
    }
    rec_frame_params(w->cctx);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    return rec_meta_from_info(&w->header, info, err, errlen);
}

void rec_writer_free(rec_writer *w) {
    if (!w) return;
    rec_worker_stop(w->worker);
    rec_split_free(w);
    if (w->fd >= 0) close(w->fd);
    rec_kv_free(&w->header);
    free(w->evs);
    free(w->job_evs);
    rec_buf_free(&w->decls);
    rec_buf_free(&w->job_decls);
    rec_codec_free(w->codec);
    ZSTD_freeCCtx(w->cctx);
    rec_buf_free(&w->raw);
    rec_buf_free(&w->comp);
    rec_ix_free(w->ix);
    free(w);
}

int rec_open(const char *run_dir, const rec_run_info *info, rec_writer **out, char *err,
             size_t errlen) {
    return rec_open_with_meta(run_dir, info, NULL, out, err, errlen);
}

int rec_open_with_meta(const char *run_dir, const rec_run_info *info,
                       const char *const *extra_meta, rec_writer **out, char *err, size_t errlen) {
    *out = NULL;
    if (!run_dir || !*run_dir || !info || !info->config) {
        snprintf(err, errlen, "rec_open: a run directory and a configuration are required");
        return -1;
    }
    if (info->cores_per_rank <= 0) {
        snprintf(err, errlen, "rec_open: cores_per_rank must be positive (got %d)",
                 info->cores_per_rank);
        return -1;
    }
    rec_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "rec_open: out of memory");
        return -1;
    }
    w->fd = -1;
    if (snprintf(w->dir, sizeof w->dir, "%s", run_dir) >= (int)sizeof w->dir) {
        snprintf(err, errlen, "run directory path too long: %s", run_dir);
        rec_writer_free(w);
        return -1;
    }
    if (prepare_dir(run_dir, err, errlen) || rec_writer_alloc(w, info, err, errlen)) {
        rec_writer_free(w);
        return -1;
    }
    for (const char *const *x = extra_meta; x && x[0] && x[1]; x += 2) {
        if (rec_kv_set(&w->header, x[0], x[1])) {
            snprintf(err, errlen, "rec_open: out of memory");
            rec_writer_free(w);
            return -1;
        }
    }
    rec_ix_header(w->ix, &w->header);

    char path[4200];
    /* index.db.tmp takes the final waits while the run goes
     * on (encode_and_write); rec_close adds the rest and renames it. */
    rec_path(path, sizeof path, run_dir, "index.db");
    if (rec_ix_db_open(w->ix, path, err, errlen)) {
        rec_writer_free(w);
        return -1;
    }
    rec_path(path, sizeof path, run_dir, "trace.zst");
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        rec_writer_free(w);
        return -1;
    }
    rec_buf_put(&w->raw, REC_TAG_HEADER, 4);
    rec_buf_varint(&w->raw, REC_FORMAT_VERSION);
    rec_kv_encode(&w->header, &w->raw);
    if (write_frame(w)) {
        snprintf(err, errlen, "%s", w->fail_msg);
        rec_writer_free(w);
        return -1;
    }
    w->worker = rec_worker_start_if_cpu(1); /* NULL: chunks are written in line */
    *out = w;
    return 0;
}

static const char *outcome_text(int outcome) {
    switch (outcome) {
    case OUTCOME_COMPLETED: return "completed";
    case OUTCOME_DEADLOCK: return "deadlock";
    case OUTCOME_WATCHDOG: return "watchdog";
    case OUTCOME_FAULT: return "fault";
    case OUTCOME_INTERRUPTED: return "interrupted";
    default: return "interrupted"; /* still running: the run was cut short */
    }
}

int rec_close(rec_writer *w, const engine_result *res, const char *check_status,
              const char *check_message, char *err, size_t errlen) {
    if (!w) {
        snprintf(err, errlen, "rec_close: no writer");
        return -1;
    }
    if (errlen) err[0] = 0;
    rec_flush(w);
    settle(w);
    if (w->parts && w->part != 0) {   /* a split run's other process: no folder */
        int failed = w->failed;
        if (failed) snprintf(err, errlen, "%s", w->fail_msg);
        rec_writer_free(w);
        return failed ? -1 : 0;
    }
    rec_kv trailer = {0};
    int rc = 0;
    if (res) {
        rc |= rec_kv_set(&trailer, "outcome", outcome_text(res->outcome));
        rc |= rec_kv_set(&trailer, "outcome_message", res->message);
        rc |= rec_kv_setf(&trailer, "end_time_ps", "%llu", (unsigned long long)res->end_time);
    } else {
        rc |= rec_kv_set(&trailer, "outcome", "fault");
        rc |= rec_kv_set(&trailer, "outcome_message", "the run could not be carried out");
        rc |= rec_kv_setf(&trailer, "end_time_ps", "%llu",
                          (unsigned long long)w->max_time);
    }
    rc |= rec_kv_setf(&trailer, "events", "%llu", (unsigned long long)w->events);
    rc |= rec_kv_set(&trailer, "check", check_status ? check_status : "skipped");
    rc |= rec_kv_set(&trailer, "check_message", check_message ? check_message : "");
    if (rc) fail(w, "%s: cannot build the trailer (%s)", "out of memory");
    if (!w->failed) {
        w->raw.len = 0;
        rec_buf_put(&w->raw, REC_TAG_TRAILER, 4);
        rec_kv_encode(&trailer, &w->raw);
        write_frame(w);
    }
    if (!w->failed && close(w->fd) != 0) fail(w, "%s/trace.zst: close failed: %s", strerror(errno));
    w->fd = -1;
    int status = 0;
    if (w->failed) {
        snprintf(err, errlen, "%s", w->fail_msg);
        status = -1;
    } else {
        char path[4200];
        rec_fingerprint fp;
        rec_path(path, sizeof path, w->dir, "trace.zst");
        if (rec_trace_fingerprint(path, &fp, err, errlen)) status = -1;
        rec_path(path, sizeof path, w->dir, "index.db");
        if (!status && w->parts) {
            rec_split_index_close(w);
            if (w->failed) {
                snprintf(err, errlen, "%s", w->fail_msg);
                status = -1;
            }
        }
        if (!status && (rec_ix_finish(w->ix, &trailer, &fp) ||
                        rec_ix_write_db(w->ix, path, err, errlen)))
            status = -1;
        if (status && !*err) snprintf(err, errlen, "%s: out of memory building the index", path);
    }
    rec_kv_free(&trailer);
    rec_writer_free(w);
    return status;
}
