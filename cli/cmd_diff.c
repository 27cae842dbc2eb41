/*
 * cmd_diff.c - `npurr diff RUN_A RUN_B [--by GROUP] [--top N] [--csv]`: what
 * changed between two runs of the same kernel (analysis/ana_diff.c does the
 * work). Runs of different kernels are refused: their roles, sites and
 * rings have nothing in common to line up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"

static void diff_usage(FILE *out) {
    fputs("usage: npurr diff RUN_A RUN_B [--by role|site|rank|kind|object|cause|link]\n"
          "                  [--top N] [--csv]\n"
          "\n"
          "Compares two runs of one kernel: before and after a kernel change, or the same\n"
          "command with another --hw timing file. Prints the virtual time of both runs,\n"
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
          "Exit status: 0 ok; 1 a run cannot be read or the runs are of different\n"
          "kernels; 2 usage.\n",
          out);
}

static int is_opt(const char *a, const char *name) {
    size_t n = strlen(name);
    return !strncmp(a, name, n) && (a[n] == 0 || a[n] == '=');
}

static const char *meta_text(sqlite3 *db, const char *key, char *buf, size_t len) {
    sqlite3_stmt *st = NULL;
    buf[0] = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return buf;
}

int cmd_diff(int argc, char **argv) {
    const char *runs[2] = {NULL, NULL}, *by = "role";
    size_t top = 0;
    int csv = 0;
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            diff_usage(stdout);
            return EXIT_DONE;
        } else if (!strcmp(a, "--csv")) {
            csv = 1;
        } else if (is_opt(a, "--by")) {
            ana_group_by g;
            if (!(v = cli_opt_value(argc, argv, &i, "--by")) ||
                (strcmp(v, "link") && ana_group_by_parse(v, &g))) {
                fprintf(stderr, "npurr diff: --by needs one of role, site, rank, kind, object, "
                        "cause, link (got '%s')\n", v ? v : "");
                return EXIT_USAGE;
            }
            by = v;
        } else if (is_opt(a, "--top")) {
            v = cli_opt_value(argc, argv, &i, "--top");
            unsigned long long n;
            if (cli_parse_uint(v, 1, SIZE_MAX / 2, &n)) {
                fprintf(stderr, "npurr diff: --top needs a positive number below 2^63 (got "
                        "'%s')\n", v ? v : "");
                return EXIT_USAGE;
            }
            top = (size_t)n;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "npurr diff: unknown option '%s'\n", a);
            diff_usage(stderr);
            return EXIT_USAGE;
        } else if (!runs[0]) {
            runs[0] = a;
        } else if (!runs[1]) {
            runs[1] = a;
        } else {
            fprintf(stderr, "npurr diff: unexpected argument '%s' (two runs only)\n", a);
            return EXIT_USAGE;
        }
    }
    if (!runs[1]) {
        fprintf(stderr, "npurr diff: two runs expected\n");
        diff_usage(stderr);
        return EXIT_USAGE;
    }
    char err[2048];
    sqlite3 *db[2] = {NULL, NULL};
    ana_source src[2];
    for (int s = 0; s < 2; s++)
        if (ana_open_fresh(runs[s], 0, &db[s], &src[s], err, sizeof err)) {
            fprintf(stderr, "npurr diff: %s\n", err);
            sqlite3_close(db[0]);
            return EXIT_ERROR;
        }
    char ka[256], kb[256];
    meta_text(db[0], "kernel", ka, sizeof ka);
    meta_text(db[1], "kernel", kb, sizeof kb);
    int rc = EXIT_DONE;
    if (strcmp(ka, kb) != 0) {
        fprintf(stderr, "npurr diff: %s is a run of %s but %s is a run of %s: only runs of "
                "one kernel can be compared\n", runs[0], ka, runs[1], kb);
        rc = EXIT_ERROR;
    } else {
        if (!csv) printf("A %s\nB %s\nkernel %s\n", runs[0], runs[1], ka);
        if (ana_diff_print(db[0], db[1], by, top, csv, stdout, err, sizeof err)) {
            fflush(stdout);
            fprintf(stderr, "npurr diff: %s\n", err);
            rc = EXIT_ERROR;
        }
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
