/*
 * rec_writer.c - the live recorder: engine observer -> trace.zst, and
 * index.db at close.
 *
 * The observer callbacks are on the engine's hot path, so an event is one
 * struct copy into a fixed chunk buffer and a declaration is a few bytes
 * appended to a buffer; nothing allocates per event and nothing touches
 * SQLite. When REC_CHUNK_EVENTS events have accumulated, the chunk is
 * encoded into columns, compressed into one zstd frame and written with a
 * single write(), then handed to the index builder. That bounds what a crash
 * can lose to the unfinished chunk, and rec_close only has to flush the last
 * one, append the trailer and write index.db.
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

#include "recorder/rec_internal.h"

/* zstd level for chunks: fast levels keep recording overhead low; the
 * column transposition already does most of the work. */
#define REC_ZSTD_LEVEL 3

struct rec_writer {
    char dir[4096];
    int fd;
    rec_kv header;
    engine_event *evs;
    size_t nev;
    rec_buf decls;
    rec_codec *codec;
    ZSTD_CCtx *cctx;
    rec_buf raw, comp;
    uint64_t offset, events, max_time;
    rec_index *ix;
    int failed;
    char fail_msg[4400];
};

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

static void fail(rec_writer *w, const char *fmt, const char *detail) {
    if (w->failed) return;
    w->failed = 1;
    snprintf(w->fail_msg, sizeof w->fail_msg, fmt, w->dir, detail);
}

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

static int write_frame(rec_writer *w) {
    if (w->raw.oom || rec_frame_compress(w->cctx, &w->raw, &w->comp)) {
        fail(w, "%s/trace.zst: cannot compress a frame (%s)", "out of memory");
        return -1;
    }
    if (write_all(w->fd, w->comp.p, w->comp.len)) {
        fail(w, "%s/trace.zst: write failed: %s", strerror(errno));
        return -1;
    }
    w->offset += w->comp.len;
    return 0;
}

static void encode_and_write(rec_writer *w) {
    w->raw.len = 0;
    rec_chunk_encode(w->codec, w->decls.p, w->decls.len, w->evs, w->nev, &w->raw);
    rec_chunk_row row;
    rec_chunk_summarize(w->evs, w->nev, &row);
    row.offset = w->offset;
    if (write_frame(w)) return;
    row.compressed_bytes = w->comp.len;
    row.raw_bytes = w->raw.len;
    if (rec_ix_chunk(w->ix, w->decls.p, w->decls.len, w->evs, w->nev, &row))
        fail(w, "%s/index.db: cannot index a chunk (%s)", "out of memory");
    w->events += w->nev;
    if (w->nev && row.last_time > w->max_time) w->max_time = row.last_time;
}

/* Encodes, compresses, writes and indexes the buffered chunk. Always empties
 * the buffers: after a failure (reported by rec_close) events are dropped,
 * never written past the chunk buffer. */
static void flush_chunk(rec_writer *w) {
    if (!w->failed && (w->nev || w->decls.len)) {
        if (w->decls.oom)
            fail(w, "%s/trace.zst: cannot buffer declarations (%s)", "out of memory");
        else
            encode_and_write(w);
    }
    w->nev = 0;
    w->decls.len = 0;
}

/* ---------------------------------------------------------------- observer */

static void obs_string(void *ctx, uint32_t id, const char *text) {
    rec_decl_string(&((rec_writer *)ctx)->decls, id, text);
}

static void obs_site(void *ctx, const engine_site *site) {
    rec_decl_site(&((rec_writer *)ctx)->decls, site);
}

static void obs_object(void *ctx, const engine_object *obj) {
    rec_decl_object(&((rec_writer *)ctx)->decls, obj);
}

static void obs_event(void *ctx, const engine_event *ev) {
    rec_writer *w = ctx;
    w->evs[w->nev++] = *ev;
    if (w->nev == REC_CHUNK_EVENTS) flush_chunk(w);
}

void rec_observer(rec_writer *w, engine_observer *obs) {
    memset(obs, 0, sizeof *obs);
    obs->ctx = w;
    obs->on_string = obs_string;
    obs->on_site = obs_site;
    obs->on_object = obs_object;
    obs->on_event = obs_event;
}

void rec_attach(rec_writer *w, engine *e) {
    /* Strings are dense from 1; engine_string answers "" past the last. */
    for (uint32_t id = 1;; id++) {
        const char *s = engine_string(e, id);
        if (!s || !*s) break;
        obs_string(w, id, s);
    }
    for (uint32_t id = 1; id <= engine_object_count(e); id++) {
        const engine_object *o = engine_object_get(e, id);
        if (!o) continue;
        if (o->name) obs_string(w, o->name, engine_string(e, o->name));
        if (o->role) obs_string(w, o->role, engine_string(e, o->role));
        obs_object(w, o);
    }
    engine_observer obs;
    rec_observer(w, &obs);
    engine_set_observer(e, &obs);
}

uint64_t rec_writer_events(const rec_writer *w) { return w->events + w->nev; }
uint64_t rec_writer_bytes(const rec_writer *w) { return w->offset; }

/* ---------------------------------------------------------------- open/close */

static void writer_free(rec_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    rec_kv_free(&w->header);
    free(w->evs);
    rec_buf_free(&w->decls);
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
        writer_free(w);
        return -1;
    }
    if (prepare_dir(run_dir, err, errlen)) {
        writer_free(w);
        return -1;
    }
    w->evs = malloc(REC_CHUNK_EVENTS * sizeof *w->evs);
    w->codec = calloc(1, sizeof *w->codec);
    w->cctx = ZSTD_createCCtx();
    w->ix = rec_ix_new();
    if (!w->evs || !w->codec || !w->cctx || !w->ix) {
        snprintf(err, errlen, "rec_open: out of memory");
        writer_free(w);
        return -1;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, REC_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    if (rec_meta_from_info(&w->header, info, err, errlen)) {
        writer_free(w);
        return -1;
    }
    for (const char *const *x = extra_meta; x && x[0] && x[1]; x += 2) {
        if (rec_kv_set(&w->header, x[0], x[1])) {
            snprintf(err, errlen, "rec_open: out of memory");
            writer_free(w);
            return -1;
        }
    }
    rec_ix_header(w->ix, &w->header);

    char path[4200];
    rec_path(path, sizeof path, run_dir, "trace.zst");
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        writer_free(w);
        return -1;
    }
    rec_buf_put(&w->raw, REC_TAG_HEADER, 4);
    rec_buf_varint(&w->raw, REC_FORMAT_VERSION);
    rec_kv_encode(&w->header, &w->raw);
    if (write_frame(w)) {
        snprintf(err, errlen, "%s", w->fail_msg);
        writer_free(w);
        return -1;
    }
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
    flush_chunk(w);
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
        rec_path(path, sizeof path, w->dir, "index.db");
        if (rec_ix_finish(w->ix, &trailer, w->offset) ||
            rec_ix_write_db(w->ix, path, err, errlen))
            status = -1;
        if (status && !*err) snprintf(err, errlen, "%s: out of memory building the index", path);
    }
    rec_kv_free(&trailer);
    writer_free(w);
    return status;
}
