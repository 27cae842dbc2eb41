/*
 * record_races.c - `--check races` for `record`: the happens-before checker
 * (checker/hb.h) wrapped around whatever observes the run (the recorder, or
 * nothing with --no-trace), the exit code it implies, and its report
 * printed and written as the `races` table of the run's index.db. Kept out
 * of cmd_record.c so that file only calls these three.
 */
#include "record_races.h"

#include <string.h>

int record_races_attach(engine *e, int enabled, hb_checker **out, char *err, size_t errlen) {
    *out = NULL;
    if (!enabled) return 0;
    engine_observer inner = engine_get_observer(e);
    if (hb_create(e, &inner, out, err, errlen)) return -1;
    engine_observer o = hb_observer(*out);
    engine_set_observer(e, &o);
    return 0;
}

int record_races_status(hb_checker *hb, const engine_result *res, int status) {
    if (!hb) return status;
    hb_finish(hb, res);
    /* A hang or a fault keeps its own code (replay reproduces it); races
     * explain a failed data check, so they take its place. */
    if ((status == EXIT_DONE || status == EXIT_CHECK) && (hb_races(hb) || hb_sync_errors(hb)))
        return EXIT_RACES;
    return status;
}

int record_races_write(hb_checker *hb, const char *run_dir) {
    if (!hb) return 0;
    char err[1024];
    if (hb_write_db(hb, run_dir, err, sizeof err)) {
        fprintf(stderr, "npurr record: %s\n", err);
        return -1;
    }
    return 0;
}

void record_races_finish(hb_checker *hb, const char *run_dir, int print_max) {
    if (!hb) return;
    printf("\n");
    hb_print(hb, stdout, (size_t)print_max);
    if (run_dir) printf("\nraces table in %s/index.db (npurr stats %s --races)\n", run_dir, run_dir);
    hb_destroy(hb);
}
