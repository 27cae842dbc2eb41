/*
 * cmd_layout.c - `npurr layout -k KERNEL [shape options]`: prints every
 * buffer a kernel allocates, per rank, from its sizing formulas, without
 * running anything (seed 003's worked example is one such call), then the
 * host memory a run of these options needs in the chosen --payload mode:
 * the same estimate `record` checks against the machine before it starts
 * (kernel_estimate_memory), computed from the options, nothing allocated.
 */
#include "cli.h"

static void human(char *buf, size_t n, uint64_t bytes) {
    if (bytes >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)bytes / (1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, n, "%.1f MiB", (double)bytes / (1ull << 20));
    else snprintf(buf, n, "%.1f KiB", (double)bytes / (1ull << 10));
}

static int print_memory(const run_options *ro, char *err, size_t errlen) {
    kernel_estimate full, mode;
    npurr_topology topo, full_topo;
    if (kernels_topology(&ro->config, &topo, err, errlen)) return -1;
    full_topo = topo;
    full_topo.payload_full = 1;   /* every byte stored: the logical GM */
    if (kernel_estimate_memory(ro->kernel, &ro->kopts, &full_topo, &full, err, errlen) ||
        kernel_estimate_memory(ro->kernel, &ro->kopts, &topo, &mode, err, errlen))
        return -1;
    char lg[32], gm[32], plan[32], eng[32], tot[32];
    human(lg, sizeof lg, full.gm_bytes);
    human(gm, sizeof gm, mode.gm_bytes);
    human(plan, sizeof plan, mode.host_bytes);
    human(eng, sizeof eng, mode.engine_bytes);
    human(tot, sizeof tot, mode.total_bytes);
    printf("\nhost memory with --payload %s, all %d ranks (big terms of the formulas above):\n",
           engine_payload_name(ro->config.payload), ro->config.nodes * ro->config.npus_per_node);
    printf("  logical GM                 %s\n", lg);
    printf("  GM the host backs          %s%s\n", gm,
           ro->config.payload == PAYLOAD_FULL
               ? ": every byte"
               : ": tables, outputs and a page per ring record; moved rows are references");
    printf("  routing plan (host)        %s\n", plan);
    printf("  engine state               %s\n", eng);
    printf("  expected resident          %s, a lower bound: the recorder's index adds about\n"
           "                             100 B per wait (docs/scaling.md: what fits on which machine)\n", tot);
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
    if (session_memory_check(&ro, 1, 1, 1, err, sizeof err)) {
        fprintf(stderr, "npurr layout: %s\n", err);
        return EXIT_USAGE;
    }
    if (!ro.kernel->layout) {
        fprintf(stderr, "npurr layout: -k %s has no layout report\n", ro.kernel->name);
        return EXIT_ERROR;
    }
    npurr_topology topo;
    if (kernels_topology(&ro.config, &topo, err, sizeof err) ||
        ro.kernel->layout(&ro.kopts, &topo, stdout, err, sizeof err) != 0) {
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
