/*
 * test_replay.c - the replayer library on runs of its own tiny kernels.
 *
 * A kernel written here against device.h (GM->UB copy, a flag pair, an
 * HCCS put to the next rank, a loop of GM stores and loads, then one core
 * per rank releases a named word the others wait for) is recorded with the
 * recorder, then replayed in the same process the way `npurr replay` does:
 * config from the trace header, same setup, comparing observer. Variants of
 * the kernel give the other endings and a run that is not the recorded one:
 *   plain     completes: the replay is identical (exit code 0, or 4 when the
 *             recording's data check failed and the replay's fails too)
 *   deadlock  the releaser stores the wrong value: the replay reproduces
 *             the deadlock with the same blocked cores at the same seqs (3)
 *   perturb   the releaser spends one more cycle: the replay diverges at the
 *             first event the two recordings disagree on (5)
 * and edits of the trace file: one event changed in a copy (re-encoded
 * with the recorder's chunk codec) makes the replay diverge at exactly that
 * seq; a copy cut inside its second chunk is a trace error that says how
 * far the trace is complete. Breaks without a debugger, checkpoints (goto
 * from a snapshot, thinning, no process left behind) are covered too.
 *
 * Tool mode, for tests/e2e/replay.sh: `test_replay --edit-trace SRC DST SEQ`
 * writes DST, a copy of run folder SRC whose event SEQ has value + 1.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>
#include <cmocka.h>

#include "npurr/device.h"
#include "recorder/rec_internal.h"
#include "recorder/recorder.h"
#include "replayer/replayer.h"
#include "tests/support.h"

/* ------------------------------------------------------------ the kernel */

enum { V_PLAIN = 0, V_PERTURB = 1, V_DEADLOCK = 2 };

typedef struct tiny_args {
    gm_t src, dst, flag, scratch;
    int variant, iters;
} tiny_args;

#define BLOCK_BYTES 1024
#define BLOCKS 4

static void tiny_kernel(const void *a) {
    const tiny_args *t = a;
    int rank = GetRank(), b = GetBlockIdx();
    SetRole(b == 0 ? "Releaser" : "Waiter");
    local_t ub = AllocUB(BLOCK_BYTES);
    DataCopy(ub, gm_add(gm_on_rank(t->src, rank), b * BLOCK_BYTES), BLOCK_BYTES);
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    int peer = (rank + 1) % GetRankSize();
    ShmemPutFromUB(gm_add(gm_on_rank(t->dst, peer), b * BLOCK_BYTES), ub, BLOCK_BYTES);
    gm_t mine = gm_add(gm_on_rank(t->scratch, rank), 64 * b);
    for (int i = 0; i < t->iters; i++) {
        SetValue32(mine, i);
        (void)GetValue32(mine);
    }
    if (b == 0) {
        ScalarCycles(t->variant == V_PERTURB ? 2001 : 2000);
        SetValue32(gm_on_rank(t->flag, rank), t->variant == V_DEADLOCK ? 2 : 1);
    } else {
        (void)WaitGM32(gm_on_rank(t->flag, rank), COND_EQ, 1);
    }
}

static int tiny_setup(engine *e, int variant, int iters, tiny_args *args) {
    char err[ENGINE_ERRLEN];
    memset(args, 0, sizeof *args);
    args->variant = variant;
    args->iters = iters;
    if (engine_sym_alloc(e, BLOCKS * BLOCK_BYTES, "src", &args->src, err, sizeof err) ||
        engine_sym_alloc(e, BLOCKS * BLOCK_BYTES, "dst", &args->dst, err, sizeof err) ||
        engine_sym_alloc(e, 64, "flag", &args->flag, err, sizeof err) ||
        engine_sym_alloc(e, 64 * BLOCKS, "scratch", &args->scratch, err, sizeof err)) {
        fprintf(stderr, "tiny_setup: %s\n", err);
        return -1;
    }
    for (int r = 0; r < engine_num_ranks(e); r++) {
        uint8_t *p = engine_gm_host(e, gm_on_rank(args->src, r), BLOCKS * BLOCK_BYTES);
        for (int i = 0; i < BLOCKS * BLOCK_BYTES; i++) p[i] = (uint8_t)(r * 31 + i);
        engine_name_word(e, gm_on_rank(args->flag, r), 4, OBJ_FLAG, "release");
    }
    if (engine_launch(e, "tiny", tiny_kernel, args, BLOCKS, CORE_AIV, err, sizeof err)) {
        fprintf(stderr, "tiny_setup: %s\n", err);
        return -1;
    }
    return 0;
}

