/*
 * test_session.c - the run-session library (session/session.h): runs
 * recorded through record_session_* from a command line, as `npurr record`
 * records them, and reopened with replay_session_open from nothing but
 * their folder, as `npurr replay` does.
 *
 * Covered: a completed run replays identical event for event, with the
 * spec rebuilt from the header (kernel, topology, seed, command line) and
 * the hooks called at their points; a deadlock is recorded with its
 * analysis tables derived and reproduced with the same blocked cores; an
 * npy:PATH{rank} routing input is copied into the folder and the replay
 * reads the copies after the originals are gone; --check races counts and
 * writes the races, with or without a trace; and every error is a
 * value whose message names what is wrong: a bad option or value, an
 * unusable -o, a folder that is not a run; the memory check of a run
 * split over MPI processes counts what each machine holds; a session
 * closed before it ran leaves nothing in the folder -o names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "session/session.h"
#include "tests/support.h"

/* argv of `npurr record` from a NULL-terminated word list. */
static int make_argv(char **argv, int max, const char *const *words) {
    int n = 0;
    for (; words[n]; n++) {
        assert_true(n < max - 1);
        argv[n] = (char *)words[n];
    }
    argv[n] = NULL;
    return n;
}

typedef struct seen {
    int started, ran, closed;
    uint64_t events;
    char closed_dir[4400];
} seen;

static void seen_start(void *ctx, engine *e, const kernel_desc *k, const void *state) {
    seen *s = ctx;
    assert_non_null(e);
    assert_string_equal(k->name, "combine-sender");
    assert_non_null(state);
    s->started++;
}
static void seen_event(void *ctx, const engine_event *ev) {
    seen *s = ctx;
    assert_int_equal(ev->seq, s->events + 1);
    s->events++;
}
static void seen_ran(void *ctx, engine *e, const record_result *r) {
    seen *s = ctx;
    assert_non_null(e);
    assert_true(r->ran);
    s->ran++;
}
static void seen_closed(void *ctx, const char *run_dir, const record_result *r) {
    seen *s = ctx;
    (void)r;
    snprintf(s->closed_dir, sizeof s->closed_dir, "%s", run_dir);
    s->closed++;
}

/* Records words (the session must open); *rs is the caller's to close. */
static const record_result *record_words(const char *const *words, const record_hooks *hooks,
                                         run_spec *spec, record_session **rs) {
    static char *argv[64];
    int argc = make_argv(argv, 64, words);
    char err[ENGINE_ERRLEN];
    if (run_spec_from_argv(argc, argv, spec, err, sizeof err)) fail_msg("spec: %s", err);
    if (record_session_open(spec, hooks, rs, err, sizeof err))
        fail_msg("record_session_open: %s", err);
    return record_session_run(*rs, 0);
}

/* Replays dir, which must be identical; returns the verdict's copy. */
static replay_verdict replay_identical(const char *dir, const char *kernel, uint64_t events) {
    char err[ENGINE_ERRLEN];
    replay_session *s;
    if (replay_session_open(dir, &s, err, sizeof err)) fail_msg("replay_session_open: %s", err);
    assert_string_equal(replay_session_spec(s)->opts.kernel->name, kernel);
    assert_string_equal(replay_session_note(s), "");
    replay_run rr;
    if (replay_session_run(s, NULL, 0, &rr, err, sizeof err)) fail_msg("replay_session_run: %s", err);
    assert_true(rr.ran);
    const replay_verdict *v = replay_session_verdict(s);
    if (v->status != REPLAY_IDENTICAL) {
        replay_write_report(replay_session_replay(s), stderr);
        fail_msg("the replay of %s is not identical", dir);
    }
    assert_int_equal(v->matched, events);
    assert_int_equal(rr.run.events, events);
    replay_verdict copy = *v;
    replay_session_close(s);
    return copy;
}

