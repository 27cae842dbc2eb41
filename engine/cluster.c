/*
 * cluster.c - building the emulated cluster: configuration, ranks and cores,
 * kernel launches, and the interned strings and call sites that every event
 * refers to by id.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CORO_STACK (256u * 1024u)
#if defined(NPURR_ASAN) || defined(__SANITIZE_ADDRESS__)
#undef CORO_STACK
#define CORO_STACK (1024u * 1024u)
#endif

/* The rates the run prices with, and the shared resources' rates from them. */
static void derive_timing(engine *e) {
    engine_rates_of(&e->cfg.hw, &e->rate);
    const engine_rates *r = &e->rate;
    for (int i = 0; i < e->n_ranks; i++) {
        e->ranks[i].hbm.ps_per_byte = r->hbm_ps_per_byte;
        e->ranks[i].nic_tx.ps_per_byte = r->nic_ps_per_byte;
        e->ranks[i].nic_tx.ps_per_op = r->nic_message_ps;
        e->ranks[i].nic_rx.ps_per_byte = r->nic_ps_per_byte;
        e->ranks[i].hccs_tx.ps_per_byte = r->hccs_port_ps_per_byte;
        e->ranks[i].hccs_rx.ps_per_byte = r->hccs_port_ps_per_byte;
        e->ranks[i].hccs_tx.ps_per_op = r->hccs_transfer_ps;
        e->ranks[i].hccs_rx.ps_per_op = r->hccs_transfer_ps;
        e->ranks[i].plane_tx.ps_per_byte = r->cross_plane_ps_per_byte;
        e->ranks[i].plane_rx.ps_per_byte = r->cross_plane_ps_per_byte;
        e->ranks[i].aicpu.ps_per_byte = 0;
    }
    for (int i = 0; i < e->n_ranks * e->n_ranks; i++)
        e->hccs_links[i].ps_per_byte = r->hccs_link_ps_per_byte;
}

typedef struct { uint64_t draw; uint32_t core; } prio_draw;

static int cmp_draw(const void *a, const void *b) {
    const prio_draw *x = a, *y = b;
    if (x->draw != y->draw) return x->draw < y->draw ? -1 : 1;
    return (x->core > y->core) - (x->core < y->core);
}

/* Seed 0 keeps the natural (rank, core) order; other seeds permute it, which
 * is the scheduler's only freedom. A permutation, not random values: tie
 * keys must be unique per core (eng_core_key). */
static int seed_priorities(engine *e) {
    if (e->cfg.seed == 0) return ENGINE_OK;
    size_t n = (size_t)e->n_ranks * (size_t)e->cores_per_rank;
    prio_draw *d = malloc(n * sizeof *d);
    if (!d) return ENGINE_ERR;
    uint64_t state = e->cfg.seed;
    for (size_t i = 0; i < n; i++) d[i] = (prio_draw){eng_splitmix64(&state), (uint32_t)i};
    qsort(d, n, sizeof *d, cmp_draw);
    for (size_t i = 0; i < n; i++) e->cores[d[i].core].prio = i;
    free(d);
    return ENGINE_OK;
}

