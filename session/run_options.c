/*
 * run_options.c - parsing a run's options: the engine's (topology, chip,
 * seed, timing file, watchdog) and the kernel's own, declared by its
 * descriptor with defaults. Unknown options are usage errors naming the
 * option; malformed values are errors naming option and value. Every
 * option with a value takes it as `--opt VALUE` or `--opt=VALUE`.
 */
#include "session/session.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What run_options_parse returns on a bad option: the CLI's exit code 2. */
enum { EXIT_USAGE = SESSION_USAGE };
/* argv is a whole command line: the program, the subcommand, its options. */
enum { FIRST_OPTION = 2 };

static const struct {
    const char *name;
    const char *arg;
    int allow;       /* 0 = every run command */
    const char *help;
} engine_opts[] = {
    /* RUN_OPT_EXECUTES: only for commands that run the engine (record,
     * replay); `layout` computes sizes and would silently ignore them. */
    {"-k", "KERNEL", 0, "kernel to run (see the list below)"},
    {"--plugin", "PATH.so", 0,
     "load your own kernels from a plugin built against npurr (npurr/plugin.h); repeatable"},
    {"--nodes", "N", 0, "nodes in the cluster (default 1)"},
    {"--npus-per-node", "N", 0, "NPUs per node, HCCS full mesh (default 8)"},
    {"--chip", "910B2|910B4", 0, "24 AIC + 48 AIV, or 20 + 40 (default 910B2)"},
    {"--seed", "S", RUN_OPT_EXECUTES, "scheduler seed: permutes ties between cores (default 0)"},
    {"--jitter", "F", RUN_OPT_EXECUTES, "seeded +-F fraction on transfer durations, 0..0.5 (default 0)"},
    {"--pct-points", "N", RUN_OPT_EXECUTES, "delay the core taking each of N seeded scheduling steps (default 0)"},
    {"--pct-span", "STEPS", RUN_OPT_EXECUTES, "the steps those points are drawn from: 1..STEPS"},
    {"--pct-delay-us", "US", RUN_OPT_EXECUTES, "how long each point delays its core, in virtual microseconds"},
    {"--hw", "FILE", RUN_OPT_EXECUTES, "timing parameters as key=value lines (keys: npurr hw)"},
    {"--watchdog-us", "US", RUN_OPT_EXECUTES, "stop when virtual time passes US microseconds (default 10000000; 0 turns the watchdog off)"},
    {"--payload", "ref|full", 0, "ref: moved payload kept as references (default); full: every byte stored"},
    {"-o", "RUN", RUN_OPT_OUTPUT, "run folder to write (trace.zst, index.db)"},
    {"--force", NULL, RUN_OPT_OUTPUT, "let -o replace an existing run (once the new one is complete)"},
    {"--dump", "NAME[@RANK]=FILE.npy", RUN_OPT_OUTPUT,
     "after the run, write the tensor (or GM allocation) NAME of RANK (default 0) as a NumPy "
     "file; repeatable"},
    {"--check", "races", RUN_OPT_EXECUTES, "happens-before checker: races and sync errors (exit 6)"},
    {"--no-trace", NULL, RUN_OPT_NO_TRACE, "emulate without recording (overhead measurements)"},
    {"--quiet", NULL, RUN_OPT_EXECUTES, "print only the final summary"},
    {"--progress", NULL, RUN_OPT_OUTPUT,
     "progress on stderr every 2 s (phase, cores finished, ETA) even when stderr is not a "
     "terminal, where it is on by default; never with --quiet"},
};
#define N_ENGINE_OPTS (sizeof engine_opts / sizeof engine_opts[0])

static void run_options_list_kernels(FILE *out) {
    fprintf(out, "kernels:\n");
    for (const kernel_desc *const *k = kernels_all(); *k; k++) {
        const kernel_plugin *p = kernels_plugin_of(*k);
        fprintf(out, "  %-26s %s", (*k)->name, (*k)->summary ? (*k)->summary : "");
        if (p) fprintf(out, " [plugin %s]", p->name);
        fprintf(out, "\n");
    }
}

/* record and replay run the engine; layout (allow 0) only computes sizes. */
static int effective_allow(int allow) {
    return allow & (RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE) ? allow | RUN_OPT_EXECUTES : allow;
}

/* What a kernel option's value is, for the help's left column: the
 * descriptors give name, default and help, and the kind of value follows
 * from them. */
static const char *kopt_value_name(const kernel_option *o) {
    static const struct { const char *name, *value; } named[] = {
        {"routing", "KIND"}, {"inject", "FAULT"}, {"dtype", "TYPE"}, {"data-seed", "SEED"},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(o->name, named[i].name) == 0) return named[i].value;
    if (strstr(o->name, "bytes")) return "BYTES";
    const char *d = o->default_value;
    if (d && *d) {
        char *end = NULL;
        strtod(d, &end);
        if (*end == 0) return strchr(d, '.') ? "F" : "N";
    }
    return "VALUE";
}

