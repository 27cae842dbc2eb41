/*
 * cmd_sweep.c - `npurr sweep -k KERNEL [options] --vary KEY=V1,V2,...
 * [--vary ...] -o DIR [-j J]`: one kernel over a grid of its options and
 * timing parameters.
 *
 * The options that are not the sweep's own make a `npurr record` command
 * line; each point adds one value of every --vary key to it (an option as
 * `--KEY=V`, a timing parameter `hw.NAME` set over the run's hw after any
 * --hw file) and runs without a trace in its own process (run_pool.c).
 * A point that deadlocks, fails its check or whose options the kernel
 * refuses is a row with that exit code, not an abort; bad --vary keys or
 * values are usage errors before anything runs. The results go to
 * DIR/sweep.csv and DIR/sweep.html (sweep_out.c), also after Ctrl-C, with
 * the points that finished.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sweep.h"

static void sweep_usage(FILE *out) {
    fputs("usage: npurr sweep -k KERNEL [record options] --vary KEY=V1,V2,... [--vary ...]\n"
          "                   -o DIR [-j J]\n"
          "\n"
          "Runs the kernel at every point of the grid the --vary options span (the first\n"
          "--vary varies slowest), each without a trace in its own process, and writes\n"
          "  DIR/sweep.csv   one row per point: the varied values, exit_code, outcome,\n"
          "                  check, end_ps, stall_share (summed stalls / (cores x end\n"
          "                  time)), events, wall_s, end_ROLE_ps per role (when the last\n"
          "                  core of that role finished: the kernel's phases), message\n"
          "  DIR/sweep.html  end time against each varied key (SVG line plots, one line\n"
          "                  per combination of the other keys) and the points' table\n"
          "Points that deadlock (3), fail their data check (4) or whose options the\n"
          "kernel refuses (2) are rows with that exit code. Progress (points done of\n"
          "the total, ETA) goes to stderr; Ctrl-C stops and writes the finished rows.\n"
          "\n"
          "  --vary KEY=V1,V2,...  KEY is a record option (--tokens or tokens, --nodes,\n"
          "                        --hccs-chunk, --routing, ...; `npurr record -k KERNEL\n"
          "                        --help` lists them) or hw.NAME, a timing parameter as\n"
          "                        `npurr hw` names it (hw.roce_gbytes_per_s). Values are\n"
          "                        comma-separated, so an option whose value holds commas\n"
          "                        (per-rank --tokens lists) cannot be varied\n"
          "  -o DIR                the output folder (made if missing; its sweep.csv and\n"
          "                        sweep.html are replaced; not inside a run folder).\n"
          "                        While the points run, DIR/sweep.partial.csv gets each\n"
          "                        row as it finishes (without the per-role columns), so\n"
          "                        a killed sweep keeps them; it goes once sweep.csv is in\n"
          "                        place\n"
          "  -j J                  points at a time (default: the core count)\n"
          "  -h, --help            this text\n"
          "Every other option is passed to each point's `npurr record` (-o and the trace\n"
          "excepted), e.g. --nodes 2 --tokens 512 --hw FILE.\n"
          "\n"
          "Example:\n"
          "  npurr sweep -k dispatch-layered --nodes 2 --tokens 512 \\\n"
          "      --vary --tokens=256,512,1024 --vary hw.roce_gbytes_per_s=12.5,25,50 -o sw\n"
          "\n"
          "Exit status: 0 every point ran (whatever each ended as), 1 an error (I/O,\n"
          "interrupted: the finished rows are written), 2 usage.\n",
          out);
}

typedef struct sweep_cli {
    sweep s;
    char **base;           /* "npurr", "record", the passed options */
    int nbase;
    double t0;
    int progress;
    FILE *partial;         /* DIR/sweep.partial.csv: rows as points finish */
} sweep_cli;

/* The record command line of point p: base, then --KEY=V per option key.
 * The strings live in buf (freed by the caller with the array). */
