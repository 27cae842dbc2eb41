/*
 * bench_engine.c - how fast the emulation itself is, in one run:
 *
 *  1. events per second for a scheduler-heavy micro-kernel: every AIV core
 *     of two ranks does tiny transfers, flag waits and a ring-style
 *     ping-pong with a neighbour (many short waits), observed by a counting
 *     observer. Target: >= 5 M emulated events/s on one host core.
 *  2. bytes per second for large GM<->UB copies (64 KiB DataCopy in and
 *     out) next to host memcpy on the same buffers, as a ratio. Target:
 *     emulated copies at no less than half of memcpy speed.
 *
 * usage: bench_engine [--rounds N] [--copy-mib M]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_support.h"
#include "npurr/device.h"
#include "engine/engine.h"

static void count_event(void *ctx, const engine_event *ev) {
    (void)ev;
    (*(uint64_t *)ctx)++;
}

/* ------------------------------------------------------------ 1. scheduler */
typedef struct { gm_t words, data; int rounds; } pingpong_args;

static void k_pingpong(const void *a) {
    const pingpong_args *p = a;
    int me = GetBlockIdx(), n = GetBlockNum(), rank = GetRank();
    gm_t mine = gm_add(gm_on_rank(p->words, rank), 64 * me);
    gm_t peer = gm_add(gm_on_rank(p->words, rank), 64 * ((me + 1) % n));
    local_t ub = AllocUB(64);
    for (int i = 1; i <= p->rounds; i++) {
        DataCopy(ub, gm_add(gm_on_rank(p->data, rank), 64 * me), 32);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        SetValue64(mine, i);
        WaitGM64(peer, COND_GE, i);
    }
}

static void bench_scheduler(int rounds) {
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 2;
    engine *e = NULL;
    if (engine_create(&cfg, &e, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    pingpong_args p = {.rounds = rounds};
    if (engine_sym_alloc(e, 64 * 48, "words", &p.words, err, sizeof err) ||
        engine_sym_alloc(e, 64 * 48, "data", &p.data, err, sizeof err) ||
        engine_launch(e, "pingpong", k_pingpong, &p, 48, CORE_AIV, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    uint64_t count = 0;
    engine_observer obs = {.ctx = &count, .on_event = count_event};
    engine_set_observer(e, &obs);
    engine_result res;
    double t0 = now_s();
    if (engine_run(e, &res, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    double dt = now_s() - t0;
    printf("scheduler: 2 ranks x 48 AIV, %d rounds of copy+flag+store+wait each\n", rounds);
    printf("  outcome %s, %llu events in %.3f s host, %.3f us virtual\n",
           engine_outcome_name(res.outcome), (unsigned long long)count, dt,
           (double)res.end_time / 1e6);
    printf("  emulated events per second: %.2f M (target >= 5 M)\n", (double)count / dt / 1e6);
    engine_destroy(e);
}

/* ------------------------------------------------------------ 2. copies */
typedef struct { gm_t src, dst; uint64_t bytes; } copy_args;

#define CHUNK (64u * 1024u)

static void k_copy(const void *a) {
    const copy_args *p = a;
    local_t ub[2] = {AllocUB(CHUNK), AllocUB(CHUNK)};
    uint64_t n = p->bytes / CHUNK;
    for (uint64_t i = 0; i < n; i++) {
        local_t b = ub[i & 1];
        if (i >= 2) WaitFlag(MTE3_MTE2, (int)(i & 1));   /* buffer free again */
        DataCopy(b, gm_add(p->src, (int64_t)(i * CHUNK)), CHUNK);
        SetFlag(MTE2_MTE3, (int)(i & 1));
        WaitFlag(MTE2_MTE3, (int)(i & 1));
        DataCopy(gm_add(p->dst, (int64_t)(i * CHUNK)), b, CHUNK);
        if (i + 2 < n) SetFlag(MTE3_MTE2, (int)(i & 1));
    }
}

static void bench_copies(uint64_t mib) {
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 1;
    engine *e = NULL;
    if (engine_create(&cfg, &e, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    copy_args p = {.bytes = mib << 20};
    if (engine_gm_alloc(e, 0, p.bytes, "src", &p.src, err, sizeof err) ||
        engine_gm_alloc(e, 0, p.bytes, "dst", &p.dst, err, sizeof err) ||
        engine_launch(e, "copy", k_copy, &p, 1, CORE_AIV, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    uint8_t *src = engine_gm_host(e, p.src, p.bytes), *dst = engine_gm_host(e, p.dst, p.bytes);
    /* touch both buffers so neither side pays first-touch page faults */
    for (uint64_t i = 0; i < p.bytes; i++) src[i] = (uint8_t)(i * 131u);
    memset(dst, 1, p.bytes);
    uint8_t *bounce = malloc(CHUNK);
    memset(bounce, 0, CHUNK);
    /* host reference: the same two hops (GM -> staging -> GM) with memcpy */
    double t0 = now_s();
    for (int rep = 0; rep < 3; rep++)
        for (uint64_t off = 0; off < p.bytes; off += CHUNK) {
            memcpy(bounce, src + off, CHUNK);
            memcpy(dst + off, bounce, CHUNK);
        }
    double host = (now_s() - t0) / 3;
    memset(dst, 0, p.bytes);
    engine_result res;
    t0 = now_s();
    if (engine_run(e, &res, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    double emu = now_s() - t0;
    int ok = res.outcome == OUTCOME_COMPLETED && memcmp(src, dst, p.bytes) == 0;
    printf("copies: %llu MiB GM->UB->GM in 64 KiB DataCopy pairs, one AIV core\n",
           (unsigned long long)mib);
    printf("  data %s; emulated %.3f ms virtual (%.1f GB/s virtual)\n", ok ? "verified" : "WRONG",
           (double)res.end_time / 1e9, (double)p.bytes / ((double)res.end_time / 1e12) / 1e9);
    printf("  host memcpy (same two hops): %.2f GB/s; emulated copies: %.2f GB/s\n",
           (double)p.bytes / host / 1e9, (double)p.bytes / emu / 1e9);
    printf("  emulated/memcpy speed ratio: %.2f (target >= 0.50)\n", host / emu);
    free(bounce);
    engine_destroy(e);
}

int main(int argc, char **argv) {
    int rounds = 20000;
    uint64_t mib = 512;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--copy-mib") == 0) mib = strtoull(argv[i + 1], NULL, 10);
        else { fprintf(stderr, "usage: bench_engine [--rounds N] [--copy-mib M]\n"); return 2; }
    }
    if (rounds < 1 || mib < 1) { fprintf(stderr, "bench_engine: --rounds and --copy-mib must be positive\n"); return 2; }
    bench_scheduler(rounds);
    bench_copies(mib);
    return 0;
}
