/*
 * bench_combine.c - scheme 2 (gather-pack) vs scheme 1 (reorder first) of
 * seed 000 on the emulated cluster, at DeepSeek-V3 size by default:
 * hidden 7168, 4096 tokens per rank, top-8, 256 experts, 8 NPUs.
 *
 * For each scheme it prints the emulated time of the whole combine and of
 * the sender phase alone (what the seed compares), the bytes the sender
 * moved through HBM and over HCCS (counted from the transfers themselves by
 * an observer), the fraction of the configured HBM and HCCS bandwidth that
 * is (bytes / (time x bandwidth)), and host wall time and peak RSS. The seed
 * claims scheme 1 pays one extra full HBM round trip; the ratio line says
 * whether the emulation agrees.
 *
 * Memory: x and recv are tokens x topk x hidden x 2 B per rank (470 MB each
 * at full size), and scheme 1 adds x_sorted: about 11.3 GB at full size with
 * 8 ranks. The bench estimates this first and refuses to start if the
 * machine's available memory is smaller; --tokens N shrinks the run.
 *
 * Usage: bench_combine [--tokens N] [--hidden H] [--topk K] [--experts E]
 *                      [--npus N] [--staging-bytes B] [--ring-bytes B]
 *                      [--routing SPEC] [--scheme 1|2|both] [--no-check]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/bench_support.h"
#include "engine/engine.h"
#include "kernels/combine.h"
#include "kernels/kernels.h"

typedef struct counters {
    uint32_t sender_name[2];         /* string ids of the sender launches */
    uint8_t *is_sender;              /* per (rank, core): running a sender launch */
    int cores_per_rank;
    uint64_t sender_end;             /* last sender KERNEL_END */
    uint64_t hbm_bytes;              /* sender transfers, GM side, local or remote HBM */
    uint64_t hccs_bytes;             /* sender transfers that crossed an HCCS link */
    uint64_t all_hbm_bytes;          /* every transfer */
} counters;

static void on_string(void *ctx, uint32_t id, const char *text) {
    counters *c = ctx;
    if (strcmp(text, "combine_sender") == 0) c->sender_name[0] = id;
    if (strcmp(text, "combine_sender_inplace") == 0) c->sender_name[1] = id;
}

static int is_gm(uint64_t raw) { return (raw >> 63) == 0; }

static void on_event(void *ctx, const engine_event *ev) {
    counters *c = ctx;
    size_t core = (size_t)ev->rank * (size_t)c->cores_per_rank + ev->core;
    if (ev->kind == EV_KERNEL_BEGIN) {
        uint32_t name = (uint32_t)ev->value;
        c->is_sender[core] = name && (name == c->sender_name[0] || name == c->sender_name[1]);
        return;
    }
    if (ev->kind == EV_KERNEL_END) {
        if (c->is_sender[core] && ev->time > c->sender_end) c->sender_end = ev->time;
        return;
    }
    if (ev->kind != EV_XFER_DONE) return;
    if (ev->sub == XFER_VEC || ev->sub == XFER_REMOTE_STORE) return;
    uint64_t hbm = (is_gm(ev->addr) ? ev->len : 0) + (is_gm((uint64_t)ev->aux) ? ev->len : 0);
    c->all_hbm_bytes += hbm;
    if (!c->is_sender[core]) return;
    c->hbm_bytes += hbm;
    if ((ev->sub == XFER_HCCS_PUT || ev->sub == XFER_HCCS_GET) && ev->peer != ev->rank)
        c->hccs_bytes += ev->len;
}

typedef struct result {
    double total_us, sender_us, wall_s, check_s;
    uint64_t hbm_bytes, hccs_bytes, all_hbm_bytes;
    int ok;
} result;

static int run_scheme(const char *kernel, kernel_opts *o, int npus, int do_check, result *out) {
    const kernel_desc *d = kernels_find(kernel);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = npus;
    engine *e;
    char err[1024];
    if (engine_create(&cfg, &e, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "bench_combine: %s\n", err);
        return -1;
    }
    counters c = {0};
    c.cores_per_rank = engine_cores_per_rank(e);
    c.is_sender = calloc((size_t)engine_core_count(e), 1);
    engine_observer obs = {.ctx = &c, .on_string = on_string, .on_event = on_event};
    engine_set_observer(e, &obs);
    double t0 = now_s();
    void *state = NULL;
    if (d->setup(e, o, &state, err, sizeof err) != 0) {
        fprintf(stderr, "bench_combine: %s: %s\n", kernel, err);
        engine_destroy(e);
        free(c.is_sender);
        return -1;
    }
    engine_result res;
    if (engine_run(e, &res, err, sizeof err) != ENGINE_OK || res.outcome != OUTCOME_COMPLETED) {
        fprintf(stderr, "bench_combine: %s: run did not complete: %s %s\n", kernel, err,
                res.message);
        d->destroy(state);
        engine_destroy(e);
        free(c.is_sender);
        return -1;
    }
    double t1 = now_s();
    out->ok = 1;
    out->check_s = 0;
    if (do_check) {
        char msg[2048];
        if (d->check(e, state, msg, sizeof msg) != 0) {
            fprintf(stderr, "bench_combine: %s: check failed: %s\n", kernel, msg);
            out->ok = 0;
        }
        out->check_s = now_s() - t1;
    }
    out->total_us = (double)res.end_time / 1e6;
    out->sender_us = (double)c.sender_end / 1e6;
    out->wall_s = t1 - t0;
    out->hbm_bytes = c.hbm_bytes;
    out->hccs_bytes = c.hccs_bytes;
    out->all_hbm_bytes = c.all_hbm_bytes;
    d->destroy(state);
    engine_destroy(e);
    free(c.is_sender);
    return 0;
}

