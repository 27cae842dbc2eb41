/*
 * cmd_info.c - `npurr info RUN`: what a recorded run holds.
 *
 * The recorder reads what a run holds (rec_run_summary_read and
 * rec_run_timing, recorder/recorder.h); this file checks the arguments,
 * prints the summary and maps the recorder's status to the exit codes of
 * DESIGN.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "recorder/recorder.h"

static void fmt_bytes(char *out, size_t n, uint64_t b) {
    if (b >= 10ull << 30) snprintf(out, n, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= 10ull << 20) snprintf(out, n, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= 10ull << 10) snprintf(out, n, "%.1f KiB", (double)b / (1ull << 10));
    else snprintf(out, n, "%llu B", (unsigned long long)b);
}

static void fmt_ps(char *out, size_t n, uint64_t ps) {
    if (ps >= 1000000000ull) snprintf(out, n, "%.3f ms", (double)ps / 1e9);
    else if (ps >= 1000000ull) snprintf(out, n, "%.3f us", (double)ps / 1e6);
    else if (ps >= 1000ull) snprintf(out, n, "%.3f ns", (double)ps / 1e3);
    else snprintf(out, n, "%llu ps", (unsigned long long)ps);
}

/* What was run and how it ended. */
static void print_run(const char *run, const rec_run_summary *s, FILE *out) {
    fprintf(out, "run          %s\n", run);
    fprintf(out, "kernel       %s\n", s->kernel);
    if (*s->plugin_name)
        fprintf(out, "plugin       %s: %s/%s (copied from %s), sha256 %s\n", s->plugin_name, run,
                s->plugin_file, s->plugin_source, s->plugin_sha256);
    fprintf(out, "command      %s\n", s->command_line);
    fprintf(out, "cluster      %s nodes x %s NPUs (%s), %s cores per rank (%s AIC + %s AIV), "
                 "seed %s, jitter %s\n",
            s->nodes, s->npus_per_node, s->chip, s->cores_per_rank, s->num_aic, s->num_aiv,
            s->seed, s->jitter);
    fprintf(out, "versions     format %s, npurr %s\n", s->format_version, s->npurr_version);
    const char *outcome = s->outcome, *omsg = s->outcome_message;
    int say = *omsg && strcmp(omsg, outcome) != 0; /* "completed: completed" says nothing */
    fprintf(out, "outcome      %s%s%s\n", outcome, say ? ": " : "", say ? omsg : "");
    const char *cmsg = s->check_message;
    fprintf(out, "check        %s%s%s\n", s->check, *cmsg ? ": " : "", cmsg);
    char a[64];
    fmt_ps(a, sizeof a, s->end_time_ps);
    fprintf(out, "duration     %s virtual (%llu ps)\n", a, (unsigned long long)s->end_time_ps);
}

/* What it recorded: events per kind, waits, transfers, and what they cost
 * on disk. */
static void print_contents(const rec_run_summary *s, FILE *out) {
    uint64_t events = s->events;
    fprintf(out, "events       %llu in %lld chunks\n", (unsigned long long)events,
            (long long)s->chunks);
    for (int k = 1; k < EV_KIND_COUNT; k++) {
        uint64_t n = s->kind_events[k];
        if (n)
            fprintf(out, "  %-20s %12llu  %5.1f%%\n", rec_kind_name(k), (unsigned long long)n,
                    events ? 100.0 * (double)n / (double)events : 0.0);
    }
    char a[64], b[64];
    fmt_ps(a, sizeof a, (uint64_t)s->stall_ps);
    fprintf(out, "waits        %lld (%lld never ended), %s stalled in total\n",
            (long long)s->waits, (long long)s->open_waits, a);
    fmt_bytes(a, sizeof a, (uint64_t)s->transfer_bytes);
    fprintf(out, "transfers    %lld, %s moved\n", (long long)s->transfers, a);
    fmt_bytes(a, sizeof a, (uint64_t)s->trace_bytes);
    fprintf(out, "trace        %s (%lld bytes), %.2f bytes/event\n", a, (long long)s->trace_bytes,
            events ? (double)s->trace_bytes / (double)events : 0.0);
    fmt_bytes(a, sizeof a, (uint64_t)s->index_bytes);
    fprintf(out, "index        %s (%lld bytes)\n", a, (long long)s->index_bytes);
    uint64_t comp = (uint64_t)s->compressed_bytes;
    fmt_bytes(a, sizeof a, (uint64_t)s->raw_bytes);
    fmt_bytes(b, sizeof b, comp);
    fprintf(out, "compression  %s of columns -> %s in chunk frames: %.2fx "
                 "(%.1fx against %zu-byte event records)\n",
            a, b, comp ? (double)s->raw_bytes / (double)comp : 0.0,
            comp ? (double)events * sizeof(engine_event) / (double)comp : 0.0,
            sizeof(engine_event));
}