static char **point_argv(const sweep_cli *c, size_t p, int *argc) {
    char **v = calloc((size_t)c->nbase + SWEEP_MAX_KEYS + 2, sizeof *v);
    if (!v) return NULL;
    int n = 0;
    for (int i = 0; i < c->nbase; i++) v[n++] = c->base[i];
    for (size_t k = 0; k < c->s.nkeys; k++) {
        const sweep_key *key = &c->s.keys[k];
        if (key->hw) continue;
        const char *val = key->values[sweep_value_index(&c->s, p, k)];
        size_t len = strlen(key->name) + strlen(val) + 2;
        char *a = malloc(len);
        if (!a) continue;
        snprintf(a, len, "%s=%s", key->name, val);
        v[n++] = a;
    }
    v[n] = NULL;
    *argc = n;
    return v;
}

static void free_point_argv(const sweep_cli *c, char **v, int argc) {
    for (int i = c->nbase; i < argc; i++) free(v[i]);
    free(v);
}

/* In the child: point p's spec, its hw keys, the run. */
static void job(void *ctx, size_t p, point_result *r) {
    sweep_cli *c = ctx;
    int argc = 0;
    char **argv = point_argv(c, p, &argc);
    char err[ENGINE_ERRLEN] = "";
    run_spec spec;
    memset(r, 0, sizeof *r);
    r->done = 1;
    if (!argv) {
        r->status = EXIT_ERROR;
        snprintf(r->what, sizeof r->what, "out of memory");
        return;
    }
    int rc = run_spec_from_argv(argc, argv, &spec, err, sizeof err);
    for (size_t k = 0; !rc && k < c->s.nkeys; k++) {
        const sweep_key *key = &c->s.keys[k];
        if (key->hw && engine_hw_set(&spec.opts.config.hw, key->name + 3,
                                     key->values[sweep_value_index(&c->s, p, k)], err,
                                     sizeof err) != ENGINE_OK)
            rc = EXIT_USAGE;
    }
    if (rc) {
        r->status = rc;
        snprintf(r->what, sizeof r->what, "%.*s", (int)sizeof r->what - 1, err);
    } else {
        run_point(&spec, r);
    }
    run_spec_free(&spec);
    free_point_argv(c, argv, argc);
}

static void progress(void *ctx, size_t p, const point_result *r, size_t done, size_t total) {
    sweep_cli *c = ctx;
    if (c->partial && sweep_write_partial_row(&c->s, p, c->partial)) {
        fprintf(stderr, "npurr sweep: sweep.partial.csv: write failed; the rows are kept in "
                        "memory for sweep.csv\n");
        fclose(c->partial);
        c->partial = NULL;
    }
    if (!c->progress) return;
    double el = engine_host_seconds() - c->t0;
    double eta = done ? el * (double)(total - done) / (double)done : 0;
    char end[48];
    if (r->status) snprintf(end, sizeof end, "exit %d", r->status);
    else snprintf(end, sizeof end, "%.3f us", (double)r->end_ps / 1e6);
    fprintf(stderr, "npurr sweep: %zu/%zu points done (point %zu: %s), %.1f s elapsed, ETA %.1f s\n",
            done, total, p + 1, end, el, eta);
}

