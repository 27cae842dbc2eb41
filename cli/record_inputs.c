/*
 * record_inputs.c - input files named by kernel options (`--routing
 * npy:PATH`, with `{rank}` for one file per rank) travel with the run:
 * `record` copies them into RUN/inputs/ and writes a header key
 * replay.opt.NAME = npy:{RUN}/inputs/... so `replay` reads the copies, and a
 * run folder stays all that replay needs.
 */
#include "record_inputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FILE_SCHEME "npy:"

static char *with_rank(const char *pattern, int rank) {
    const char *ph = strstr(pattern, "{rank}");
    size_t n = strlen(pattern) + 16;
    char *out = malloc(n);
    if (!out) return NULL;
    if (ph) snprintf(out, n, "%.*s%d%s", (int)(ph - pattern), pattern, rank, ph + 6);
    else snprintf(out, n, "%s", pattern);
    return out;
}

int record_inputs_plan(const run_options *ro, record_inputs *in) {
    memset(in, 0, sizeof *in);
    int k = 0;
    for (int i = 0; i < ro->kopts.count && k < RECORD_INPUTS_MAX; i++) {
        const char *v = ro->kopts.values[i];
        if (!v || strncmp(v, FILE_SCHEME, strlen(FILE_SCHEME)) != 0) continue;
        const char *path = v + strlen(FILE_SCHEME);
        int per_rank = strstr(path, "{rank}") != NULL;
        record_input *r = &in->items[k++];
        r->option = ro->kopts.names[i];
        r->source = path;
        r->per_rank = per_rank;
        snprintf(r->key, sizeof r->key, "replay.opt.%s", r->option);
        snprintf(r->value, sizeof r->value, "%s{RUN}/inputs/%s%s.npy", FILE_SCHEME, r->option,
                 per_rank ? ".{rank}" : "");
    }
    in->count = k;
    for (int i = 0; i < k; i++) {
        in->meta[2 * i] = in->items[i].key;
        in->meta[2 * i + 1] = in->items[i].value;
    }
    in->meta[2 * k] = NULL;
    return k;
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen) {
    FILE *in = fopen(from, "rb");
    if (!in) {
        snprintf(err, errlen, "input file %s: %s", from, strerror(errno));
        return -1;
    }
    FILE *out = fopen(to, "wb");
    if (!out) {
        snprintf(err, errlen, "%s: %s", to, strerror(errno));
        fclose(in);
        return -1;
    }
    char buf[1 << 16];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) { rc = -1; break; }
    if (ferror(in)) rc = -1;
    if (fclose(out) != 0) rc = -1;
    fclose(in);
    if (rc) snprintf(err, errlen, "copying %s to %s failed", from, to);
    return rc;
}

int record_inputs_copy(const record_inputs *in, const char *run_dir, int n_ranks, char *err,
                       size_t errlen) {
    if (!in->count) return 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/inputs", run_dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < in->count; i++) {
        const record_input *r = &in->items[i];
        for (int rank = 0; rank < (r->per_rank ? n_ranks : 1); rank++) {
            char *from = with_rank(r->source, rank);
            char to[4300];
            if (r->per_rank) snprintf(to, sizeof to, "%s/%s.%d.npy", dir, r->option, rank);
            else snprintf(to, sizeof to, "%s/%s.npy", dir, r->option);
            int rc = from ? copy_file(from, to, err, errlen) : -1;
            if (!from) snprintf(err, errlen, "out of memory");
            free(from);
            if (rc) return -1;
        }
    }
    return 0;
}
