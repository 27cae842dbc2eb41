/*
 * record_inputs.c - what a run reads from outside travels with its folder,
 * so the folder is all a replay needs and the user may move, rebuild or
 * delete their files:
 *   - input files named by kernel options (`--routing npy:PATH`, `{rank}`
 *     for one file per rank): `record` copies them into RUN/inputs/ and the
 *     option's recorded value (opt.NAME, run_spec.c) becomes
 *     npy:{RUN}/inputs/..., which replay points at the copies;
 *   - the plugin a kernel comes from: copied to RUN/plugin/, the copy's
 *     SHA-256 checked against the plugin npurr loaded (run_spec.c records
 *     it and refuses a replaced copy at replay).
 * Runs recorded before the typed keys carry replay.opt.NAME keys instead
 * (record_inputs_redirect). The npy:PATH / {rank} grammar itself is
 * routing_npy_path.c's.
 */
#include "session/record_inputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

#define RUN_PLACEHOLDER RECORD_RUN_PLACEHOLDER

int record_inputs_plan(const run_options *ro, record_inputs *in) {
    memset(in, 0, sizeof *in);
    int k = 0;
    for (int i = 0; i < ro->kopts.count && k < RECORD_INPUTS_MAX; i++) {
        const char *path = routing_npy_file(ro->kopts.values[i]);
        if (!path) continue;
        int per_rank = routing_npy_per_rank(path);
        record_input *r = &in->items[k++];
        r->index = i;
        r->option = ro->kopts.names[i];
        r->source = path;
        r->per_rank = per_rank;
        snprintf(r->value, sizeof r->value, "%s" RUN_PLACEHOLDER "/inputs/%s%s.npy",
                 ROUTING_NPY_SCHEME, r->option, per_rank ? "." ROUTING_NPY_RANK : "");
    }
    in->count = k;
    return k;
}

const record_input *record_inputs_of(const record_inputs *in, int i) {
    for (int k = 0; k < in->count; k++)
        if (in->items[k].index == i) return &in->items[k];
    return NULL;
}

/* Copies from to to (created, 0644 less the umask): 0, or -1 with err. */
static int copy_file(const char *from, const char *to, char *err, size_t errlen) {
    char why[200];
    FILE *in = engine_fopen_input(from, why, sizeof why);
    if (!in) {
        snprintf(err, errlen, "input file %s: %s", from, why);
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
            char from[4096], to[4300];
            if (routing_npy_rank_path(r->source, rank, from, sizeof from)) {
                snprintf(err, errlen, "input file %s: path too long", r->source);
                return -1;
            }
            if (r->per_rank) snprintf(to, sizeof to, "%s/%s.%d.npy", dir, r->option, rank);
            else snprintf(to, sizeof to, "%s/%s.npy", dir, r->option);
            if (copy_file(from, to, err, errlen)) return -1;
        }
    }
    return 0;
}

int record_plugin_copy(const kernel_plugin *p, const char *file, const char *run_dir, char *err,
                       size_t errlen) {
    char dir[4200], to[4400], sha[65], why[256];
    snprintf(dir, sizeof dir, "%s/plugin", run_dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(to, sizeof to, "%s/%s", run_dir, file);
    if (copy_file(p->path, to, err, errlen)) return -1;
    if (engine_sha256_file(to, sha, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", to, why);
        unlink(to);
        return -1;
    }
    if (strcmp(sha, p->sha256) != 0) {
        snprintf(err, errlen, "plugin %s (%s) changed on disk since npurr loaded it (SHA-256 %.12s... "
                 "then, %.12s... now): the run would not carry the code it ran; record again",
                 p->name, p->path, p->sha256, sha);
        unlink(to);
        return -1;
    }
    return 0;
}

char *record_inputs_in_run(const char *value, const char *run_dir) {
    size_t ph = strlen(RUN_PLACEHOLDER), cap = strlen(value) + 1;
    for (const char *p = strstr(value, RUN_PLACEHOLDER); p; p = strstr(p + ph, RUN_PLACEHOLDER))
        cap += strlen(run_dir);
    char *s = malloc(cap), *w = s;
    if (!s) return NULL;
    for (const char *p = value; *p;) {
        if (strncmp(p, RUN_PLACEHOLDER, ph) == 0) { w += sprintf(w, "%s", run_dir); p += ph; }
        else *w++ = *p++;
    }
    *w = 0;
    return s;
}

int record_inputs_redirect(rec_reader *r, const char *run_dir, run_options *ro, char **owned,
                           char *err, size_t errlen) {
    for (int i = 0; i < ro->kopts.count; i++) {
        char key[128];
        snprintf(key, sizeof key, "replay.opt.%s", ro->kopts.names[i]);
        const char *v = rec_reader_meta(r, key);
        if (!v) continue;
        owned[i] = record_inputs_in_run(v, run_dir);
        if (!owned[i]) { snprintf(err, errlen, "out of memory"); return -1; }
        ro->kopts.values[i] = owned[i];
    }
    return 0;
}
