#!/usr/bin/python3
"""Checks a Paraver trace (.prv, .pcf, .row) against the format, as BSC's tools read it.

    paraver_check.py X.prv            (X.pcf and X.row beside it)

Written from the format's description (the Paraver trace-file format as BSC documents it and as its
reader, paraver-kernel, and writer, Extrae's merger, implement it), not from dtnn's writer:
- .prv header, one line:
    #Paraver (dd/mm/yy at hh:mm):ftime[_ns]:resources:nAppl:appl_1[:appl_2...][,nComms]
  resources: 0 (none), or nNodes(nCpus_1,...,nCpus_nNodes) (nNodes alone: one CPU per node);
  appl_i: nTasks(nThreads_1:node_1,...,nThreads_nTasks:node_nTasks), node 1-based (0 only without
  resources). nComms communicator lines (c:...) follow the header.
- Records, one a line, fields separated by ':' (all integers):
    1:cpu:appl:task:thread:begin:end:state                      (state; begin <= end)
    2:cpu:appl:task:thread:time:type:value[:type:value...]      (event; 1 or more type:value pairs)
    3:cpu:appl:task:thread:lsend:psend:cpu:appl:task:thread:lrecv:precv:size:tag   (communication)
  cpu 0 (none) to the header's CPU count; appl, task, thread 1-based within the header's counts; times
  within [0, ftime]; records sorted by time (a state by its begin, a communication by its logical send);
  a thread's states do not overlap (a thread has one state at a time). '#' lines are comments.
- Events: a non-zero value begins, value 0 ends the innermost open event of that type on that thread
  (stacked values): per (appl, task, thread, type) every 0 closes an open value and every value is closed.
- .pcf: every state used is named under STATES (and coloured under STATES_COLOR), every event type used is
  declared under EVENT_TYPE ("gradient type label" lines) and every value used, 0 included, is named
  under its VALUES ("value label" lines).
- .row: "LEVEL <level> SIZE <n>" sections each followed by exactly n names; the CPU, NODE, APPL, TASK and
  THREAD sizes equal the header's counts.
Prints one line per failure (at most 10 per kind, then a count) and exits 1 if any, else prints "ok".
The reading functions are used by test_trace.py to take durations from a .prv.
"""
import os
import re
import sys
from collections import defaultdict

HEADER = re.compile(r"#Paraver \((\d{2})/(\d{2})/(\d{2}|\d{4}) at (\d{2}):(\d{2})\):(\d+)(_ns|_us)?:(.*)$")


class Failures:
    def __init__(self):
        self.counts = defaultdict(int)

    def __call__(self, kind, line):
        self.counts[kind] += 1
        if self.counts[kind] <= 10:
            print(f"{kind}: {line}")

    def total(self):
        for kind, n in self.counts.items():
            if n > 10:
                print(f"{kind}: {n - 10} more")
        return sum(self.counts.values())


def parse_header(line):
    """The header's fields: ftime, cpus per node, and per application a list of (threads, node) per task."""
    m = HEADER.match(line)
    if not m:
        raise ValueError("not '#Paraver (dd/mm/yy at hh:mm):ftime[_ns]:...'")
    day, month, _, hour, minute = (int(x) for x in m.groups()[:5])
    if not (1 <= day <= 31 and 1 <= month <= 12 and hour < 24 and minute < 60):
        raise ValueError(f"date out of range in {line[:40]!r}")
    ftime, rest = int(m.group(6)), m.group(8)
    comms = 0
    cm = re.search(r"\),(\d+)$", rest)
    if cm:
        comms, rest = int(cm.group(1)), rest[:cm.start() + 1]
    rm = re.match(r"(\d+)(?:\(([\d,]+)\))?:(.*)$", rest)
    if not rm:
        raise ValueError(f"resources not 0, nNodes or nNodes(nCpus,...): {rest!r}")
    nodes = int(rm.group(1))
    cpus = [int(c) for c in rm.group(2).split(",")] if rm.group(2) else [1] * nodes
    if len(cpus) != nodes:
        raise ValueError(f"{nodes} nodes but {len(cpus)} CPU counts")
    am = re.match(r"(\d+):(.*)$", rm.group(3))
    if not am:
        raise ValueError(f"no application count in {rm.group(3)!r}")
    n_appl, lists = int(am.group(1)), am.group(2)
    appls = re.findall(r"(\d+)\(([^)]*)\)", lists)
    if n_appl < 1 or len(appls) != n_appl or ":".join(f"{n}({t})" for n, t in appls) != lists:
        raise ValueError(f"{n_appl} applications declared, application lists {lists!r}")
    tasks = []
    for n_tasks, body in appls:
        entries = [e.split(":") for e in body.split(",")]
        if int(n_tasks) < 1 or len(entries) != int(n_tasks) or any(len(e) != 2 for e in entries):
            raise ValueError(f"{n_tasks} tasks declared, task list {body!r}")
        threads = [(int(t), int(n)) for t, n in entries]
        for t, n in threads:
            if t < 1 or (nodes > 0 and not 1 <= n <= nodes) or (nodes == 0 and n != 0):
                raise ValueError(f"task entry {t}:{n}: threads >= 1, node 1..{nodes}")
        tasks.append(threads)
    return {"ftime": ftime, "cpus": cpus, "tasks": tasks, "comms": comms}


