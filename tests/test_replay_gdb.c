/*
 * test_replay_gdb.c - break points under gdb and the gdb extension.
 *
 * This program is both the test and the debuggee. The test records a run of
 * the deadlocking kernel below, then starts
 *   gdb -batch -x npurr_gdb.py ... --args <this program> --replay-child RUN SEQ
 * where --replay-child replays RUN through the replayer library exactly as
 * `npurr replay RUN --break-at SEQ` does. SEQ is the wait that completes the
 * deadlock, issued from waiter_wait_for_release: gdb must stop there (the
 * extension selects that frame and prints it with the file:line recorded
 * for the event), `npurr cores` must list every core already blocked,
 * `npurr bt` must unwind a suspended core's own stack, `npurr rings` must
 * show the ring the releaser advanced, and `npurr goto` must get to an
 * earlier event, both by re-running and by resuming a snapshot; at a
 * breakpoint the user set, the commands still answer. Every run of gdb has
 * `set may-call-functions off`: the extension must never call into the
 * process (gdb cannot on some CPUs), so a call fails these tests anywhere.
 * gdb -batch
 * kills what it started; the test checks that no process of it is left.
 *
 * npurr_gdb.py is the copy CMake puts next to the binaries (the build dir).
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "npurr/device.h"
#include "recorder/recorder.h"
#include "replayer/replayer.h"

#define BLOCKS 3

typedef struct dl_args {
    gm_t flag, scratch;
    uint32_t ring[8];
    int iters;
} dl_args;

/* Its own function, so gdb has a kernel frame with a name to stop in. */
__attribute__((noinline)) static int32_t waiter_wait_for_release(gm_t flag) {
    return WaitGM32(flag, COND_EQ, 1);
}

static void deadlock_kernel(const void *a) {
    const dl_args *t = a;
    int rank = GetRank(), b = GetBlockIdx();
    SetRole(b == 0 ? "Releaser" : "Waiter");
    gm_t mine = gm_add(gm_on_rank(t->scratch, rank), 64 * b);
    for (int i = 0; i < t->iters; i++) SetValue32(mine, i);
    if (b == 0) {
        RingStoreTail(t->ring[rank], 64);
        SetValue32(gm_on_rank(t->flag, rank), 2);   /* the waiters want 1: deadlock */
    } else {
        /* Using the result keeps this frame (no tail call) for npurr bt. */
        SetValue32(mine, waiter_wait_for_release(gm_on_rank(t->flag, rank)));
    }
}

static int dl_setup(engine *e, int iters, dl_args *args) {
    char err[ENGINE_ERRLEN];
    memset(args, 0, sizeof *args);
    args->iters = iters;
    gm_t ctrl;
    if (engine_sym_alloc(e, 64, "flag", &args->flag, err, sizeof err) ||
        engine_sym_alloc(e, 64 * BLOCKS, "scratch", &args->scratch, err, sizeof err) ||
        engine_sym_alloc(e, 128, "ring_ctrl", &ctrl, err, sizeof err)) {
        fprintf(stderr, "dl_setup: %s\n", err);
        return -1;
    }
    for (int r = 0; r < engine_num_ranks(e); r++) {
        engine_name_word(e, gm_on_rank(args->flag, r), 4, OBJ_FLAG, "release");
        char name[32];
        snprintf(name, sizeof name, "demo_ring[%d]", r);
        args->ring[r] = engine_declare_ring(e, name, RING_HCCS, gm_on_rank(ctrl, r),
                                            gm_add(gm_on_rank(ctrl, r), 64), 8, 4096, r, r);
    }
    if (engine_launch(e, "deadlock", deadlock_kernel, args, BLOCKS, CORE_AIV, err, sizeof err)) {
        fprintf(stderr, "dl_setup: %s\n", err);
        return -1;
    }
    return 0;
}

static void dl_config(engine_config *cfg) {
    engine_config_defaults(cfg);
    cfg->nodes = 1;
    cfg->npus_per_node = 2;
    cfg->seed = 3;
}

/* ------------------------------------------------------------ debuggee */

/* `npurr replay RUN --break-at SEQ [--checkpoint-every N]` for this kernel,
 * with the same option names, so `npurr goto` can re-run it. */