static void tiny_config(engine_config *cfg) {
    engine_config_defaults(cfg);
    cfg->nodes = 1;
    cfg->npus_per_node = 2;
    cfg->seed = 7;
    cfg->hw.hbm_gbps = 1234.56789;   /* not the default: must come back from the header */
}

/* ------------------------------------------------------------ recording */

typedef struct events {
    engine_event *v;
    size_t n, cap;
} events;

static void keep_event(void *ctx, const engine_event *ev) {
    events *x = ctx;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 4096;
        x->v = realloc(x->v, x->cap * sizeof *x->v);
        if (!x->v) abort();
    }
    x->v[x->n++] = *ev;
}

/* Records a variant into dir; the events it emitted go to *evs. */
static engine_outcome record(const char *dir, int variant, int iters, const char *check,
                             const char *check_msg, events *evs) {
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    tiny_config(&cfg);
    engine *e;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    tiny_args args;
    assert_int_equal(tiny_setup(e, variant, iters, &args), 0);
    rec_run_info info = {"tiny", "test_replay", &cfg, engine_cores_per_rank(e), engine_num_aic(e),
                         engine_num_aiv(e), NULL};
    rec_writer *w;
    if (rec_open(dir, &info, &w, err, sizeof err)) fail_msg("rec_open: %s", err);
    rec_attach(w, e);
    engine_tee t = {.also = {.ctx = evs, .on_event = keep_event}};
    rec_observer(w, &t.inner);
    engine_observer obs = engine_tee_observer(&t);
    engine_set_observer(e, &obs);
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    if (rec_close(w, &res, check, check_msg, err, sizeof err)) fail_msg("rec_close: %s", err);
    engine_destroy(e);
    return res.outcome;
}

/* ------------------------------------------------------------ replaying */

typedef struct session {
    rec_reader *r;
    engine *e;
    tiny_args args;
    replay *rp;
    engine_result res;
} session;

/* Builds the run from dir's header the way `npurr replay` does, with the
 * given kernel variant, and attaches the replayer (not run yet). */
static void session_open(session *s, const char *dir, int variant, int iters,
                         const replay_opts *o) {
    char err[ENGINE_ERRLEN], note[256];
    memset(s, 0, sizeof *s);
    if (rec_reader_open(dir, &s->r, err, sizeof err)) fail_msg("rec_reader_open: %s", err);
    engine_config cfg;
    engine_config_defaults(&cfg);
    if (replay_meta_config(s->r, &cfg, note, sizeof note, err, sizeof err))
        fail_msg("rec_meta_get_config: %s", err);
    assert_string_equal(note, "");
    assert_int_equal(engine_create(&cfg, &s->e, err, sizeof err), ENGINE_OK);
    assert_int_equal(tiny_setup(s->e, variant, iters, &s->args), 0);
    if (replay_attach(s->e, s->r, o, &s->rp, err, sizeof err)) fail_msg("replay_attach: %s", err);
}

static const replay_verdict *session_run(session *s, const char *check, const char *check_msg) {
    char err[ENGINE_ERRLEN];
    assert_int_equal(engine_run(s->e, &s->res, err, sizeof err), ENGINE_OK);
    replay_finish(s->rp, &s->res, check, check_msg);
    return replay_verdict_get(s->rp);
}

static void session_close(session *s) {
    replay_free(s->rp);
    engine_destroy(s->e);
    rec_reader_close(s->r);
}

/* ------------------------------------------------------------ trace edits */

/* Copies run src to dst with event seq changed by edit(): the chunk that
 * holds it is decoded, edited, re-encoded with the recorder's codec and
 * compressed into a frame that replaces the original one in the file. */
