/*
 * coro.c - coroutines for emulated cores.
 *
 * Each core runs its kernel on a private mmap'd stack with a guard page
 * below it, so a runaway kernel recursion faults instead of corrupting a
 * neighbour. On x86_64 the switch is coro_x86_64.S; elsewhere ucontext is
 * used. ASan builds tell the sanitizer about every stack switch, or it would
 * report false stack-buffer overflows.
 */
#include "internal.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(NPURR_ASAN) || defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define CORO_ASAN 1
#endif

/* A coroutine abandoned mid-kernel (deadlock, fault) leaves ASan's stack
 * redzones poisoned in the shadow of its stack; a later mapping at the same
 * address would inherit them. Clear the shadow on both ends of a stack's life. */
static void stack_unpoison(void *mem, size_t size) {
#ifdef CORO_ASAN
    ASAN_UNPOISON_MEMORY_REGION(mem, size);
#else
    (void)mem; (void)size;
#endif
}

#if defined(__x86_64__) && !defined(NPURR_UCONTEXT)
void npurr_ctx_swap(void **save_sp, void *load_sp);
void npurr_ctx_start(void);

int coro_init(coro *c, size_t stack_size, void (*entry)(void *), void *arg) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t total = stack_size + page;
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mem == MAP_FAILED) return -1;
    if (mprotect(mem, page, PROT_NONE) != 0) { munmap(mem, total); return -1; }
    stack_unpoison((uint8_t *)mem + page, stack_size);
    c->stack = mem;
    c->stack_size = total;
    c->asan_bottom = (uint8_t *)mem + page;
    c->asan_size = stack_size;
    uint64_t *top = (uint64_t *)((uint8_t *)mem + total);   /* 16-byte aligned */
    /* Layout popped by npurr_ctx_swap, low to high: control words, r15, r14,
     * r13 (arg), r12 (entry), rbx, rbp, return address. */
    uint64_t *sp = top - 8;
    sp[0] = 0x1F80u | ((uint64_t)0x037Fu << 32);   /* mxcsr default, x87 cw default */
    sp[1] = 0; sp[2] = 0;
    sp[3] = (uint64_t)(uintptr_t)arg;
    sp[4] = (uint64_t)(uintptr_t)entry;
    sp[5] = 0; sp[6] = 0;
    sp[7] = (uint64_t)(uintptr_t)npurr_ctx_start;
    c->sp = sp;
    return 0;
}

static void raw_switch(coro *from, coro *to) { npurr_ctx_swap(&from->sp, to->sp); }
#else
#include <stdlib.h>
#include <ucontext.h>
typedef struct { ucontext_t uc; } uc_box;
static __thread void (*tramp_entry)(void *);
static __thread void *tramp_arg;
static void uc_tramp(void) { tramp_entry(tramp_arg); }
int coro_init(coro *c, size_t stack_size, void (*entry)(void *), void *arg) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t total = stack_size + page;
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return -1;
    mprotect(mem, page, PROT_NONE);
    uc_box *b = calloc(1, sizeof *b);
    if (!b) { munmap(mem, total); return -1; }
    getcontext(&b->uc);
    b->uc.uc_stack.ss_sp = (uint8_t *)mem + page;
    b->uc.uc_stack.ss_size = stack_size;
    b->uc.uc_link = NULL;
    tramp_entry = entry; tramp_arg = arg;
    makecontext(&b->uc, uc_tramp, 0);
    c->stack = mem; c->stack_size = total; c->sp = b;
    c->asan_bottom = (uint8_t *)mem + page; c->asan_size = stack_size;
    return 0;
}
static void raw_switch(coro *from, coro *to) {
    if (!from->sp) from->sp = calloc(1, sizeof(uc_box));
    swapcontext(&((uc_box *)from->sp)->uc, &((uc_box *)to->sp)->uc);
}
#endif

void coro_free(coro *c) {
    if (c->stack) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        stack_unpoison((uint8_t *)c->stack + page, c->stack_size - page);
        munmap(c->stack, c->stack_size);
    }
    c->stack = NULL;
}

void coro_switch(coro *from, coro *to) {
#ifdef CORO_ASAN
    __sanitizer_start_switch_fiber(&from->asan_fake, to->asan_bottom, to->asan_size);
    raw_switch(from, to);
    /* Back on from's stack: ASan reports the bounds of the stack that switched
     * here, which are already known (coro_entered recorded the scheduler's). */
    const void *prev_bottom;
    size_t prev_size;
    __sanitizer_finish_switch_fiber(from->asan_fake, &prev_bottom, &prev_size);
#else
    raw_switch(from, to);
#endif
}

/* First code a new coroutine runs: completes the switch that started it. */
void coro_entered(coro *from) {
#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(NULL, &from->asan_bottom, &from->asan_size);
#else
    (void)from;
#endif
}
