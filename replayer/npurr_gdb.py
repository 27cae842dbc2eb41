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
#   npurr bt RANK CORE    backtrace of a suspended core (a finished one says so)
#   npurr goto SEQ        re-execute to just before event SEQ
#   npurr checkpoints     the replay snapshots `npurr goto` can resume
#
# The commands never call a function in the stopped process: gdb cannot on
# some machines (AMX CPUs with Debian 12's gdb 13.1 fail to write the XSAVE
# state back), and `set may-call-functions off` forbids it anywhere. The
# replayer keeps a versioned view of the run in its own memory
# (`npurr_gdb_view`, replayer/replay_gdb.c): the clock after the last
# event, every core's state, role, local time and open wait, every ring's
# head and tail, the snapshot table, and at a break the text of `npurr
# when`. This file only reads that memory and formats it; `npurr goto`
# writes the target seq into the engine's break word and continues. The
# running core is the one whose stack holds the stack pointer.
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


_VIEW_VERSION = 1  # replayer/replay_gdb.c NPURR_GDB_VIEW_VERSION


def _inferior():
    inf = gdb.selected_inferior()
    if inf.pid == 0:
        raise gdb.GdbError("npurr: the program is not running (run `npurr replay RUN ...` first)")
    return inf


def _view():
    """The replayer's view (replay_gdb.c), checked: a live replay of our version."""
    inf = _inferior()
    try:
        view = gdb.parse_and_eval("npurr_gdb_view")
        magic = bytes(inf.read_memory(int(view.address), 8))
    except (gdb.error, gdb.MemoryError) as err:
        raise gdb.GdbError("npurr: this program has no npurr view (%s); is it `npurr replay`, "
                           "built with debug information?" % err)
    if magic != b"npurrgdb":
        raise gdb.GdbError("npurr: npurr_gdb_view in this program is not a view (magic %r)"
                           % magic)
    if int(view["version"]) != _VIEW_VERSION:
        raise gdb.GdbError("npurr: the program keeps view version %d, this npurr_gdb.py reads "
                           "version %d: load the npurr_gdb.py built with the program"
                           % (int(view["version"]), _VIEW_VERSION))
    if not int(view["live"]):
        raise gdb.GdbError("no replay in this process: run `npurr replay RUN [--break-at SEQ]` "
                           "under gdb")
    return view


_strings = {}  # address -> text (the engine's strings do not move or change)


def _string(addr):
    if not addr:
        return None
    text = _strings.get(addr)
    if text is None:
        ptr = gdb.Value(addr).cast(gdb.lookup_type("char").pointer())
        text = ptr.string(length=-1) if addr else ""
        _strings[addr] = text
    return text


def _records(array, count, typename, fields):
    """Reads count structs of typename at array in one read and unpacks the
    named fields (name -> struct format; dotted names reach nested structs)."""
    kind = gdb.lookup_type(typename).strip_typedefs()
    offsets = {}
    for name in fields:
        t, off = kind, 0
        for part in name.split("."):
            field = next(f for f in t.fields() if f.name == part)
            off += field.bitpos // 8
            t = field.type.strip_typedefs()
        offsets[name] = off
    size = kind.sizeof
    raw = bytes(_inferior().read_memory(array, size * count)) if count else b""
    out = []
    for i in range(count):
        base = i * size
        rec = {}
        for name, fmt in fields.items():
            (rec[name],) = struct.unpack_from("<" + fmt, raw, base + offsets[name])
        out.append(rec)
    return out


_CORE_FIELDS = {
    "started": "B", "finished": "B", "faulted": "B", "launched": "B", "blocked": "B",
    "wait_seq": "Q", "wait_site": "I", "rank": "i", "core": "i", "now": "Q", "role": "Q",
    "wait_what": "Q", "wait_file": "Q", "wait_func": "Q", "wait_line": "i",
    "described_seq": "Q", "waiting_on": "256s", "slots.saved_sp": "Q", "slots.stack": "Q",
    "slots.stack_size": "Q",
}


def _cores(view):
    return _records(int(view["cores"]), int(view["ncores"]), "replay_core", _CORE_FIELDS)


def _read_u64(addr):
    return struct.unpack("<Q", bytes(_inferior().read_memory(addr, 8)))[0]


