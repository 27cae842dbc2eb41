/*
 * cmd_diff.c - `npurr diff RUN_A RUN_B [--by GROUP] [--top N] [--csv]`: what
 * changed between two runs (analysis/present/ana_diff.c does the work): of one
 * kernel before and after a change, or of two implementations of one
 * algorithm (a C kernel and its Ascend C port). Groups line up by name:
 * roles, links, kinds and causes are the cluster's and the algorithm's;
 * sites are each kernel's own lines, so a site shows in one run only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "recorder/recorder.h"
#include "cli.h"

static void diff_usage(FILE *out) {
    fputs("usage: npurr diff RUN_A RUN_B [--by role|site|rank|kind|object|cause|link]\n"
          "                  [--top N] [--csv]\n"
          "\n"
          "Compares two runs: of one kernel before and after a change, or with another\n"
          "--hw timing file; or of two kernels that implement one algorithm (a C kernel\n"
          "and its Ascend C port under the same options), whose groups line up by name\n"
          "(roles, links, kinds, causes; each kernel's sites are its own lines).\n"
          "Prints the virtual time of both runs,\n"
          "then per group A, B, the change B - A and the relative change (B - A) / A,\n"
          "largest change first:\n"
          "  stalls (--by role, the default; site, rank, kind, object, cause): count,\n"
          "         total stall time and share (stall time / (cores x run time), as in\n"
          "         `npurr stats`)\n"
          "  --by link  bytes and bandwidth per link (\"rdma r0->r8\") and per class\n"
          "         (\"rdma *\"); GB/s = bytes / the time the link had a transfer in\n"
          "         flight\n"
          "\n"
          "  --by GROUP   as above (default role)\n"
          "  --top N      only the N largest changes\n"
          "  --csv        CSV (times in ps, bytes, GB/s; rel as a fraction)\n"
          "  -h, --help   this text\n"
          "\n"
          "Exit status: 0 ok; 1 a run cannot be read; 2 usage.\n",
          out);
}

typedef struct diff_args {
    const char *runs[2], *by;
    size_t top;
    int csv;
} diff_args;

static int set_by(void *ctx, const char *v) {
    ana_group_by g;
    int ok = v && (!strcmp(v, "link") || !ana_group_by_parse(v, &g));
    if (ok) ((diff_args *)ctx)->by = v;
    return cli_opt_ok("diff", ok, "--by needs one of role, site, rank, kind, object, cause, link",
                      v);
}

static int set_top(void *ctx, const char *v) {
    return cli_opt_top("diff", v, &((diff_args *)ctx)->top);
}

int cmd_diff(int argc, char **argv) {
    diff_args x = {.by = "role"};
    const cli_opt opts[] = {{"--csv", .flag = &x.csv}, {"--by", .set = set_by},
                            {"--top", .set = set_top}};
    cli_args p = {.cmd = "diff", .usage = diff_usage, .opts = opts, .nopts = 3, .ctx = &x,
                  .words = {&x.runs[0], &x.runs[1]},
                  .extra = "unexpected argument '%s' (two runs only)"};
    int prc = cli_parse(&p, argc, argv);
    if (prc) return prc == CLI_HELP ? EXIT_DONE : prc;
    const char **runs = x.runs, *by = x.by;
    size_t top = x.top;
    int csv = x.csv;
    if (!runs[1]) {
        fprintf(stderr, "npurr diff: two runs expected\n");
        diff_usage(stderr);
        return EXIT_USAGE;
    }
    char err[2048];
    sqlite3 *db[2] = {NULL, NULL};
    ana_source src[2];
    for (int s = 0; s < 2; s++)
        if (ana_open(runs[s], 0, &db[s], &src[s], err, sizeof err)) {
            fprintf(stderr, "npurr diff: %s\n", err);
            sqlite3_close(db[0]);
            return EXIT_ERROR;
        }
    char ka[256], kb[256];
    rec_index_meta_text(db[0], "kernel", ka, sizeof ka);
    rec_index_meta_text(db[1], "kernel", kb, sizeof kb);
    int rc = EXIT_DONE;
    if (!csv && strcmp(ka, kb) == 0) printf("A %s\nB %s\nkernel %s\n", runs[0], runs[1], ka);
    else if (!csv)
        printf("A %s (kernel %s)\nB %s (kernel %s)\n"
               "two kernels: groups line up by name; a site is one kernel's line\n",
               runs[0], ka, runs[1], kb);
    if (ana_diff_print(db[0], db[1], by, top, csv, stdout, err, sizeof err)) {
        fflush(stdout);
        fprintf(stderr, "npurr diff: %s\n", err);
        rc = EXIT_ERROR;
    }
    sqlite3_close(db[0]);
    sqlite3_close(db[1]);
    /* A truncated run is compared as far as it goes, and said so. */
    for (int s = 0; s < 2; s++)
        if (src[s].partial) {
            fflush(stdout);
            fprintf(stderr, "npurr diff: %s: %s\n", runs[s], src[s].partial_note);
            if (rc == EXIT_DONE) rc = EXIT_ERROR;
        }
    return rc;
}
