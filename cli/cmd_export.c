/*
 * cmd_export.c - `npurr export RUN --chrome OUT.json | --perfetto
 * OUT.pftrace [--from T --to T] [--ranks LIST]`: a timeline for
 * ui.perfetto.dev / chrome://tracing (analysis/present/ana_export.c writes the
 * JSON, analysis/present/ana_perfetto.c the protobuf; a name ending in .gz is
 * gzipped by analysis/present/ana_output.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "recorder/recorder.h"
#include "cli.h"

static void export_usage(FILE *out) {
    fputs("usage: npurr export RUN (--perfetto OUT.pftrace | --chrome OUT.json)\n"
          "                    [--from T] [--to T] [--ranks LIST]\n"
          "\n"
          "Writes the run as a timeline for ui.perfetto.dev: a process per rank, a\n"
          "track per core (its waits, named by what they wait for) with a track per\n"
          "pipe under it (MTE2, MTE3, NIC, scalar...: its transfers), flow arrows\n"
          "from the event that ended a wait to the wait's end, and counters for ring\n"
          "occupancy, link bandwidth and NIC queue depth. Timestamps are virtual time\n"
          "in ns.\n"
          "\n"
          "  --perfetto OUT Perfetto's native protobuf trace: interned strings, packets\n"
          "                 deflated in bundles as Perfetto's own tracing service does\n"
          "  --chrome OUT   Chrome trace event JSON (also chrome://tracing)\n"
          "                 OUT '-' is standard output; a name ending in .gz is gzipped\n"
          "  --from T       only slices that end at or after T; T is virtual time with a\n"
          "  --to T         unit: 10us, 2ms, 1.5ns, 500ps, or plain picoseconds\n"
          "  --ranks LIST   only these ranks, e.g. 0,3-5\n"
          "  -h, --help     this text\n"
          "\n"
          "OUT may not be inside RUN (whose files are the run itself).\n"
          "\n"
          "Exit status: 0 ok, 1 the run or OUT cannot be read/written, or the run is\n"
          "damaged or truncated, 2 usage (also OUT inside RUN, a malformed --ranks).\n",
          out);
}

/* Ranks the run does not have are a usage error too, found from the
 * index's meta before anything is derived. 0 when they all exist or the
 * index cannot say (opening the run then names what is wrong). */
static int ranks_outside_run(const char *run, const char *ranks_text, char *err, size_t errlen) {
    char path[4200];
    if (snprintf(path, sizeof path, "%s/index.db", run) >= (int)sizeof path) return 0;
    sqlite3 *db = NULL;
    char oerr[1024];
    if (rec_index_open_ro(path, &db, oerr, sizeof oerr) != 0) {
        sqlite3_close(db);
        return 0;
    }
    sqlite3_stmt *st = NULL;
    long long ranks = 0;
    if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM meta WHERE key = 'config.nodes') *"
                           " (SELECT value FROM meta WHERE key = 'config.npus_per_node')",
                           -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        ranks = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    static uint8_t have[(1u << 16) / 8];
    return ranks > 0 && ranks <= (1 << 16) &&
           ana_parse_ranks(ranks_text, have, (size_t)ranks, err, errlen) != 0;
}

typedef struct export_args {
    const char *run, *outpath;
    int perfetto;
    ana_export_opts o;
} export_args;

/* --chrome OUT or --perfetto OUT, once. */
static int set_out(export_args *x, const char *v, int perfetto) {
    if (x->outpath) {
        fprintf(stderr, "npurr export: give one of --chrome and --perfetto\n");
        return 2;
    }
    x->outpath = v;
    x->perfetto = perfetto;
    return 0;
}
static int set_chrome(void *ctx, const char *v) { return set_out(ctx, v, 0); }
static int set_perfetto(void *ctx, const char *v) { return set_out(ctx, v, 1); }

/* --from T or --to T into *ps. */
static int set_time(const char *opt, const char *v, uint64_t *ps) {
    char err[1024];
    if (!ana_parse_time(v, ps, err, sizeof err)) return 0;
    fprintf(stderr, "npurr export: %s: %s\n", opt, err);
    return 2;
}
static int set_from(void *ctx, const char *v) {
    return set_time("--from", v, &((export_args *)ctx)->o.from_ps);
}
static int set_to(void *ctx, const char *v) {
    export_args *x = ctx;
    if (set_time("--to", v, &x->o.to_ps)) return 2;
    if (x->o.to_ps == 0) x->o.to_ps = 1;   /* 0 means "the end"; --to 0 means the start */
    return 0;
}