/* Parses one --vary KEY=V1,V2,...; 0, or -1 with err. */
static int parse_vary(const char *text, sweep_key *k, char *err, size_t errlen) {
    const char *eq = strchr(text, '=');
    memset(k, 0, sizeof *k);
    if (!eq || eq == text || !eq[1]) {
        snprintf(err, errlen, "--vary '%s': give KEY=V1,V2,... (e.g. --vary --tokens=256,512)", text);
        return -1;
    }
    size_t kn = (size_t)(eq - text);
    const char *name = text;
    int dashes = 0;
    if (!strncmp(text, "hw.", 3)) k->hw = 1;
    else if (text[0] != '-') dashes = 2;
    if (kn + (size_t)dashes >= sizeof k->name) {
        snprintf(err, errlen, "--vary '%.40s...': key too long", text);
        return -1;
    }
    snprintf(k->name, sizeof k->name, "%s%.*s", dashes ? "--" : "", (int)kn, name);
    if (k->hw && !engine_hw_find(k->name + 3)) {
        snprintf(err, errlen, "--vary %s: '%s' is not a timing parameter (npurr hw lists them)",
                 k->name, k->name + 3);
        return -1;
    }
    const char *v = eq + 1;
    while (1) {
        const char *comma = strchr(v, ',');
        size_t len = comma ? (size_t)(comma - v) : strlen(v);
        if (!len) {
            snprintf(err, errlen, "--vary %s: an empty value in '%s'", k->name, eq + 1);
            return -1;
        }
        char **nv = realloc(k->values, (k->nvalues + 1) * sizeof *nv);
        if (!nv) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        k->values = nv;
        k->values[k->nvalues] = strndup(v, len);
        if (!k->values[k->nvalues]) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        k->nvalues++;
        if (!comma) break;
        v = comma + 1;
    }
    if (k->hw) {
        engine_hw hw;
        engine_hw_defaults(&hw);
        char why[ENGINE_ERRLEN];
        for (size_t i = 0; i < k->nvalues; i++)
            if (engine_hw_set(&hw, k->name + 3, k->values[i], why, sizeof why) != ENGINE_OK) {
                snprintf(err, errlen, "--vary %s: %s", k->name, why);
                return -1;
            }
    }
    return 0;
}

static void free_keys(sweep *s) {
    for (size_t k = 0; k < s->nkeys; k++) {
        for (size_t i = 0; i < s->keys[k].nvalues; i++) free(s->keys[k].values[i]);
        free(s->keys[k].values);
    }
}

/* Every option value parses as `record` parses it (a refused shape is
 * found when the point runs, and is a row). */
static int check_options(sweep_cli *c, char *err, size_t errlen) {
    run_spec spec;
    char why[ENGINE_ERRLEN];
    int rc = run_spec_from_argv(c->nbase, c->base, &spec, why, sizeof why);
    int help = !rc && spec.opts.help;
    run_spec_free(&spec);
    if (rc) {
        snprintf(err, errlen, "%s", why);
        return rc;
    }
    if (help) {
        snprintf(err, errlen, "-k KERNEL is required (npurr sweep --help)");
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < c->s.nkeys; k++) {
        const sweep_key *key = &c->s.keys[k];
        for (size_t i = 0; !key->hw && i < key->nvalues; i++) {
            char **argv = calloc((size_t)c->nbase + 2, sizeof *argv);
            size_t len = strlen(key->name) + strlen(key->values[i]) + 2;
            char *a = malloc(len);
            if (!argv || !a) {
                free(argv);
                free(a);
                snprintf(err, errlen, "out of memory");
                return EXIT_ERROR;
            }
            memcpy(argv, c->base, (size_t)c->nbase * sizeof *argv);
            snprintf(a, len, "%s=%s", key->name, key->values[i]);
            argv[c->nbase] = a;
            rc = run_spec_from_argv(c->nbase + 1, argv, &spec, why, sizeof why);
            run_spec_free(&spec);
            free(a);
            free(argv);
            if (rc) {
                snprintf(err, errlen, "--vary %s=%s: %s", key->name, key->values[i], why);
                return rc;
            }
        }
    }
    return 0;
}

/* DIR/name through the shared output policy (output_path.c): written to a
 * temporary file and renamed into place, so a failed write leaves the
 * previous file, never half a one. */
static int write_file(const sweep *s, const char *dir, const char *name, const char *title,
                      char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cli_output o;
    FILE *f = cli_output_open(&o, path, err, errlen);
    if (!f) return -1;
    int rc = strstr(name, ".csv") ? sweep_write_csv(s, f) : sweep_write_html(s, title, f);
    if (rc) snprintf(err, errlen, "%.4200s: write failed", path);
    return cli_output_finish(&o, rc, err, errlen);
}

/* The command line into c (the record options into c->base, the --vary
 * keys into c->s), *dir and *jobs, all checked: 0, or the exit status
 * (said). */