int engine_create(const engine_config *cfg, engine **out, char *err, size_t errlen) {
    *out = NULL;
    if (engine_config_check(cfg, err, errlen) != ENGINE_OK) return ENGINE_ERR;
    engine *e = calloc(1, sizeof *e);
    if (!e) { snprintf(err, errlen, "out of memory creating the engine"); return ENGINE_ERR; }
    e->cfg = *cfg;
    e->n_ranks = cfg->nodes * cfg->npus_per_node;
    if (e->n_ranks > 65535) {
        free(e);
        snprintf(err, errlen, "%d ranks: at most 65535", cfg->nodes * cfg->npus_per_node);
        return ENGINE_ERR;
    }
    e->n_aic = engine_chip_get(cfg->chip)->aic;
    e->n_aiv = engine_chip_get(cfg->chip)->aiv;
    e->cores_per_rank = e->n_aic + e->n_aiv;
    e->ranks = calloc((size_t)e->n_ranks, sizeof *e->ranks);
    e->cores = calloc((size_t)e->n_ranks * (size_t)e->cores_per_rank, sizeof *e->cores);
    size_t pairs = (size_t)e->n_ranks * (size_t)e->n_ranks;
    e->hccs_links = calloc(pairs, sizeof *e->hccs_links);
    /* both RDMA clocks of every (src, dst) queue pair in one block */
    e->qp_arrive_at = calloc(2 * pairs, sizeof *e->qp_arrive_at);
    e->qp_done_at = e->qp_arrive_at ? e->qp_arrive_at + pairs : NULL;
    if (!e->ranks || !e->cores || !e->hccs_links || !e->qp_arrive_at) {
        snprintf(err, errlen, "out of memory for %d ranks", e->n_ranks);
        engine_destroy(e);
        return ENGINE_ERR;
    }
    for (int r = 0; r < e->n_ranks; r++) {
        e->ranks[r].next_off = 4096;  /* offset 0 is never a valid address */
        for (int i = 0; i < e->cores_per_rank; i++) {
            core *c = &e->cores[(size_t)r * (size_t)e->cores_per_rank + (size_t)i];
            c->e = e;
            c->rank = r;
            c->index = i;
            c->is_aic = i < e->n_aic;
            c->launch = -1;
            c->group = -1;
            c->lpend = c->lpend_last = -1;
            c->prio = (uint64_t)(r * e->cores_per_rank + i);
            /* one jitter stream per core: its draws do not depend on what
             * other cores (perhaps in other processes) drew before */
            uint64_t st = cfg->seed ^ 0x6E70757272ULL ^ (c->prio << 24);
            c->rng = eng_splitmix64(&st);
        }
    }
    if (seed_priorities(e) != ENGINE_OK) {
        engine_destroy(e);
        snprintf(err, errlen, "out of memory for the tie order of %d ranks", e->n_ranks);
        return ENGINE_ERR;
    }
    e->sym_next = 1ULL << 38;  /* the symmetric heap sits high in every rank's space */
    e->free_xfer = -1;
    e->own_first = 0;
    e->own_end = e->n_ranks;
    e->window_end = UINT64_MAX;
    derive_timing(e);
    if (eng_delay_init(e, err, errlen) != ENGINE_OK) {
        engine_destroy(e);
        return ENGINE_ERR;
    }
    *out = e;
    return ENGINE_OK;
}

void engine_destroy(engine *e) {
    if (!e) return;
    eng_delay_free(e);
    eng_split_free(e);
    if (e->cores) {
        for (size_t i = 0; i < (size_t)e->n_ranks * (size_t)e->cores_per_rank; i++) {
            core *c = &e->cores[i];
            coro_free(&c->co);
            eng_local_free(c);
            eng_core_storage_free(c);
        }
    }
    if (e->ranks) {
        for (int r = 0; r < e->n_ranks; r++) {
            rank_state *rs = &e->ranks[r];
            for (int i = 0; i < rs->n_allocs; i++) eng_gm_unmap(rs->allocs[i].seg);
            free(rs->allocs);
            resource_free(&rs->hbm);
            resource_free(&rs->nic_tx);
            resource_free(&rs->nic_rx);
            resource_free(&rs->hccs_tx);
            resource_free(&rs->hccs_rx);
            resource_free(&rs->plane_tx);
            resource_free(&rs->plane_rx);
            free(rs->words);
            free(rs->watchers);
        }
    }
    for (int i = 0; i < e->n_launches; i++) {
        free(e->launches[i].sync_arrived);
        free(e->launches[i].sync_max_time);
        free(e->launches[i].sync_last_seq);
        free(e->launches[i].sync_last_track);
    }
    free(e->launches);
    free(e->role_spans);
    eng_tensors_free(e);
    free(e->host_index);
    for (uint32_t i = 0; i < e->n_strings; i++) free(e->strings[i]);
    free(e->strings);
    free(e->str_hash);
    free(e->sites);
    free(e->site_hash);
    free(e->site_by_name);
    free(e->objects);
    free(e->obj_last_seq);
    free(e->obj_last_track);
    free(e->obj_last_time);
    free(e->heap);
    for (int i = 0; i < e->n_xfers; i++)
        if (e->xfers[i].in_flight) { eng_seg_free(&e->xfers[i].flight); free(e->xfers[i].flight.host); }
    free(e->xfers);
    free(e->origins);
    free(e->origin_params);
    free(e->gen_cache);
    if (e->hccs_links)
        for (size_t i = 0; i < (size_t)e->n_ranks * (size_t)e->n_ranks; i++) resource_free(&e->hccs_links[i]);
    free(e->hccs_links);
    free(e->qp_arrive_at);   /* and qp_done_at, in the same block */
    free(e->cores);
    free(e->ranks);
    free(e);
}

