/*
 * plugin_load.c - a user's kernels from a shared object: the plugin ABI's
 * loader (npurr/plugin.h).
 *
 * Before anything of the plugin runs, the loader reads its data symbol
 * npurr_plugin_abi (magic, ABI version, name) and refuses another major
 * version, naming both: the host table's layout and the descriptors'
 * meaning may differ across majors, so a plugin of another major is never
 * called. Then it calls npurr_plugin_kernels with the host table and checks
 * every descriptor it returns (a name of letters, digits, '-' and '_', a
 * setup hook, options with names) and every name against the kernels
 * already known, built in or loaded: a collision is refused, naming the
 * kernel and who has it, so `-k NAME` always means one kernel. Only then
 * are the kernels added to the list (registry.c).
 *
 * dlopen's RTLD_NOW resolves the plugin's device calls (the dev_* functions
 * the npurr executable exports) at load, so a plugin built against another
 * npurr's device API fails here, with dlerror's text, instead of in the
 * middle of a run. RTLD_LOCAL keeps one plugin's symbols from another's.
 * A plugin stays loaded until the process ends (its descriptors and code
 * are referenced by runs).
 */
#include "kit.h"
#include "registry.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLUGINS 32

static kernel_plugin plugins[MAX_PLUGINS];
static int n_plugins;

static int valid_kernel_name(const char *name) {
    if (!name || !*name || strlen(name) > 63) return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_'))
            return 0;
    return 1;
}

/* Who has the kernel called name already: "a built-in kernel", "plugin X
 * (PATH)", or NULL when nobody does. */
static const char *owner_of(const char *name, char *buf, size_t buflen) {
    for (const kernel_desc *const *k = kernels_builtin(); *k; k++)
        if (strcmp((*k)->name, name) == 0) return "a built-in kernel";
    for (int i = 0; i < n_plugins; i++)
        for (const kernel_desc *const *k = plugins[i].kernels; *k; k++)
            if (strcmp((*k)->name, name) == 0) {
                snprintf(buf, buflen, "a kernel of plugin %s (%s)", plugins[i].name,
                         plugins[i].path);
                return buf;
            }
    return NULL;
}

/* Every descriptor of list checked, and its name free: 0, or -1 with err. */
static int check_kernels(const char *path, const char *pname, const kernel_desc *const *list,
                         char *err, size_t errlen) {
    if (!list || !list[0]) {
        snprintf(err, errlen, "plugin %s (%s): npurr_plugin_kernels returned no kernel", pname,
                 path);
        return -1;
    }
    for (int i = 0; list[i]; i++) {
        const kernel_desc *k = list[i];
        if (i >= 256) {
            snprintf(err, errlen, "plugin %s (%s): its kernel list has no NULL end", pname, path);
            return -1;
        }
        if (!valid_kernel_name(k->name)) {
            snprintf(err, errlen, "plugin %s (%s): kernel %d's name '%.64s' is not 1-63 letters, "
                     "digits, '-' or '_'", pname, path, i + 1, k->name ? k->name : "(null)");
            return -1;
        }
        if (!k->setup) {
            snprintf(err, errlen, "plugin %s (%s): kernel %s has no setup hook", pname, path,
                     k->name);
            return -1;
        }
        int n_opts = 0;
        for (const kernel_option *o = k->options; o && o->name; o++, n_opts++) {
            if (!valid_kernel_name(o->name) || !o->default_value) {
                snprintf(err, errlen, "plugin %s (%s): kernel %s's option '%.64s' %s", pname,
                         path, k->name, o->name,
                         o->default_value ? "is not 1-63 letters, digits, '-' or '_'"
                                          : "has no default value (give \"\" for none)");
                return -1;
            }
            for (const kernel_option *p = k->options; p != o; p++)
                if (strcmp(p->name, o->name) == 0) {
                    snprintf(err, errlen, "plugin %s (%s): kernel %s declares --%s twice", pname,
                             path, k->name, o->name);
                    return -1;
                }
        }
        if (n_opts > NPURR_MAX_OPTIONS) {
            snprintf(err, errlen, "plugin %s (%s): kernel %s declares %d options (at most %d)",
                     pname, path, k->name, n_opts, NPURR_MAX_OPTIONS);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(list[j]->name, k->name) == 0) {
                snprintf(err, errlen, "plugin %s (%s) lists kernel %s twice", pname, path, k->name);
                return -1;
            }
        char who[4200];
        const char *owner = owner_of(k->name, who, sizeof who);
        if (owner) {
            snprintf(err, errlen, "plugin %s (%s): kernel %s is already %s; rename the plugin's "
                     "kernel", pname, path, k->name, owner);
            return -1;
        }
    }
    return 0;
}

/* real is a regular file that starts as an ELF object does (a FIFO or a
 * text file is refused before dlopen sees it): 0, or -1 with err. */