static void test_completed_run_replays_identical(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    const char *words[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "--seed", "3", "-o", dir, NULL};
    seen s = {0};
    record_hooks hooks = {.ctx = &s, .on_start = seen_start, .on_event = seen_event,
                          .on_ran = seen_ran, .on_closed = seen_closed};
    run_spec spec;
    record_session *rs;
    const record_result *r = record_words(words, &hooks, &spec, &rs);
    assert_true(r->ran);
    assert_int_equal(r->run.outcome, OUTCOME_COMPLETED);
    assert_string_equal(r->check, "passed");
    assert_false(r->derived);                  /* a completed run derives on first use */
    assert_true(r->traced && r->installed);
    assert_string_equal(r->finish_error, "");
    assert_string_equal(r->run_dir, dir);
    assert_int_equal(s.started, 1);
    assert_int_equal(s.ran, 1);
    assert_int_equal(s.closed, 1);
    assert_int_equal(s.events, r->run.events);
    assert_non_null(strstr(s.closed_dir, ".run.recording."));   /* before the rename */

    replay_identical(dir, "combine-sender", r->run.events);
    /* The spec a run folder gives: the recorded command line and config. */
    rec_reader *rd;
    char err[ENGINE_ERRLEN], note[256];
    assert_int_equal(rec_reader_open(dir, &rd, err, sizeof err), 0);
    run_spec back;
    assert_int_equal(run_spec_from_run(rd, dir, &back, note, sizeof note, err, sizeof err), 0);
    assert_string_equal(back.command_line, spec.command_line);
    assert_int_equal(back.opts.config.npus_per_node, 2);
    assert_int_equal(back.opts.config.seed, 3);
    run_spec_free(&back);
    rec_reader_close(rd);
    record_session_close(rs);
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
}

/* A run is rebuilt from its typed meta keys alone: every kernel option,
 * the PCT schedule, the jitter and a --hw value come back though the hw
 * file is gone and the recorded command line is not one (a run recorded
 * before the keys would be rebuilt from it, and fail). */
static void test_run_rebuilt_from_typed_keys(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200], hw[4300];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    snprintf(hw, sizeof hw, "%s/my.hw", tmp);
    FILE *f = fopen(hw, "w");
    assert_non_null(f);
    fprintf(f, "roce_gbytes_per_s=21.5\n");
    fclose(f);
    const char *words[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "--ring-bytes", "64k", "--jitter", "0.1",
                           "--pct-points", "3", "--pct-span", "500", "--pct-delay-us", "2",
                           "--force", "--hw", hw, "-o", dir, NULL};
    static char *argv[64];
    int argc = make_argv(argv, 64, words);
    run_spec spec;
    record_session *rs;
    char err[ENGINE_ERRLEN], note[256];
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), 0);
    /* the command line is for people only: a run must not need it */
    free(spec.command_line);
    spec.command_line = strdup("a line nothing parses");
    assert_int_equal(record_session_open(&spec, NULL, &rs, err, sizeof err), 0);
    const record_result *r = record_session_run(rs, 0);
    assert_true(r->ran && r->installed);
    uint64_t events = r->run.events;
    record_session_close(rs);
    run_spec_free(&spec);
    assert_int_equal(unlink(hw), 0);

    /* the typed keys, as the index's meta keeps them */
    sqlite3 *db = support_open_index(dir);
    char v[128];
    rec_index_meta_text(db, "spec_version", v, sizeof v);
    assert_string_equal(v, "1");
    rec_index_meta_text(db, "opt.ring-bytes", v, sizeof v);
    assert_string_equal(v, "64k");
    rec_index_meta_text(db, "opt.hidden", v, sizeof v);   /* a default is recorded too */
    assert_string_equal(v, "7168");
    rec_index_meta_text(db, "config.pct_points", v, sizeof v);
    assert_string_equal(v, "3");
    rec_index_meta_text(db, "config.pct_delay_ps", v, sizeof v);
    assert_string_equal(v, "2000000");
    rec_index_meta_text(db, "hw.roce_gbytes_per_s", v, sizeof v);
    assert_string_equal(v, "21.5");
    sqlite3_close(db);

    rec_reader *rd;
    assert_int_equal(rec_reader_open(dir, &rd, err, sizeof err), 0);
    run_spec back;
    assert_int_equal(run_spec_from_run(rd, dir, &back, note, sizeof note, err, sizeof err), 0);
    rec_reader_close(rd);   /* the spec owns what it took from the reader */
    assert_string_equal(back.command_line, "a line nothing parses");
    const char *rb = NULL;
    assert_int_equal(kopt_str(&back.opts.kopts, "ring-bytes", &rb), 0);
    assert_string_equal(rb, "64k");
    assert_int_equal(back.opts.config.pct_points, 3);
    assert_int_equal(back.opts.config.pct_span, 500);
    assert_int_equal(back.opts.config.pct_delay_ps, 2000000);
    assert_true(back.opts.config.jitter == 0.1);
    assert_true(back.opts.config.hw.roce_gbps == 21.5);
    run_spec_free(&back);
    replay_identical(dir, "combine-sender", events);
    assert_int_equal(support_remove_dir(tmp), 0);
}