static int edit_trace(const char *src, const char *dst, uint64_t seq, void (*edit)(engine_event *),
                      char *err, size_t errlen) {
    rec_reader *r;
    if (rec_reader_open(src, &r, err, errlen)) return -1;
    rec_chunk_view view;
    const engine_event *evs;
    rec_chunk_row row;
    int k, rc = -1;
    while ((k = rec_reader_chunk(r, &view, &evs, &row)) == 1)
        if (view.n && evs[0].seq <= seq && seq <= evs[view.n - 1].seq) break;
    if (k != 1) {
        snprintf(err, errlen, "%s has no event %llu", src, (unsigned long long)seq);
        rec_reader_close(r);
        return -1;
    }
    engine_event *copy = malloc(view.n * sizeof *copy);
    rec_codec *codec = calloc(1, sizeof *codec);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    rec_buf payload = {0}, frame = {0};
    char path[1024];
    FILE *in = NULL, *out = NULL;
    uint8_t *file = NULL;
    memcpy(copy, evs, view.n * sizeof *copy);
    edit(&copy[seq - evs[0].seq]);
    rec_chunk_encode(codec, view.decls, view.decl_len, copy, view.n, &payload);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    if (payload.oom || rec_frame_compress(cctx, &payload, &frame)) {
        snprintf(err, errlen, "cannot re-encode the chunk of seq %llu", (unsigned long long)seq);
        goto out;
    }
    snprintf(path, sizeof path, "%s/trace.zst", src);
    in = fopen(path, "rb");
    if (!in) { snprintf(err, errlen, "%.300s: %s", path, strerror(errno)); goto out; }
    file = malloc(rec_reader_size(r));
    if (!file || fread(file, 1, rec_reader_size(r), in) != rec_reader_size(r)) {
        snprintf(err, errlen, "cannot read %.300s", path);
        goto out;
    }
    if (mkdir(dst, 0755) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %.300s: %s", dst, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof path, "%s/trace.zst", dst);
    out = fopen(path, "wb");
    uint64_t after = row.offset + row.compressed_bytes;
    if (!out || fwrite(file, 1, row.offset, out) != row.offset ||
        fwrite(frame.p, 1, frame.len, out) != frame.len ||
        fwrite(file + after, 1, rec_reader_size(r) - after, out) != rec_reader_size(r) - after) {
        snprintf(err, errlen, "cannot write %.300s", path);
        goto out;
    }
    rc = 0;
out:
    if (out && fclose(out)) rc = -1;
    if (in) fclose(in);
    free(file);
    free(copy);
    rec_buf_free(&payload);
    rec_buf_free(&frame);
    rec_codec_free(codec);
    ZSTD_freeCCtx(cctx);
    rec_reader_close(r);
    return rc;
}

static void bump_value(engine_event *ev) { ev->value += 1; }

/* ------------------------------------------------------------ fixtures */

static char g_tmp[256];

static void path_of(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", g_tmp, name);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/npurr_test_replay_XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return support_remove_dir(g_tmp);
}

/* No snapshot (or any other child) of this test may be left running. */
static void assert_no_children(void) {
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* ------------------------------------------------------------ tests */

static void test_config_comes_from_the_header(void **state) {
    (void)state;
    char dir[300], err[ENGINE_ERRLEN], note[256];
    path_of(dir, sizeof dir, "config");
    events evs = {0};
    record(dir, V_PLAIN, 4, "skipped", NULL, &evs);
    rec_reader *r;
    assert_int_equal(rec_reader_open(dir, &r, err, sizeof err), 0);
    engine_config want, got;
    tiny_config(&want);
    engine_config_defaults(&got);
    assert_int_equal(replay_meta_config(r, &got, note, sizeof note, err, sizeof err), 0);
    assert_int_equal(got.nodes, want.nodes);
    assert_int_equal(got.npus_per_node, want.npus_per_node);
    assert_int_equal(got.seed, want.seed);
    assert_int_equal(got.chip, want.chip);
    assert_true(got.jitter == want.jitter);
    assert_int_equal(got.watchdog_ps, want.watchdog_ps);
    assert_memory_equal(&got.hw, &want.hw, sizeof got.hw);
    rec_reader_close(r);
    free(evs.v);
}

/* A run's meta as a key table, for rec_meta_get_config. */
typedef struct kv_table {
    const char *const *kv;   /* key, value, ..., NULL */
} kv_table;

static const char *kv_table_get(void *ctx, const char *key) {
    const kv_table *t = ctx;
    for (const char *const *p = t->kv; *p; p += 2)
        if (strcmp(p[0], key) == 0) return p[1];
    return NULL;
}

static const char *kv_get(void *ctx, const char *key) {
    return rec_kv_get(ctx, key);
}

/* Who posted an AI core's RDMA work requests is read from the run: a run
 * recorded with the NIC's message cost but no config.rdma_post was posted
 * by its AICPU, and replays so; a new run says the core posts them, and
 * its header written back says so again. */
static void test_rdma_poster_comes_from_the_header(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    engine_config now, cfg;
    engine_config_defaults(&now);
    const char *old_run[] = {"config.nodes", "2", "config.npus_per_node", "2",
                             "config.seed", "1", "config.watchdog_ps", "0",
                             "config.chip", engine_chip_name(now.chip), "config.jitter", "0",
                             "hw.nic_message_ns", "100", NULL};
    kv_table t = {old_run};
    assert_int_equal(rec_meta_get_config(kv_table_get, &t, &cfg, NULL, err, sizeof err), 0);
    assert_int_equal(cfg.rdma_posted_by_aicpu, 1);
    assert_int_equal(cfg.rdma_posted_by_core, 0);

    rec_kv kv = {0};
    assert_int_equal(rec_meta_put_config(&kv, &now), 0);
    assert_string_equal(rec_kv_get(&kv, "config.rdma_post"), "core");
    assert_int_equal(rec_meta_get_config(kv_get, &kv, &cfg, NULL, err, sizeof err), 0);
    assert_int_equal(cfg.rdma_posted_by_aicpu, 0);
    rec_kv_free(&kv);

    /* the old run's header rebuilt for its replay stays as it was */
    rec_kv again = {0};
    now.rdma_posted_by_aicpu = 1;
    assert_int_equal(rec_meta_put_config(&again, &now), 0);
    assert_null(rec_kv_get(&again, "config.rdma_post"));
    rec_kv_free(&again);
}

static void test_completed_run_is_identical(void **state) {
    (void)state;
    char dir[300];
    path_of(dir, sizeof dir, "plain");
    events evs = {0};
    assert_int_equal(record(dir, V_PLAIN, 8, "passed", NULL, &evs), OUTCOME_COMPLETED);
    session s;
    session_open(&s, dir, V_PLAIN, 8, NULL);
    const replay_verdict *v = session_run(&s, "passed", NULL);
    assert_int_equal(v->status, REPLAY_IDENTICAL);
    assert_int_equal(v->matched, evs.n);
    assert_int_equal(s.res.events, evs.n);
    assert_string_equal(v->recorded_outcome, "completed");
    assert_int_equal(replay_exit_code(s.rp), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    replay_write_report(s.rp, m);
    fclose(m);
    char want[128];
    snprintf(want, sizeof want, "identical: %zu events, outcome completed", evs.n);
    assert_non_null(strstr(text, want));
    free(text);
    session_close(&s);
    free(evs.v);
}

static void test_failed_check_is_reproduced_and_a_passing_one_is_not(void **state) {
    (void)state;
    char dir[300];
    path_of(dir, sizeof dir, "checkfail");
    events evs = {0};
    record(dir, V_PLAIN, 2, "failed", "row 3 differs", &evs);
    session s;
    session_open(&s, dir, V_PLAIN, 2, NULL);
    const replay_verdict *v = session_run(&s, "failed", "row 3 differs");
    assert_int_equal(v->status, REPLAY_IDENTICAL);
    assert_int_equal(replay_exit_code(s.rp), 4);
    session_close(&s);

    session_open(&s, dir, V_PLAIN, 2, NULL);
    v = session_run(&s, "passed", NULL);
    assert_int_equal(v->status, REPLAY_DIVERGED);
    assert_int_equal(v->seq, 0);   /* every event matched: the ending differs */
    assert_non_null(strstr(v->what, "data check: recorded failed, replayed passed"));
    assert_int_equal(replay_exit_code(s.rp), 5);
    session_close(&s);
    free(evs.v);
}

static void test_deadlock_is_reproduced_with_the_same_blocked_cores(void **state) {
    (void)state;
    char dir[300];
    path_of(dir, sizeof dir, "deadlock");
    events evs = {0};
    assert_int_equal(record(dir, V_DEADLOCK, 3, "skipped", NULL, &evs), OUTCOME_DEADLOCK);
    uint64_t blocked = 0, first = 0;
    for (size_t i = 0; i < evs.n; i++)
        if (evs.v[i].kind == EV_BLOCKED && !blocked++) first = evs.v[i].seq;
    assert_int_equal(blocked, 2 * (BLOCKS - 1));   /* every waiter of both ranks */

    session s;
    session_open(&s, dir, V_DEADLOCK, 3, NULL);
    const replay_verdict *v = session_run(&s, "skipped", NULL);
    assert_int_equal(v->status, REPLAY_IDENTICAL);
    assert_int_equal(v->outcome, OUTCOME_DEADLOCK);
    assert_int_equal(v->blocked, blocked);
    assert_int_equal(v->first_blocked_seq, first);
    assert_int_equal(replay_exit_code(s.rp), 3);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    replay_write_report(s.rp, m);
    fclose(m);
    assert_non_null(strstr(text, "deadlock reproduced"));
    assert_non_null(strstr(text, "rank 1 AIV3"));
    assert_non_null(strstr(text, "blocked on release == 1 (current 2)"));
    free(text);
    session_close(&s);

    /* The same trace replayed by the completing kernel is not reproduced. */
    session_open(&s, dir, V_PLAIN, 3, NULL);
    v = session_run(&s, "skipped", NULL);
    assert_int_equal(v->status, REPLAY_DIVERGED);
    assert_int_equal(replay_exit_code(s.rp), 5);
    session_close(&s);
    free(evs.v);
}

static void test_another_run_diverges_at_the_first_difference(void **state) {
    (void)state;
    char a[300], b[300];
    path_of(a, sizeof a, "div_a");
    path_of(b, sizeof b, "div_b");
    events ea = {0}, eb = {0};
    record(a, V_PLAIN, 5, "skipped", NULL, &ea);
    record(b, V_PERTURB, 5, "skipped", NULL, &eb);
    size_t i = 0;
    while (i < ea.n && i < eb.n && memcmp(&ea.v[i], &eb.v[i], sizeof ea.v[i]) == 0) i++;
    assert_true(i < ea.n);   /* the perturbation shows */

    session s;
    session_open(&s, a, V_PERTURB, 5, NULL);
    const replay_verdict *v = session_run(&s, "skipped", NULL);
    assert_int_equal(v->status, REPLAY_DIVERGED);
    assert_int_equal(v->seq, ea.v[i].seq);
    assert_int_equal(v->matched, i);
    assert_true(v->has_expected && v->has_actual);
    assert_memory_equal(&v->expected, &ea.v[i], sizeof v->expected);
    assert_memory_equal(&v->actual, &eb.v[i], sizeof v->actual);
    assert_int_equal(replay_exit_code(s.rp), 5);
    session_close(&s);
    free(ea.v);
    free(eb.v);
}

static void test_one_edited_event_diverges_at_its_seq(void **state) {
    (void)state;
    char src[300], dst[300], err[ENGINE_ERRLEN];
    path_of(src, sizeof src, "edit_src");
    path_of(dst, sizeof dst, "edit_dst");
    events evs = {0};
    record(src, V_PLAIN, 20, "skipped", NULL, &evs);
    uint64_t seq = evs.n / 2;
    if (edit_trace(src, dst, seq, bump_value, err, sizeof err)) fail_msg("edit_trace: %s", err);

    session s;
    session_open(&s, dst, V_PLAIN, 20, NULL);
    const replay_verdict *v = session_run(&s, "skipped", NULL);
    assert_int_equal(v->status, REPLAY_DIVERGED);
    assert_int_equal(v->seq, seq);
    assert_int_equal(v->matched, seq - 1);
    assert_string_equal(v->what, "value");
    assert_int_equal(v->expected.value, evs.v[seq - 1].value + 1);
    assert_int_equal(v->actual.value, evs.v[seq - 1].value);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    replay_write_report(s.rp, m);
    fclose(m);
    char want[64];
    snprintf(want, sizeof want, "diverged at seq %llu: value differ", (unsigned long long)seq);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "test_replay.c:"));   /* the kernel line */
    free(text);
    session_close(&s);

    /* The unedited original still replays identically. */
    session_open(&s, src, V_PLAIN, 20, NULL);
    assert_int_equal(session_run(&s, "skipped", NULL)->status, REPLAY_IDENTICAL);
    session_close(&s);
    free(evs.v);
}

/* Enough loop iterations for a second chunk of SMALL_CHUNK events. */
#define BIG_ITERS 9000
#define SMALL_CHUNK 65536

static void test_truncated_trace_says_how_far_it_is_complete(void **state) {
    (void)state;
    char src[300], dst[300], path[400], err[ENGINE_ERRLEN];
    path_of(src, sizeof src, "trunc_src");
    path_of(dst, sizeof dst, "trunc_dst");
    events evs = {0};
    setenv("NPURR_CHUNK_EVENTS", "65536", 1);
    record(src, V_PLAIN, BIG_ITERS, "skipped", NULL, &evs);
    unsetenv("NPURR_CHUNK_EVENTS");
    assert_true(evs.n > SMALL_CHUNK);
    /* Find the second chunk's frame and cut the copy in its middle. */
    rec_reader *r;
    assert_int_equal(rec_reader_open(src, &r, err, sizeof err), 0);
    rec_chunk_view view;
    const engine_event *e;
    rec_chunk_row first, second;
    assert_int_equal(rec_reader_chunk(r, &view, &e, &first), 1);
    assert_int_equal(rec_reader_chunk(r, &view, &e, &second), 1);
    rec_reader_close(r);
    assert_int_equal(mkdir(dst, 0755), 0);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "head -c %llu '%s/trace.zst' > '%s/trace.zst'",
             (unsigned long long)(second.offset + second.compressed_bytes / 2), src, dst);
    assert_int_equal(system(cmd), 0);

    session s;
    session_open(&s, dst, V_PLAIN, BIG_ITERS, NULL);
    const replay_verdict *v = session_run(&s, "skipped", NULL);
    assert_int_equal(v->status, REPLAY_TRACE_ERROR);
    assert_int_equal(v->seq, first.last_seq);
    assert_int_equal(v->matched, first.last_seq);
    snprintf(path, sizeof path, "complete up to seq %llu", (unsigned long long)first.last_seq);
    assert_non_null(strstr(v->what, path));
    assert_int_equal(replay_exit_code(s.rp), 1);
    session_close(&s);
    free(evs.v);
}