void run_options_help(FILE *out, const kernel_desc *k, int allow) {
    allow = effective_allow(allow);
    fprintf(out, "engine options (--opt VALUE or --opt=VALUE):\n");
    for (size_t i = 0; i < N_ENGINE_OPTS; i++) {
        if (engine_opts[i].allow && !(engine_opts[i].allow & allow)) continue;
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", engine_opts[i].name, engine_opts[i].arg ? " " : "",
                 engine_opts[i].arg ? engine_opts[i].arg : "");
        fprintf(out, "  %-26s %s\n", left, engine_opts[i].help);
    }
    if (k) {
        fprintf(out, "\noptions of -k %s:\n", k->name);
        for (const kernel_option *o = k->options; o && o->name; o++) {
            char left[64];
            snprintf(left, sizeof left, "--%s %s", o->name, kopt_value_name(o));
            /* Routing kinds come from the one routing table, whatever the
             * descriptor's text says: every kind works for every kernel. */
            if (strcmp(o->name, "routing") == 0)
                fprintf(out, "  %-26s %s (docs/commands.md: Routing)", left, routing_kinds_help());
            else
                fprintf(out, "  %-26s %s", left, o->help);
            if (o->default_value) fprintf(out, " (default %s)", o->default_value);
            fprintf(out, "\n");
        }
    } else {
        fprintf(out, "\n");
        run_options_list_kernels(out);
        fprintf(out, "(-k KERNEL --help lists a kernel's own options)\n");
    }
}

