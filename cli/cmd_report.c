/*
 * cmd_report.c - `npurr report RUN -o report.html`: the run as one
 * self-contained HTML page of plots (analysis/present/ana_report.c writes it).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"

static void report_usage(FILE *out) {
    fputs("usage: npurr report RUN -o OUT.html\n"
          "\n"
          "Writes the run as one self-contained HTML page (inline SVG, no script, no\n"
          "network; any browser opens it): the outcome, check and configuration; for\n"
          "a deadlock or watchdog the wait-for graph (blocked core -> the word it waits\n"
          "on -> the core that last wrote it), with cycles and dead ends marked; a heat\n"
          "map of stall share by rank x role and the top stall sites (kernel\n"
          "file:line); per-rank activity by wait cause on one time axis; occupancy of\n"
          "the most stalled rings; link and NIC bandwidth over time.\n"
          "\n"
          "  -o, --output OUT  the HTML file ('-' for standard output)\n"
          "  -h, --help        this text\n"
          "\n"
          "Exit status: 0 ok, 1 the run or OUT cannot be read/written, 2 usage.\n",
          out);
}

int cmd_report(int argc, char **argv) {
    const char *run = NULL, *outpath = NULL;
    const cli_opt opts[] = {{"--output", "-o", .value = &outpath}};
    cli_args p = {.cmd = "report", .usage = report_usage, .opts = opts, .nopts = 1,
                  .words = {&run}, .extra = "unexpected argument '%s'",
                  .missing_says = CLI_MISSING_SAYS};
    int parsed = cli_parse(&p, argc, argv);
    if (parsed) return parsed == CLI_HELP ? EXIT_DONE : parsed;
    if (!run || !outpath || !*outpath) {
        if (run) fprintf(stderr, "npurr report: -o OUT.html is required\n");
        report_usage(stderr);
        return EXIT_USAGE;
    }
    char err[1024];
    if (cli_output_check(run, outpath, "-o", err, sizeof err)) {
        fprintf(stderr, "npurr report: %s\n", err);
        return EXIT_USAGE;
    }
    sqlite3 *db = NULL;
    ana_source src;
    if (cli_open_run("report", run, ANA_PART_WAITS | ANA_PART_CRITICAL, &db, &src)) return EXIT_ERROR;
    cli_output co;
    FILE *out = cli_output_open(&co, outpath, err, sizeof err);
    if (!out) {
        fprintf(stderr, "npurr report: %s\n", err);
        sqlite3_close(db);
        return EXIT_ERROR;
    }
    const char *name = strrchr(run, '/');
    name = name && name[1] ? name + 1 : run;
    int to_stdout = out == stdout;
    int rc = ana_report_html(db, name, out, err, sizeof err);
    sqlite3_close(db);
    if (cli_output_finish(&co, rc, err, sizeof err)) {
        fprintf(stderr, "npurr report: %s\n", err);
        return EXIT_ERROR;
    }
    if (!to_stdout) fprintf(stderr, "npurr report: wrote %s\n", outpath);
    if (src.partial) {
        fprintf(stderr, "npurr report: %s\n", src.partial_note);
        return EXIT_ERROR;
    }
    return EXIT_DONE;
}