static int sweep_args(sweep_cli *c, int argc, char **argv, const char **dir, long *jobs) {
    char err[2 * ENGINE_ERRLEN + 4400];
    c->base[c->nbase++] = argv[0];
    c->base[c->nbase++] = "record";
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sweep_usage(stdout);
            return CLI_HELP;
        } else if (cli_opt_is(a, "--vary")) {
            v = cli_opt_value(argc, argv, &i, "--vary");
            if (!v) {
                fprintf(stderr, "npurr sweep: --vary needs KEY=V1,V2,...\n");
                return EXIT_USAGE;
            }
            if (c->s.nkeys == SWEEP_MAX_KEYS) {
                fprintf(stderr, "npurr sweep: at most %d --vary options\n", SWEEP_MAX_KEYS);
                return EXIT_USAGE;
            }
            if (parse_vary(v, &c->s.keys[c->s.nkeys++], err, sizeof err)) {
                fprintf(stderr, "npurr sweep: %s\n", err);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "-o")) {
            if (!(*dir = cli_opt_value(argc, argv, &i, "-o"))) {
                fprintf(stderr, "npurr sweep: -o needs a folder\n");
                return EXIT_USAGE;
            }
        } else if (cli_opt_is(a, "-j")) {
            int j;   /* 1..256: a larger number once wrapped round to one at a time */
            if (measured_jobs("sweep", cli_opt_value(argc, argv, &i, "-j"), &j)) return EXIT_USAGE;
            *jobs = j;
        } else if (!strcmp(a, "--no-trace") || !strcmp(a, "--force") || !strcmp(a, "--quiet") ||
                   !strcmp(a, "--progress")) {
            continue;   /* every point runs without a trace and quietly */
        } else {
            c->base[c->nbase++] = argv[i];
        }
    }
    if (!c->s.nkeys) {
        fprintf(stderr, "npurr sweep: give at least one --vary KEY=V1,V2,...\n");
        sweep_usage(stderr);
        return EXIT_USAGE;
    }
    if (!*dir) {
        fprintf(stderr, "npurr sweep: -o DIR is required\n");
        return EXIT_USAGE;
    }
    for (size_t a = 0; a < c->s.nkeys; a++)
        for (size_t b = a + 1; b < c->s.nkeys; b++)
            if (!strcmp(c->s.keys[a].name, c->s.keys[b].name)) {
                fprintf(stderr, "npurr sweep: --vary %s given twice\n", c->s.keys[a].name);
                return EXIT_USAGE;
            }
    int crc = check_options(c, err, sizeof err);
    if (crc) {
        fprintf(stderr, "npurr sweep: %s\n", err);
        return crc;
    }
    c->s.npoints = 1;
    for (size_t k = 0; k < c->s.nkeys; k++) {
        c->s.npoints *= c->s.keys[k].nvalues;
        if (c->s.npoints > 100000) {
            fprintf(stderr, "npurr sweep: more than 100000 points; narrow the grid\n");
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* -o DIR made (never inside a run folder) and DIR/sweep.partial.csv
 * opened with its header into c->partial: 0, or the exit status (said). */
static int sweep_open_dir(sweep_cli *c, const char *dir, char *partial, size_t len) {
    char err[4400];
    if (cli_output_dir_check(dir, "-o", err, sizeof err)) {
        fprintf(stderr, "npurr sweep: %s\n", err);
        return EXIT_USAGE;
    }
    struct stat sb;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "npurr sweep: -o %s: %s\n", dir, strerror(errno));
        return EXIT_USAGE;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "npurr sweep: -o %s: not a folder\n", dir);
        return EXIT_USAGE;
    }
    snprintf(partial, len, "%s/sweep.partial.csv", dir);   /* survives a kill -9 of the sweep */
    c->partial = fopen(partial, "w");
    if (!c->partial || sweep_write_partial_head(&c->s, c->partial)) {
        fprintf(stderr, "npurr sweep: %s: %s\n", partial, strerror(errno));
        if (c->partial) fclose(c->partial);
        c->partial = NULL;
        return EXIT_ERROR;
    }
    return 0;
}