/* -1: --help printed; 0: parsed; 2: a usage error, printed. */
static int parse_export(int argc, char **argv, export_args *x) {
    memset(x, 0, sizeof *x);
    const cli_opt opts[] = {{"--chrome", .set = set_chrome}, {"--perfetto", .set = set_perfetto},
                            {"--from", .set = set_from}, {"--to", .set = set_to},
                            {"--ranks", .value = &x->o.ranks}};
    cli_args p = {.cmd = "export", .usage = export_usage, .opts = opts, .nopts = 5, .ctx = x,
                  .words = {&x->run}, .extra = "unexpected argument '%s'",
                  .missing_says = CLI_MISSING_SAYS};
    return cli_parse(&p, argc, argv);
}

/* What is checked before anything is read: the output's place, --ranks.
 * 0, or 2 after saying why. */
static int check_export(const export_args *x) {
    char err[1024];
    if (!x->run || !x->outpath) {
        if (x->run && !x->outpath)
            fprintf(stderr, "npurr export: --perfetto OUT.pftrace or --chrome OUT.json is required\n");
        export_usage(stderr);
        return 2;
    }
    if (cli_output_check(x->run, x->outpath, x->perfetto ? "--perfetto" : "--chrome", err,
                         sizeof err)) {
        fprintf(stderr, "npurr export: %s\n", err);
        return 2;
    }
    if (x->o.to_ps && x->o.to_ps < x->o.from_ps) {
        fprintf(stderr, "npurr export: --to (%llu ps) is before --from (%llu ps)\n",
                (unsigned long long)x->o.to_ps, (unsigned long long)x->o.from_ps);
        return 2;
    }
    if (x->o.ranks) {
        /* The syntax is checked before anything is derived; whether the
         * ranks exist, once the run is open. */
        if (ana_parse_ranks(x->o.ranks, NULL, 0, err, sizeof err)) {
            fprintf(stderr, "npurr export: --ranks: %s\n", err);
            return 2;
        }
    }
    if (x->o.ranks && ranks_outside_run(x->run, x->o.ranks, err, sizeof err)) {
        fprintf(stderr, "npurr export: --ranks: %s\n", err);
        return 2;
    }
    return 0;
}

int cmd_export(int argc, char **argv) {
    export_args x;
    int rc = parse_export(argc, argv, &x);
    if (rc) return rc < 0 ? 0 : rc;
    if ((rc = check_export(&x))) return rc;
    char err[1024];
    sqlite3 *db = NULL;
    ana_source src;
    if (cli_open_run("export", x.run, 0, &db, &src)) return 1;
    /* A .gz file is compressed as a whole: its packets need no bundles. */
    size_t plen = strlen(x.outpath);
    x.o.raw_packets = plen > 3 && !strcmp(x.outpath + plen - 3, ".gz");
    cli_output co;
    FILE *out = cli_output_open(&co, x.outpath, err, sizeof err);
    if (!out) {
        fprintf(stderr, "npurr export: %s\n", err);
        sqlite3_close(db);
        return 1;
    }
    int to_stdout = out == stdout;
    ana_export_counts n = {0};
    rc = x.perfetto ? ana_export_perfetto(db, &x.o, out, &n, err, sizeof err)
                    : ana_export_chrome(db, &x.o, out, &n, err, sizeof err);
    sqlite3_close(db);
    if (cli_output_finish(&co, rc, err, sizeof err)) {
        fprintf(stderr, "npurr export: %s\n", err);
        return 1;
    }
    fprintf(stderr, "npurr export: wrote %s: %llu slices, %llu flow arrows, %llu counter "
            "samples, %llu tracks\n",
            to_stdout ? "standard output" : x.outpath, (unsigned long long)n.slices,
            (unsigned long long)n.flows, (unsigned long long)n.counters,
            (unsigned long long)n.tracks);
    if (src.partial) {
        fprintf(stderr, "npurr export: %s\n", src.partial_note);
        return 1;
    }
    return 0;
}
