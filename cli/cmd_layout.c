/*
 * cmd_layout.c - `npurr layout -k KERNEL [shape options]`: prints every
 * buffer a kernel allocates, per rank, from its sizing formulas, without
 * running anything (seed 003's worked example is one such call).
 */
#include "cli.h"

int cmd_layout(int argc, char **argv) {
    char err[ENGINE_ERRLEN] = "";
    run_options ro;
    int rc = run_options_parse(argc, argv, 0, &ro, err, sizeof err);
    if (rc) {
        fprintf(stderr, "npurr layout: %s\n", err);
        return rc;
    }
    if (ro.help) {
        printf("usage: npurr layout -k KERNEL [--nodes N] [--npus-per-node N] [kernel options]\n\n"
               "Prints every buffer's size per rank by the kernel's sizing formulas.\n\n");
        run_options_help(stdout, ro.kernel, 0);
        return EXIT_DONE;
    }
    if (cli_memory_check(&ro, 1, err, sizeof err)) {
        fprintf(stderr, "npurr layout: %s\n", err);
        return EXIT_USAGE;
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
    return EXIT_DONE;
}
