/*
 * bench_rec_cpu.c - the recorder thread's CPU per event, stage by stage,
 * without running the engine: issue 29 wants it at or under 0.15 us at
 * EP64, and bench_scale needs ten minutes to say so.
 *
 * Reads the chunks of a recorded run (declarations and events, as the
 * writer's job got them) into memory, then does to each what the live
 * recorder's background job does (rec_writer.c, encode_and_write): encode
 * the columns, summarize the chunk, compress its frame, write it, feed the
 * index builder and flush the final waits into index.db.tmp; and at the
 * end what rec_close adds (the last rows and the small tables, the commit).
 * Each stage's CPU time on this thread is summed over the chunks and
 * printed per event, with the trace and index bytes per event the run
 * would get. One thread, the run already recorded: the figures are steady
 * from run to run on a shared machine, unlike a whole `npurr record`, and
 * comparable between builds on one machine. They leave out what the
 * engine's thread pays (copying each event) and what the two threads cost
 * each other in caches; bench_scale measures the real thing.
 *
 *   build/bench_rec_cpu RUN                 every chunk of RUN (a run folder)
 *   build/bench_rec_cpu RUN --chunks 40     the first 40 chunks only
 *   build/bench_rec_cpu RUN --skip 100      ... after skipping 100
 *   build/bench_rec_cpu RUN --level 1       zstd at a level, not the recorder's parameters
 *   build/bench_rec_cpu RUN --hash-log 15 --min-match 6 --target-length 1
 *                                           the recorder's parameters but these
 *   build/bench_rec_cpu RUN --split 4     each chunk cut in 4 (smaller chunks)
 *   build/bench_rec_cpu RUN --repeat 3    the least of 3 runs, stage by stage
 *   build/bench_rec_cpu RUN --columns 1   and each column's bytes per event
 *   build/bench_rec_cpu RUN --out DIR       where the copy is written (removed after)
 */
#include "bench/bench_support.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "recorder/rec_internal.h"
#include "recorder/recorder.h"

typedef struct held {
    uint8_t *decls;
    size_t decl_len, n;
    engine_event *evs;
} held;

enum { ST_ENCODE, ST_SUMMARY, ST_ZSTD, ST_WRITE, ST_IX, ST_FLUSH, ST_CLOSE, ST_COUNT };
static const char *const stage_name[ST_COUNT] = {
    "encode (columns)", "summary row (the encoder's)", "zstd", "write()", "index builder", "index rows (flush)",
    "close (last rows, tables, commit)"};

static double thread_cpu(void) { return bench_clock_s(CLOCK_THREAD_CPUTIME_ID); }

typedef struct stage_out {
    uint64_t offset, raw_total, index_bytes;
    uint64_t col_raw[REC_COL_COUNT], col_comp[REC_COL_COUNT];
} stage_out;

/* The stages over every held chunk into out (made afresh): each stage's
 * CPU seconds summed into st, the sizes into o. */
/* zstd parameters over the recorder's (0: its own) */
static int zstd_hash_log, zstd_min_match, zstd_target_length;

