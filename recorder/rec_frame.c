/*
 * rec_frame.c - zstd frames and the trace file as a sequence of them.
 *
 * trace.zst is a plain concatenation of independent zstd frames, each with
 * its content size and a checksum, so `zstd -t` verifies every byte and a
 * reader can walk it with ZSTD_findFrameCompressedSize alone. A chunk's
 * frame ends a zstd block at every column start, so each column gets its
 * own entropy tables instead of sharing a block's with its neighbours (a
 * few percent smaller; the decompressed bytes are the same). Readers map
 * the file read-only: walking frames and decompressing one chunk for the
 * events virtual table then needs no copying. A file that ends inside a
 * frame is reported as truncated, never read past; one truncated by
 * another process while mapped is named by rec_map_guard.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "recorder/rec_internal.h"

void rec_frame_params(void *cctx) {
    ZSTD_CCtx *cc = cctx;
    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, REC_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_strategy, ZSTD_fast);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, REC_ZSTD_WINDOW_LOG);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_hashLog, REC_ZSTD_HASH_LOG);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_minMatch, REC_ZSTD_MIN_MATCH);
}

int rec_frame_compress(void *cctx, const rec_buf *payload, rec_buf *out) {
    size_t bound = ZSTD_compressBound(payload->len);
    out->len = 0;
    if (rec_buf_reserve(out, bound)) return -1;
    size_t n = ZSTD_compress2((ZSTD_CCtx *)cctx, out->p, out->cap, payload->p, payload->len);
    if (ZSTD_isError(n)) return -1;
    out->len = n;
    return 0;
}

int rec_frame_compress_cut(void *cctx, const rec_buf *payload, const size_t *cuts,
                           size_t ncuts, rec_buf *out) {
    ZSTD_CCtx *cc = cctx;
    out->len = 0;
    if (rec_buf_reserve(out, ZSTD_compressBound(payload->len) + 16 * ncuts + 64)) return -1;
    ZSTD_CCtx_reset(cc, ZSTD_reset_session_only);
    if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cc, payload->len))) return -1;
    ZSTD_outBuffer ob = {out->p, out->cap, 0};
    size_t from = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : payload->len;
        if (to < from || to > payload->len) return -1;
        if (i < ncuts && to == from) continue;
        ZSTD_inBuffer ib = {payload->p + from, to - from, 0};
        ZSTD_EndDirective mode = i < ncuts ? ZSTD_e_flush : ZSTD_e_end;
        size_t rem;
        do {
            rem = ZSTD_compressStream2(cc, &ob, &ib, mode);
            if (ZSTD_isError(rem)) {
                ZSTD_CCtx_reset(cc, ZSTD_reset_session_only);
                return -1;
            }
        } while (rem != 0 || ib.pos < ib.size);
        from = to;
    }
    out->len = ob.pos;
    return 0;
}

int rec_trace_map(const char *path, rec_trace *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    char why[200];
    t->fd = engine_open_input(path, why, sizeof why);
    if (t->fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, why);
        t->fd = -1;
        return -1;
    }
    struct stat st;
    if (fstat(t->fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        close(t->fd);
        t->fd = -1;
        return -1;
    }
    t->size = (size_t)st.st_size;
    if (t->size == 0) {
        t->base = NULL;
        return 0;
    }
    void *m = mmap(NULL, t->size, PROT_READ, MAP_PRIVATE, t->fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        close(t->fd);
        t->fd = -1;
        return -1;
    }
    t->base = m;
    rec_map_guard_add(m, t->size, path);   /* truncated under us: named, not SIGBUS */
    return 0;
}

void rec_trace_unmap(rec_trace *t) {
    if (t->base) {
        rec_map_guard_remove(t->base);
        munmap((void *)t->base, t->size);
    }
    if (t->fd >= 0) close(t->fd);
    memset(t, 0, sizeof *t);
    t->fd = -1;
}

int rec_trace_frame(const rec_trace *t, uint64_t off, uint64_t *frame_len) {
    if (off >= t->size) return 0;
    size_t n = ZSTD_findFrameCompressedSize(t->base + off, t->size - off);
    if (ZSTD_isError(n) || n > t->size - off) return -1;
    *frame_len = n;
    return 1;
}

int rec_frame_decompress(void *dctx, const uint8_t *src, size_t len, rec_buf *out, char *err,
                         size_t errlen) {
    unsigned long long size = ZSTD_getFrameContentSize(src, len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
        size > ((unsigned long long)1 << 34)) {
        snprintf(err, errlen, "frame has no valid content size");
        return -1;
    }
    out->len = 0;
    if (rec_buf_reserve(out, (size_t)size + 1)) {
        snprintf(err, errlen, "out of memory for a %llu-byte frame", size);
        return -1;
    }
    size_t n = ZSTD_decompressDCtx((ZSTD_DCtx *)dctx, out->p, out->cap, src, len);
    if (ZSTD_isError(n) || n != size) {
        snprintf(err, errlen, "frame does not decompress: %s",
                 ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size mismatch");
        return -1;
    }
    out->len = n;
    return 0;
}

int rec_trace_check_version(const rec_trace *t, const char *path, char *err, size_t errlen) {
    uint64_t len;
    if (rec_trace_frame(t, 0, &len) != 1) {
        snprintf(err, errlen, "%s has no complete header frame", path);
        return -1;
    }
    ZSTD_DCtx *d = ZSTD_createDCtx();
    rec_buf out = {0};
    int rc = -1;
    if (!d) {
        snprintf(err, errlen, "%s: out of memory", path);
    } else if (rec_frame_decompress(d, t->base, (size_t)len, &out, err, errlen) == 0) {
        rec_cur c = {out.p + 4, out.p + out.len, 0};
        uint64_t version = out.len >= 4 && !memcmp(out.p, REC_TAG_HEADER, 4) ? rec_cur_varint(&c) : 0;
        if (out.len < 4 || memcmp(out.p, REC_TAG_HEADER, 4) != 0 || c.bad)
            snprintf(err, errlen, "%s does not start with an npurr header frame", path);
        else if (version < REC_FORMAT_OLDEST || version > REC_FORMAT_VERSION)
            snprintf(err, errlen, "%s: trace format version %llu is not supported (this npurr "
                     "reads %d to %d); record the run again", path, (unsigned long long)version,
                     REC_FORMAT_OLDEST, REC_FORMAT_VERSION);
        else
            rc = 0;
    }
    rec_buf_free(&out);
    ZSTD_freeDCtx(d);
    return rc;
}

int rec_trace_is_npurr(const char *path) {
    char err[128];
    rec_trace t;
    if (rec_trace_map(path, &t, err, sizeof err)) return 0;
    int ok = 0;
    uint64_t len;
    if (rec_trace_frame(&t, 0, &len) == 1) {
        ZSTD_DCtx *d = ZSTD_createDCtx();
        rec_buf out = {0};
        if (d && rec_frame_decompress(d, t.base, (size_t)len, &out, err, sizeof err) == 0 &&
            out.len >= 4 && memcmp(out.p, REC_TAG_HEADER, 4) == 0)
            ok = 1;
        rec_buf_free(&out);
        ZSTD_freeDCtx(d);
    }
    rec_trace_unmap(&t);
    return ok;
}