static void test_deadlock_is_derived_and_reproduced(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    const char *words[] = {"npurr", "record", "-k", "dispatch-layered", "--nodes", "2",
                           "--npus-per-node", "2", "--tokens", "16", "--inject", "credit-leak",
                           "-o", dir, NULL};
    run_spec spec;
    record_session *rs;
    const record_result *r = record_words(words, NULL, &spec, &rs);
    assert_true(r->ran);
    assert_int_equal(r->run.outcome, OUTCOME_DEADLOCK);
    assert_string_equal(r->check, "skipped");
    assert_true(r->derived);                   /* a hang's causes are the point */
    assert_string_equal(r->analysis_error, "");
    assert_true(r->installed);
    replay_verdict v = replay_identical(dir, "dispatch-layered", r->run.events);
    assert_string_equal(v.recorded_outcome, "deadlock");
    assert_int_equal(v.outcome, OUTCOME_DEADLOCK);
    assert_int_equal(v.blocked, 16);          /* 4 RDMACoordinators on each of 4 ranks */
    record_session_close(rs);
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
}

/* A [rows, 8] int32 .npy routing: row t sends to experts t, t+7, ..., t+49. */
static void write_npy(const char *path, int rows) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char dict[118];
    int n = snprintf(dict, sizeof dict, "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, 8), }",
                     rows);
    memset(dict + n, ' ', sizeof dict - (size_t)n);
    dict[sizeof dict - 1] = '\n';             /* 10 + 118 = 128 bytes of header */
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, sizeof dict, 0};
    assert_int_equal(fwrite(pre, 1, sizeof pre, f), sizeof pre);
    assert_int_equal(fwrite(dict, 1, sizeof dict, f), sizeof dict);
    for (int t = 0; t < rows; t++)
        for (int k = 0; k < 8; k++) {
            int32_t e = (t + 7 * k) % 256;
            assert_int_equal(fwrite(&e, sizeof e, 1, f), 1);
        }
    assert_int_equal(fclose(f), 0);
}

static void test_npy_inputs_travel_with_the_run(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200], src[4200], routing[4300];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    snprintf(src, sizeof src, "%s/src", tmp);
    assert_int_equal(mkdir(src, 0755), 0);
    for (int rank = 0; rank < 2; rank++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/r%d.npy", src, rank);
        write_npy(path, 16);
    }
    snprintf(routing, sizeof routing, "npy:%s/r{rank}.npy", src);
    const char *words[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "--routing", routing, "-o", dir, NULL};
    run_spec spec;
    record_session *rs;
    const record_result *r = record_words(words, NULL, &spec, &rs);
    assert_true(r->installed);
    assert_string_equal(r->check, "passed");
    for (int rank = 0; rank < 2; rank++) {    /* the replay must read the copies */
        char path[4300];
        snprintf(path, sizeof path, "%s/r%d.npy", src, rank);
        assert_int_equal(unlink(path), 0);
    }
    char copy[4300];
    snprintf(copy, sizeof copy, "%s/inputs/routing.1.npy", dir);
    assert_int_equal(access(copy, R_OK), 0);
    replay_identical(dir, "combine-sender", r->run.events);
    record_session_close(rs);
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
}

