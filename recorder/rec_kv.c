/*
 * rec_kv.c - ordered key/value lists: the trace's header and trailer frames
 * and the meta table of index.db.
 *
 * A run's metadata is a flat list of text keys and text values so that the
 * trace, the meta table and `rec_reader_meta` all speak the same names
 * (config.seed, hw.hbm_gbps, outcome...). Lists are short (tens of keys):
 * lookups are linear.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/rec_internal.h"

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static int kv_set_n(rec_kv *kv, const char *key, size_t klen, const char *value, size_t vlen) {
    for (size_t i = 0; i < kv->n; i++) {
        if (strlen(kv->keys[i]) == klen && memcmp(kv->keys[i], key, klen) == 0) {
            char *v = dup_n(value, vlen);
            if (!v) return -1;
            free(kv->values[i]);
            kv->values[i] = v;
            return 0;
        }
    }
    if (kv->n == kv->cap) {
        size_t cap = kv->cap ? kv->cap * 2 : 32;
        char **k = realloc(kv->keys, cap * sizeof *k);
        if (!k) return -1;
        kv->keys = k;
        char **v = realloc(kv->values, cap * sizeof *v);
        if (!v) return -1;
        kv->values = v;
        kv->cap = cap;
    }
    char *k = dup_n(key, klen), *v = dup_n(value, vlen);
    if (!k || !v) { free(k); free(v); return -1; }
    kv->keys[kv->n] = k;
    kv->values[kv->n] = v;
    kv->n++;
    return 0;
}

int rec_kv_set(rec_kv *kv, const char *key, const char *value) {
    if (!value) value = "";
    return kv_set_n(kv, key, strlen(key), value, strlen(value));
}

int rec_kv_setf(rec_kv *kv, const char *key, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return rec_kv_set(kv, key, buf);
}

const char *rec_kv_get(const rec_kv *kv, const char *key) {
    for (size_t i = 0; i < kv->n; i++)
        if (strcmp(kv->keys[i], key) == 0) return kv->values[i];
    return NULL;
}

void rec_kv_free(rec_kv *kv) {
    for (size_t i = 0; i < kv->n; i++) {
        free(kv->keys[i]);
        free(kv->values[i]);
    }
    free(kv->keys);
    free(kv->values);
    memset(kv, 0, sizeof *kv);
}

void rec_kv_encode(const rec_kv *kv, rec_buf *b) {
    rec_buf_varint(b, kv->n);
    for (size_t i = 0; i < kv->n; i++) {
        rec_buf_bytes(b, kv->keys[i], strlen(kv->keys[i]));
        rec_buf_bytes(b, kv->values[i], strlen(kv->values[i]));
    }
}

int rec_kv_decode(rec_kv *kv, rec_cur *c) {
    uint64_t n = rec_cur_varint(c);
    for (uint64_t i = 0; i < n && !c->bad; i++) {
        size_t klen, vlen;
        const char *k = rec_cur_bytes(c, &klen);
        const char *v = rec_cur_bytes(c, &vlen);
        if (c->bad) break;
        if (kv_set_n(kv, k, klen, v, vlen)) return -1;
    }
    return c->bad ? -1 : 0;
}

int rec_meta_from_info(rec_kv *kv, const rec_run_info *info, char *err, size_t errlen) {
    int rc = 0;
    rc |= rec_kv_setf(kv, "format_version", "%d", REC_FORMAT_VERSION);
    rc |= rec_kv_set(kv, "npurr_version", ENGINE_VERSION);
    rc |= rec_kv_set(kv, "kernel", info->kernel ? info->kernel : "");
    rc |= rec_kv_set(kv, "command_line", info->command_line ? info->command_line : "");
    rc |= rec_meta_put_config(kv, info->config);
    rc |= rec_kv_setf(kv, "cores_per_rank", "%d", info->cores_per_rank);
    rc |= rec_kv_setf(kv, "num_aic", "%d", info->num_aic);
    rc |= rec_kv_setf(kv, "num_aiv", "%d", info->num_aiv);
    for (const char *const *m = info->spec_meta; m && m[0] && m[1]; m += 2)
        rc |= rec_kv_set(kv, m[0], m[1]);
    if (rc) {
        snprintf(err, errlen, "cannot build the run metadata: out of memory");
        return -1;
    }
    return 0;
}