int engine_num_ranks(const engine *e) { return e->n_ranks; }
int engine_num_aic(const engine *e) { return e->n_aic; }
int engine_num_aiv(const engine *e) { return e->n_aiv; }
int engine_cores_per_rank(const engine *e) { return e->cores_per_rank; }
const engine_config *engine_get_config(const engine *e) { return &e->cfg; }

core *eng_core(const engine *e, int rank, int index) {
    return &e->cores[(size_t)rank * (size_t)e->cores_per_rank + (size_t)index];
}

uint32_t eng_track(const engine *e, const core *c, int pipe) {
    return engine_track_id((uint32_t)e->cores_per_rank, (uint32_t)c->rank, (uint32_t)c->index,
                           (uint32_t)pipe);
}

int eng_same_node(const engine *e, int a, int b) {
    return a / e->cfg.npus_per_node == b / e->cfg.npus_per_node;
}

uint64_t eng_jitter(core *c, uint64_t dur) {
    engine *e = c->e;
    if (e->cfg.jitter <= 0 || dur == 0) return dur;
    double u = (double)(eng_splitmix64(&c->rng) >> 11) / 9007199254740992.0;  /* [0,1) */
    double f = 1.0 + e->cfg.jitter * (2.0 * u - 1.0);
    return (uint64_t)llround((double)dur * f);
}

/* ------------------------------------------------------------ strings */
static uint32_t str_hash_fn(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void str_rehash(engine *e) {
    uint32_t cap = e->str_hash_cap ? e->str_hash_cap * 2 : 256;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) abort();
    for (uint32_t id = 1; id <= e->n_strings; id++) {
        uint32_t h = str_hash_fn(e->strings[id - 1]) & (cap - 1);
        while (t[h]) h = (h + 1) & (cap - 1);
        t[h] = id;
    }
    free(e->str_hash);
    e->str_hash = t;
    e->str_hash_cap = cap;
}

uint32_t eng_intern(engine *e, const char *text) {
    if (!text) text = "";
    if (e->n_strings * 2 >= e->str_hash_cap) str_rehash(e);
    uint32_t h = str_hash_fn(text) & (e->str_hash_cap - 1);
    while (e->str_hash[h]) {
        uint32_t id = e->str_hash[h];
        if (strcmp(e->strings[id - 1], text) == 0) return id;
        h = (h + 1) & (e->str_hash_cap - 1);
    }
    if (e->n_strings == e->cap_strings) {
        e->cap_strings = e->cap_strings ? e->cap_strings * 2 : 64;
        e->strings = realloc(e->strings, e->cap_strings * sizeof *e->strings);
        if (!e->strings) abort();
    }
    e->strings[e->n_strings] = strdup(text);
    if (!e->strings[e->n_strings]) abort();
    uint32_t id = ++e->n_strings;
    e->str_hash[h] = id;
    if (e->obs.on_string) e->obs.on_string(e->obs.ctx, id, text);
    return id;
}


uint32_t engine_string_count(const engine *e) { return e->n_strings; }

const char *engine_string(const engine *e, uint32_t id) {
    if (id == 0 || id > e->n_strings) return "";
    return e->strings[id - 1];
}

