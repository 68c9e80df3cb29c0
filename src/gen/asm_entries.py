"""The entry points in assembly (x86-64, optimized builds): the application's MPI_X with its
PMPI_X alias, and ZMPI_X, which wrapper modules and the modules' callbacks call for the layer
below their own. generate.py writes them into the generated entry files; the C++ entry points
of the other builds do the same through dispatch<>() (src/core/dispatch.hpp)."""

# Arguments the x86-64 System V ABI passes in registers (the integer ones: MPI's are all such).
REGISTER_ARGUMENTS = 6

# The thread's state (core::tls, a thread_state): its initial-exec TLS offset, loaded into %r10.
THREAD_STATE = "_ZN6strata4core3tlsE@gottpoff(%rip)"


def timed_in_place(fn):
    """The timed call of a function whose arguments with the chain entry and the real function
    would not all fit in registers reads those two again itself (dispatch.hpp,
    sole_exit_in_place): strata_timed_X, out of line."""
    return len(fn.params) + 2 > REGISTER_ARGUMENTS


def lean_poll(n, index):
    """A poll's entry when its chain counts untimed polls (chain::untimed_poll_counter, %r11):
    dispatch.hpp's lean_poll in place, counted and handed to MPI by a jump, no frame. The
    application's call with MPI not running (layer -1 and in_real 0, one 64-bit compare)
    counts down to its next timed poll; the poll due for timing (the countdown set back to 1,
    as counts_here() does) and any other call take strata_wrapped_X. Placed where the test of
    the counter falls through, so that a counted poll takes no branch but its jump into MPI
    (one more taken branch a poll showed in HPCC's RandomAccess: docs/PERFORMANCE.md)."""
    return ("  movq " + THREAD_STATE + ", %r10\n"
            "  movl $0xffffffff, %eax\n"
            "  cmpq %rax, %fs:(%r10)\n"
            f"  jne strata_wrapped_{n}\n"
            "  subl $1, %fs:16(%r10)\n"
            "  jz 5f\n"
            "  addq $1, (%r11)\n"
            f"  jmp *_ZN6strata3gen4realE+{8 * index}(%rip)\n"
            "5: movl $1, %fs:16(%r10)\n"
            f"  jmp strata_wrapped_{n}\n")


def usual_entry(n, index):
    """The entry point's first test: the function's entry found usual (strata_usual_entries, set
    once by the first call summed the general way: the application's first entry, a timed call
    summed by the core with the usual clock, fields and histograms), then the application's call
    with MPI not running and no call mark: strata_usual_X, which reads the entry from the same
    table. One load and a test before the thread's state, where finding the entry through the
    chain took five loads and tests; anything else falls through to label 8, the general tests."""
    return (f"  movq strata_usual_entries+{8 * index}(%rip), %rax\n"
            "  testq %rax, %rax\n  jz 8f\n"
            f"  movq {THREAD_STATE}, %r10\n"
            "  movl $0xffffffff, %r11d\n"
            "  cmpq %r11, %fs:(%r10)\n"
            f"  jne strata_wrapped_{n}\n"
            "  cmpl $0, strata_call_marks(%rip)\n"
            f"  je strata_usual_{n}\n"
            f"  jmp strata_wrapped_{n}\n")


