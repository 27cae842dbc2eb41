/*
 * observer.c - two observers as one: everything goes to `inner`, then to
 * `also`. How `record` prints progress behind the recorder, how the race
 * checker watches a run behind whatever already observes it, and how tests
 * keep their own copy of what was recorded.
 */
#include "engine.h"

/* One callback: to inner, then to also, wherever it is set. */
#define TEE(cb, ...)                                                                           \
    do {                                                                                       \
        engine_tee *t = ctx;                                                                   \
        if (t->inner.cb) t->inner.cb(t->inner.ctx, __VA_ARGS__);                               \
        if (t->also.cb) t->also.cb(t->also.ctx, __VA_ARGS__);                                  \
    } while (0)

static void tee_string(void *ctx, uint32_t id, const char *text) { TEE(on_string, id, text); }
static void tee_site(void *ctx, const engine_site *s) { TEE(on_site, s); }
static void tee_object(void *ctx, const engine_object *o) { TEE(on_object, o); }
static void tee_event(void *ctx, const engine_event *ev) { TEE(on_event, ev); }
static void tee_hook(void *ctx, const engine_hook *h) { TEE(on_hook, h); }
static void tee_segment(void *ctx, uint64_t time, uint64_t key) { TEE(on_segment, time, key); }
static void tee_renumber(void *ctx, int (*fix)(void *, engine_event *), void *fix_ctx) {
    TEE(on_renumber, fix, fix_ctx);
}

engine_observer engine_tee_observer(engine_tee *t) {
    /* a hook or segment nobody takes stays NULL: the engine skips building one */
    int hooks = t->inner.on_hook || t->also.on_hook;
    int segments = t->inner.on_segment || t->also.on_segment;
    engine_observer o = {t, tee_string, tee_site, tee_object, tee_event,
                         hooks ? tee_hook : NULL, segments ? tee_segment : NULL, NULL};
    /* renumbered only when the inner one renumbers: also then sees a split
     * run's own events with this process's numbers (record's progress
     * counts kinds and reads this process's strings, which suits it) */
    if (t->inner.on_renumber) o.on_renumber = tee_renumber;
    return o;
}