static int check_shared_object(const char *path, const char *real, char *err, size_t errlen) {
    char why[256];
    FILE *f = kit_fopen_input(real, why, sizeof why);
    if (!f) {
        snprintf(err, errlen, "--plugin %s: %s", path, why);
        return -1;
    }
    unsigned char magic[4] = {0};
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if (n != sizeof magic || memcmp(magic, "\x7f" "ELF", 4) != 0) {
        snprintf(err, errlen, "--plugin %s: not a shared object (no ELF header); build the "
                 "plugin with npurr_add_kernel (find_package(npurr))", path);
        return -1;
    }
    return 0;
}

/* The ABI information a plugin exports, checked: 0, or -1 with err. */
static int read_abi(void *handle, const char *path, const npurr_plugin_abi_info **out, char *err,
                    size_t errlen) {
    const npurr_plugin_abi_info *abi = dlsym(handle, NPURR_PLUGIN_ABI_SYMBOL);
    if (!abi || memcmp(abi->magic, "npurrabi", 8) != 0) {
        snprintf(err, errlen, "%s is not an npurr plugin: it exports no %s (define one with "
                 "NPURR_PLUGIN(...) from npurr/plugin.h)", path, NPURR_PLUGIN_ABI_SYMBOL);
        return -1;
    }
    const char *name = abi->name && *abi->name ? abi->name : "(unnamed)";
    if (abi->abi_major != NPURR_ABI_MAJOR) {
        snprintf(err, errlen, "plugin %.100s (%s) was built for plugin ABI %u.%u; this npurr "
                 "runs ABI %d.%d (another major version): rebuild it against this npurr",
                 name, path, abi->abi_major, abi->abi_minor, NPURR_ABI_MAJOR, NPURR_ABI_MINOR);
        return -1;
    }
    if (abi->abi_minor > NPURR_ABI_MINOR) {
        snprintf(err, errlen, "plugin %.100s (%s) needs plugin ABI %u.%u; this npurr runs %d.%d: "
                 "use a newer npurr or rebuild the plugin against this one", name, path,
                 abi->abi_major, abi->abi_minor, NPURR_ABI_MAJOR, NPURR_ABI_MINOR);
        return -1;
    }
    *out = abi;
    return 0;
}

int kernels_load_plugin(const char *path, const kernel_plugin **out, char *err, size_t errlen) {
    *out = NULL;
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        snprintf(err, errlen, "--plugin %s: %s", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n_plugins; i++)
        if (strcmp(plugins[i].path, real) == 0) {
            *out = &plugins[i];
            return 0;
        }
    if (n_plugins == MAX_PLUGINS) {
        snprintf(err, errlen, "--plugin %s: at most %d plugins at once", path, MAX_PLUGINS);
        return -1;
    }
    if (check_shared_object(path, real, err, errlen)) return -1;
    char sha[65], why[256];
    if (kit_sha256_file(real, sha, why, sizeof why)) {
        snprintf(err, errlen, "--plugin %s: %s", path, why);
        return -1;
    }
    for (int i = 0; i < n_plugins; i++)
        if (strcmp(plugins[i].sha256, sha) == 0) {   /* the same plugin, at another path */
            *out = &plugins[i];
            return 0;
        }
    dlerror();
    void *handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        snprintf(err, errlen, "--plugin %s: cannot load it: %s", path, e ? e : "unknown error");
        return -1;
    }
    const npurr_plugin_abi_info *abi = NULL;
    npurr_plugin_kernels_fn *entry = NULL;
    if (read_abi(handle, real, &abi, err, errlen)) goto refuse;
    *(void **)&entry = dlsym(handle, NPURR_PLUGIN_KERNELS_SYMBOL);
    if (!entry) {
        snprintf(err, errlen, "plugin %.100s (%s) exports no %s function", abi->name, real,
                 NPURR_PLUGIN_KERNELS_SYMBOL);
        goto refuse;
    }
    const kernel_desc *const *list = entry(kernels_host());
    const char *pname = abi->name && *abi->name ? abi->name : "(unnamed)";
    if (check_kernels(real, pname, list, err, errlen)) goto refuse;
    kernel_plugin *p = &plugins[n_plugins];
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", real);
    snprintf(p->name, sizeof p->name, "%s", pname);
    memcpy(p->sha256, sha, sizeof p->sha256);
    p->abi_major = abi->abi_major;
    p->abi_minor = abi->abi_minor;
    p->kernels = list;
    p->handle = handle;
    if (kernels_register(list, err, errlen)) goto refuse;
    n_plugins++;
    *out = p;
    return 0;
refuse:
    dlclose(handle);
    return -1;
}

const kernel_plugin *kernels_plugin_of(const kernel_desc *k) {
    for (int i = 0; i < n_plugins; i++)
        for (const kernel_desc *const *d = plugins[i].kernels; *d; d++)
            if (*d == k) return &plugins[i];
    return NULL;
}