static int run_stages(const held *hs, size_t nheld, const rec_kv *header, int level,
                      const char *out, int columns, double *st, stage_out *o) {
    char err[4096], cmd[4300], path[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    if (system(cmd) != 0 || mkdir(out, 0755) != 0) {
        fprintf(stderr, "bench_rec_cpu: cannot make %s\n", out);
        return -1;
    }
    rec_codec *codec = calloc(1, sizeof *codec);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (level) ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    else rec_frame_params(cctx);   /* the recorder's */
    if (zstd_hash_log) ZSTD_CCtx_setParameter(cctx, ZSTD_c_hashLog, zstd_hash_log);
    if (zstd_min_match) ZSTD_CCtx_setParameter(cctx, ZSTD_c_minMatch, zstd_min_match);
    if (zstd_target_length) ZSTD_CCtx_setParameter(cctx, ZSTD_c_targetLength, zstd_target_length);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    rec_index *ix = rec_ix_new();
    rec_ix_header(ix, header);
    snprintf(path, sizeof path, "%s/index.db", out);
    if (rec_ix_db_open(ix, path, err, sizeof err)) {
        fprintf(stderr, "bench_rec_cpu: %s\n", err);
        return -1;
    }
    snprintf(path, sizeof path, "%s/trace.zst", out);
    FILE *tf = fopen(path, "wb");
    int fd = tf ? fileno(tf) : -1;
    rec_buf raw = {0}, comp = {0};
    uint64_t *col_raw = o->col_raw, *col_comp = o->col_comp;
    memset(o, 0, sizeof *o);
    uint8_t *col_buf = NULL;
    size_t col_cap = 0;
    uint64_t offset = 0, raw_total = 0;
    for (size_t c = 0; c < nheld; c++) {
        const held *h = &hs[c];
        double t0 = thread_cpu();
        raw.len = 0;
        rec_chunk_encode(codec, h->decls, h->decl_len, h->evs, h->n, &raw);
        double t1 = thread_cpu();
        rec_chunk_row row = codec->summary;   /* as the writer takes it */
        row.offset = offset;
        double t2 = thread_cpu();
        if (rec_frame_compress_cut(cctx, &raw, codec->stream_at, codec->nstreams, &comp)) {
            fprintf(stderr, "bench_rec_cpu: compression failed\n");
            return -1;
        }
        double t3 = thread_cpu();
        if (columns) {
            for (size_t k = 0; k < codec->nstreams; k++) {
                unsigned col = codec->stream_id[k] >> REC_GROUP_BITS;
                size_t len = codec->stream_len[k];
                col_raw[col] += len;
                size_t b = ZSTD_compressBound(len);
                if (b > col_cap) col_buf = realloc(col_buf, col_cap = b);
                size_t z = ZSTD_compress(col_buf, col_cap, raw.p + codec->stream_at[k], len, level);
                if (!ZSTD_isError(z)) col_comp[col] += z;
            }
            t3 = thread_cpu();
        }
        for (size_t at = 0; at < comp.len;) {
            ssize_t k = write(fd, comp.p + at, comp.len - at);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                fprintf(stderr, "bench_rec_cpu: write failed\n");
                return -1;
            }
            at += (size_t)k;
        }
        offset += comp.len;
        raw_total += raw.len;
        row.compressed_bytes = comp.len;
        row.raw_bytes = raw.len;
        double t4 = thread_cpu();
        if (rec_ix_chunk(ix, h->decls, h->decl_len, h->evs, h->n, &row)) {
            fprintf(stderr, "bench_rec_cpu: index builder failed\n");
            return -1;
        }
        double t5 = thread_cpu();
        if (rec_ix_db_flush(ix, err, sizeof err)) {
            fprintf(stderr, "bench_rec_cpu: %s\n", err);
            return -1;
        }
        double t6 = thread_cpu();
        st[ST_ENCODE] += t1 - t0;
        st[ST_SUMMARY] += t2 - t1;
        st[ST_ZSTD] += t3 - t2;
        st[ST_WRITE] += t4 - t3;
        st[ST_IX] += t5 - t4;
        st[ST_FLUSH] += t6 - t5;
    }
    fclose(tf);
    double t0 = thread_cpu();
    rec_kv trailer = {0};
    rec_kv_set(&trailer, "outcome", "completed");
    rec_fingerprint fp;
    memset(&fp, 0, sizeof fp);
    fp.bytes = offset;
    snprintf(path, sizeof path, "%s/index.db", out);
    if (rec_ix_finish(ix, &trailer, &fp) || rec_ix_write_db(ix, path, err, sizeof err)) {
        fprintf(stderr, "bench_rec_cpu: %s\n", err);
        return -1;
    }
    st[ST_CLOSE] = thread_cpu() - t0;
    o->offset = offset;
    o->raw_total = raw_total;
    struct stat sb;
    o->index_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    rec_kv_free(&trailer);
    rec_ix_free(ix);
    rec_buf_free(&raw);
    rec_buf_free(&comp);
    ZSTD_freeCCtx(cctx);
    rec_codec_free(codec);
    free(col_buf);
    return 0;
}

