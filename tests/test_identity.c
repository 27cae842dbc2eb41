/*
 * test_identity.c - every kernel's event stream, pinned: each row below is
 * recorded as `npurr record ARGS --no-trace` records it (record_session,
 * the output check included) with an observer folding every event into a
 * 64-bit FNV-1a hash (tests/digest.h), and the hash and the event count
 * must equal the row's. A change that only makes npurr faster leaves them
 * equal; one that changes any field of any event (a time, a seq link, an
 * interned id, the order) fails here, naming the kernel.
 *
 * The table is the one place the pinned values live. A change that is
 * meant to move events (the timing model, a kernel) regenerates it and
 * says why in its commit:
 *
 *   build/test_identity --print             the rows as they are now, to paste
 *   build/test_identity --hw FILE           the test under other timing (fails)
 *   build/test_identity --run -k K [opts]   events and hash of any record line
 *
 * Only events are hashed, not call sites' file:line, so editing a kernel's
 * comments does not move the pins. A site id is folded as the order in
 * which its text (file, line, function) first appeared: an unoptimized
 * build keeps several copies of one __FILE__, which the engine interns as
 * several sites, and the pins hold for every build type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "session/session.h"
#include "tests/digest.h"

typedef struct pin {
    const char *args;      /* `npurr record` options, without --no-trace */
    uint64_t events;
    uint64_t hash;
} pin;

/* The pinned streams. Regenerate with `build/test_identity --print`. */
static const pin pins[] = {
    {"-k combine-sender", 175760, 0x4a0c18ca02932671ULL},
    {"-k combine-sender-inplace", 170004, 0x7e84b297dd338cc3ULL},
    {"-k combine-normal", 171810, 0x6c5fa17d0d147050ULL},
    {"-k dispatch-normal", 174893, 0xd597fce341e9aa0cULL},
    {"-k dispatch-layered", 252723, 0x7f4fc9e2b635aa70ULL},
    {"-k dispatch-layered --nodes 2 --npus-per-node 4 --tokens 40 --hidden 64 --experts 16 --notify a2 --dispatches 1", 1122825, 0x8f5eaf025a1bd098ULL},
    {"-k matmul-reduce-scatter", 44417, 0xc610d5b981422d02ULL},
    {"-k fullmesh-dispatch-combine", 43554, 0x8aa0489f12ed82f2ULL},
    {"-k fullmesh-dispatch-combine --dtype int8 --hidden 256", 51227, 0x40637ecb690d4b5bULL},
    {"-k dispatch-layered --nodes 2 --tokens 256", 1096509, 0xa622b39b43729116ULL},
    {"-k dispatch-normal --nodes 2 --npus-per-node 4 --tokens 40 --hidden 64 --experts 16", 71645, 0x94e619096be8041eULL},
    {"-k dispatch-layered --nodes 2 --npus-per-node 4 --tokens 40 --hidden 64 --experts 16 --notify a2-pre211 --dispatches 1", 1122969, 0xcf2d975ee22c13ddULL},
    {"-k ll-single-dispatch-combine", 71657, 0x5f2be3f6ab05d905ULL},
    {"-k ll-single-dispatch-combine --dtype bf16 --hidden 128", 69612, 0x6ca0ed15301022d7ULL},
    {"-k ll-layered-dispatch-combine --nodes 2 --npus-per-node 4 --cores 12", 74067, 0xa3dce84f55bb4aceULL},
    {"-k combine-normal-layered --nodes 2 --npus-per-node 4 --tokens 40 --hidden 64 --experts 16 --cores 8", 72915, 0xcc25b9957f83efb7ULL},
};
#define N_PINS (sizeof pins / sizeof pins[0])

static const char *g_hw;   /* --hw FILE appended to every row */

#define MAX_SITES 4096

/* The digest, and each site id's canonical number (1 + the index of its
 * text among the distinct texts seen). */
typedef struct identity {
    digest d;
    uint32_t canon[MAX_SITES];
    engine_site text[MAX_SITES];
    uint32_t n_text;
    int overflow;
} identity;

static void id_site(void *ctx, const engine_site *s) {
    identity *x = ctx;
    if (s->id >= MAX_SITES) {
        x->overflow = 1;
        return;
    }
    uint32_t k = 0;
    while (k < x->n_text && !(x->text[k].line == s->line && !strcmp(x->text[k].file, s->file) &&
                              !strcmp(x->text[k].func, s->func)))
        k++;
    if (k == x->n_text) x->text[x->n_text++] = *s;
    x->canon[s->id] = k + 1;
}

static void id_event(void *ctx, const engine_event *ev) {
    identity *x = ctx;
    engine_event c = *ev;
    if (c.site) c.site = c.site < MAX_SITES ? x->canon[c.site] : 0;
    digest_on_event(&x->d, &c);
}

