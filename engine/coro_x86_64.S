/*
 * coro_x86_64.S - the context switch under every emulated core.
 *
 * npurr_ctx_swap(void **save_sp, void *load_sp): pushes the callee-saved
 * registers and the SSE/x87 control words on the current stack, stores the
 * stack pointer in *save_sp, loads load_sp and pops the same layout. A new
 * coroutine's stack is prepared by coro.c so that the first swap "returns"
 * into npurr_ctx_start, which calls entry(arg) from r12/r13. About ten
 * instructions: cheap enough for millions of switches per second, which
 * swapcontext (a syscall per switch) is not.
 */
#if defined(__x86_64__) && !defined(NPURR_UCONTEXT)
    .text
    .globl npurr_ctx_swap
    .type npurr_ctx_swap, @function
npurr_ctx_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size npurr_ctx_swap, .-npurr_ctx_swap

    .globl npurr_ctx_start
    .type npurr_ctx_start, @function
npurr_ctx_start:
    movq %r13, %rdi
    callq *%r12
    ud2
    .size npurr_ctx_start, .-npurr_ctx_start
#endif
    .section .note.GNU-stack,"",@progbits
