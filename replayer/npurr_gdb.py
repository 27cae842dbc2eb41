# npurr_gdb.py - gdb commands for debugging a kernel inside `npurr replay`.
#
# Load it with one command; the build copies it next to the binary:
#
#   gdb -x build/npurr_gdb.py --args build/npurr replay RUN --break-at SEQ
#   (or, inside gdb:  source build/npurr_gdb.py)
#
# `npurr replay RUN --break-at SEQ` raises SIGTRAP just before event SEQ,
# on the stack of the emulated core that issues it. On that stop this file
# selects the frame of the kernel function whose call issues the event, so
# `list`, `info locals` and `print` work on the kernel's source at once.
#
# Commands (`help npurr`):
#   npurr when            current seq, virtual time, rank and core
#   npurr cores [--blocked] [--rank R] [--role NAME] [--all]
#                         a summary per state and role, then the cores asked for:
#                         running, ready, blocked and on what
#   npurr rings [--full] [--rank R] [--all]
#                         a summary per level, then the rings asked for: head,
#                         tail, capacity and occupancy
#   npurr bt RANK CORE    backtrace of a suspended core
#   npurr goto SEQ        re-execute to just before event SEQ
#   npurr checkpoints     the replay snapshots `npurr goto` can resume
#
# The commands call small C functions of the replayer library in the
# stopped process (replayer/replay_gdb.c) and print the text they return,
# so what they show is exactly the engine's own state.
#
# Snapshots: with `npurr replay --checkpoint-every N` the replay forks a
# snapshot every N events. This file sets `detach-on-fork off`, so gdb keeps
# every snapshot as a stopped inferior; `npurr goto SEQ` backwards switches
# to the newest snapshot before SEQ and continues it to SEQ instead of
# re-running from the first event. Forwards, it just moves the break point
# and continues. Without a usable snapshot it re-runs with --break-at SEQ.

import re
import struct

import gdb

gdb.execute("set detach-on-fork off", to_string=True)
gdb.execute("set follow-fork-mode parent", to_string=True)
gdb.execute("set print inferior-events off", to_string=True)

_snapshots = {}    # pid -> seq of the event after which it was taken
_consumed = set()  # snapshot pids already resumed (no longer at their seq)


def _text(call):
    """Evaluates a replayer function returning const char * in the inferior."""
    if gdb.selected_inferior().pid == 0:
        raise gdb.GdbError("npurr: the program is not running (run `npurr replay RUN ...` first)")
    try:
        return gdb.parse_and_eval("(const char *) %s" % call).string()
    except gdb.error as err:
        raise gdb.GdbError("npurr: cannot call %s in this program (%s); is it `npurr replay`?"
                           % (call, err))


def _value(expr):
    try:
        return int(gdb.parse_and_eval(expr))
    except gdb.error as err:
        raise gdb.GdbError("npurr: cannot evaluate %s (%s)" % (expr, err))


def _select_kernel_frame():
    """At a break: selects the frame of the kernel function issuing the event."""
    seq = _value("npurr_gdb_break_seq")
    if seq == 0:
        return False
    func = gdb.parse_and_eval("npurr_gdb_break_func").string()
    path = gdb.parse_and_eval("npurr_gdb_break_file").string()
    line = _value("npurr_gdb_break_line")
    if not _value("npurr_gdb_break_on_stack"):
        where = "%s:%d (%s)" % (path, line, func) if line else "no kernel line"
        print("npurr: event %d is emitted by the scheduler, not by kernel code; its kernel "
              "line: %s" % (seq, where))
        return False
    base = path.rsplit("/", 1)[-1]
    by_name = by_line = None
    frame = gdb.newest_frame()
    while frame is not None:
        if by_name is None and func and frame.name() == func:
            by_name = frame
        sal = frame.find_sal()
        if (by_line is None and sal.symtab is not None and sal.line == line
                and sal.symtab.filename.rsplit("/", 1)[-1] == base):
            by_line = frame
        frame = frame.older()
    chosen = by_name or by_line
    if chosen is None:
        print("npurr: stopped before event %d, issued at %s:%d (%s); no frame of it was found "
              "(built without debug information?)" % (seq, path, line, func))
        return False
    chosen.select()
    print("npurr: stopped before event %d, issued by %s at %s:%d:" % (seq, func, path, line))
    gdb.execute("frame")
    return True


