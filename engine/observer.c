/*
 * observer.c - an observer that forwards to another and also shows each
 * event to one more callback: how `record` prints progress behind the
 * recorder, and how tests keep their own copy of what was recorded.
 */
#include "engine.h"

static void tee_string(void *ctx, uint32_t id, const char *text) {
    engine_tee *t = ctx;
    if (t->inner.on_string) t->inner.on_string(t->inner.ctx, id, text);
}

static void tee_site(void *ctx, const engine_site *s) {
    engine_tee *t = ctx;
    if (t->inner.on_site) t->inner.on_site(t->inner.ctx, s);
}

static void tee_object(void *ctx, const engine_object *o) {
    engine_tee *t = ctx;
    if (t->inner.on_object) t->inner.on_object(t->inner.ctx, o);
}

static void tee_event(void *ctx, const engine_event *ev) {
    engine_tee *t = ctx;
    if (t->inner.on_event) t->inner.on_event(t->inner.ctx, ev);
    t->also(t->also_ctx, ev);
}

static void tee_hook(void *ctx, const engine_hook *h) {
    engine_tee *t = ctx;
    if (t->inner.on_hook) t->inner.on_hook(t->inner.ctx, h);
}

static void tee_segment(void *ctx, uint64_t time, uint64_t key) {
    engine_tee *t = ctx;
    t->inner.on_segment(t->inner.ctx, time, key);
}

engine_observer engine_tee_observer(engine_tee *t) {
    engine_observer o = {t, tee_string, tee_site, tee_object, tee_event,
                         t->inner.on_hook ? tee_hook : NULL,
                         t->inner.on_segment ? tee_segment : NULL};
    return o;
}