def _running_index(cores):
    """The core whose coroutine stack holds the stack pointer, or -1."""
    sp = int(gdb.newest_frame().read_register("rsp")) & (2**64 - 1)
    for i, c in enumerate(cores):
        if not c["launched"] or not c["slots.stack"]:
            continue
        base = _read_u64(c["slots.stack"])
        if base and base <= sp < base + _read_u64(c["slots.stack_size"]):
            return i
    return -1


def _core_name(view, rank, core):
    aic = int(view["num_aic"])
    return "rank %d AIC%d" % (rank, core) if core < aic else "rank %d AIV%d" % (rank, core - aic)


def _site(c):
    if c["wait_line"] or c["wait_file"]:
        return "%s:%d (%s)" % (_string(c["wait_file"]) or "", c["wait_line"],
                               _string(c["wait_func"]) or "?")
    if c["wait_site"]:
        return "site %d (not declared in this run)" % c["wait_site"]
    return "no kernel line"


def _state(i, c, running):
    if i == running:
        return "running"
    if c["faulted"]:
        return "faulted"
    if c["finished"]:
        return "finished"
    if c["blocked"]:
        return "blocked"
    return "ready"


def _staleness(view):
    """Between two events of the replayer's own breaks, say what is not exact."""
    seq, refreshed = int(view["seq"]), int(view["refreshed_seq"])
    if int(view["at_break"]) or seq == refreshed:
        return ""
    return ("(stopped after seq %d, not at an npurr break: states follow the events; the "
            "engine's wait texts are from seq %d)\n" % (seq, refreshed))


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
npurr bt RANK CORE  backtrace of a suspended core (a finished one says so)
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
        view = _view()
        if int(view["at_break"]):
            print(view["when"].string(), end="")
            return
        print("seq %d (last executed), virtual time %.6f us"
              % (int(view["seq"]), int(view["time"]) / 1e6))
        cores = _cores(view)
        running = _running_index(cores)
        if running >= 0:
            c = cores[running]
            print("  running: %s %s, local time %.6f us"
                  % (_core_name(view, c["rank"], c["core"]), _string(c["role"]) or "",
                     c["now"] / 1e6))
        else:
            print("  no core is running (the scheduler has control)")
        print("  replay: %d events matched the trace so far" % int(view["matched"]))


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
        view = _view()
        cores = _cores(view)
        running = _running_index(cores)
        states = {}
        roles = []     # (role, cores, blocked) in first-seen order, as the C dump
        by_role = {}
        launched = 0
        for i, c in enumerate(cores):
            if not c["launched"]:
                continue
            launched += 1
            st = _state(i, c, running)
            states[st] = states.get(st, 0) + 1
            role = _string(c["role"]) or ""
            if role not in by_role:
                by_role[role] = len(roles)
                roles.append([role, 0, 0])
            roles[by_role[role]][1] += 1
            roles[by_role[role]][2] += st == "blocked"
        out = [_staleness(view)]
        out.append("%d cores: %d running, %d ready, %d blocked, %d finished, %d faulted\n"
                   % (launched, states.get("running", 0), states.get("ready", 0),
                      states.get("blocked", 0), states.get("finished", 0),
                      states.get("faulted", 0)))
        for role, n, blocked in roles:
            out.append("  %-24s %5d cores, %5d blocked\n" % (role, n, blocked))
        filtered = o["blocked"] or o["rank"] >= 0 or o["role"]
        if not filtered and not o["all"]:
            out.append("(npurr cores --blocked | --rank R | --role NAME lists cores; --all "
                       "lists every one)\n")
            print("".join(out), end="")
            return
        shown = 0
        for i, c in enumerate(cores):
            if not c["launched"]:
                continue
            st = _state(i, c, running)
            role = _string(c["role"]) or ""
            if ((o["blocked"] and st != "blocked") or (o["rank"] >= 0 and c["rank"] != o["rank"])
                    or (o["role"] and role != o["role"])):
                continue
            shown += 1
            text = "ready (not started)" if st == "ready" and not c["started"] else st
            line = "  %-14s %-20s %-9s t=%.6f us" % (_core_name(view, c["rank"], c["core"]),
                                                     role, text, c["now"] / 1e6)
            if st == "blocked":
                what = c["waiting_on"].split(b"\0", 1)[0].decode(errors="replace")
                if not what or c["described_seq"] < c["wait_seq"]:
                    what = _string(c["wait_what"]) or "its own pipes"
                line += "  on %s" % what
                if c["wait_seq"]:
                    line += " since seq %d at %s" % (c["wait_seq"], _site(c))
            out.append(line + "\n")
        if filtered:
            out.append("  (%d of %d cores match)\n" % (shown, launched))
        print("".join(out), end="")


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
        view = _view()
        rings = _records(int(view["rings"]), int(view["nrings"]), "replay_ring",
                         {"name": "Q", "level": "Q", "producer": "i", "consumer": "i",
                          "capacity": "Q", "head": "q", "tail": "q"})
        if not rings:
            print("  (no ring was declared)")
            return
        levels = []
        by_level = {}
        for r in rings:
            level = _string(r["level"]) or ""
            if level not in by_level:
                by_level[level] = len(levels)
                levels.append([level, 0, 0, 0])
            occ = r["tail"] - r["head"]
            lv = levels[by_level[level]]
            lv[1] += 1
            lv[2] += occ == 0
            lv[3] += bool(r["capacity"]) and occ >= r["capacity"]
        out = [_staleness(view), "%d rings\n" % len(rings)]
        for level, n, empty, full in levels:
            out.append("  %-8s %5d rings: %5d empty, %5d partly filled, %5d full\n"
                       % (level or "(none)", n, empty, n - empty - full, full))
        filtered = o["full"] or o["rank"] >= 0
        if not filtered and not o["all"]:
            out.append("(npurr rings --full | --rank R lists rings; --all lists every one)\n")
            print("".join(out), end="")
            return
        shown = 0
        for r in rings:
            occ = r["tail"] - r["head"]
            cap = r["capacity"]
            if o["full"] and not (cap and occ >= cap):
                continue
            if o["rank"] >= 0 and o["rank"] not in (r["producer"], r["consumer"]):
                continue
            shown += 1
            out.append("  %-24s %-5s rank %d -> %d  head %d  tail %d  capacity %d  "
                       "occupancy %d (%.1f%%)%s\n"
                       % (_string(r["name"]) or "?", _string(r["level"]) or "", r["producer"],
                          r["consumer"], r["head"], r["tail"], cap, occ,
                          100.0 * occ / cap if cap else 0.0,
                          "  (inconsistent)" if occ < 0 or (cap and occ > cap) else ""))
        if filtered:
            out.append("  (%d of %d rings match)\n" % (shown, len(rings)))
        print("".join(out), end="")


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
        view = _view()
        if named:
            core = int(named.group(2))
            if named.group(1).lower() == "aiv":
                core += int(view["num_aic"])
        else:
            core = int(words[1])
        per_rank = int(view["cores_per_rank"])
        cores = _cores(view)
        index = rank * per_rank + core
        if core >= per_rank or index >= len(cores):
            raise gdb.GdbError("npurr bt: there is no core %d on rank %d in this replay"
                               % (core, rank))
        if _running_index(cores) == index:
            print("rank %d core %d is the running core: its stack is the current one" % (rank, core))
            gdb.execute("bt")
            return
        c = cores[index]
        if c["finished"]:
            print("rank %d core %d has finished its kernel: it has no stack left to show"
                  % (rank, core))
            return
        stack = _read_u64(c["slots.stack"]) if c["slots.stack"] else 0
        sp = _read_u64(c["slots.saved_sp"]) if c["slots.saved_sp"] else 0
        if not c["launched"] or not c["started"] or not stack or not sp:
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
    if gdb.selected_inferior().pid == 0:
        return
    try:
        view = _view()
    except gdb.GdbError:
        return
    if not int(view["ck"]):
        return
    ck = view["ck"].dereference()
    for i in range(int(ck["n"])):
        snap = ck["v"][i]
        _snapshots[int(snap["pid"])] = int(snap["seq"])


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
            view = _view()
            at_break = int(view["at_break"]) != 0
            # At a break the event about to execute; elsewhere the last executed.
            current = _value("npurr_gdb_break_seq") if at_break else int(view["seq"])
            if target == current and at_break:
                print("npurr: already stopped before event %d" % target)
                return
            if target > current:
                slot = int(view["break_seq_slot"])
                inf.write_memory(slot, struct.pack("<Q", target))
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
