/*
 * dump.c - `--dump NAME[@RANK]=FILE.npy` of record and replay: a GM tensor
 * after the run, as a NumPy file a user compares against numpy or torch.
 *
 * NAME is a tensor the kernel named (npurr_name_tensor, or an input read
 * with npurr_gm_from_npy), with its dtype and shape; failing that, a GM
 * allocation of that name on RANK, written as its bytes (uint8). RANK
 * defaults to 0. bfloat16, which NumPy has no type for, is written as
 * float32 (every bfloat16 is one exactly). The targets are checked before
 * the run (never inside the run folder, cli_output_check) and written
 * through cli_output_open, so a failed write leaves what was there. A
 * rank another process of a split run owns is written by that process.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_dump_parse(const char *text, cli_dump *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || !eq[1]) {
        snprintf(err, errlen, "--dump %s: expected NAME[@RANK]=FILE.npy", text);
        return -1;
    }
    size_t n = (size_t)(eq - text);
    const char *at = memchr(text, '@', n);
    size_t name_len = at ? (size_t)(at - text) : n;
    if (!name_len || name_len >= sizeof d->name) {
        snprintf(err, errlen, "--dump %s: the tensor's name must be 1-%zu characters", text,
                 sizeof d->name - 1);
        return -1;
    }
    memcpy(d->name, text, name_len);
    if (at) {
        char rank[32];
        size_t rn = (size_t)(eq - at - 1);
        unsigned long long r;
        if (rn == 0 || rn >= sizeof rank) goto bad_rank;
        memcpy(rank, at + 1, rn);
        rank[rn] = 0;
        if (cli_parse_uint(rank, 0, 1u << 20, &r)) goto bad_rank;
        d->rank = (int)r;
    }
    d->path = eq + 1;
    return 0;
bad_rank:
    snprintf(err, errlen, "--dump %s: the rank after '@' is not a number", text);
    return -1;
}

int cli_dump_check(const cli_dump *d, const char *run_dir, int ranks, char *err, size_t errlen) {
    if (d->rank >= ranks) {
        snprintf(err, errlen, "--dump %s@%d: the run has ranks 0..%d", d->name, d->rank,
                 ranks - 1);
        return -1;
    }
    return cli_output_check(run_dir, d->path, "--dump", err, errlen);
}

/* The names a rank has, for the message when the one asked for is not. */
typedef struct name_list {
    char text[1024];
} name_list;

static void add_name(void *ctx, const char *name) {
    name_list *l = ctx;
    size_t used = strlen(l->text);
    if (strstr(l->text, name)) return;   /* a symmetric window has one name on every rank */
    if (used + strlen(name) + 8 < sizeof l->text)
        snprintf(l->text + used, sizeof l->text - used, "%s%s", used ? ", " : "", name);
    else if (!strstr(l->text, "..."))
        snprintf(l->text + used, sizeof l->text - used, ", ...");
}

/* The tensor's bytes as the file holds them: bfloat16 widened to float32. */
static int write_elems(FILE *f, const engine_tensor *t, const uint8_t *bytes) {
    if (t->dtype != NPURR_DT_BF16) return fwrite(bytes, 1, t->bytes, f) == t->bytes ? 0 : -1;
    for (uint64_t i = 0; i + 2 <= t->bytes; i += 2) {
        uint32_t u = (uint32_t)bytes[i] << 16 | (uint32_t)bytes[i + 1] << 24;
        if (fwrite(&u, 4, 1, f) != 1) return -1;
    }
    return 0;
}

int cli_dump_write(engine *e, const cli_dump *d, int *written, char *err, size_t errlen) {
    *written = 0;
    if (!engine_rank_local(e, d->rank)) return 0;   /* its process writes it */
    engine_tensor t;
    if (!engine_tensor_find(e, d->name, d->rank, &t)) {
        name_list names = {.text = {0}};
        engine_tensor_names(e, d->rank, add_name, &names);
        snprintf(err, errlen, "--dump %s@%d: rank %d has no tensor or GM allocation of that "
                 "name; it has: %s", d->name, d->rank, d->rank, names.text);
        return -1;
    }
    npurr_dtype dtype = t.dtype ? (npurr_dtype)t.dtype : NPURR_DT_U8;
    uint8_t *bytes = malloc(t.bytes ? t.bytes : 1);
    if (!bytes || engine_gm_read(e, t.addr, bytes, t.bytes) != ENGINE_OK) {
        free(bytes);
        snprintf(err, errlen, "--dump %s@%d: cannot read its %llu bytes", d->name, d->rank,
                 (unsigned long long)t.bytes);
        return -1;
    }
    cli_output o;
    FILE *f = cli_output_open(&o, d->path, err, errlen);
    int rc = -1;
    if (f) {
        npurr_dtype file_type = dtype == NPURR_DT_BF16 ? NPURR_DT_F32 : dtype;
        rc = npy_write_header(f, file_type, t.ndim, t.shape) || write_elems(f, &t, bytes) ? -1 : 0;
        if (rc) snprintf(err, errlen, "--dump %s: write error", d->path);
        rc = cli_output_finish(&o, rc, err, errlen);
    }
    free(bytes);
    if (!rc) *written = 1;
    return rc;
}