_last_break = {}  # pid -> npurr_gdb_break_serial of the break already handled


def _on_stop(event):
    # raise(SIGTRAP) arrives as a plain StopEvent; a new break serial tells
    # it from later stops (next, finish) while the break is still on the stack.
    if isinstance(event, gdb.BreakpointEvent):
        return
    pid = gdb.selected_inferior().pid
    try:
        serial = int(gdb.parse_and_eval("npurr_gdb_break_serial"))
        if int(gdb.parse_and_eval("npurr_gdb_break_seq")) == 0:
            return
    except gdb.error:
        return  # not an npurr process
    if _last_break.get(pid) == serial:
        return
    _last_break[pid] = serial
    try:
        _select_kernel_frame()
    except gdb.GdbError as err:
        print(err)


# Sourcing this file twice in one session must not stack handlers.
if getattr(gdb, "_npurr_stop_handler", None) is not None:
    gdb.events.stop.disconnect(gdb._npurr_stop_handler)
gdb._npurr_stop_handler = _on_stop
gdb.events.stop.connect(_on_stop)


class Npurr(gdb.Command):
    """Commands for a kernel replayed by `npurr replay`.

npurr when          current seq, virtual time, rank and core
npurr cores [--blocked|--rank R|--role NAME|--all]
                    summary per state and role, then those cores
npurr rings [--full|--rank R|--all]
                    summary per level, then those rings
npurr bt RANK CORE  backtrace of a suspended core
npurr goto SEQ      re-execute to just before event SEQ
npurr checkpoints   the replay snapshots `npurr goto` can resume"""

    def __init__(self):
        super().__init__("npurr", gdb.COMMAND_USER, prefix=True)

    def invoke(self, arg, from_tty):
        gdb.execute("help npurr")


