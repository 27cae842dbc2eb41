/*
 * test_dispatch_routing.c - what the layered dispatch reads before it runs:
 * the routing kinds it added (group-limited, active-ranks, drop, npy with
 * its file formats and its errors), option validation with messages that
 * name the option, and `npurr layout` reproducing seed 003's worked example
 * (16 ranks, 10 channels, 1024-token chunks, 1024-byte tokens: ~100 MB).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "kernels/routing.h"
#include "tests/support.h"

static void make_opts(kernel_opts *o, const char *const *kv) {
    support_opts(support_kernel("dispatch-layered"), o, kv);
}

static int gen(const char *spec_text, const routing_shape *sh, int rank, int64_t first, int tokens,
               int32_t *ids, float *w, char *err, size_t errlen) {
    routing_spec spec;
    if (routing_parse(spec_text, &spec, err, errlen)) return -1;
    return routing_generate_at(&spec, sh, 5, rank, first, tokens, ids, w, err, errlen);
}

/* ------------------------------------------------------------ generated kinds */

static void test_group_limited_reaches_at_most_m_nodes(void **s) {
    (void)s;
    routing_shape sh = {.num_ranks = 32, .nodes = 4 * 2, .npus_per_node = 4, .experts = 256,
                        .topk = 8};
    sh.num_ranks = sh.nodes * sh.npus_per_node;
    int T = 300;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T * 8);
    float *w = malloc(sizeof(float) * (size_t)T * 8);
    char err[256];
    for (int m = 1; m <= 4; m += 3) {
        char spec[32];
        snprintf(spec, sizeof spec, m == 4 ? "group-limited" : "group-limited:%d", m);
        assert_int_equal(gen(spec, &sh, 3, 0, T, ids, w, err, sizeof err), 0);
        int per_node = 256 / sh.nodes, widest = 0;
        for (int t = 0; t < T; t++) {
            int hit[16] = {0}, nodes = 0;
            float sum = 0;
            for (int k = 0; k < 8; k++) {
                int32_t e = ids[t * 8 + k];
                assert_true(e >= 0 && e < 256);
                for (int j = 0; j < k; j++) assert_int_not_equal(ids[t * 8 + j], e);
                if (!hit[e / per_node]++) nodes++;
                sum += w[t * 8 + k];
            }
            assert_true(sum > 0.999f && sum < 1.001f);
            if (nodes > widest) widest = nodes;
        }
        assert_int_equal(widest, m);   /* never more, and the limit is reached */
    }
    free(ids);
    free(w);
}

static void test_active_ranks_and_drop(void **s) {
    (void)s;
    routing_shape sh = {.num_ranks = 8, .nodes = 2, .npus_per_node = 4, .experts = 16, .topk = 4};
    int32_t ids[200 * 4];
    float w[200 * 4];
    char err[256];
    /* active-ranks:3 over 2 nodes: ranks 0, 4, 1 (round robin over nodes) */
    assert_int_equal(routing_active_rank(&sh, 0), 0);
    assert_int_equal(routing_active_rank(&sh, 1), 4);
    assert_int_equal(routing_active_rank(&sh, 2), 1);
    assert_int_equal(gen("active-ranks:3", &sh, 2, 0, 200, ids, w, err, sizeof err), 0);
    for (int i = 0; i < 800; i++) {
        int r = ids[i] / 2;
        assert_true(r == 0 || r == 4 || r == 1);
    }
    /* one active rank holds 2 experts: the other two slots are dropped */
    assert_int_equal(gen("active-ranks:1", &sh, 0, 0, 10, ids, w, err, sizeof err), 0);
    for (int t = 0; t < 10; t++) {
        assert_true(ids[t * 4] >= 0 && ids[t * 4 + 1] >= 0);
        assert_int_equal(ids[t * 4 + 2], -1);
        assert_int_equal(ids[t * 4 + 3], -1);
        assert_true(w[t * 4 + 3] == 0.0f);
    }
    assert_int_equal(gen("active-ranks:9", &sh, 0, 0, 1, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "active-ranks:9"));
    /* drop:0.5 drops about half the slots; drop:1 all of them */
    assert_int_equal(gen("drop:0.5", &sh, 1, 0, 200, ids, w, err, sizeof err), 0);
    int dropped = 0;
    for (int i = 0; i < 800; i++) dropped += ids[i] < 0;
    assert_true(dropped > 300 && dropped < 500);
    assert_int_equal(gen("drop:1", &sh, 1, 0, 20, ids, w, err, sizeof err), 0);
    for (int i = 0; i < 80; i++) assert_int_equal(ids[i], -1);
    routing_spec spec;
    assert_int_equal(routing_parse("drop:1.5", &spec, err, sizeof err), -1);
    assert_non_null(strstr(err, "--routing drop:1.5"));
    assert_int_equal(routing_parse("group-limited:", &spec, err, sizeof err), -1);
    assert_int_equal(routing_parse("group-limited:0", &spec, err, sizeof err), -1);
}