static void test_break_without_debugger_prints_the_cores(void **state) {
    (void)state;
    char dir[300];
    path_of(dir, sizeof dir, "break");
    events evs = {0};
    record(dir, V_DEADLOCK, 3, "skipped", NULL, &evs);
    /* The last waiter to begin waiting: every other waiter is blocked. */
    uint64_t target = 0;
    for (size_t i = 0; i < evs.n; i++)
        if (evs.v[i].kind == EV_BLOCKED && evs.v[i].link > target) target = evs.v[i].link;
    assert_true(target > 0);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    replay_opts o = {.break_at = target, .out = m};
    session s;
    session_open(&s, dir, V_DEADLOCK, 3, &o);
    const replay_verdict *v = session_run(&s, "skipped", NULL);
    fclose(m);
    assert_int_equal(v->status, REPLAY_BREAK);
    assert_int_equal(v->seq, target);
    assert_int_equal(v->matched, target - 1);
    assert_int_equal(replay_exit_code(s.rp), 0);
    char want[80];
    snprintf(want, sizeof want, "break before event %llu: gm_wait_begin", (unsigned long long)target);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "issued by the kernel at"));
    assert_non_null(strstr(text, "(tiny_kernel)"));
    /* 2 * (BLOCKS - 1) waiters in all, the one about to wait is running;
     * both releasers are still spending their 2000 scalar cycles. */
    char counts[80];
    snprintf(counts, sizeof counts, ": 1 running, 2 ready, %d blocked, 0 finished",
             2 * (BLOCKS - 1) - 1);
    if (!strstr(text, counts)) fail_msg("no '%s' in:\n%s", counts, text);
    free(text);
    session_close(&s);
    free(evs.v);
}

