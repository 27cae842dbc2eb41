/*
 * ana_kinds.c - the events vtab and the index speak names (pipe TEXT); the
 * analysis wants the engine's enums back, and spells conditions for labels.
 *
 * The names come from the engine (engine_pipe_name), as the recorder writes
 * them, so nothing here spells a pipe.
 */
#include <string.h>

#include "analysis/derive/derive.h"

int ana_pipe_from_text(const char *text) {
    if (!text) return -1;
    for (int p = 0; p < PIPE_COUNT; p++) {
        const char *n = engine_pipe_name(p);
        if (n && strcmp(n, text) == 0) return p;
    }
    return -1;
}

const char *ana_cond_op(int cond) {
    switch (cond) {
    case COND_EQ: return "==";
    case COND_NE: return "!=";
    case COND_GE: return ">=";
    case COND_GT: return ">";
    case COND_LE: return "<=";
    case COND_LT: return "<";
    default: return "?";
    }
}