/* ------------------------------------------------------------ npy */

/* Writes a .npy file: descr like "<i4", shape rows x cols, values. */
static void write_npy(const char *path, const char *descr, int rows, int cols,
                      const int64_t *vals, int version, int fortran) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char hdr[256];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': %s, 'shape': (%d, %d), }",
                     descr, fortran ? "True" : "False", rows, cols);
    int pre = version == 1 ? 10 : 12;
    int total = (pre + n + 1 + 63) / 64 * 64;
    while (pre + n + 1 < total) hdr[n++] = ' ';
    hdr[n++] = '\n';
    fwrite("\x93NUMPY", 1, 6, f);
    unsigned char v[2] = {(unsigned char)version, 0};
    fwrite(v, 1, 2, f);
    unsigned char len[4] = {(unsigned char)(n & 0xff), (unsigned char)(n >> 8), 0, 0};
    fwrite(len, 1, version == 1 ? 2 : 4, f);
    fwrite(hdr, 1, (size_t)n, f);
    int size = descr[1] == 'i' ? descr[2] - '0' : 4;
    int big = descr[0] == '>';
    for (int i = 0; i < rows * cols; i++) {
        unsigned char b[8];
        for (int j = 0; j < size; j++) {
            unsigned char byte = (unsigned char)((uint64_t)vals[i] >> (8 * j));
            b[big ? size - 1 - j : j] = byte;
        }
        fwrite(b, 1, (size_t)size, f);
    }
    fclose(f);
}