class NpurrWhen(gdb.Command):
    """Current seq, virtual time, rank and core of the replay.

At a break point: the event about to execute and the kernel line issuing it."""

    def __init__(self):
        super().__init__("npurr when", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        print(_text("npurr_gdb_when()"), end="")


def _parse_listing_args(cmd, arg, flags, takes_role):
    """--flag words, --rank R and (cores) --role NAME; --opt=value works too."""
    words = arg.replace("=", " ").split()
    opts = {"rank": -1, "role": ""}
    for f in flags:
        opts[f] = 0
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and w[2:] in flags:
            opts[w[2:]] = 1
        elif w == "--rank" and i + 1 < len(words) and words[i + 1].isdigit():
            opts["rank"] = int(words[i + 1])
            i += 1
        elif takes_role and w == "--role" and i + 1 < len(words):
            opts["role"] = words[i + 1]
            i += 1
        else:
            usage = " | ".join("--" + f for f in flags) + " | --rank R"
            if takes_role:
                usage += " | --role NAME"
            raise gdb.GdbError("usage: npurr %s [%s]   (got '%s')" % (cmd, usage, w))
        i += 1
    return opts


def _set_arg(text):
    """Writes text into npurr_gdb_arg (no malloc in the stopped process)."""
    data = text.encode()[:255] + b"\0"
    try:
        addr = int(gdb.parse_and_eval("(unsigned long) &npurr_gdb_arg"))
    except gdb.error as err:
        raise gdb.GdbError("npurr: cannot find npurr_gdb_arg (%s); is it `npurr replay`?" % err)
    gdb.selected_inferior().write_memory(addr, data)


class NpurrCores(gdb.Command):
    """Cores of the replay: a summary first (per state, per role with its blocked count).

npurr cores                 the summary only
npurr cores --blocked       and the blocked cores: on what, since which seq and kernel line
npurr cores --rank R        and the cores of rank R
npurr cores --role NAME     and the cores with that role (as in the summary)
npurr cores --all           and every core
Filters combine (--blocked --rank 3)."""

    def __init__(self):
        super().__init__("npurr cores", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        o = _parse_listing_args("cores", arg, ("blocked", "all"), True)
        if gdb.selected_inferior().pid == 0:
            raise gdb.GdbError("npurr: the program is not running (run `npurr replay RUN ...` first)")
        _set_arg(o["role"])
        print(_text("npurr_gdb_cores_filtered(%d, %d, %d)" % (o["all"], o["blocked"], o["rank"])),
              end="")


class NpurrRings(gdb.Command):
    """Rings of the replay: a summary first (per level: empty, partly filled, full).

npurr rings                 the summary only
npurr rings --full          and the full rings: head, tail, capacity, occupancy
npurr rings --rank R        and the rings rank R produces into or consumes from
npurr rings --all           and every ring"""

    def __init__(self):
        super().__init__("npurr rings", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        o = _parse_listing_args("rings", arg, ("full", "all"), False)
        print(_text("npurr_gdb_rings_filtered(%d, %d, %d)" % (o["all"], o["full"], o["rank"])),
              end="")


# Layout popped by npurr_ctx_swap (engine/coro_x86_64.S), low to high.
_SAVED = ("cw", "r15", "r14", "r13", "r12", "rbx", "rbp", "rip")


class NpurrBt(gdb.Command):
    """Backtrace of a suspended emulated core: npurr bt RANK CORE.

CORE is AIVn or AICn as the reports name cores (npurr bt 1 AIV3), or the
index within the rank as in the trace (AIC cores first, then AIV). The
core's saved context (rsp, rip and the callee-saved registers) is loaded
into the registers for the backtrace and restored afterwards."""

    def __init__(self):
        super().__init__("npurr bt", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        words = arg.split()
        named = re.fullmatch(r"(?i)(aic|aiv)(\d+)", words[1]) if len(words) == 2 else None
        if len(words) != 2 or not words[0].isdigit() or not (named or words[1].isdigit()):
            raise gdb.GdbError("usage: npurr bt RANK CORE   (CORE: AIVn, AICn or an index)")
        rank = int(words[0])
        if named:
            core = int(named.group(2))
            if named.group(1).lower() == "aiv":
                core += _value("npurr_gdb_num_aic()")
        else:
            core = int(words[1])
        if gdb.selected_inferior().pid == 0:
            raise gdb.GdbError("npurr: the program is not running")
        running = _value("npurr_gdb_core_running(%d, %d)" % (rank, core))
        if running < 0:
            raise gdb.GdbError("npurr bt: there is no core %d on rank %d in this replay"
                               % (core, rank))
        if running == 1:
            print("rank %d core %d is the running core: its stack is the current one" % (rank, core))
            gdb.execute("bt")
            return
        sp = _value("(unsigned long) npurr_gdb_core_sp(%d, %d)" % (rank, core))
        if sp == 0:
            raise gdb.GdbError("npurr bt: rank %d core %d has no suspended stack (not launched, "
                               "or the run has not begun)" % (rank, core))
        raw = bytes(gdb.selected_inferior().read_memory(sp, 8 * len(_SAVED)))
        saved = dict(zip(_SAVED, struct.unpack("<%dQ" % len(_SAVED), raw)))
        ctx = {"rsp": sp + 8 * len(_SAVED)}
        for reg in ("rip", "rbp", "rbx", "r12", "r13", "r14", "r15"):
            ctx[reg] = saved[reg]
        selected = gdb.selected_frame().level()
        gdb.newest_frame().select()
        frame0 = gdb.newest_frame()
        original = {reg: int(frame0.read_register(reg)) & (2**64 - 1) for reg in ctx}
        try:
            for reg, val in ctx.items():
                gdb.execute("set $%s = %d" % (reg, val), to_string=True)
            print("rank %d core %d, suspended (saved stack pointer 0x%x):" % (rank, core, sp))
            gdb.execute("bt")
        finally:
            gdb.newest_frame().select()
            for reg, val in original.items():
                gdb.execute("set $%s = %d" % (reg, val), to_string=True)
            gdb.execute("frame %d" % selected, to_string=True)


def _refresh_snapshots():
    inf = gdb.selected_inferior()
    if inf.pid == 0:
        return
    try:
        listing = gdb.parse_and_eval("(const char *) npurr_gdb_checkpoints()").string()
    except gdb.error:
        return
    for line in listing.splitlines():
        seq, pid = line.split()
        _snapshots[int(pid)] = int(seq)


def _program_args():
    """The argument list `run` starts the program with."""
    args = getattr(gdb.selected_inferior(), "arguments", None)  # gdb >= 14
    if args is not None:
        return args
    shown = gdb.execute("show args", to_string=True).strip()
    start, end = shown.find('"'), shown.rfind('"')
    if start < 0 or end <= start:
        raise gdb.GdbError("npurr goto: cannot read the program's arguments from: %s" % shown)
    return shown[start + 1:end]


def _held_inferiors():
    return {inf.pid: inf.num for inf in gdb.inferiors() if inf.pid}


class NpurrCheckpoints(gdb.Command):
    """The replay snapshots (from `npurr replay --checkpoint-every N`) that gdb holds
and `npurr goto` can resume: the seq each was taken after, its process and inferior."""

    def __init__(self):
        super().__init__("npurr checkpoints", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        _refresh_snapshots()
        held = _held_inferiors()
        usable = sorted((seq, pid) for pid, seq in _snapshots.items()
                        if pid in held and pid not in _consumed)
        if not usable:
            print("no snapshot is held (replay with --checkpoint-every N)")
        for seq, pid in usable:
            print("after seq %-12d process %-8d inferior %d" % (seq, pid, held[pid]))


class NpurrGoto(gdb.Command):
    """Re-execute to just before event SEQ: npurr goto SEQ.

Forwards it moves the break point and continues. Backwards it resumes the
newest snapshot taken before SEQ (replay with --checkpoint-every N), or else
runs the replay again from the first event with --break-at SEQ."""

    def __init__(self):
        super().__init__("npurr goto", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        if not arg.strip().isdigit() or int(arg) == 0:
            raise gdb.GdbError("usage: npurr goto SEQ (a positive event number)")
        target = int(arg)
        inf = gdb.selected_inferior()
        if inf.pid != 0:
            current = _value("npurr_gdb_seq()")
            at_break = _value("npurr_gdb_break_seq") != 0
            if target == current and at_break:
                print("npurr: already stopped before event %d" % target)
                return
            if target > current:
                _value("npurr_gdb_set_break(%d)" % target)
                gdb.execute("continue")
                return
            _refresh_snapshots()
        held = _held_inferiors()
        best = None
        for pid, seq in _snapshots.items():
            if seq < target and pid in held and pid not in _consumed:
                if best is None or seq > best[0]:
                    best = (seq, pid)
        if best is not None:
            seq, pid = best
            _consumed.add(pid)
            print("npurr: resuming the snapshot taken after seq %d (process %d) to seq %d"
                  % (seq, pid, target))
            gdb.execute("inferior %d" % held[pid], to_string=True)
            gdb.execute("set var npurr_gdb_resume_seq = %d" % target)
            gdb.execute("continue")
            return
        self._rerun(target)

    def _rerun(self, target):
        for inf in gdb.inferiors():
            if inf.num != 1 and inf.pid:
                gdb.execute("kill inferiors %d" % inf.num, to_string=True)
        _snapshots.clear()
        _consumed.clear()
        gdb.execute("inferior 1", to_string=True)
        args = _program_args()
        if re.search(r"--break-at\s+\S+", args):
            args = re.sub(r"--break-at\s+\S+", "--break-at %d" % target, args)
        else:
            args = (args + " --break-at %d" % target).strip()
        print("npurr: re-running from the first event to seq %d" % target)
        gdb.execute("set args %s" % args)
        confirm = gdb.parameter("confirm")
        gdb.execute("set confirm off")
        try:
            gdb.execute("run")
        finally:
            gdb.execute("set confirm %s" % ("on" if confirm else "off"))


Npurr()
NpurrWhen()
NpurrCores()
NpurrRings()
NpurrBt()
NpurrCheckpoints()
NpurrGoto()
