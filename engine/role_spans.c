/*
 * role_spans.c - when each role's cores first took it and last left it.
 *
 * A kernel's phases are its roles (NotifyDispatch before any token moves,
 * Dispatch then Combine in the fullmesh kernel...), and the hardware is
 * measured per phase: sgl-kernel-npu's tests time the notify and the data
 * kernels apart. The engine keeps, per role, the earliest virtual time a
 * core took it (SetRole) and the latest it left it (another SetRole or its
 * kernel's end), so a phase's length is known without a trace (bench_fidelity,
 * npurr calibrate). A handful of roles per run: a short array, touched
 * only on SetRole and at a kernel's end. Beside it, what the run priced
 * (engine_resources_used, bits set where the costs are booked): a
 * calibration reruns a row only when a parameter it can depend on moves.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static role_span *span_of(engine *e, uint32_t role) {
    for (int i = 0; i < e->n_role_spans; i++)
        if (e->role_spans[i].role == role) return &e->role_spans[i];
    if (e->n_role_spans == e->cap_role_spans) {
        e->cap_role_spans = e->cap_role_spans ? 2 * e->cap_role_spans : 8;
        e->role_spans = realloc(e->role_spans, (size_t)e->cap_role_spans * sizeof *e->role_spans);
        if (!e->role_spans) abort();
    }
    role_span *s = &e->role_spans[e->n_role_spans++];
    s->role = role;
    s->begin = UINT64_MAX;
    s->end = 0;
    return s;
}

void eng_role_enter(core *c, uint32_t role) {
    if (c->role) eng_role_leave(c);
    c->role = role;
    role_span *s = span_of(c->e, role);
    if (c->now < s->begin) s->begin = c->now;
}

void eng_role_leave(core *c) {
    if (!c->role) return;
    role_span *s = span_of(c->e, c->role);
    if (c->now > s->end) s->end = c->now;
}

int engine_role_span(const engine *e, const char *role, uint64_t *begin, uint64_t *end) {
    for (int i = 0; i < e->n_role_spans; i++) {
        const role_span *s = &e->role_spans[i];
        if (s->begin != UINT64_MAX && strcmp(e->strings[s->role - 1], role) == 0) {
            *begin = s->begin;
            *end = s->end > s->begin ? s->end : s->begin;
            return 1;
        }
    }
    return 0;
}

unsigned engine_resources_used(const engine *e) { return e->used; }
