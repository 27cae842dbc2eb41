/*
 * bench_dispatch.c - the layered dispatch (-k dispatch-layered) at
 * DeepSeek-V3 size on the emulated cluster: 4096 tokens per rank, hidden
 * 7168 bf16, top-8 of 256 experts, on 2 and 4 nodes of 8 NPUs (EP16, EP32).
 *
 * For each cluster it prints the emulated time of the whole kernel and of
 * the data phase alone (from the first role starting to the end), the
 * algorithm bandwidth in DeepEP's style (tests/test_internode.py: RDMA
 * bytes = (token, destination node) pairs, the own node included, x hidden
 * x 2 B, per rank, over the dispatch time; "NVL" bytes = received rows x
 * hidden x 2 B), the bytes that really crossed the NICs, host wall time and
 * peak RSS, and the published figures to compare with: DeepEP internode
 * 43-58 GB/s (H800, EP16-64, RDMA logical bandwidth) and sgl-kernel-npu A2
 * EP16 87 GB/s dispatch.
 *
 * Memory: recv_x alone is ~0.42 GB per rank at EP32 (~13.5 GB), x 1.9 GB
 * and the rings ~80 MB per rank. The bench estimates each run first and
 * skips it, saying so, when the machine's available memory is smaller;
 * --tokens N shrinks the run.
 *
 * Usage: bench_dispatch [--nodes 2,4] [--tokens N] [--hidden H] [--topk K]
 *                       [--experts E] [--routing SPEC] [--channels C]
 *                       [--rdma-chunk T] [--hccs-chunk T] [--no-check]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/bench_support.h"
#include "engine/engine.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

typedef struct counters {
    uint32_t role_ids[5];        /* string ids of the five data-phase roles */
    uint64_t data_start;         /* first core to take a data-phase role */
    uint64_t rdma_wire_bytes;    /* RdmaWrite bytes that completed */
} counters;

static const char *const data_roles[5] = {"RDMASender", "RDMACoordinator", "RDMA2HCCSForwarder",
                                          "ForwarderCoordinator", "HCCSReceiver"};

static void on_string(void *ctx, uint32_t id, const char *text) {
    counters *c = ctx;
    for (int i = 0; i < 5; i++)
        if (strcmp(text, data_roles[i]) == 0) c->role_ids[i] = id;
}

static void on_event(void *ctx, const engine_event *ev) {
    counters *c = ctx;
    if (ev->kind == EV_ROLE) {
        for (int i = 0; i < 5; i++)
            if (c->role_ids[i] && (uint32_t)ev->value == c->role_ids[i] &&
                (c->data_start == 0 || ev->time < c->data_start))
                c->data_start = ev->time;
    } else if (ev->kind == EV_XFER_DONE && ev->sub == XFER_RDMA_WRITE) {
        c->rdma_wire_bytes += ev->len;
    }
}

static void set_opt(kernel_opts *o, const char *name, const char *value) {
    for (int j = 0; j < o->count; j++)
        if (strcmp(o->names[j], name) == 0) o->values[j] = value;
}

/* GM the run will touch, from the plan: inputs, recv outputs, every ring
 * slot (they all wrap at this size), the tables. */
static uint64_t estimate_bytes(const dispatch_plan *p) {
    const dispatch_shape *sh = &p->sh;
    uint64_t R = (uint64_t)sh->num_ranks, S = sh->token_bytes, total = 0;
    for (int r = 0; r < sh->num_ranks; r++) {
        uint64_t T = (uint64_t)sh->tokens[r], n = (uint64_t)p->recv_total[r];
        total += T * (sh->x_row_bytes + (uint64_t)sh->topk * 8 + R * 5);
        total += n * (sh->x_row_bytes + (uint64_t)sh->topk * 8 + 12);
    }
    uint64_t rings = (uint64_t)sh->channels *
                     ((uint64_t)sh->nodes * (uint64_t)sh->rdma_ring_tokens * 2 +
                      (uint64_t)sh->npus * (uint64_t)sh->hccs_ring_tokens) * S;
    /* 192 KiB of UB per launched core, host copies of the routing */
    return total + R * rings + R * (uint64_t)sh->block_dim * UB_BYTES +
           (uint64_t)p->token_base[sh->num_ranks] * R * 5;
}