static int parse_int(const char *opt, const char *v, long long lo, long long hi, long long *out,
                     char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        snprintf(err, errlen, "%s: '%s' is not an integer between %lld and %lld", opt, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int set_kernel_opt(run_options *ro, const char *name, const char *value, char *err,
                          size_t errlen) {
    if (kopts_set(&ro->kopts, name, value) == 0) return 0;
    snprintf(err, errlen, "--%s: not an option of -k %s (npurr record -k %s --help)", name,
             ro->kernel->name, ro->kernel->name);
    return -1;
}

/* Engine options that only commands running the engine take. */
static int needs_execution(const char *opt) {
    for (size_t i = 0; i < N_ENGINE_OPTS; i++)
        if (strcmp(engine_opts[i].name, opt) == 0) return engine_opts[i].allow == RUN_OPT_EXECUTES;
    return 0;
}

/* Every --plugin PATH (or --plugin=PATH), loaded in order: their kernels
 * join the list before -k is looked up. SESSION_ERROR when one cannot be
 * loaded (err names it), SESSION_USAGE for a missing path or too many. */
static int load_plugins(int argc, char **argv, run_options *ro, char *err, size_t errlen) {
    for (int i = FIRST_OPTION; i < argc; i++) {
        const char *path = NULL;
        if (strcmp(argv[i], "--plugin") == 0) {
            if (i + 1 >= argc) { snprintf(err, errlen, "--plugin: missing value"); return EXIT_USAGE; }
            path = argv[++i];
        } else if (strncmp(argv[i], "--plugin=", 9) == 0) {
            path = argv[i] + 9;
        }
        if (!path) continue;
        if (ro->n_plugins == RUN_MAX_PLUGINS) {
            snprintf(err, errlen, "--plugin %s: at most %d plugins", path, RUN_MAX_PLUGINS);
            return EXIT_USAGE;
        }
        const kernel_plugin *p;
        if (kernels_load_plugin(path, &p, err, errlen)) return SESSION_ERROR;
        /* a kernel option named like an engine option could never be set */
        for (const kernel_desc *const *k = p->kernels; *k; k++)
            for (const kernel_option *o = (*k)->options; o && o->name; o++)
                for (size_t e = 0; e < N_ENGINE_OPTS; e++)
                    if (strncmp(engine_opts[e].name, "--", 2) == 0 &&
                        strcmp(engine_opts[e].name + 2, o->name) == 0) {
                        snprintf(err, errlen, "plugin %s (%s): kernel %s's option --%s is an "
                                 "engine option of npurr; rename it", p->name, p->path,
                                 (*k)->name, o->name);
                        return SESSION_ERROR;
                    }
        ro->plugin_paths[ro->n_plugins++] = path;
    }
    return 0;
}

/* -k first, and --help: the kernel decides which options exist. */
static int find_kernel(int argc, char **argv, run_options *ro, char *err, size_t errlen) {
    int rc = load_plugins(argc, argv, ro, err, errlen);
    if (rc) return rc;
    for (int i = FIRST_OPTION; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) ro->help = 1;
        const char *name = NULL;
        if (strcmp(argv[i], "-k") == 0 || strcmp(argv[i], "--kernel") == 0) {
            if (i + 1 >= argc) { snprintf(err, errlen, "-k: missing kernel name"); return EXIT_USAGE; }
            name = argv[i + 1];
        } else if (strncmp(argv[i], "--kernel=", 9) == 0) {
            name = argv[i] + 9;
        } else if (strncmp(argv[i], "-k=", 3) == 0) {
            snprintf(err, errlen, "%s: a short option takes its value as the next argument: "
                     "-k %s (or --kernel=%s)", argv[i], argv[i] + 3, argv[i] + 3);
            return EXIT_USAGE;
        }
        if (name) {
            ro->kernel = kernels_find(name);
            if (!ro->kernel) {
                snprintf(err, errlen, "-k %s: no such kernel (npurr record --help lists them; "
                         "a plugin's kernels need --plugin PATH.so)", name);
                return EXIT_USAGE;
            }
            ro->plugin = kernels_plugin_of(ro->kernel);
        }
    }
    return 0;
}

/* An engine option (the configuration table's ranges for nodes, NPUs per
 * node and jitter): 1 when a is one and v was taken, 0 when a is not an
 * engine option, -1 (err set) when v is bad. */
static int engine_option(run_options *ro, const char *a, const char *v, char *err,
                         size_t errlen) {
    long long n;
    const engine_config_limit *lim_nodes = engine_config_limit_get(ENGINE_LIMIT_NODES);
    const engine_config_limit *lim_npus = engine_config_limit_get(ENGINE_LIMIT_NPUS_PER_NODE);
    const engine_config_limit *lim_jitter = engine_config_limit_get(ENGINE_LIMIT_JITTER);
    if (strcmp(a, lim_nodes->option) == 0) {
        if (parse_int(a, v, (long long)lim_nodes->lo, (long long)lim_nodes->hi, &n, err,
                      errlen))
            return -1;
        ro->config.nodes = (int)n;
    } else if (strcmp(a, lim_npus->option) == 0) {
        if (parse_int(a, v, (long long)lim_npus->lo, (long long)lim_npus->hi, &n, err, errlen))
            return -1;
        ro->config.npus_per_node = (int)n;
    } else if (strcmp(a, "--chip") == 0) {
        if (engine_chip_parse(v, &ro->config.chip) != 0) {
            snprintf(err, errlen, "--chip: '%s' is not %s", v, engine_chips_text());
            return -1;
        }
    } else if (strcmp(a, "--seed") == 0) {
        char *end = NULL;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-') {
            snprintf(err, errlen, "--seed: '%s' is not a non-negative integer", v);
            return -1;
        }
        ro->config.seed = s;
    } else if (strcmp(a, lim_jitter->option) == 0) {
        char *end = NULL;
        double j = strtod(v, &end);
        if (end == v || *end || !isfinite(j) || j < lim_jitter->lo || j > lim_jitter->hi) {
            snprintf(err, errlen, "--jitter: '%s' is not a number between %g and %g", v,
                     lim_jitter->lo, lim_jitter->hi);
            return -1;
        }
        ro->config.jitter = j;
    } else if (strcmp(a, "--pct-points") == 0) {
        if (parse_int(a, v, 0, 1000000, &n, err, errlen)) return -1;
        ro->config.pct_points = (uint32_t)n;
    } else if (strcmp(a, "--pct-span") == 0) {
        if (parse_int(a, v, 1, 1LL << 50, &n, err, errlen)) return -1;
        ro->config.pct_span = (uint64_t)n;
    } else if (strcmp(a, "--pct-delay-us") == 0) {
        char *end = NULL;
        double us = strtod(v, &end);
        if (end == v || *end || !isfinite(us) || us <= 0 || us > 1e9) {
            snprintf(err, errlen, "--pct-delay-us: '%s' is not a number of microseconds above 0", v);
            return -1;
        }
        ro->config.pct_delay_ps = (uint64_t)llround(us * 1e6);
    } else if (strcmp(a, "--hw") == 0) {
        ro->hw_file = v;
        if (engine_hw_load(&ro->config.hw, v, err, errlen) != ENGINE_OK) return -1;
    } else if (strcmp(a, "--payload") == 0) {
        if (engine_payload_parse(v, &ro->config.payload)) {
            snprintf(err, errlen, "--payload: '%s' is not ref or full", v);
            return -1;
        }
    } else if (strcmp(a, "--watchdog-us") == 0) {
        if (parse_int(a, v, 0, 1000000000000LL, &n, err, errlen)) return -1;
        ro->config.watchdog_ps = (uint64_t)n * 1000000ULL;
    } else {
        return 0;
    }
    return 1;
}