static int replay_child(int argc, char **argv) {
    replay_opts o = {0};
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--break-at") == 0) o.break_at = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--checkpoint-every") == 0)
            o.checkpoint_every = strtoull(argv[i + 1], NULL, 10);
    }
    if (argc < 4) {
        fprintf(stderr, "usage: test_replay_gdb --replay-child RUN ITERS [--break-at SEQ] "
                        "[--checkpoint-every N]\n");
        return 2;
    }
    char err[ENGINE_ERRLEN];
    rec_reader *r;
    if (rec_reader_open(argv[2], &r, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    engine_config cfg;
    engine_config_defaults(&cfg);
    engine *e;
    dl_args args;
    replay *rp;
    if (rec_meta_get_config(rec_reader_meta_get, r, &cfg, NULL, err, sizeof err) ||
        engine_create(&cfg, &e, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (dl_setup(e, atoi(argv[3]), &args) || replay_attach(e, r, &o, &rp, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    engine_result res;
    if (engine_run(e, &res, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    replay_finish(rp, &res, "skipped", NULL);
    replay_write_report(rp, stdout);
    int code = replay_exit_code(rp);
    replay_free(rp);
    engine_destroy(e);
    rec_reader_close(r);
    return code;
}

/* ------------------------------------------------------------ recording */

typedef struct recorded {
    engine_event *v;
    size_t n, cap;
    char site_file[512], site_func[128];
    int site_line;
    uint64_t target;          /* the wait that completes the deadlock */
    int blocked[16][2];       /* (rank, AIV index) of every EV_BLOCKED */
    int nblocked, num_aic;
} recorded;

static void keep_event(void *ctx, const engine_event *ev) {
    recorded *x = ctx;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 4096;
        x->v = realloc(x->v, x->cap * sizeof *x->v);
        if (!x->v) abort();
    }
    x->v[x->n++] = *ev;
}

static void record(const char *dir, int iters, recorded *out) {
    char err[ENGINE_ERRLEN];
    memset(out, 0, sizeof *out);
    engine_config cfg;
    dl_config(&cfg);
    engine *e;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    dl_args args;
    assert_int_equal(dl_setup(e, iters, &args), 0);
    rec_run_info info = {"deadlock", "test_replay_gdb", &cfg, engine_cores_per_rank(e),
                         engine_num_aic(e), engine_num_aiv(e), NULL};
    rec_writer *w;
    if (rec_open(dir, &info, &w, err, sizeof err)) fail_msg("rec_open: %s", err);
    rec_attach(w, e);
    engine_tee t = {.also = {.ctx = out, .on_event = keep_event}};
    rec_observer(w, &t.inner);
    engine_observer obs = engine_tee_observer(&t);
    engine_set_observer(e, &obs);
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    assert_int_equal(res.outcome, OUTCOME_DEADLOCK);
    assert_int_equal(rec_close(w, &res, "skipped", NULL, err, sizeof err), 0);
    out->num_aic = engine_num_aic(e);
    for (size_t i = 0; i < out->n; i++) {
        const engine_event *ev = &out->v[i];
        if (ev->kind != EV_BLOCKED) continue;
        assert_true(out->nblocked < 16);
        out->blocked[out->nblocked][0] = (int)ev->rank;
        out->blocked[out->nblocked][1] = (int)ev->core - engine_num_aic(e);
        out->nblocked++;
        if (ev->link > out->target) out->target = ev->link;
    }
    assert_true(out->target > 0);
    engine_site s;
    assert_true(engine_site_get(e, out->v[out->target - 1].site, &s));
    snprintf(out->site_file, sizeof out->site_file, "%s", s.file);
    snprintf(out->site_func, sizeof out->site_func, "%s", s.func);
    out->site_line = s.line;
    engine_destroy(e);
}

/* ------------------------------------------------------------ gdb */

static char g_tmp[256], g_self[1024], g_script[1100];

static int setup(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/npurr_test_replay_gdb_XXXXXX");
    if (!mkdtemp(g_tmp)) return -1;
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0) return -1;
    g_self[n] = 0;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", g_self);
    snprintf(g_script, sizeof g_script, "%s/npurr_gdb.py", dirname(dir));
    if (access(g_script, R_OK) != 0) {
        fprintf(stderr, "%s is missing: CMake copies replayer/npurr_gdb.py there\n", g_script);
        return -1;
    }
    if (system("gdb --version > /dev/null 2>&1") != 0) {
        fprintf(stderr, "gdb is not installed: these tests need it\n");
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs gdb -batch on this program in --replay-child mode with the given
 * commands; returns gdb's whole output (malloc'd). */
static char *run_gdb_with(const char *run, int iters, uint64_t seq, uint64_t every,
                          const char *const *before_run, const char *const *cmds) {
    char line[8192];
    int k = snprintf(line, sizeof line,
                     "ASAN_OPTIONS=detect_leaks=0 timeout 300 gdb -nx -batch -q "
                     "-iex 'set auto-load safe-path /nonexistent' "
                     "-iex 'set may-call-functions off' -x '%s'",
                     g_script);
    for (; before_run && *before_run; before_run++)
        k += snprintf(line + k, sizeof line - (size_t)k, " -ex '%s'", *before_run);
    k += snprintf(line + k, sizeof line - (size_t)k, " -ex run");
    for (; *cmds; cmds++) k += snprintf(line + k, sizeof line - (size_t)k, " -ex '%s'", *cmds);
    k += snprintf(line + k, sizeof line - (size_t)k,
                  " --args '%s' --replay-child '%s' %d --break-at %llu", g_self, run, iters,
                  (unsigned long long)seq);
    if (every)
        k += snprintf(line + k, sizeof line - (size_t)k, " --checkpoint-every %llu",
                      (unsigned long long)every);
    snprintf(line + k, sizeof line - (size_t)k, " < /dev/null 2>&1");
    FILE *p = popen(line, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[len] = 0;
    pclose(p);
    return out;
}

static char *run_gdb(const char *run, int iters, uint64_t seq, uint64_t every,
                     const char *const *cmds) {
    return run_gdb_with(run, iters, seq, every, NULL, cmds);
}

/* Every process whose command line mentions run: none may survive gdb. */
static int processes_of(const char *run) {
    DIR *d = opendir("/proc");
    struct dirent *de;
    int found = 0;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || atoi(de->d_name) == getpid()) continue;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++)
            if (!buf[i]) buf[i] = ' ';
        buf[n] = 0;
        if (strstr(buf, "--replay-child") && strstr(buf, run)) found++;
    }
    if (d) closedir(d);
    return found;
}

static void expect(const char *out, const char *what) {
    if (!strstr(out, what)) fail_msg("gdb's output lacks \"%s\":\n%s", what, out);
}

/* gdb's output from the first occurrence of from on (fails without it). */
static const char *after(const char *out, const char *from) {
    const char *p = strstr(out, from);
    if (!p) fail_msg("gdb's output lacks \"%s\":\n%s", from, out);
    return p;
}

static void test_break_stops_in_the_kernel_function(void **state) {
    (void)state;
    char run[300], want[1024];
    snprintf(run, sizeof run, "%s/dl", g_tmp);
    recorded rec;
    record(run, 2, &rec);
    assert_string_equal(rec.site_func, "waiter_wait_for_release");
    /* A waiter other than the one about to wait: suspended, with a stack. */
    const engine_event *tev = &rec.v[rec.target - 1];
    int bt_rank = -1, bt_aiv = -1;
    for (int i = 0; i < rec.nblocked && bt_rank < 0; i++)
        if (rec.blocked[i][0] != (int)tev->rank || rec.blocked[i][1] != (int)tev->core - rec.num_aic) {
            bt_rank = rec.blocked[i][0];
            bt_aiv = rec.blocked[i][1];
        }
    char bt_cmd[64], bt_head[64];
    snprintf(bt_cmd, sizeof bt_cmd, "npurr bt %d AIV%d", bt_rank, bt_aiv);
    snprintf(bt_head, sizeof bt_head, "rank %d core %d, suspended", bt_rank, rec.num_aic + bt_aiv);
    const char *cmds[] = {"npurr when", "npurr cores", "npurr cores --all", "npurr rings",
                          "npurr rings --all", "npurr cores --blocked --rank 0",
                          "npurr rings --full", bt_cmd, NULL};
    char *out = run_gdb(run, 2, rec.target, 0, cmds);

    snprintf(want, sizeof want, "stopped before event %llu, issued by waiter_wait_for_release at %s:%d",
             (unsigned long long)rec.target, rec.site_file, rec.site_line);
    expect(out, want);
    /* gdb's own frame line: the kernel function at the recorded file:line. */
    const char *frame = after(out, want);
    snprintf(want, sizeof want, "waiter_wait_for_release (flag=");
    expect(frame, want);
    snprintf(want, sizeof want, "test_replay_gdb.c:%d", rec.site_line);
    expect(frame, want);

    snprintf(want, sizeof want, "seq %llu (about to execute)", (unsigned long long)rec.target);
    expect(out, want);
    /* npurr cores: every core the deadlock report names, except the one
     * about to begin its wait, is already blocked on the release word. */
    int blocked = 0;
    for (int i = 0; i < rec.nblocked; i++) {
        char name[64];
        snprintf(name, sizeof name, "\n  rank %d AIV%d ", rec.blocked[i][0], rec.blocked[i][1]);
        const char *line = strstr(out, name);
        if (!line) fail_msg("npurr cores does not list%s:\n%s", name, out);
        const char *eol = strchr(line + 1, '\n');
        int is_target = rec.blocked[i][0] == (int)tev->rank &&
                        rec.blocked[i][1] == (int)tev->core - rec.num_aic;
        const char *state = is_target ? "running" : "blocked   ";
        const char *hit = strstr(line, state);
        if (!hit || (eol && hit > eol)) fail_msg("%s is not %s:\n%s", name + 1, state, out);
        if (!is_target) {
            const char *on = strstr(line, "on release == 1 (current");
            if (!on || (eol && on > eol)) fail_msg("%s: not blocked on the release word", name + 1);
            blocked++;
        }
    }
    snprintf(want, sizeof want, "%d blocked", blocked);
    expect(out, want);
    /* Summaries first; without options only the summary and a hint. */
    expect(out, "lists cores; --all lists every one)");
    expect(out, "lists rings; --all lists every one)");
    int blocked_r0 = 0;
    for (int i = 0; i < rec.nblocked; i++)
        blocked_r0 += rec.blocked[i][0] == 0 &&
                      !(rec.blocked[i][0] == (int)tev->rank &&
                        rec.blocked[i][1] == (int)tev->core - rec.num_aic);
    snprintf(want, sizeof want, "  (%d of ", blocked_r0);
    const char *filtered = after(out, "rings --full | --rank R");   /* after the plain rings */
    expect(filtered, want);
    expect(filtered, "(0 of 2 rings match)");   /* nothing is full */
    /* npurr rings: the releaser advanced its ring's tail to 64. */
    expect(out, "demo_ring[0]");
    expect(out, "tail 64  capacity 4096  occupancy 64");
    /* npurr bt: the suspended waiter's own stack. */
    const char *bt = after(out, bt_head);
    expect(bt, "dev_gm_wait");
    expect(bt, "waiter_wait_for_release");
    expect(bt, "deadlock_kernel");
    free(out);
    assert_int_equal(processes_of(run), 0);
    free(rec.v);
}

static void test_goto_reruns_to_an_earlier_event(void **state) {
    (void)state;
    char run[300], want[200];
    snprintf(run, sizeof run, "%s/dl_goto", g_tmp);
    recorded rec;
    record(run, 2, &rec);
    uint64_t earlier = rec.target / 2;
    char go[64];
    snprintf(go, sizeof go, "npurr goto %llu", (unsigned long long)earlier);
    const char *cmds[] = {go, "npurr when", NULL};
    char *out = run_gdb(run, 2, rec.target, 0, cmds);
    snprintf(want, sizeof want, "re-running from the first event to seq %llu",
             (unsigned long long)earlier);
    expect(out, want);
    const char *rest = after(out, want);
    snprintf(want, sizeof want, "seq %llu (about to execute)", (unsigned long long)earlier);
    expect(rest, want);
    free(out);
    assert_int_equal(processes_of(run), 0);
    free(rec.v);
}

static void test_goto_resumes_a_snapshot(void **state) {
    (void)state;
    char run[300], want[200];
    snprintf(run, sizeof run, "%s/dl_ckpt", g_tmp);
    recorded rec;
    record(run, 1500, &rec);
    assert_true(rec.target > 6000);
    uint64_t earlier = 3500;
    char go[64], fwd[64];
    snprintf(go, sizeof go, "npurr goto %llu", (unsigned long long)earlier);
    snprintf(fwd, sizeof fwd, "npurr goto %llu", (unsigned long long)earlier + 10);
    const char *cmds[] = {"npurr checkpoints", go, "npurr when", fwd, "npurr when", NULL};
    char *out = run_gdb(run, 1500, rec.target, 1000, cmds);
    expect(out, "after seq 1000 ");
    snprintf(want, sizeof want, "resuming the snapshot taken after seq 3000 (process");
    expect(out, want);
    const char *rest = after(out, want);
    snprintf(want, sizeof want, "seq %llu (about to execute)", (unsigned long long)earlier);
    expect(rest, want);
    snprintf(want, sizeof want, "seq %llu (about to execute)", (unsigned long long)earlier + 10);
    expect(rest, want);
    /* Forwards is a moved break point in the same process, not a re-run. */
    if (strstr(out, "re-running")) fail_msg("goto re-ran instead of resuming:\n%s", out);
    free(out);
    assert_int_equal(processes_of(run), 0);
    free(rec.v);
}

/* Snapshots survive `npurr goto`: going back twice in a row into the same
 * interval resumes a snapshot both times (the second time the copy the
 * first resumed one left behind), never re-running from the first event. */
static void test_goto_back_twice_resumes_snapshots_both_times(void **state) {
    (void)state;
    char run[300];
    snprintf(run, sizeof run, "%s/dl_back", g_tmp);
    recorded rec;
    record(run, 1500, &rec);
    assert_true(rec.target > 6000);
    char go1[64], go2[64];
    snprintf(go1, sizeof go1, "npurr goto %d", 3500);
    snprintf(go2, sizeof go2, "npurr goto %d", 3400);
    const char *cmds[] = {go1, "npurr when", go2, "npurr when", NULL};
    char *out = run_gdb(run, 1500, rec.target, 1000, cmds);
    const char *first = after(out, "resuming the snapshot taken after seq 3000 (process");
    expect(first, "seq 3500 (about to execute)");
    const char *second = after(first + 1, "resuming the snapshot taken after seq 3000 (process");
    expect(second, "seq 3400 (about to execute)");
    if (strstr(out, "re-running")) fail_msg("going back re-ran instead of resuming:\n%s", out);
    free(out);
    assert_int_equal(processes_of(run), 0);
    free(rec.v);
}

/* A stop the user made (a gdb breakpoint in the kernel), not an npurr
 * break: the commands still read the view, which follows the events, and
 * `npurr goto` forwards moves the engine's break from there. */
static void test_commands_at_a_breakpoint_of_the_user(void **state) {
    (void)state;
    char run[300], want[200];
    snprintf(run, sizeof run, "%s/dl_user", g_tmp);
    recorded rec;
    record(run, 2, &rec);
    char go[64];
    uint64_t target = rec.target - 1;
    snprintf(go, sizeof go, "npurr goto %llu", (unsigned long long)target);
    const char *before[] = {"break waiter_wait_for_release", NULL};
    const char *cmds[] = {"npurr when", "npurr cores --role Waiter", "npurr rings --all",
                          "delete", go, "npurr when", NULL};
    /* --break-at past the end: only the user's breakpoint stops the run. */
    char *out = run_gdb_with(run, 2, rec.n + 10, 0, before, cmds);
    expect(out, "Breakpoint 1, waiter_wait_for_release");
    const char *when = after(out, "(last executed), virtual time");
    expect(when, "  running: rank ");
    expect(when, " Waiter, local time ");
    /* The waiter stopped in its kernel is the running core. */
    const char *cores = after(when, "cores: 1 running");
    expect(cores, "Waiter ");
    expect(cores, "running");
    expect(cores, "demo_ring[0]");
    snprintf(want, sizeof want, "seq %llu (about to execute)", (unsigned long long)target);
    expect(after(cores, "demo_ring[0]"), want);
    if (strstr(out, "cannot")) fail_msg("a command failed:\n%s", out);
    free(out);
    assert_int_equal(processes_of(run), 0);
    free(rec.v);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--replay-child") == 0) return replay_child(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_break_stops_in_the_kernel_function),
        cmocka_unit_test(test_goto_reruns_to_an_earlier_event),
        cmocka_unit_test(test_goto_resumes_a_snapshot),
        cmocka_unit_test(test_goto_back_twice_resumes_snapshots_both_times),
        cmocka_unit_test(test_commands_at_a_breakpoint_of_the_user),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