static void test_races_are_counted_and_written(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    const char *words[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "--inject", "no-mte3-wait", "--check", "races",
                           "-o", dir, NULL};
    run_spec spec;
    record_session *rs;
    const record_result *r = record_words(words, NULL, &spec, &rs);
    assert_non_null(r->checker);
    assert_true(r->races > 0);
    assert_int_equal(r->races, hb_races(r->checker));
    assert_true(r->installed);
    sqlite3 *db = support_open_index(dir);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM races", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_true(sqlite3_column_int64(st, 0) > 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    record_session_close(rs);
    run_spec_free(&spec);
    /* Without a trace: the same run, nothing written, the same verdict. */
    const char *plain[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "--inject", "no-mte3-wait", "--check", "races",
                           "--no-trace", NULL};
    r = record_words(plain, NULL, &spec, &rs);
    assert_false(r->traced);
    assert_false(r->installed);
    assert_string_equal(r->run_dir, "");
    assert_true(r->races > 0);
    record_session_close(rs);
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
}

static void test_bad_options_are_named(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    char *argv[16];
    run_spec spec;
    /* A kernel option's value is read by the kernel: the session refuses
     * it before anything is built (or written to -o). */
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    const char *bad_value[] = {"npurr", "record", "-k", "combine-sender", "--tokens", "many",
                               "-o", dir, NULL};
    int argc = make_argv(argv, 16, bad_value);
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_OK);
    record_session *rs = NULL;
    assert_int_equal(record_session_open(&spec, NULL, &rs, err, sizeof err), SESSION_USAGE);
    assert_null(rs);
    assert_non_null(strstr(err, "--tokens"));
    assert_non_null(strstr(err, "many"));
    assert_int_equal(access(dir, F_OK), -1);
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
    const char *bad_engine_value[] = {"npurr", "record", "-k", "combine-sender", "--nodes", "0",
                                      NULL};
    argc = make_argv(argv, 16, bad_engine_value);
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_USAGE);
    assert_non_null(strstr(err, "--nodes"));
    run_spec_free(&spec);
    const char *bad_kernel[] = {"npurr", "record", "-k", "no-such-kernel", NULL};
    argc = make_argv(argv, 16, bad_kernel);
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_USAGE);
    assert_non_null(strstr(err, "no-such-kernel"));
    run_spec_free(&spec);
    const char *bad_option[] = {"npurr", "record", "-k", "combine-sender", "--no-such-option", "1",
                                NULL};
    argc = make_argv(argv, 16, bad_option);
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_USAGE);
    assert_non_null(strstr(err, "--no-such-option"));
    run_spec_free(&spec);
}

/* "needs at least 1.9 TiB" in a memory refusal, in bytes. */
static double needed_bytes(const char *err) {
    const char *at = strstr(err, "needs at least ");
    assert_non_null(at);
    double v;
    char unit[4];
    assert_int_equal(sscanf(at, "needs at least %lf %3s", &v, unit), 2);
    if (strcmp(unit, "TiB") == 0) return v * 1099511627776.0;
    if (strcmp(unit, "GiB") == 0) return v * 1073741824.0;
    return v * 1048576.0;
}

/* A run split over MPI processes is checked by what this machine holds:
 * one process of 32 needs about a 32nd of the GM; all 32 on one machine
 * need at least the whole run. The shape (EP256, a million tokens per
 * rank, every byte stored: 60 TiB) is refused on any machine either way. */
static void test_split_memory_is_checked_per_machine(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    char *argv[24];
    run_spec spec;
    const char *words[] = {"npurr", "record", "-k", "dispatch-layered", "--nodes", "32",
                           "--tokens", "1048576", "--payload", "full", "--no-trace", NULL};
    int argc = make_argv(argv, 24, words);
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_OK);
    assert_int_equal(session_memory_check(&spec.opts, 0, 1, 1, err, sizeof err), -1);
    double whole = needed_bytes(err);
    assert_null(strstr(err, "MPI"));
    assert_int_equal(session_memory_check(&spec.opts, 0, 32, 1, err, sizeof err), -1);
    double one = needed_bytes(err);
    assert_non_null(strstr(err, "for the 1 of its 32 MPI processes on this machine"));
    assert_non_null(strstr(err, "more machines"));
    assert_true(one < whole / 30 && one > whole / 34);
    assert_int_equal(session_memory_check(&spec.opts, 0, 32, 32, err, sizeof err), -1);
    assert_true(needed_bytes(err) >= whole);
    run_spec_free(&spec);
}

