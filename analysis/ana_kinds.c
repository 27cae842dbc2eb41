/*
 * ana_kinds.c - the events vtab speaks names (kind TEXT, pipe TEXT); the
 * derive pass wants the engine's enums back.
 *
 * The names come from the engine (engine_event_kind_name, engine_pipe_name),
 * as the recorder writes them, so nothing here spells a kind. A derive pass
 * looks up a kind for every event of the trace, so the lookup is a small
 * hash table built once rather than a strcmp over every kind.
 */
#include <string.h>

#include "analysis/ana_internal.h"

#define KIND_SLOTS 128

static struct {
    int built;
    const char *name[KIND_SLOTS];
    size_t len[KIND_SLOTS];
    int kind[KIND_SLOTS];
} kind_table;

static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static void kind_table_build(void) {
    for (int k = 1; k < EV_KIND_COUNT; k++) {
        const char *n = engine_event_kind_name(k);
        if (!n || !*n) continue;
        size_t len = strlen(n);
        uint32_t slot = name_hash(n, len) % KIND_SLOTS;
        while (kind_table.name[slot]) slot = (slot + 1) % KIND_SLOTS;
        kind_table.name[slot] = n;
        kind_table.len[slot] = len;
        kind_table.kind[slot] = k;
    }
    kind_table.built = 1;
}

int ana_kind_from_text(const char *text, size_t len) {
    if (!text) return 0;
    if (!kind_table.built) kind_table_build();
    uint32_t slot = name_hash(text, len) % KIND_SLOTS;
    while (kind_table.name[slot]) {
        if (kind_table.len[slot] == len && memcmp(kind_table.name[slot], text, len) == 0)
            return kind_table.kind[slot];
        slot = (slot + 1) % KIND_SLOTS;
    }
    return 0;
}

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