def write_asm_entry(c, fn, index, poll=False):
    """The entry point, in assembly. GCC copies stack arguments into registers and back on every
    tail call that passes them on (26 instructions in MPI_Sendrecv's entry, 53 more in
    wrapped_MPI_Sendrecv's frame), and a C++ entry point with wrapped_X tests the thread's state
    twice: here nothing moves and each test is made once. No chain: MPI. A chain that only
    counts: counted_X. First of all the entry found usual (usual_entry): strata_usual_X. The
    application's call (layer -1, MPI not running, no call mark) whose
    first entry is the usual timed call (sole_exit_every_call): the entry
    (thread_state::timed_entry), then strata_summed_X when the entry has a
    slot lent to the core
    (chain_entry::timed_slot), which reads no call site, else the call site and strata_timed_X.
    A wrapper module first, for a function whose arguments are all in registers:
    application_to_wrapper. Anything else: wrapped_X, which decides as dispatch<>() does. `index`: the function's id,
    which is also its place in the real-function table. It uses only %rax, %r10 and %r11, which
    no MPI function takes arguments in (MPI_Pcontrol, whose %al counts vector registers, is
    written by hand). A poll (`poll`) first tests for a chain that counts its untimed polls
    (lean_poll). The offsets are asserted in the generated file (write_asm_entry_layout)."""
    n = fn.name
    body = (f".pushsection .text\n.p2align 4\n.globl {n}\n.type {n}, @function\n{n}:\n.cfi_startproc\n"
            + usual_entry(n, index) +
            f"8: movq _ZN6strata4core6chainsE+{8 * index}(%rip), %rax\n"
            "  testq %rax, %rax\n  jnz 1f\n"
            f"  jmp *_ZN6strata3gen4realE+{8 * index}(%rip)\n" +
            ("1: movq 32(%rax), %r11\n  testq %r11, %r11\n  jz 6f\n" + lean_poll(n, index) +
             "6: cmpq $0, 24(%rax)\n" if poll else "1: cmpq $0, 24(%rax)\n") +
            f"  jne strata_counted_{n}\n"
            f"  movq {THREAD_STATE}, %r10\n"
            "  movl $0xffffffff, %r11d\n"
            "  cmpq %r11, %fs:(%r10)\n"
            f"  jne strata_wrapped_{n}\n"
            "  cmpl $0, strata_call_marks(%rip)\n"
            f"  jne strata_wrapped_{n}\n"
            "  movq 16(%rax), %rax\n  movq (%rax), %rax\n"
            "  testq %rax, %rax\n"
            f"  jz strata_wrapped_{n}\n"
            "  movq %rax, %fs:40(%r10)\n"
            "  cmpb $0, 78(%rax)\n"
            f"  je {'3f' if len(fn.params) <= REGISTER_ARGUMENTS else 'strata_wrapped_' + n}\n"
            "  cmpq $0, 80(%rax)\n"
            f"  jne strata_summed_{n}\n"
            "  movq (%rsp), %r11\n  movq %r11, %fs:8(%r10)\n"
            f"  jmp strata_timed_{n}\n")
    if len(fn.params) <= REGISTER_ARGUMENTS:
        body += application_to_wrapper(n)
    body += f".cfi_endproc\n.size {n}, .-{n}\n"
    aliases = ["P" + n]
    if len(fn.params) > REGISTER_ARGUMENTS:
        aliases.append("ZMPI_" + n[4:])
    for alias in aliases:
        body += f".globl {alias}\n.type {alias}, @function\n.set {alias}, {n}\n"
    if len(fn.params) <= REGISTER_ARGUMENTS:
        body += module_call_entry(n, index)
    body += ".popsection\n"
    c.write(f"static_assert(fid_{n} == {index} && "
            f"offsetof(strata::gen::real_functions, {n}) == {8 * index});\n")
    escaped = body.replace("\n", "\\n")
    c.write(f'asm("{escaped}");\n')


def one_word_pad(body, label=None):
    """`body` with the stack moved by one word around it, which aligns it for a call; `label`
    (say "2") on the first instruction."""
    first = f"{label}: " if label else "  "
    return (f"{first}subq $8, %rsp\n  .cfi_adjust_cfa_offset 8\n" + body +
            "  addq $8, %rsp\n  .cfi_adjust_cfa_offset -8\n")


def call_wrapper_at_its_layer(restored):
    """The wrapper module of the chain entry in %rax called with the thread's layer set to the
    entry's, then the layer set to `restored`: "%r11d", the caller's layer held in %r11, saved
    on the stack across the call (which also aligns it), or a constant such as "$-1" (the
    application's layer), with one word of padding. %r10 holds the thread's state before and is
    loaded again after (the call may change it). The layer is written with in_real (zero here)
    as one 8-byte word, as the entry points read them: a 4-byte store followed by an 8-byte load
    of the same word cannot be forwarded from the store buffer, which stalled each layer's call
    by about 6 ns on AMD EPYC."""
    call = ("  movl 32(%rax), %r11d\n  movq %r11, %fs:(%r10)\n"
            "  call *(%rax)\n")
    saved = restored == "%r11d"
    set_back = (f"  movq {THREAD_STATE}, %r10\n" + ("" if saved else f"  movl {restored}, %r11d\n") +
                "  movq %r11, %fs:(%r10)\n")
    if saved:
        return ("  pushq %r11\n  .cfi_adjust_cfa_offset 8\n" + call +
                "  popq %r11\n  .cfi_adjust_cfa_offset -8\n" + set_back)
    return one_word_pad(call + set_back)