static void test_bad_output_folders_are_named(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200], err[ENGINE_ERRLEN];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    char stray[4300];
    snprintf(stray, sizeof stray, "%s/notes.txt", dir);
    FILE *f = fopen(stray, "w");
    assert_non_null(f);
    fclose(f);
    const char *words[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "-o", dir, NULL};
    char *argv[16];
    int argc = make_argv(argv, 16, words);
    run_spec spec;
    record_session *rs = NULL;
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_OK);
    assert_int_equal(record_session_open(&spec, NULL, &rs, err, sizeof err), SESSION_USAGE);
    assert_null(rs);
    assert_non_null(strstr(err, dir));
    assert_non_null(strstr(err, "not an npurr run"));
    assert_int_equal(access(stray, F_OK), 0);    /* nothing was touched */
    run_spec_free(&spec);
    const char *no_out[] = {"npurr", "record", "-k", "combine-sender", NULL};
    argc = make_argv(argv, 16, no_out);
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_OK);
    assert_int_equal(record_session_open(&spec, NULL, &rs, err, sizeof err), SESSION_USAGE);
    assert_null(rs);
    assert_non_null(strstr(err, "-o RUN"));
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
}

static void test_bad_run_folders_are_named(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200], err[ENGINE_ERRLEN];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    replay_session *s = NULL;
    assert_int_equal(replay_session_open(dir, &s, err, sizeof err), SESSION_ERROR);
    assert_null(s);
    assert_non_null(strstr(err, dir));       /* absent */
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(replay_session_open(dir, &s, err, sizeof err), SESSION_ERROR);
    assert_null(s);
    assert_non_null(strstr(err, dir));       /* empty: no trace */
    assert_int_equal(support_remove_dir(tmp), 0);
}

/* Opened, not run, closed: the hidden folder the recorder opened goes,
 * -o is never made, and a second run of a session that ran runs nothing. */
static void test_closing_before_the_run_leaves_nothing(void **state) {
    (void)state;
    char tmp[] = "/tmp/npurr_session_XXXXXX", dir[4200], err[ENGINE_ERRLEN];
    assert_int_equal(support_tmp_run(tmp, sizeof tmp, dir, sizeof dir), 0);
    const char *words[] = {"npurr", "record", "-k", "combine-sender", "--npus-per-node", "2",
                           "--tokens", "16", "-o", dir, NULL};
    char *argv[16];
    int argc = make_argv(argv, 16, words);
    run_spec spec;
    assert_int_equal(run_spec_from_argv(argc, argv, &spec, err, sizeof err), SESSION_OK);
    seen s = {0};
    record_hooks hooks = {.ctx = &s, .on_start = seen_start, .on_ran = seen_ran};
    record_session *rs = NULL;
    assert_int_equal(record_session_open(&spec, &hooks, &rs, err, sizeof err), SESSION_OK);
    assert_int_equal(s.started, 1);
    record_session_close(rs);
    assert_int_equal(s.ran, 0);
    assert_int_equal(access(dir, F_OK), -1);
    char only[4300];                          /* the parent holds nothing but -o's absence */
    snprintf(only, sizeof only, "rmdir '%s' 2>/dev/null", tmp);
    assert_int_equal(system(only), 0);
    assert_int_equal(mkdir(tmp, 0700), 0);
    assert_int_equal(record_session_open(&spec, &hooks, &rs, err, sizeof err), SESSION_OK);
    const record_result *r = record_session_run(rs, 0);
    assert_true(r->installed);
    assert_int_equal(s.ran, 1);
    assert_ptr_equal(record_session_run(rs, 0), r);
    assert_int_equal(s.ran, 1);
    record_session_close(rs);
    run_spec_free(&spec);
    assert_int_equal(support_remove_dir(tmp), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completed_run_replays_identical),
        cmocka_unit_test(test_run_rebuilt_from_typed_keys),
        cmocka_unit_test(test_deadlock_is_derived_and_reproduced),
        cmocka_unit_test(test_npy_inputs_travel_with_the_run),
        cmocka_unit_test(test_races_are_counted_and_written),
        cmocka_unit_test(test_bad_options_are_named),
        cmocka_unit_test(test_split_memory_is_checked_per_machine),
        cmocka_unit_test(test_bad_output_folders_are_named),
        cmocka_unit_test(test_bad_run_folders_are_named),
        cmocka_unit_test(test_closing_before_the_run_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