static const char usage[] =
    "usage: bench_rec_cpu RUN [--chunks N] [--skip N] [--level L] [--split K] [--repeat R]\n"
    "                     [--columns 1] [--out DIR] [--hash-log H] [--min-match M]\n"
    "                     [--target-length T]\n"
    "  re-records RUN's chunks through the recorder's stages on one thread and prints\n"
    "  each stage's CPU per event, and trace and index bytes per event\n";

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fputs(usage, stderr);
        return 2;
    }
    const char *run = argv[1];
    size_t max_chunks = (size_t)strtoull(arg_value(argc, argv, "--chunks", "0"), NULL, 10);
    size_t skip = (size_t)strtoull(arg_value(argc, argv, "--skip", "0"), NULL, 10);
    int level = atoi(arg_value(argc, argv, "--level", "0"));
    zstd_hash_log = atoi(arg_value(argc, argv, "--hash-log", "0"));
    zstd_min_match = atoi(arg_value(argc, argv, "--min-match", "0"));
    zstd_target_length = atoi(arg_value(argc, argv, "--target-length", "0"));
    size_t split = (size_t)strtoull(arg_value(argc, argv, "--split", "1"), NULL, 10);
    if (!split) split = 1;
    const char *out = arg_value(argc, argv, "--out", "/tmp/npurr_bench_rec_cpu");
    char err[4096];

    rec_reader *r;
    if (rec_reader_open(run, &r, err, sizeof err)) {
        fprintf(stderr, "bench_rec_cpu: %s\n", err);
        return 1;
    }
    size_t cap = 64, nheld = 0, seen = 0, taken = 0;
    held *hs = malloc(cap * sizeof *hs);
    uint64_t events = 0;
    for (;;) {
        rec_chunk_view view;
        const engine_event *evs;
        rec_chunk_row row;
        int k = rec_reader_chunk(r, &view, &evs, &row);
        if (k < 0) {
            fprintf(stderr, "bench_rec_cpu: %s\n", rec_reader_error(r));
            return 1;
        }
        if (k == 0 || (max_chunks && taken == max_chunks)) break;
        if (seen++ < skip) continue;
        taken++;
        /* --split K: K chunks of each (the declarations with the first),
         * to see what smaller chunks would cost and save */
        for (size_t part = 0; part < split; part++) {
            size_t from = view.n * part / split, to = view.n * (part + 1) / split;
            if (nheld == cap) hs = realloc(hs, (cap *= 2) * sizeof *hs);
            held *h = &hs[nheld++];
            h->decl_len = part ? 0 : view.decl_len;
            h->decls = malloc(h->decl_len + 1);
            memcpy(h->decls, view.decls, h->decl_len);
            h->n = to - from;
            h->evs = rec_big_alloc(h->n * sizeof *h->evs);   /* as the writer's buffers */
            memcpy(h->evs, evs + from, h->n * sizeof *evs);
        }
        events += view.n;
    }
    if (!nheld || !events) {
        fprintf(stderr, "bench_rec_cpu: no chunk with events in %s\n", run);
        return 1;
    }

    char cmd[4300];
    int columns = arg_value(argc, argv, "--columns", NULL) != NULL;
    int repeat = atoi(arg_value(argc, argv, "--repeat", "1"));
    double st[ST_COUNT];
    stage_out got = {0};
    for (int k = 0; k < (repeat > 0 ? repeat : 1); k++) {
        double one[ST_COUNT] = {0};
        if (run_stages(hs, nheld, rec_reader_header(r), level, out, columns, one, &got))
            return 1;
        for (int s = 0; s < ST_COUNT; s++)
            if (k == 0 || one[s] < st[s]) st[s] = one[s];
    }
    uint64_t offset = got.offset, raw_total = got.raw_total, index_bytes = got.index_bytes;
    uint64_t *col_raw = got.col_raw, *col_comp = got.col_comp;

    double ev = (double)events, total = 0;
    printf("%s: %zu chunks from chunk %zu (cut in %zu), %.2f M events, zstd ", run, taken, skip,
           split, ev / 1e6);
    if (level) printf("level %d\n", level);
    else printf("as the recorder sets it\n");
    for (int s = 0; s < ST_COUNT; s++) {
        printf("  %-36s %7.4f us/event  (%.2f s)\n", stage_name[s], st[s] / ev * 1e6, st[s]);
        total += st[s];
    }
    printf("  %-36s %7.4f us/event  (%.2f s)\n", "recorder thread in all", total / ev * 1e6,
           total);
    printf("  trace %.3f B/event (raw columns %.2f B/event), index %.3f B/event\n",
           (double)offset / ev, (double)raw_total / ev, (double)index_bytes / ev);

    if (columns) {
        static const char *const names[REC_COL_COUNT] = {
            "seq", "time", "rank", "core", "kind", "pipe", "sub", "addr", "len", "value", "aux",
            "link", "site", "object", "peer", "order_cores", "order_times", "order_exc"};
        printf("  per column (each stream compressed alone): raw B/event, compressed B/event\n");
        for (int col = 0; col < REC_COL_COUNT; col++)
            if (col_raw[col])
                printf("    %-12s %7.3f %7.3f\n", names[col], (double)col_raw[col] / ev,
                       (double)col_comp[col] / ev);
    }
    for (size_t c = 0; c < nheld; c++) {
        free(hs[c].decls);
        free(hs[c].evs);
    }
    free(hs);
    rec_reader_close(r);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    if (system(cmd) != 0) fprintf(stderr, "bench_rec_cpu: could not remove %s\n", out);
    return 0;
}