/* ------------------------------------------------------------ sites */
/* A site is its file name and line: the same ids in every build of npurr,
 * whether or not its linker merged equal __FILE__ texts, so a run recorded
 * by one build replays under another (trace format 7). The hot path looks
 * up the address of the text (one probe per device call); a text not seen
 * at that address before is looked up by name, once. */
static uint32_t site_ptr_hash(const char *file, int line) {
    uint64_t h = (uint64_t)(uintptr_t)file * 0x9E3779B97F4A7C15ULL ^ (uint64_t)line * 0xC2B2AE3D27D4EB4FULL;
    return (uint32_t)(h >> 32);
}

static uint32_t site_name_hash(const char *file, int line) {
    uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a over the text, then the line */
    for (const unsigned char *p = (const unsigned char *)file; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    h ^= (uint64_t)(uint32_t)line * 0xC2B2AE3D27D4EB4FULL;
    return (uint32_t)(h ^ (h >> 32));
}

static void site_key_put(site_key *t, uint32_t cap, site_key k) {
    uint32_t h = site_ptr_hash(k.file, k.line) & (cap - 1);
    while (t[h].file) h = (h + 1) & (cap - 1);
    t[h] = k;
}

static void site_rehash(engine *e) {
    uint32_t cap = e->site_hash_cap ? e->site_hash_cap * 2 : 256;
    site_key *t = calloc(cap, sizeof *t);
    if (!t) abort();
    for (uint32_t i = 0; i < e->site_hash_cap; i++)
        if (e->site_hash[i].file) site_key_put(t, cap, e->site_hash[i]);
    free(e->site_hash);
    e->site_hash = t;
    e->site_hash_cap = cap;
}

static void site_name_rehash(engine *e) {
    uint32_t cap = e->site_by_name_cap ? e->site_by_name_cap * 2 : 256;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) abort();
    for (uint32_t id = 1; id <= e->n_sites; id++) {
        const site_entry *s = &e->sites[id - 1];
        uint32_t h = site_name_hash(s->file, s->line) & (cap - 1);
        while (t[h]) h = (h + 1) & (cap - 1);
        t[h] = id;
    }
    free(e->site_by_name);
    e->site_by_name = t;
    e->site_by_name_cap = cap;
}

/* The site named file:line, made (and told to the observer) if new. */
static uint32_t site_by_name(engine *e, dev_site s) {
    if (e->n_sites * 2 >= e->site_by_name_cap) site_name_rehash(e);
    uint32_t h = site_name_hash(s.file, s.line) & (e->site_by_name_cap - 1);
    while (e->site_by_name[h]) {
        uint32_t id = e->site_by_name[h];
        const site_entry *se = &e->sites[id - 1];
        if (se->line == s.line && !strcmp(se->file, s.file)) return id;
        h = (h + 1) & (e->site_by_name_cap - 1);
    }
    if (e->n_sites == e->cap_sites) {
        e->cap_sites = e->cap_sites ? e->cap_sites * 2 : 64;
        e->sites = realloc(e->sites, e->cap_sites * sizeof *e->sites);
        if (!e->sites) abort();
    }
    uint32_t id = ++e->n_sites;
    e->sites[id - 1] = (site_entry){s.file, s.func, s.line, id};
    e->site_by_name[h] = id;
    if (e->obs.on_site) {
        engine_site es = {id, s.file, s.line, s.func};
        e->obs.on_site(e->obs.ctx, &es);
    }
    return id;
}

uint32_t eng_site(engine *e, dev_site s) {
    if (e->n_site_keys * 2 >= e->site_hash_cap) site_rehash(e);
    uint32_t h = site_ptr_hash(s.file, s.line) & (e->site_hash_cap - 1);
    while (e->site_hash[h].file) {
        const site_key *k = &e->site_hash[h];
        if (k->file == s.file && k->line == s.line) return k->id;
        h = (h + 1) & (e->site_hash_cap - 1);
    }
    uint32_t id = site_by_name(e, s);
    e->site_hash[h] = (site_key){s.file, s.line, id};
    e->n_site_keys++;
    return id;
}

