/*
 * session_signals.c - what Ctrl-C and SIGTERM do to a session. The first
 * signal only asks the engine to stop at the next event, so the ending
 * goes through the same path as any other (the recorder writes the outcome
 * `interrupted` into trailer and index, the replayer reports how far it
 * got); once a record's run is over, it skips the output check (which can
 * take seconds at full size) and lets the trace and index be finalised. A
 * second signal of a record exits at once. One session at a time: the
 * handler reaches the engine through a process-wide pointer.
 */
#include "session/session_signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static engine *volatile g_running;
static volatile sig_atomic_t g_finishing;   /* between the run and rec_close */
static volatile sig_atomic_t g_signals;
static volatile sig_atomic_t g_second_kills;
static struct sigaction g_old_int, g_old_term;
static int g_caught;

static void on_signal(int sig) {
    int again = g_signals++ != 0;
    if (g_second_kills && (again || (!g_running && !g_finishing))) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    if (g_running) {
        engine_request_stop(g_running);
    } else if (g_finishing) {
        static const char msg[] = "\nnpurr: finishing the trace and index (Ctrl-C again to abort)\n";
        ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)n;
    }
}

void session_signals_catch(engine *e, int second_kills) {
    g_signals = 0;
    g_finishing = 0;
    g_second_kills = second_kills;
    g_running = e;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGTERM, &sa, &g_old_term);
    g_caught = 1;
}

void session_signals_run_over(int finishing) {
    g_finishing = finishing;
    g_running = NULL;
    if (!finishing) session_signals_release();
}

void session_signals_release(void) {
    if (!g_caught) return;
    g_finishing = 0;
    g_running = NULL;
    sigaction(SIGINT, &g_old_int, NULL);
    sigaction(SIGTERM, &g_old_term, NULL);
    g_caught = 0;
}

int session_signals_seen(void) { return g_signals != 0; }
