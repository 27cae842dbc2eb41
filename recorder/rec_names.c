/*
 * rec_names.c - names the recorder writes into index.db and accepts in SQL.
 *
 * Kind and pipe names come from the engine (engine_event_kind_name,
 * engine_pipe_name) so the index, `npurr stats` and the engine's reports
 * agree; numbers the engine calls "unknown" get a stable "KIND_n" / "PIPE_n" fallback so a
 * trace from a newer engine still indexes.
 */
#include <stdio.h>
#include <string.h>

#include "recorder/rec_internal.h"

const char *rec_kind_name(int kind) {
    static char unknown[EV_KIND_COUNT > 64 ? EV_KIND_COUNT : 64][16];
    const char *n = (kind > 0 && kind < EV_KIND_COUNT) ? engine_event_kind_name(kind) : NULL;
    if (n && *n && strcmp(n, "unknown") != 0) return n;
    if (kind >= 0 && kind < 64) {
        snprintf(unknown[kind], sizeof unknown[kind], "KIND_%d", kind);
        return unknown[kind];
    }
    return "KIND_?";
}

int rec_kind_from_name(const char *name) {
    if (!name) return -1;
    for (int k = 1; k < EV_KIND_COUNT; k++)
        if (strcmp(rec_kind_name(k), name) == 0) return k;
    return -1;
}

const char *rec_pipe_name(int pipe) {
    static char unknown[256][16];
    const char *n = (pipe >= 0 && pipe < PIPE_COUNT) || pipe == PIPE_ALL ? engine_pipe_name(pipe)
                                                                        : NULL;
    if (n && *n && strcmp(n, "unknown") != 0) return n;
    pipe &= 0xff;
    snprintf(unknown[pipe], sizeof unknown[pipe], "PIPE_%d", pipe);
    return unknown[pipe];
}

int rec_path(char *out, size_t outlen, const char *dir, const char *name) {
    int n = snprintf(out, outlen, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}