static void test_checkpoints_reach_events_without_starting_over(void **state) {
    (void)state;
    char dir[300], err[ENGINE_ERRLEN];
    path_of(dir, sizeof dir, "ckpt");
    events evs = {0};
    record(dir, V_PLAIN, 3000, "skipped", NULL, &evs);
    replay_opts o = {.checkpoint_every = 2000};
    session s;
    session_open(&s, dir, V_PLAIN, 3000, &o);
    assert_int_equal(session_run(&s, "skipped", NULL)->status, REPLAY_IDENTICAL);
    int n = replay_checkpoint_count(s.rp);
    assert_int_equal(n, (int)((evs.n - 1) / 2000));
    for (int i = 0; i < n; i++) assert_int_equal(replay_checkpoint_seq(s.rp, i), 2000ULL * (i + 1));

    replay_goto_result g;
    uint64_t last = evs.n;
    assert_int_equal(replay_goto(s.rp, last, 0, &g, err, sizeof err), 0);
    assert_int_equal(g.status, REPLAY_BREAK);
    assert_int_equal(g.reached_seq, last);
    assert_int_equal(g.from_seq, 2000ULL * n);
    assert_int_equal(replay_checkpoint_count(s.rp), n);   /* a goto does not use it up */
    /* Back to the same region twice in a row: both from the same snapshot. */
    for (int k = 0; k < 2; k++) {
        assert_int_equal(replay_goto(s.rp, last - 1 - (uint64_t)k, 0, &g, err, sizeof err), 0);
        assert_int_equal(g.status, REPLAY_BREAK);
        assert_int_equal(g.reached_seq, last - 1 - (uint64_t)k);
        assert_int_equal(g.from_seq, 2000ULL * n);
    }
    assert_int_equal(replay_checkpoint_count(s.rp), n);

    assert_int_equal(replay_goto(s.rp, 5001, 0, &g, err, sizeof err), 0);
    assert_int_equal(g.status, REPLAY_BREAK);
    assert_int_equal(g.reached_seq, 5001);
    assert_int_equal(g.from_seq, 4000);

    assert_int_equal(replay_goto(s.rp, 1500, 0, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "no snapshot before seq 1500"));
    session_close(&s);
    assert_no_children();
    free(evs.v);
}