static void test_npy_formats(void **s) {
    (void)s;
    char dir[] = "/tmp/npurr_npy_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], spec[300];
    routing_shape sh = {.num_ranks = 4, .nodes = 2, .npus_per_node = 2, .experts = 8, .topk = 2};
    int64_t vals[12] = {0, 1, 7, -1, -1, -1, 3, 2, 5, 6, 4, 0};
    int32_t ids[12];
    float w[12];
    char err[512];
    /* one file, every rank's rows back to back; int64 and int32; v1 and v2; both byte orders */
    const char *descr[] = {"<i8", "<i4", ">i4", ">i8"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/all%d.npy", dir, i);
        write_npy(path, descr[i], 6, 2, vals, i % 2 ? 2 : 1, 0);
        snprintf(spec, sizeof spec, "npy:%s", path);
        assert_int_equal(gen(spec, &sh, 1, 2, 3, ids, w, err, sizeof err), 0);
        for (int k = 0; k < 6; k++) assert_int_equal(ids[k], vals[4 + k]);
        assert_true(w[0] == 0.0f && w[1] == 0.0f);   /* the dropped row */
        assert_true(w[2] + w[3] > 0.999f);
    }
    /* {rank} names one file per rank */
    snprintf(path, sizeof path, "%s/r1.npy", dir);
    write_npy(path, "<i4", 3, 2, vals, 1, 0);
    snprintf(spec, sizeof spec, "npy:%s/r{rank}.npy", dir);
    assert_int_equal(gen(spec, &sh, 1, 999, 3, ids, w, err, sizeof err), 0);
    for (int k = 0; k < 6; k++) assert_int_equal(ids[k], vals[k]);
    routing_spec sp;
    assert_int_equal(routing_parse(spec, &sp, err, sizeof err), 0);
    int64_t rows, cols;
    int per_rank;
    assert_int_equal(routing_npy_shape(&sp, 1, &rows, &cols, &per_rank, err, sizeof err), 0);
    assert_true(rows == 3 && cols == 2 && per_rank == 1);
    /* errors name the routing, the file and what is wrong */
    assert_int_equal(gen(spec, &sh, 1, 0, 4, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "rank 1 needs exactly 4"));
    assert_int_equal(gen(spec, &sh, 2, 0, 3, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    routing_shape sh3 = sh;
    sh3.topk = 3;
    assert_int_equal(gen(spec, &sh3, 1, 0, 3, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "columns but --topk is 3"));
    int64_t bad[4] = {0, 8, 1, 2};
    snprintf(path, sizeof path, "%s/bad.npy", dir);
    write_npy(path, "<i4", 2, 2, bad, 1, 0);
    snprintf(spec, sizeof spec, "npy:%s", path);
    assert_int_equal(gen(spec, &sh, 0, 0, 2, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "row 0 column 1 is 8"));
    int64_t dup[4] = {3, 3, 1, 2};
    write_npy(path, "<i4", 2, 2, dup, 1, 0);
    assert_int_equal(gen(spec, &sh, 0, 0, 2, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "names expert 3 twice"));
    write_npy(path, "<i4", 2, 2, vals, 1, 1);
    assert_int_equal(gen(spec, &sh, 0, 0, 2, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "Fortran order"));
    write_npy(path, "<f4", 2, 2, vals, 1, 0);
    assert_int_equal(gen(spec, &sh, 0, 0, 2, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "expected int32 or int64"));
    FILE *f = fopen(path, "wb");
    fputs("not numpy", f);
    fclose(f);
    assert_int_equal(gen(spec, &sh, 0, 0, 2, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a .npy file"));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The kernel runs on npy routing and insists on the right row count. */
static void test_dispatch_on_npy_routing(void **s) {
    (void)s;
    char dir[] = "/tmp/npurr_npy_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], spec[300];
    snprintf(path, sizeof path, "%s/route.npy", dir);
    /* 4 ranks with 3, 0, 2, 1 tokens = 6 rows */
    int64_t vals[12] = {0, 7, -1, -1, 3, 4, 6, 5, 1, 2, 2, 6};
    write_npy(path, "<i8", 6, 2, vals, 1, 0);
    snprintf(spec, sizeof spec, "npy:%s", path);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 2;
    cfg.npus_per_node = 2;
    const char *kv[] = {"tokens", "3,0,2,1", "hidden", "16", "topk", "2", "experts", "8",
                        "routing", spec, "rdma-senders", "2", "rdma-coordinators", "1",
                        "forwarders", "2", "forwarder-coordinators", "1", "hccs-receivers", "1",
                        NULL};
    kernel_opts o;
    make_opts(&o, kv);
    engine *e;
    char err[512];
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    void *state = NULL;
    const kernel_desc *d = kernels_find("dispatch-layered");
    if (d->setup(e, &o, &state, err, sizeof err)) fail_msg("setup: %s", err);
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    assert_int_equal(res.outcome, OUTCOME_COMPLETED);
    char msg[1024];
    if (d->check(e, state, msg, sizeof msg)) fail_msg("check: %s", msg);
    dispatch_state *st = state;
    assert_int_equal(st->plan.topk_idx[3 * 2], 6);   /* rank 2's first token is row 3 */
    assert_int_equal(st->plan.recv_total[3], 3);     /* experts 6, 7: rows 0, 3 and 5 */
    d->destroy(state);
    engine_destroy(e);
    /* the file holds 6 rows; 7 tokens in all is refused */
    const char *kv7[] = {"tokens", "3,1,2,1", "hidden", "16", "topk", "2", "experts", "8",
                         "routing", spec, NULL};
    make_opts(&o, kv7);
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    assert_int_equal(d->setup(e, &o, &state, err, sizeof err), -1);
    engine_destroy(e);
    if (!strstr(err, "the file has 6 rows but the 4 ranks have 7 tokens")) fail_msg("%s", err);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ------------------------------------------------------------ options */

static void expect_error(int nodes, int npus, const char *const *kv, const char *needle) {
    kernel_opts o;
    make_opts(&o, kv);
    dispatch_shape sh;
    char err[512];
    assert_int_equal(dispatch_shape_from_opts(&o, nodes, npus, 48, &sh, err, sizeof err), -1);
    if (!strstr(err, needle)) fail_msg("expected '%s' in: %s", needle, err);
}

static void test_bad_options(void **s) {
    (void)s;
    expect_error(0, 8, NULL, "--nodes 0");
    const char *tokens[] = {"tokens", "1,2,3", NULL};
    expect_error(2, 2, tokens, "--tokens 1,2,3: 3 values given; give one for every rank or exactly 4");
    const char *neg[] = {"tokens", "4,x", NULL};
    expect_error(2, 1, neg, "--tokens 4,x");
    const char *fp8[] = {"dtype", "fp8", "hidden", "100", NULL};
    expect_error(2, 2, fp8, "--hidden 100: fp8 needs a multiple of 128");
    const char *dtype[] = {"dtype", "fp16", NULL};
    expect_error(2, 2, dtype, "--dtype fp16");
    const char *experts[] = {"experts", "10", NULL};
    expect_error(2, 2, experts, "--experts 10: must be a multiple of the 4 ranks");
    const char *channels[] = {"channels", "12", NULL};
    expect_error(2, 2, channels, "--rdma-senders 11: every one of the 12 channels needs a core");
    const char *cores[] = {"rdma-senders", "20", "forwarders", "20", NULL};
    expect_error(2, 2, cores, "more than the chip's 48");
    const char *ring[] = {"rdma-chunk", "8", "rdma-send-chunk", "6", "credit-batch", "4", NULL};
    expect_error(2, 2, ring, "--rdma-chunk 8: smaller than --rdma-send-chunk 6 + --credit-batch 4 - 1");
    const char *hccs[] = {"hccs-chunk", "4", NULL};
    expect_error(2, 2, hccs, "--hccs-send-chunk 8: must be between 1 and 4");
    const char *inject[] = {"inject", "everything", NULL};
    expect_error(2, 2, inject, "--inject everything");
    const char *big[] = {"hidden", "65536", NULL};
    expect_error(2, 2, big, "does not fit twice in the 196608 B UB");
    const char *disp[] = {"dispatches", "5", NULL};
    expect_error(2, 2, disp, "--dispatches 5");
}

/* A fault that has nothing to break is refused rather than run clean. */
static void test_fault_without_target(void **s) {
    (void)s;
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 2;
    cfg.npus_per_node = 2;
    const kernel_desc *d = kernels_find("dispatch-layered");
    char err[512];
    /* active-ranks:1 = rank 0 only: rank 0 never sends to the other node */
    const char *kv[] = {"tokens", "4", "hidden", "16", "topk", "2", "experts", "8",
                        "routing", "active-ranks:1", "inject", "lost-tail", NULL};
    kernel_opts o;
    make_opts(&o, kv);
    engine *e;
    void *state = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    assert_int_equal(d->setup(e, &o, &state, err, sizeof err), -1);
    engine_destroy(e);
    assert_non_null(strstr(err, "--inject lost-tail: rank 0 sends no token to another node"));
    /* 8 tokens per channel-ring with batch 1: nothing partial to leak */
    const char *kv2[] = {"tokens", "4", "hidden", "16", "topk", "2", "experts", "8",
                         "credit-batch", "1", "inject", "credit-leak", NULL};
    make_opts(&o, kv2);
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    assert_int_equal(d->setup(e, &o, &state, err, sizeof err), -1);
    engine_destroy(e);
    assert_non_null(strstr(err, "--inject credit-leak"));
}

/* ------------------------------------------------------------ layout */

static void test_layout_worked_example(void **s) {
    (void)s;
    /* 16 ranks = 2 nodes x 8, 10 channels, 1024-token chunks, 448 bf16 +
     * SourceMeta + 2 x 8 top-k ints = 1004 B -> 1024 B tokens. */
    const char *kv[] = {"channels", "10", "rdma-chunk", "1024", "hccs-chunk", "1024",
                        "hidden", "448", "topk", "8", "tokens", "64", NULL};
    kernel_opts o;
    make_opts(&o, kv);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[512];
    engine_config cfg = support_config(2, 8, PAYLOAD_REF);
    assert_int_equal(dispatch_layout(&o, support_topo(&cfg), f, err, sizeof err), 0);
    fclose(f);
    /* seed 003: B_rdma = 10*2*(1024*1024 + 88), B_hccs = 10*8*(1024*1024 + 8*2 + 8) */
    const char *want[] = {"S_token = 1024 B", "20973280 B", "83888000 B", "104861280 B",
                          "100.004 MiB", "16 ranks", "rdma_channel_meta", "hccs_channel_prefix_start/end",
                          "HCCSReceiver", NULL};
    for (int i = 0; want[i]; i++)
        if (!strstr(buf, want[i])) fail_msg("expected '%s' in:\n%s", want[i], buf);
    int rank_lines = 0;
    for (char *p = buf; (p = strchr(p, '\n')); p++)
        if (p[1] >= '0' && p[1] <= '9') rank_lines++;
    assert_int_equal(rank_lines, 16);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_limited_reaches_at_most_m_nodes),
        cmocka_unit_test(test_active_ranks_and_drop),
        cmocka_unit_test(test_npy_formats),
        cmocka_unit_test(test_dispatch_on_npy_routing),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_fault_without_target),
        cmocka_unit_test(test_layout_worked_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