/* (token, destination node) pairs and received rows, over all ranks. */
static void count_rows(const dispatch_plan *plan, uint64_t *rdma_pairs, uint64_t *recv_rows) {
    const dispatch_shape *sh = &plan->sh;
    *rdma_pairs = *recv_rows = 0;
    for (int s = 0; s < sh->num_ranks; s++)
        for (int n = 0; n < sh->nodes; n++)
            *rdma_pairs += (uint64_t)plan->num_tokens_per_rdma_rank[(size_t)s * sh->nodes + n];
    for (int r = 0; r < sh->num_ranks; r++) *recv_rows += (uint64_t)plan->recv_total[r];
}

/* The algorithm bandwidth in DeepEP's style and what crossed the NICs. */
static void print_bandwidth(const dispatch_shape *sh, uint64_t rdma_pairs, uint64_t recv_rows,
                            uint64_t rdma_wire_bytes, double data_s) {
    int R = sh->num_ranks;
    double hidden2 = (double)sh->hidden * 2.0;
    double rdma_logical = (double)rdma_pairs * hidden2 / R;   /* per rank */
    double nvl = (double)recv_rows * hidden2 / R;
    printf("  algorithm bw       %.1f GB/s RDMA (DeepEP style: %.0f (token, node) pairs per rank "
           "x %d B), %.1f GB/s NVL (received rows x %d B)\n",
           rdma_logical / data_s / 1e9, (double)rdma_pairs / R, (int)hidden2, nvl / data_s / 1e9,
           (int)hidden2);
    printf("  on the wire        %.1f GB/s RDMA per rank (records incl. SourceMeta, other nodes only)\n",
           (double)rdma_wire_bytes / R / data_s / 1e9);
}

