/*
 * rec_map_guard.c - a trace that shrinks under its reader is named, not a
 * crash.
 *
 * Readers map trace.zst (rec_frame.c). When another process truncates or
 * rewrites the file in place while it is mapped, touching a page past the
 * new end raises SIGBUS, which killed `replay`, `sql` or the SQLite
 * extension's host with no word (exit 135). Copying the file into memory
 * instead would double what a production trace costs to read, so the
 * mappings are kept in a small table and a SIGBUS handler looks the
 * faulting address up: inside a mapped trace, it says which file changed
 * and exits 1 (no state of the reader can be trusted after the fault, so
 * it does not try to go on); anywhere else, it gives the signal back to
 * whoever handled it before (or to the default action), as if npurr had no
 * handler. Only async-signal-safe calls are made in the handler.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "recorder/rec_internal.h"

enum { GUARD_SLOTS = 64, GUARD_PATH = 512 };

typedef struct guard_slot {
    const uint8_t *volatile base;   /* NULL: free */
    size_t size;
    char path[GUARD_PATH];
} guard_slot;

static guard_slot slots[GUARD_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous;
static int installed;

static void say(const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    const uint8_t *addr = info ? (const uint8_t *)info->si_addr : NULL;
    for (int i = 0; addr && i < GUARD_SLOTS; i++) {
        const uint8_t *b = slots[i].base;
        if (b && addr >= b && addr < b + slots[i].size) {
            say("npurr: ");
            say(slots[i].path);
            say(" changed while it was read (truncated or rewritten in place by another "
                "process); read it again once it is complete\n");
            _exit(1);
        }
    }
    /* Not a trace of ours: as if this handler were not there. */
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) {
            previous.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
               previous.sa_handler) {
        previous.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);   /* the fault repeats on return and takes the default action */
}

void rec_map_guard_add(const void *base, size_t size, const char *path) {
    if (!base || !size) return;
    pthread_mutex_lock(&slots_lock);
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &previous) == 0) installed = 1;
    }
    for (int i = 0; i < GUARD_SLOTS; i++)
        if (!slots[i].base) {
            slots[i].size = size;
            snprintf(slots[i].path, sizeof slots[i].path, "%s", path);
            slots[i].base = base;   /* last: the handler reads base first */
            break;
        }
    pthread_mutex_unlock(&slots_lock);
}

void rec_map_guard_remove(const void *base) {
    if (!base) return;
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < GUARD_SLOTS; i++)
        if (slots[i].base == base) slots[i].base = NULL;
    pthread_mutex_unlock(&slots_lock);
}