/* ------------------------------------------------------------ launch */
int engine_launch(engine *e, const char *name, engine_kernel_fn fn, const void *args,
                  int block_dim, engine_core_type type, char *err, size_t errlen) {
    if (e->running) {
        snprintf(err, errlen, "launch of %s: the engine is already running", name);
        return ENGINE_ERR;
    }
    if (block_dim < 1) {
        snprintf(err, errlen, "launch of %s: block_dim %d must be at least 1", name, block_dim);
        return ENGINE_ERR;
    }
    int need_aic = type == CORE_AIV ? 0 : block_dim;
    int need_aiv = type == CORE_AIC ? 0 : (type == CORE_MIX ? 2 * block_dim : block_dim);
    /* first free cores of each type (same on every rank) */
    int used_aic = 0, used_aiv = 0;
    for (int i = 0; i < e->n_launches; i++) {
        launch_info *l = &e->launches[i];
        if (l->type != CORE_AIV) used_aic = l->first_aic + l->block_dim;
        if (l->type != CORE_AIC) {
            int n = l->type == CORE_MIX ? 2 * l->block_dim : l->block_dim;
            used_aiv = l->first_aiv + n;
        }
    }
    if (used_aic + need_aic > e->n_aic || used_aiv + need_aiv > e->n_aiv) {
        snprintf(err, errlen,
                 "launch of %s with block_dim %d needs %d AIC + %d AIV, but only %d AIC + %d AIV "
                 "are free on each rank (%s)",
                 name, block_dim, need_aic, need_aiv, e->n_aic - used_aic, e->n_aiv - used_aiv,
                 engine_chip_name(e->cfg.chip));
        return ENGINE_ERR;
    }
    launch_info *nl = realloc(e->launches, (size_t)(e->n_launches + 1) * sizeof *nl);
    if (!nl) { snprintf(err, errlen, "out of memory"); return ENGINE_ERR; }
    e->launches = nl;
    int li = e->n_launches++;
    launch_info *l = &e->launches[li];
    *l = (launch_info){.name = name, .name_id = eng_intern(e, name), .fn = fn, .args = args,
                       .block_dim = block_dim, .type = type, .first_aic = used_aic,
                       .first_aiv = used_aiv, .cores_of_type = {need_aiv, need_aic}};
    l->sync_arrived = calloc((size_t)e->n_ranks * 2, sizeof(int));
    l->sync_max_time = calloc((size_t)e->n_ranks * 2, sizeof(uint64_t));
    l->sync_last_seq = calloc((size_t)e->n_ranks * 2, sizeof(uint64_t));
    l->sync_last_track = calloc((size_t)e->n_ranks * 2, sizeof(uint32_t));
    if (!l->sync_arrived || !l->sync_max_time || !l->sync_last_seq || !l->sync_last_track) {
        snprintf(err, errlen, "out of memory");
        return ENGINE_ERR;
    }
    for (int r = 0; r < e->n_ranks; r++) {
        for (int b = 0; b < need_aic; b++) {
            core *c = eng_core(e, r, used_aic + b);
            c->launch = li; c->block_idx = b; c->block_num = block_dim;
            c->sub_idx = 0; c->sub_num = type == CORE_MIX ? 2 : 1;
            c->group = type == CORE_MIX ? used_aic + b : -1;
        }
        for (int v = 0; v < need_aiv; v++) {
            core *c = eng_core(e, r, e->n_aic + used_aiv + v);
            c->launch = li;
            if (type == CORE_MIX) {
                c->block_idx = v; c->block_num = block_dim;  /* as Ascend C: AIVs see the AIC count */
                c->sub_idx = v % 2; c->sub_num = 2;
                c->group = used_aic + v / 2;
            } else {
                c->block_idx = v; c->block_num = block_dim; c->sub_idx = 0; c->sub_num = 1;
            }
        }
    }
    return ENGINE_OK;
}

size_t eng_coro_stack_size(void) { return CORO_STACK; }