def read_prv(path):
    """(header, records): records as tuples of ints, with the line number first."""
    with open(path) as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = parse_header(lines[0])
    records = []
    for number, line in enumerate(lines[1:], start=2):
        records.append((number, line))
    return header, records


def read_pcf(path, fail):
    """{state: label}, {state: colour}, {type: {value: label}} from the .pcf's sections."""
    states, colours, types = {}, {}, {}
    section, group = None, []
    with open(path) as f:
        for number, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line:
                continue  # sections are separated by blank lines, and run to the next section's name
            if re.fullmatch(r"[A-Z_]+", line):
                if line == "EVENT_TYPE":
                    group = []
                elif line == "VALUES" and section != "EVENT_TYPE":
                    fail("pcf", f"line {number}: VALUES without EVENT_TYPE")
                section = line
                continue
            fields = line.split(None, 2)
            if section == "STATES" and len(fields) >= 2 and fields[0].isdigit():
                states[int(fields[0])] = line.split(None, 1)[1]
            elif section == "STATES_COLOR" and re.fullmatch(r"\d+\s+\{\d+,\d+,\d+\}", line):
                colours[int(fields[0])] = fields[1]
            elif section == "EVENT_TYPE" and len(fields) == 3 and fields[0].isdigit() and fields[1].isdigit():
                group.append(int(fields[1]))
                types.setdefault(int(fields[1]), {})
            elif section == "VALUES" and len(fields) >= 2 and re.fullmatch(r"-?\d+", fields[0]):
                for t in group:
                    types[t][int(fields[0])] = line.split(None, 1)[1]
            elif section in ("DEFAULT_OPTIONS", "DEFAULT_SEMANTIC", "GRADIENT_COLOR", "GRADIENT_NAMES"):
                pass
            else:
                fail("pcf", f"line {number}: {line!r} is not a line of section {section}")
    return states, colours, types


def read_row(path, fail):
    """{level: [names]} from the .row's LEVEL sections."""
    levels, sizes, current = {}, {}, None
    with open(path) as f:
        for number, raw in enumerate(f, start=1):
            line = raw.rstrip("\n")
            m = re.fullmatch(r"LEVEL (\w+) SIZE (\d+)", line.strip())
            if m:
                current = m.group(1)
                levels[current], sizes[current] = [], int(m.group(2))
                continue
            if not line.strip():
                continue
            if current is None:
                fail("row", f"line {number}: {line!r} before any LEVEL")
            elif len(levels[current]) < sizes[current]:
                levels[current].append(line)
            else:
                fail("row", f"line {number}: LEVEL {current} declares {sizes[current]} names, {line!r} is one more")
    for level, names in levels.items():
        if len(names) < sizes[level]:
            fail("row", f"LEVEL {level} declares {sizes[level]} names, {len(names)} follow")
    return levels