/* One scheme's figures, against the timing model's HBM and HCCS rates. */
static void print_scheme(int s, const char *name, const result *r, int npus, const engine_hw *hw) {
    double hbm_frac = (double)r->hbm_bytes / (r->sender_us * 1e-6 * (double)npus * hw->hbm_gbps * 1e9);
    double links = (double)npus * (double)(npus - 1);
    double hccs_frac = links > 0 ? (double)r->hccs_bytes /
                                       (r->sender_us * 1e-6 * links * hw->hccs_link_gbps * 1e9)
                                 : 0.0;
    printf("\nscheme %d (%s)%s\n", s, name, r->ok ? "" : "  ** CHECK FAILED **");
    printf("  emulated time: combine %.2f us, sender phase %.2f us\n", r->total_us, r->sender_us);
    printf("  sender bytes: HBM %.3f GB, HCCS %.3f GB (all transfers: HBM %.3f GB)\n",
           r->hbm_bytes / 1e9, r->hccs_bytes / 1e9, r->all_hbm_bytes / 1e9);
    printf("  sender bandwidth: HBM %.1f GB/s per NPU = %.1f%% of %.0f GB/s; HCCS %.1f GB/s "
           "per link = %.1f%% of %.0f GB/s\n",
           r->hbm_bytes / (r->sender_us * 1e3) / npus, 100 * hbm_frac, hw->hbm_gbps,
           links > 0 ? r->hccs_bytes / (r->sender_us * 1e3) / links : 0.0, 100 * hccs_frac,
           hw->hccs_link_gbps);
    printf("  host: setup+run %.2f s, check %.2f s, peak RSS so far %ld MB\n", r->wall_s,
           r->check_s, peak_rss_mb());
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: bench_combine [--tokens N] [--hidden H] [--topk K] [--experts E] "
                   "[--npus N] [--staging-bytes B] [--ring-bytes B] [--routing SPEC] "
                   "[--scheme 1|2|both] [--no-check]\n");
            return 0;
        }
    const char *tokens = arg_value(argc, argv, "--tokens", "4096");
    const char *hidden = arg_value(argc, argv, "--hidden", "7168");
    const char *topk = arg_value(argc, argv, "--topk", "8");
    const char *experts = arg_value(argc, argv, "--experts", "256");
    const char *staging = arg_value(argc, argv, "--staging-bytes", "65536");
    const char *ring = arg_value(argc, argv, "--ring-bytes", "1048576");
    const char *routing = arg_value(argc, argv, "--routing", "uniform");
    const char *scheme = arg_value(argc, argv, "--scheme", "both");
    int npus = atoi(arg_value(argc, argv, "--npus", "8"));
    int do_check = 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--no-check") == 0) do_check = 0;

    const kernel_desc *d = kernels_find("combine-sender");
    kernel_opts o = {0};
    for (const kernel_option *opt = d->options; opt->name; opt++) {
        o.names[o.count] = opt->name;
        o.values[o.count++] = opt->default_value;
    }
    const char *set[][2] = {{"tokens", tokens},          {"hidden", hidden},
                            {"topk", topk},              {"experts", experts},
                            {"staging-bytes", staging},  {"ring-bytes", ring},
                            {"routing", routing}};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        for (int j = 0; j < o.count; j++)
            if (strcmp(o.names[j], set[i][0]) == 0) o.values[j] = set[i][1];

    int want1 = strcmp(scheme, "1") == 0 || strcmp(scheme, "both") == 0;
    int want2 = strcmp(scheme, "2") == 0 || strcmp(scheme, "both") == 0;
    if (!want1 && !want2) {
        fprintf(stderr, "bench_combine: --scheme %s: expected 1, 2 or both\n", scheme);
        return 2;
    }

    /* Memory estimate: x + recv (+ x_sorted for scheme 1) per rank. */
    uint64_t per_rank = (uint64_t)atoll(tokens) * (uint64_t)atoll(topk) * (uint64_t)atoll(hidden) * 2;
    uint64_t need = per_rank * (uint64_t)npus * (want1 ? 3 : 2);
    uint64_t avail = mem_available();
    printf("combine-sender benchmark: %d NPUs, tokens %s per rank, hidden %s, top-%s, %s experts, "
           "staging %s B, ring %s B, routing %s\n",
           npus, tokens, hidden, topk, experts, staging, ring, routing);
    printf("GM needed by the largest run: %.2f GB (available %.2f GB)\n", need / 1e9, avail / 1e9);
    if (avail && need > avail - avail / 8) {
        fprintf(stderr,
                "bench_combine: %.2f GB of GM does not fit in the %.2f GB available; "
                "use --tokens to shrink the run\n",
                need / 1e9, avail / 1e9);
        return 1;
    }

    engine_hw hw;
    engine_hw_defaults(&hw);
    result r[3] = {0};
    const char *names[3] = {"", "combine-sender-inplace", "combine-sender"};
    for (int s = 2; s >= 1; s--) {
        if ((s == 1 && !want1) || (s == 2 && !want2)) continue;
        if (run_scheme(names[s], &o, npus, do_check, &r[s]) != 0) return 1;
        print_scheme(s, names[s], &r[s], npus, &hw);
    }
    if (want1 && want2)
        printf("\nscheme 1 / scheme 2: sender phase %.2fx, whole combine %.2fx, sender HBM bytes "
               "%.2fx\n",
               r[1].sender_us / r[2].sender_us, r[1].total_us / r[2].total_us,
               (double)r[1].hbm_bytes / (double)r[2].hbm_bytes);
    return (r[1].ok || !want1) && (r[2].ok || !want2) ? 0 : 4;
}