static void test_checkpoints_thin_out_when_full(void **state) {
    (void)state;
    char dir[300];
    path_of(dir, sizeof dir, "thin");
    events evs = {0};
    record(dir, V_PLAIN, 3000, "skipped", NULL, &evs);
    replay_opts o = {.checkpoint_every = 500, .max_checkpoints = 4};
    session s;
    session_open(&s, dir, V_PLAIN, 3000, &o);
    assert_int_equal(session_run(&s, "skipped", NULL)->status, REPLAY_IDENTICAL);
    int n = replay_checkpoint_count(s.rp);
    assert_true(n >= 2 && n <= 4);
    /* Still spread over the run, on a multiple of the doubled interval. */
    uint64_t step = replay_checkpoint_seq(s.rp, 1) - replay_checkpoint_seq(s.rp, 0);
    assert_true(step > 500 && step % 500 == 0);
    for (int i = 0; i < n; i++) assert_int_equal(replay_checkpoint_seq(s.rp, i) % step, 0);
    assert_true(replay_checkpoint_seq(s.rp, n - 1) + 2 * step > evs.n);
    session_close(&s);
    assert_no_children();
    free(evs.v);
}

static void test_attach_refuses_another_chip(void **state) {
    (void)state;
    char dir[300], err[ENGINE_ERRLEN];
    path_of(dir, sizeof dir, "chip");
    events evs = {0};
    record(dir, V_PLAIN, 1, "skipped", NULL, &evs);
    rec_reader *r;
    assert_int_equal(rec_reader_open(dir, &r, err, sizeof err), 0);
    engine_config cfg;
    tiny_config(&cfg);
    cfg.chip = CHIP_910B4;
    engine *e;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    replay *rp = NULL;
    assert_int_equal(replay_attach(e, r, NULL, &rp, err, sizeof err), -1);
    assert_null(rp);
    assert_non_null(strstr(err, "cores per rank"));
    engine_destroy(e);
    rec_reader_close(r);
    free(evs.v);
}