/* Every timing parameter the run used, marked default or from --hw. */
static void print_timing(const rec_hw_value *vals, size_t n, FILE *out) {
    size_t from_hw = 0;
    fprintf(out, "timing       the values this run used (npurr hw describes each one)\n");
    for (size_t i = 0; i < n; i++) {
        const engine_hw_param *p = vals[i].param;
        if (!vals[i].recorded) {
            fprintf(out, "  %-26s %14s %-9s not recorded (run older than this key)\n", p->key,
                    "-", p->unit);
            continue;
        }
        from_hw += vals[i].from_hw != 0;
        fprintf(out, "  %-26s %14.6g %-9s %s\n", p->key, vals[i].value, p->unit,
                vals[i].from_hw ? "from --hw" : "default");
    }
    fprintf(out, "  %zu of %zu from --hw\n", from_hw, n);
}

static void info_usage(FILE *out) {
    fputs("usage: npurr info RUN\n"
          "\n"
          "Prints a summary of the recorded run in the folder RUN: kernel and the\n"
          "record command line, cluster configuration, outcome (and its message),\n"
          "data check status, duration in virtual time, event counts in total and\n"
          "per kind, waits and transfers, the sizes of trace.zst and index.db,\n"
          "compressed bytes per event and the compression ratio of the chunk\n"
          "columns, then every timing parameter the run used, each marked\n"
          "`default` or `from --hw` (`npurr hw` says what each one models).\n"
          "\n"
          "Everything comes from RUN/index.db, so it is instant on any trace size.\n"
          "\n"
          "Exit status: 0 ok; 1 RUN is missing or not an npurr run, index.db is\n"
          "missing or stale (run `npurr reindex RUN`), or the trace is truncated (the\n"
          "message says how far it is complete); 2 usage error.\n",
          out);
}

int cmd_info(int argc, char **argv) {
    const char *run;
    int parsed = cli_one_run("info", info_usage, argc, argv, &run);
    if (parsed) return parsed == CLI_HELP ? EXIT_DONE : parsed;
    char err[4096];
    rec_run_summary sum;
    int rc = rec_run_summary_read(run, &sum, err, sizeof err);
    if (rc >= 0) {
        print_run(run, &sum, stdout);
        print_contents(&sum, stdout);
        rec_run_summary_free(&sum);
    }
    if (rc < 0) {   /* not a run, or an index of another trace: nothing to show */
        fprintf(stderr, "npurr info: %s\n", err);
        return EXIT_ERROR;
    }
    /* A truncated run's timing values are still the ones it ran with. */
    char terr[1024];
    size_t n = engine_hw_count();
    rec_hw_value *vals = calloc(n, sizeof *vals);
    int trc = vals ? rec_run_timing(run, vals, n, terr, sizeof terr) : -1;
    if (!vals) snprintf(terr, sizeof terr, "out of memory");
    if (trc == 0) print_timing(vals, n, stdout);
    free(vals);
    if (trc != 0 && rc == 0) {
        snprintf(err, sizeof err, "%s", terr);
        rc = 1;
    }
    if (rc != 0) {
        fflush(stdout);
        fprintf(stderr, "npurr info: %s\n", err);
        return EXIT_ERROR;
    }
    return EXIT_DONE;
}