def application_to_wrapper(n):
    """MPI_X's way into a wrapper module at the top of the chain (label 3, %rax the entry): the
    call site noted, the module's layer set, its MPI_X called, layer -1 set back; what
    wrapped_X and invoke_framed would do, without their two calls. Registers only, as
    module_call_entry."""
    return ("3: cmpq $0, (%rax)\n"
            f"  je strata_wrapped_{n}\n"
            "  movq (%rsp), %r11\n  movq %r11, %fs:8(%r10)\n" +
            call_wrapper_at_its_layer("$-1") +
            "  ret\n")


def module_call_entry(n, index):
    """ZMPI_X, a module's call to the layer below its own, for a function whose arguments are
    all in registers. The usual cases go without the C++ path (wrapped_X, dispatch<>(),
    invoke_framed), which cost a wrapper layer three calls and about 60 instructions: the next
    entry a wrapper module (its layer set, its MPI_X called, the caller's layer set back) or
    nothing below (MPI called with thread_state::in_real set, so that MPI's calls of its own
    exported functions pass through). An event entry, MPI running, a call that is not a
    module's (layer -1) or a replaced MPI_COMM_WORLD (the general path maps the modules' world)
    take strata_wrapped_X. The layer and in_real are read as one word: a module's layer is
    non-negative and in_real zero exactly when it is at most 2^31 - 1 (unsigned), one compare
    for two. The saved word on the stack keeps it aligned for the call; stack arguments would
    move, hence registers only."""
    z = "ZMPI_" + n[4:]
    real = f"_ZN6strata3gen4realE+{8 * index}(%rip)"
    return (f".p2align 4\n.globl {z}\n.type {z}, @function\n{z}:\n.cfi_startproc\n"
            f"  movq _ZN6strata4core6chainsE+{8 * index}(%rip), %rax\n"
            "  testq %rax, %rax\n  jnz 1f\n"
            f"  jmp *{real}\n"
            f"1: movq {THREAD_STATE}, %r10\n"
            "  movq %fs:(%r10), %r11\n"
            "  cmpq $0x7fffffff, %r11\n"
            f"  ja strata_wrapped_{n}\n"
            "  cmpb $0, strata_call_marks+2(%rip)\n"
            f"  jne strata_wrapped_{n}\n"
            "  movq 16(%rax), %rax\n  movq 8(%rax,%r11,8), %rax\n"
            "  testq %rax, %rax\n  jz 2f\n"
            "  cmpq $0, (%rax)\n"
            f"  je strata_wrapped_{n}\n" +
            call_wrapper_at_its_layer("%r11d") +
            "  ret\n"
            # MPI called with in_real set; the word (layer, in_real zero), saved on the stack
            # (which also aligns it for the call), is written back whole after.
            "2: pushq %r11\n  .cfi_adjust_cfa_offset 8\n"
            "  movl $1, %fs:4(%r10)\n"
            f"  call *{real}\n"
            "  popq %r11\n  .cfi_adjust_cfa_offset -8\n"
            f"  movq {THREAD_STATE}, %r10\n"
            "  movq %r11, %fs:(%r10)\n"
            "  ret\n"
            f".cfi_endproc\n.size {z}, .-{z}\n")


def write_asm_entry_layout(c):
    """What the assembly entry points read, where write_asm_entry reads it."""
    c.write("#if defined(__OPTIMIZE__) && defined(__x86_64__)\n"
            "static_assert(offsetof(core::chain, first_below) == 16 && "
            "offsetof(core::chain, direct_counter) == 24 && "
            "offsetof(core::chain, untimed_poll_counter) == 32);\n"
            "static_assert(offsetof(core::chain_entry, wrapper) == 0 && "
            "offsetof(core::chain_entry, layer) == 32);\n"
            "static_assert(core::mark_world_replaced == 2);\n"
            "static_assert(offsetof(core::chain_entry, sole_exit_every_call) == 78 && "
            "offsetof(core::chain_entry, timed_slot) == 80);\n"
            "static_assert(offsetof(core::thread_state, layer) == 0 && "
            "offsetof(core::thread_state, in_real) == 4 && "
            "offsetof(core::thread_state, call_site) == 8 && "
            "offsetof(core::thread_state, polls_until_timed) == 16 && "
            "offsetof(core::thread_state, timed_entry) == 40);\n"
            "static_assert(sizeof core::strata_call_marks == 4 && sizeof(void (*)()) == 8);\n"
            "#endif\n")