static int tool_edit(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: test_replay --edit-trace SRC_RUN DST_RUN SEQ\n");
        return 2;
    }
    char err[ENGINE_ERRLEN];
    if (edit_trace(argv[2], argv[3], strtoull(argv[4], NULL, 10), bump_value, err, sizeof err)) {
        fprintf(stderr, "test_replay --edit-trace: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--edit-trace") == 0) return tool_edit(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_comes_from_the_header),
        cmocka_unit_test(test_rdma_poster_comes_from_the_header),
        cmocka_unit_test(test_completed_run_is_identical),
        cmocka_unit_test(test_failed_check_is_reproduced_and_a_passing_one_is_not),
        cmocka_unit_test(test_deadlock_is_reproduced_with_the_same_blocked_cores),
        cmocka_unit_test(test_another_run_diverges_at_the_first_difference),
        cmocka_unit_test(test_one_edited_event_diverges_at_its_seq),
        cmocka_unit_test(test_truncated_trace_says_how_far_it_is_complete),
        cmocka_unit_test(test_break_without_debugger_prints_the_cores),
        cmocka_unit_test(test_checkpoints_reach_events_without_starting_over),
        cmocka_unit_test(test_checkpoints_thin_out_when_full),
        cmocka_unit_test(test_attach_refuses_another_chip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
