/*
 * cmd_hw.c - `npurr hw [--file]`: every timing parameter of the model, with
 * its default, unit, accepted range, what it models and where the default
 * comes from (engine/timing.c holds the one table). `--file` prints the
 * defaults as a `--hw` file to edit.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void hw_usage(FILE *out) {
    fputs("usage: npurr hw [--file]\n"
          "\n"
          "Prints every timing parameter of the emulated 910B: key, default value,\n"
          "unit, accepted range, what it models and the source of the default\n"
          "(a document, a datasheet figure or an estimate). Override any of them\n"
          "with `npurr record --hw FILE` (key=value lines, '#' comments); `npurr\n"
          "info RUN` shows the values a run used and which came from --hw.\n"
          "\n"
          "  --file       print the defaults as a --hw file (key=value with comments)\n"
          "  -h, --help   this text\n"
          "\n"
          "Exit status: 0 ok, 2 usage.\n",
          out);
}

int cmd_hw(int argc, char **argv) {
    int as_file = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            hw_usage(stdout);
            return EXIT_DONE;
        } else if (!strcmp(argv[i], "--file")) {
            as_file = 1;
        } else {
            fprintf(stderr, "npurr hw: unknown argument '%s'\n", argv[i]);
            hw_usage(stderr);
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        if (as_file) {
            printf("# %s (%s); %s\n%s=%.17g\n", p->what, p->unit, p->source, p->key, p->def);
            continue;
        }
        printf("%s = %g %s\n", p->key, p->def, p->unit);
        printf("    models:   %s\n", p->what);
        printf("    source:   %s\n", p->source);
        if (p->min > 0)
            printf("    accepted: %g..%g %s", p->min, p->max, p->unit);
        else
            printf("    accepted: > 0, up to %g %s", p->max, p->unit);
        printf("%s%s\n", p->old_key ? "; old name " : "", p->old_key ? p->old_key : "");
    }
    return EXIT_DONE;
}