static void install_digest(void *ctx, engine *e, const kernel_desc *k, const void *state) {
    (void)k;
    (void)state;
    identity *x = ctx;
    /* sites interned by the setup, before the observer */
    engine_site s;
    for (uint32_t id = 1; engine_site_get(e, id, &s); id++) id_site(x, &s);
    engine_observer o = {.ctx = ctx, .on_site = id_site, .on_event = id_event};
    engine_set_observer(e, &o);
}

/* Records `npurr record WORDS --no-trace [--hw FILE] --quiet` into d; 0,
 * or -1 with err. The run must complete and pass its check. */
static int record_digest(int nwords, char **words, identity *d, char *err, size_t errlen) {
    char *argv[80];
    int argc = 0;
    argv[argc++] = "npurr";
    argv[argc++] = "record";
    for (int i = 0; i < nwords && argc < 74; i++) argv[argc++] = words[i];
    argv[argc++] = "--no-trace";
    argv[argc++] = "--quiet";
    if (g_hw) {
        argv[argc++] = "--hw";
        argv[argc++] = (char *)g_hw;
    }
    argv[argc] = NULL;
    run_spec spec;
    int rc = run_spec_from_argv(argc, argv, &spec, err, errlen);
    if (rc) {
        run_spec_free(&spec);
        return -1;
    }
    memset(d, 0, sizeof *d);
    digest_init(&d->d);
    record_hooks hooks = {.ctx = d, .on_start = install_digest};
    record_session *rs = NULL;
    rc = record_session_open(&spec, &hooks, &rs, err, errlen);
    const record_result *r = rc ? NULL : record_session_run(rs, 0);
    if (r && (!r->ran || r->run.outcome != OUTCOME_COMPLETED || strcmp(r->check, "passed") != 0)) {
        snprintf(err, errlen, "the run did not complete and pass its check: %s %s",
                 r->ran ? r->run.message : r->error, r->check_message);
        rc = -1;
    }
    if (!rc && d->overflow) {
        snprintf(err, errlen, "more than %d call sites", MAX_SITES);
        rc = -1;
    }
    record_session_close(rs);
    run_spec_free(&spec);
    return rc ? -1 : 0;
}

static int pin_digest(const pin *p, identity *d, char *err, size_t errlen) {
    char **words = NULL;
    int n = shell_split(p->args, &words);
    if (n < 0) {
        snprintf(err, errlen, "malformed row: %s", p->args);
        return -1;
    }
    int rc = record_digest(n, words, d, err, errlen);
    free(words);
    return rc;
}

static void test_pinned(void **state) {
    const pin *p = *state;
    static identity x;
    const digest *dd = &x.d;
    char err[2 * ENGINE_ERRLEN + 1024];
    if (pin_digest(p, &x, err, sizeof err)) fail_msg("%s: %s", p->args, err);
    if (dd->events != p->events || dd->h != p->hash)
        fail_msg("%s: %llu events, hash 0x%016llx; pinned %llu events, 0x%016llx.\n"
                 "A speed change must not move an event. If the events are meant to change "
                 "(timing model, kernel), regenerate the table with `build/test_identity --print` "
                 "and say why in the commit.",
                 p->args, (unsigned long long)dd->events, (unsigned long long)dd->h,
                 (unsigned long long)p->events, (unsigned long long)p->hash);
}

static int print_table(void) {
    static identity x;
    for (size_t i = 0; i < N_PINS; i++) {
        char err[2 * ENGINE_ERRLEN + 1024];
        if (pin_digest(&pins[i], &x, err, sizeof err)) {
            fprintf(stderr, "test_identity: %s: %s\n", pins[i].args, err);
            return 1;
        }
        printf("    {\"%s\", %llu, 0x%016llxULL},\n", pins[i].args, (unsigned long long)x.d.events,
               (unsigned long long)x.d.h);
    }
    return 0;
}

static int print_one(int n, char **words) {
    static identity x;
    char err[2 * ENGINE_ERRLEN + 1024];
    if (record_digest(n, words, &x, err, sizeof err)) {
        fprintf(stderr, "test_identity: %s\n", err);
        return 1;
    }
    printf("events %llu hash 0x%016llx\n", (unsigned long long)x.d.events,
           (unsigned long long)x.d.h);
    return 0;
}

int main(int argc, char **argv) {
    int print = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--print") == 0) {
            print = 1;
        } else if (strcmp(argv[i], "--hw") == 0 && i + 1 < argc) {
            g_hw = argv[++i];
        } else if (strcmp(argv[i], "--run") == 0) {
            return print_one(argc - i - 1, argv + i + 1);
        } else {
            fprintf(stderr, "usage: test_identity [--hw FILE] [--print | --run RECORD-OPTIONS]\n");
            return 2;
        }
    }
    if (print) return print_table();
    struct CMUnitTest tests[N_PINS];
    for (size_t i = 0; i < N_PINS; i++)
        tests[i] = (struct CMUnitTest){pins[i].args, test_pinned, NULL, NULL, (void *)&pins[i]};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