/* The flags (options without a value): 1 taken, 0 not one, -1 with err. */
static int flag_option(run_options *ro, const char *a, int allow, char *err, size_t errlen) {
    if (strcmp(a, "--no-trace") == 0 && (allow & RUN_OPT_NO_TRACE)) return ro->no_trace = 1;
    if (strcmp(a, "--quiet") == 0) return ro->quiet = 1;
    if (strcmp(a, "--progress") == 0 && (allow & RUN_OPT_OUTPUT)) return ro->progress = 1;
    if (strcmp(a, "--force") == 0 && (allow & RUN_OPT_OUTPUT)) return ro->force = 1;
    /* A flag of another command: say so, rather than "missing value". */
    if (strcmp(a, "--no-trace") == 0 || strcmp(a, "--progress") == 0 ||
        strcmp(a, "--force") == 0) {
        snprintf(err, errlen, "%s: not an option of this command (`npurr record` takes it)", a);
        return -1;
    }
    return 0;
}

/* What a run writes and checks (-o, --dump, --check): 1 taken, 0 not one,
 * -1 with err. */
static int output_option(run_options *ro, const char *a, const char *v, int allow, char *err,
                         size_t errlen) {
    if (strcmp(a, "-o") == 0 && (allow & RUN_OPT_OUTPUT)) {
        ro->out_dir = v;
        return 1;
    }
    if (strcmp(a, "--dump") == 0 && (allow & RUN_OPT_OUTPUT)) {
        if (ro->n_dumps == (int)(sizeof ro->dumps / sizeof ro->dumps[0])) {
            snprintf(err, errlen, "--dump %s: at most %zu tensors", v,
                     sizeof ro->dumps / sizeof ro->dumps[0]);
            return -1;
        }
        ro->dumps[ro->n_dumps++] = v;
        return 1;
    }
    if (strcmp(a, "--check") == 0) {
        if (strcmp(v, "races") != 0) {
            snprintf(err, errlen, "--check: '%s' is not a check (races)", v);
            return -1;
        }
        ro->check_races = 1;
        return 1;
    }
    return 0;
}

int run_options_parse(int argc, char **argv, int allow, run_options *ro, char *err, size_t errlen) {
    memset(ro, 0, sizeof *ro);
    engine_config_defaults(&ro->config);
    allow = effective_allow(allow);
    int found = find_kernel(argc, argv, ro, err, errlen);
    if (found) return found;
    if (ro->help) return 0;
    if (!ro->kernel) { snprintf(err, errlen, "-k KERNEL is required"); return EXIT_USAGE; }
    kopts_init(&ro->kopts, ro->kernel);
    for (int i = FIRST_OPTION; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        /* --opt=VALUE: the name before '=', the value after it. */
        char name[128];
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (eq) {
            if ((size_t)(eq - a) >= sizeof name) {
                snprintf(err, errlen, "%.60s...: unknown option", a);
                return EXIT_USAGE;
            }
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            a = name;
        }
        if (needs_execution(a) && !(allow & RUN_OPT_EXECUTES)) {
            snprintf(err, errlen, "%s: not an option of `npurr layout`, which computes sizes "
                     "without running the engine", a);
            return EXIT_USAGE;
        }
        int flag = eq ? 0 : flag_option(ro, a, allow, err, errlen);
        if (flag < 0) return EXIT_USAGE;
        if (flag) continue;
        if (strncmp(a, "-", 1) != 0) {
            snprintf(err, errlen, "unexpected argument '%s'", a);
            return EXIT_USAGE;
        }
        if (eq) {
            v = eq + 1;
        } else {
            if (!v) { snprintf(err, errlen, "%s: missing value", a); return EXIT_USAGE; }
            i++;
        }
        if (strcmp(a, "-k") == 0 || strcmp(a, "--kernel") == 0 || strcmp(a, "--plugin") == 0)
            continue;   /* taken by find_kernel */
        int taken = output_option(ro, a, v, allow, err, errlen);
        if (!taken) taken = engine_option(ro, a, v, err, errlen);
        if (taken < 0) return EXIT_USAGE;
        if (taken) continue;
        if (strncmp(a, "--", 2) == 0) {
            if (set_kernel_opt(ro, a + 2, v, err, errlen)) return EXIT_USAGE;
        } else {
            snprintf(err, errlen, "%s: unknown option", a);
            return EXIT_USAGE;
        }
    }
    /* The three PCT options make one schedule: points alone cannot run. */
    if (ro->config.pct_points && (!ro->config.pct_span || !ro->config.pct_delay_ps)) {
        int no_delay = !ro->config.pct_delay_ps && ro->config.pct_span;
        snprintf(err, errlen, "--pct-points %u needs --pct-span STEPS and --pct-delay-us US too%s",
                 ro->config.pct_points, no_delay ? " (no --pct-delay-us given)" : "");
        return EXIT_USAGE;
    }
    return 0;
}