/* sweep.csv and sweep.html into dir, and what was written said (and that
 * a Ctrl-C stopped it, when interrupted): 0, or 1 when a file could not be
 * written (sweep.csv's rows then go to stdout). */
static int sweep_write_results(sweep_cli *c, const char *dir, const char *partial,
                               int interrupted) {
    char err[4400], title[512];
    size_t used = (size_t)snprintf(title, sizeof title, "npurr sweep");
    for (int i = 2; i < c->nbase && used < sizeof title; i++)
        used += (size_t)snprintf(title + used, sizeof title - used, " %s", c->base[i]);
    for (size_t k = 0; k < c->s.nkeys && used < sizeof title; k++)
        used += (size_t)snprintf(title + used, sizeof title - used, " --vary %s", c->s.keys[k].name);
    int wrote_csv = !write_file(&c->s, dir, "sweep.csv", title, err, sizeof err);
    if (c->partial) fclose(c->partial);
    c->partial = NULL;
    if (wrote_csv) unlink(partial);   /* sweep.csv has every row now */
    if (!wrote_csv) {   /* the points ran: their rows must not be lost with the file */
        fprintf(stderr, "npurr sweep: %s; the rows of sweep.csv follow on standard output\n", err);
        sweep_write_csv(&c->s, stdout);
    }
    int wrote_html = !write_file(&c->s, dir, "sweep.html", title, err, sizeof err);
    if (!wrote_html) fprintf(stderr, "npurr sweep: %s\n", err);
    size_t ran = 0, ok = 0;
    for (size_t p = 0; p < c->s.npoints; p++)
        ran += c->s.res[p].done, ok += c->s.res[p].done && !c->s.res[p].status;
    printf("%zu of %zu points ran, %zu completed with the check passed, %zu failed (their exit "
           "codes are in the rows); %.1f s\n", ran, c->s.npoints, ok, ran - ok,
           engine_host_seconds() - c->t0);
    if (wrote_csv && wrote_html) printf("wrote %s/sweep.csv and %s/sweep.html\n", dir, dir);
    else if (wrote_csv || wrote_html)
        printf("wrote %s/%s only\n", dir, wrote_csv ? "sweep.csv" : "sweep.html");
    else
        printf("wrote neither file: the rows above are the results\n");
    if (interrupted)
        fprintf(stderr, "npurr sweep: interrupted: the %zu finished points are written\n", ran);
    return !wrote_csv || !wrote_html;
}

int cmd_sweep(int argc, char **argv) {
    sweep_cli c;
    memset(&c, 0, sizeof c);
    const char *dir = NULL;
    long jobs = pool_default_jobs();
    char err[ENGINE_ERRLEN], partial[4200];
    c.base = calloc((size_t)argc + 4, sizeof *c.base);
    if (!c.base) return EXIT_ERROR;
    int status = sweep_args(&c, argc, argv, &dir, &jobs);
    if (status == CLI_HELP) {
        status = EXIT_DONE;
        goto out;
    }
    if (!status) status = sweep_open_dir(&c, dir, partial, sizeof partial);
    if (!status && !(c.s.res = calloc(c.s.npoints, sizeof *c.s.res))) {
        fprintf(stderr, "npurr sweep: out of memory\n");
        status = EXIT_ERROR;
    }
    if (status) goto out;
    c.progress = 1;
    c.t0 = engine_host_seconds();
    fprintf(stderr, "npurr sweep: %zu points, %ld at a time\n", c.s.npoints,
            jobs < (long)c.s.npoints ? jobs : (long)c.s.npoints);
    int prc = run_pool(c.s.npoints, (int)jobs, job, progress, &c, c.s.res, err, sizeof err);
    if (prc < 0) fprintf(stderr, "npurr sweep: %s\n", err);
    status = sweep_write_results(&c, dir, partial, prc > 0) || prc ? EXIT_ERROR : EXIT_DONE;
out:
    if (c.partial) fclose(c.partial);
    free(c.s.res);
    free_keys(&c.s);
    free(c.base);
    return status;
}
