/*
 * cmd_layout.c - `npurr layout -k KERNEL [shape options]`: prints every
 * buffer a kernel allocates, per rank, from its sizing formulas, without
 * running anything (seed 003's worked example is one such call), then the
 * host memory the run starts from in the chosen --payload mode: the kernel's
 * setup on an engine that is not run (GM is mapped, not backed, so this
 * costs only what setup writes).
 */
#include "cli.h"

static void human(char *buf, size_t n, uint64_t bytes) {
    if (bytes >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)bytes / (1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, n, "%.1f MiB", (double)bytes / (1ull << 20));
    else snprintf(buf, n, "%.1f KiB", (double)bytes / (1ull << 10));
}

static int print_memory(const run_options *ro, char *err, size_t errlen) {
    engine *e = NULL;
    void *state = NULL;
    if (engine_create(&ro->config, &e, err, errlen) != ENGINE_OK) return -1;
    if (ro->kernel->setup(e, &ro->kopts, &state, err, errlen) != 0) {
        engine_destroy(e);
        return -1;
    }
    engine_memory m;
    engine_memory_get(e, &m);
    if (ro->kernel->destroy) ro->kernel->destroy(state);
    engine_destroy(e);
    char gm[32], refs[32], lit[32];
    human(gm, sizeof gm, m.logical_gm);
    human(refs, sizeof refs, m.reference_bytes);
    human(lit, sizeof lit, m.literal_bytes);
    int full = ro->config.payload == PAYLOAD_FULL;
    printf("\nhost memory (--payload %s), all %d ranks:\n", engine_payload_name(ro->config.payload),
           ro->config.nodes * ro->config.npus_per_node);
    printf("  logical GM              %s\n", gm);
    if (full) {
        printf("  written by setup        %s (generated inputs stored as bytes)\n", lit);
        printf("  expected resident       up to %s: every byte a run writes is stored\n", gm);
    } else {
        printf("  generated inputs        %s, held as references (no pages)\n", refs);
        printf("  written by setup        %s\n", lit);
        printf("  expected resident       %s at start, plus the metadata the run writes (ring\n"
               "                          words, counts, record headers): moved payload stays\n"
               "                          references (README, \"What fits\")\n", lit);
    }
    return 0;
}

int cmd_layout(int argc, char **argv) {
    char err[ENGINE_ERRLEN] = "";
    run_options ro;
    int rc = run_options_parse(argc, argv, 0, &ro, err, sizeof err);
    if (rc) {
        fprintf(stderr, "npurr layout: %s\n", err);
        return rc;
    }
    if (ro.help) {
        printf("usage: npurr layout -k KERNEL [--nodes N] [--npus-per-node N] [--payload ref|full]\n"
               "                    [kernel options]\n\n"
               "Prints every buffer's size per rank by the kernel's sizing formulas, then the\n"
               "logical GM and the host memory a run starts from in the --payload mode.\n\n");
        run_options_help(stdout, ro.kernel, 0);
        return EXIT_DONE;
    }
    if (!ro.kernel->layout) {
        fprintf(stderr, "npurr layout: -k %s has no layout report\n", ro.kernel->name);
        return EXIT_ERROR;
    }
    if (ro.kernel->layout(&ro.kopts, ro.config.nodes, ro.config.npus_per_node, stdout, err,
                          sizeof err) != 0) {
        fprintf(stderr, "npurr layout: -k %s: %s\n", ro.kernel->name, err);
        return EXIT_ERROR;
    }
    fflush(stdout);
    if (print_memory(&ro, err, sizeof err) != 0) {
        fprintf(stderr, "npurr layout: -k %s: %s\n", ro.kernel->name, err);
        return EXIT_ERROR;
    }
    return EXIT_DONE;
}