def check(prv, fail):
    base = prv[:-4] if prv.endswith(".prv") else prv
    try:
        header, lines = read_prv(prv)
    except (ValueError, OSError, IndexError) as e:
        fail("header", f"{prv}: {e}")
        return
    ftime, cpus, tasks = header["ftime"], sum(header["cpus"]), header["tasks"]
    comm_lines = [l for n, l in lines[:header["comms"]]]
    if len(comm_lines) < header["comms"] or not all(l.startswith("c:") for l in comm_lines):
        fail("header", f"{header['comms']} communicators declared, not all on c: lines after the header")
    last = -1
    states_used, values_used = set(), set()
    stacks = defaultdict(list)
    state_end = {}
    for number, line in lines[header["comms"]:]:
        if line.startswith("#"):
            continue
        fields = line.split(":")
        try:
            v = [int(x) for x in fields]
        except ValueError:
            fail("record", f"line {number}: {line!r} has a field that is not an integer")
            continue
        kind = v[0]
        expected = {1: "8", 2: "6 + 2k (k >= 1)", 3: "15"}.get(kind)
        if expected is None:
            fail("record", f"line {number}: record type {kind} (1 state, 2 event, 3 communication)")
            continue
        if (kind == 1 and len(v) != 8) or (kind == 3 and len(v) != 15) or \
                (kind == 2 and (len(v) < 8 or len(v) % 2)):
            fail("record", f"line {number}: type {kind} with {len(v)} fields, expected {expected}")
            continue
        objects = [v[1:5]] + ([v[7:11]] if kind == 3 else [])
        for cpu, appl, task, thread in objects:
            if not 0 <= cpu <= cpus or not 1 <= appl <= len(tasks) or not 1 <= task <= len(tasks[appl - 1]) or \
                    not 1 <= thread <= tasks[appl - 1][task - 1][0]:
                fail("object", f"line {number}: cpu {cpu} appl {appl} task {task} thread {thread} not in the header")
                break
        else:
            times = v[5:7] if kind == 1 else [v[5]] if kind == 2 else [v[5], v[6], v[11], v[12]]
            if any(not 0 <= t <= ftime for t in times):
                fail("time", f"line {number}: time outside [0, {ftime}]")
            if v[5] < last:
                fail("order", f"line {number}: time {v[5]} before the previous record's {last}")
            last = max(last, v[5])
            thread_key = tuple(v[2:5])
            if kind == 1:
                if v[6] < v[5]:
                    fail("state", f"line {number}: ends at {v[6]} before it begins at {v[5]}")
                if v[5] < state_end.get(thread_key, 0):
                    fail("state", f"line {number}: begins at {v[5]}, before the thread's previous state ended")
                state_end[thread_key] = max(state_end.get(thread_key, 0), v[6])
                states_used.add(v[7])
            elif kind == 2:
                for t, value in zip(v[6::2], v[7::2]):
                    values_used.add((t, value))
                    stack = stacks[thread_key + (t,)]
                    if value != 0:
                        stack.append(number)
                    elif stack:
                        stack.pop()
                    else:
                        fail("pairing", f"line {number}: type {t} ends (0) with no open value on {thread_key}")
    for key, stack in stacks.items():
        for number in stack:
            fail("pairing", f"line {number}: type {key[3]} begun on (appl, task, thread) {key[:3]} never ends (0)")

    states, colours, types = read_pcf(base + ".pcf", fail)
    for s in sorted(states_used):
        if s not in states:
            fail("pcf", f"state {s} used, not named under STATES")
        elif s not in colours:
            fail("pcf", f"state {s} has no STATES_COLOR")
    for t in sorted({t for t, _ in values_used} - set(types)):
        fail("pcf", f"event type {t} used, not declared under EVENT_TYPE")
    for t, value in sorted(values_used):
        if t in types and value not in types[t]:
            fail("pcf", f"event type {t} value {value} used, not named under its VALUES")

    levels = read_row(base + ".row", fail)
    want = {"CPU": cpus, "NODE": len(header["cpus"]), "APPL": len(tasks),
            "TASK": sum(len(a) for a in tasks), "THREAD": sum(t for a in tasks for t, _ in a)}
    for level, n in want.items():
        if level not in levels:
            fail("row", f"no LEVEL {level} section")
        elif len(levels[level]) != n:
            fail("row", f"LEVEL {level}: {len(levels[level])} names, the header has {n}")


def durations(prv, task, thread, event_type, appl=1):
    """Seconds per value of event_type on (appl, task, thread): the sum of (end - begin), pairing each 0 with
    the innermost open value. The header's time unit is ns (with _ns) or us (without)."""
    with open(prv) as f:
        first = f.readline()
        unit = 1e-9 if HEADER.match(first).group(7) == "_ns" else 1e-6
        totals, stack = defaultdict(float), []
        for line in f:
            v = line.split(":")
            if v[0] != "2" or int(v[2]) != appl or int(v[3]) != task or int(v[4]) != thread:
                continue
            time = int(v[5])
            for t, value in zip(v[6::2], v[7::2]):
                if int(t) != event_type:
                    continue
                if int(value) != 0:
                    stack.append((int(value), time))
                else:
                    value, begin = stack.pop()
                    totals[value] += (time - begin) * unit
    return dict(totals)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    prv = sys.argv[1]
    fail = Failures()
    for path in (prv, prv[:-4] + ".pcf", prv[:-4] + ".row"):
        if not os.path.isfile(path):
            fail("files", f"{path} missing")
    if not fail.counts:
        check(prv, fail)
    n = fail.total()
    print(f"paraver_check: {n} failures" if n else f"paraver_check: {prv} ok")
    sys.exit(1 if n else 0)


if __name__ == "__main__":
    main()