static int bench_nodes(kernel_opts *o, int nodes, int do_check) {
    const kernel_desc *d = kernels_find("dispatch-layered");
    char err[1024];
    dispatch_shape sh;
    dispatch_plan plan;
    if (dispatch_shape_from_opts(o, nodes, 8, 48, &sh, err, sizeof err) ||
        dispatch_plan_build(&sh, &plan, err, sizeof err)) {
        fprintf(stderr, "bench_dispatch: %d nodes: %s\n", nodes, err);
        return -1;
    }
    int R = sh.num_ranks;
    uint64_t need = estimate_bytes(&plan), avail = mem_available();
    uint64_t rdma_pairs, recv_rows;
    count_rows(&plan, &rdma_pairs, &recv_rows);
    dispatch_plan_free(&plan);
    printf("\nEP%d: %d nodes x 8 NPUs, %d tokens per rank, hidden %d %s, top-%d of %d experts, "
           "routing %s, %d channels, RDMA ring %d / HCCS ring %d tokens\n",
           R, nodes, sh.tokens[0], sh.hidden, sh.dtype == DISPATCH_FP8 ? "fp8" : "bf16", sh.topk,
           sh.experts, sh.routing.text, sh.channels, sh.rdma_ring_tokens, sh.hccs_ring_tokens);
    printf("  estimated memory   %.2f GiB (available %.2f GiB)\n", (double)need / (1 << 30),
           (double)avail / (1 << 30));
    if (avail && need > avail) {
        printf("  skipped: the run needs more memory than is available; try --tokens %d\n",
               (int)((double)sh.tokens[0] * (double)avail / (double)need * 0.8));
        return 0;
    }
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = 8;
    engine *e;
    if (engine_create(&cfg, &e, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "bench_dispatch: %s\n", err);
        return -1;
    }
    counters c = {0};
    engine_observer obs = {.ctx = &c, .on_string = on_string, .on_event = on_event};
    engine_set_observer(e, &obs);
    double t0 = now_s();
    void *state = NULL;
    if (d->setup(e, o, &state, err, sizeof err) != 0) {
        fprintf(stderr, "bench_dispatch: %d nodes: %s\n", nodes, err);
        engine_destroy(e);
        return -1;
    }
    double t1 = now_s();
    engine_result res;
    if (engine_run(e, &res, err, sizeof err) != ENGINE_OK || res.outcome != OUTCOME_COMPLETED) {
        fprintf(stderr, "bench_dispatch: %d nodes: the run did not complete: %s %s\n", nodes, err,
                res.message);
        d->destroy(state);
        engine_destroy(e);
        return -1;
    }
    double t2 = now_s();
    int ok = 1;
    double check_s = 0;
    if (do_check) {
        char msg[2048];
        if (d->check(e, state, msg, sizeof msg) != 0) {
            fprintf(stderr, "bench_dispatch: %d nodes: check failed: %s\n", nodes, msg);
            ok = 0;
        }
        check_s = now_s() - t2;
    }
    double data_s = (double)(res.end_time - c.data_start) * 1e-12;
    printf("  emulated time      %.1f us kernel (notify + dispatch), %.1f us dispatch phase\n",
           (double)res.end_time * 1e-6, data_s * 1e6);
    print_bandwidth(&sh, rdma_pairs, recv_rows, c.rdma_wire_bytes, data_s);
    printf("  host               setup %.1f s, run %.1f s (%.2f M events, %.2f M events/s), check "
           "%.1f s%s, peak RSS %ld MiB\n",
           t1 - t0, t2 - t1, (double)res.events / 1e6, (double)res.events / (t2 - t1) / 1e6, check_s,
           do_check ? (ok ? " passed" : " FAILED") : " skipped", peak_rss_mb());
    printf("  reference          DeepEP internode 43-58 GB/s RDMA (H800, EP16-64); sgl-kernel-npu "
           "A2 EP16 87 GB/s dispatch\n");
    d->destroy(state);
    engine_destroy(e);
    return ok ? 0 : -1;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: bench_dispatch [--nodes 2,4] [--tokens N] [--hidden H] [--topk K] "
                   "[--experts E] [--routing SPEC] [--channels C] [--rdma-chunk T] "
                   "[--hccs-chunk T] [--no-check]\n");
            return 0;
        }
    const char *nodes = arg_value(argc, argv, "--nodes", "2,4");
    int do_check = 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--no-check") == 0) do_check = 0;
    const kernel_desc *d = kernels_find("dispatch-layered");
    kernel_opts o = {0};
    for (const kernel_option *opt = d->options; opt->name; opt++) {
        o.names[o.count] = opt->name;
        o.values[o.count++] = opt->default_value;
    }
    /* DeepEP's test routes to min(nodes, 4) node groups: group-limited. */
    set_opt(&o, "tokens", arg_value(argc, argv, "--tokens", "4096"));
    set_opt(&o, "hidden", arg_value(argc, argv, "--hidden", "7168"));
    set_opt(&o, "topk", arg_value(argc, argv, "--topk", "8"));
    set_opt(&o, "experts", arg_value(argc, argv, "--experts", "256"));
    set_opt(&o, "routing", arg_value(argc, argv, "--routing", "group-limited"));
    set_opt(&o, "channels", arg_value(argc, argv, "--channels", "0"));
    set_opt(&o, "rdma-chunk", arg_value(argc, argv, "--rdma-chunk", "32"));
    set_opt(&o, "hccs-chunk", arg_value(argc, argv, "--hccs-chunk", "32"));
    set_opt(&o, "dispatches", "1");
    printf("bench_dispatch: -k dispatch-layered, emulated 910B2 (48 AIV per rank)\n");
    int rc = 0;
    for (const char *p = nodes; *p;) {
        char *end = NULL;
        long n = strtol(p, &end, 10);
        if (end == p || n < 2) {
            fprintf(stderr, "bench_dispatch: --nodes %s: expected a list of node counts >= 2\n",
                    nodes);
            return 2;
        }
        if (bench_nodes(&o, (int)n, do_check)) rc = 1;
        p = *end == ',' ? end + 1 : end;
    }
    return rc;
}
