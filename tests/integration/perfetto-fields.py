#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Field values of report --perfetto's events against `trace-cmd report -R`'s.

Usage: perfetto-fields.py DECODED.txt TRACECMD-R.txt FILE=MACHINE...

DECODED.txt is `protoc --decode=perfetto.protos.Trace` of the file; TRACECMD-R.txt is
`trace-cmd report -R -t -i FILE...` (raw fields, full ns) of the same recording. The events of
both are put in the merged order (time, then machine, then CPU, then file order within a CPU,
as trace-cmd merges) and compared one by one: the event name, and every field the Perfetto
event carries, by name, against the value trace-cmd prints for it (numbers as integers, equal
modulo 2^32 or 2^64 as trace-cmd prints some signed fields unsigned; an address it prints
as a kernel symbol taken as equal; strings with the bytes
that are not printable ASCII as '?'; an array field, which trace-cmd prints its own way, only
by presence). Exits 0 when all agree, 1 with the first differences otherwise.
"""
import re
import sys


def parse_protoc(path):
    """Yield (machine, cpu, ts, name, [(field, value)], order) per event."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    events, i, order = [], 0, 0
    while i < len(lines):
        if lines[i] != "packet {":
            i += 1
            continue
        j = i + 1
        body = []
        while lines[j] != "}":
            body.append(lines[j])
            j += 1
        i = j + 1
        machine = 0
        for line in body:
            if line.startswith("  machine_id: "):
                machine = int(line.split(": ")[1])
        cpu, k = None, 0
        while k < len(body):
            line = body[k]
            if line.startswith("    cpu: "):
                cpu = int(line.split(": ")[1])
            if line == "    event {":
                ts, name, fields = None, None, []
                k += 1
                while body[k] != "    }":
                    l = body[k]
                    if l.startswith("      timestamp: "):
                        ts = int(l.split(": ")[1])
                    elif re.match(r"^      [a-z_0-9]+ \{$", l):
                        name = l.strip()[:-2]
                        generic = name == "generic"
                        k += 1
                        while body[k] != "      }":
                            f = body[k]
                            if generic and f.startswith("        event_name: "):
                                name = unq(f.split(": ", 1)[1])
                            elif generic and f == "        field {":
                                fname, val = None, None
                                k += 1
                                while body[k] != "        }":
                                    g = body[k].strip()
                                    key, v = g.split(": ", 1)
                                    if key == "name":
                                        fname = unq(v)
                                    elif key == "str_value":
                                        val = ("s", unq(v))
                                    else:
                                        val = ("i", int(v))
                                    k += 1
                                fields.append((fname, val))
                            elif not generic and re.match(r"^        [a-z_0-9]+: ", f):
                                key, v = f.strip().split(": ", 1)
                                fields.append((key, ("s", unq(v)) if v.startswith('"') else ("i", int(v))))
                            k += 1
                    k += 1
                # cpu is printed before the events (field 1)
                events.append((machine, cpu, ts, name, fields, order))
                order += 1
            k += 1
    return events


def unq(v):
    """A protoc text string: quotes off, its escapes undone (it escapes ", \\ and others)."""
    v = v[1:-1]
    return re.sub(r"\\(\\|\"|'|n|t|[0-7]{3})",
                  lambda m: {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}.get(
                      m.group(1), chr(int(m.group(1), 8)) if len(m.group(1)) == 3 else m.group(1)),
                  v)


# "[CPU] SEC.NSEC:" with -t, or "[CPU]TICKS:" for a clock trace-cmd cannot convert (no space when wide)
LINE = re.compile(r"^ *(?:([^ ]+): +)?.*-(\d+) +\[(\d{3})\] *(\d+)(?:\.(\d+))?: ([^ :]+):\s*(.*)$")


def parse_tc(path, machines):
    events, last = [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if "EVENTS DROPPED]" in line:
            last = line.split(":")[0].strip()
            continue
        m = LINE.match(line)
        if not m:
            continue
        f = m.group(1) if m.group(1) in machines else last
        last = f
        events.append((machines[f], int(m.group(3)), int(m.group(4) + (m.group(5) or "")), m.group(6),
                       m.group(7)))
    return events


def printable(s):
    return "".join(c if 0x20 <= ord(c) < 0x7f else "?" for c in s)


def tc_fields(rest):
    """trace-cmd -R's NAME=VALUE pairs (a value runs to the next " NAME=")."""
    out = {}
    for part in re.split(r" (?=[A-Za-z_][A-Za-z0-9_]*=)", rest):
        if "=" in part:
            k, v = part.split("=", 1)
            out.setdefault(k, v)
    return out


def main():
    decoded, tc, maps = sys.argv[1], sys.argv[2], sys.argv[3:]
    machines = {m.split("=")[0]: int(m.split("=")[1]) for m in maps}
    ours = sorted(parse_protoc(decoded), key=lambda e: (e[2], e[0], e[1], e[5]))
    theirs = parse_tc(tc, machines)
    if len(ours) != len(theirs):
        print("FAIL: %d events decoded, trace-cmd -R shows %d" % (len(ours), len(theirs)))
        return 1
    bad = checked = 0
    for o, t in zip(ours, theirs):
        if (o[0], o[1], o[2]) != (t[0], t[1], t[2]):
            print("FAIL: event %s at machine %d cpu %d ts %d, trace-cmd: %s" % (o[3], o[0], o[1], o[2], t))
            return 1
        if o[3] != t[3] and o[3] != {"print": "print"}.get(t[3]):
            print("FAIL: event name %s, trace-cmd %s (ts %d)" % (o[3], t[3], o[2]))
            return 1
        tf = tc_fields(t[4])
        for fname, val in o[4]:
            v = tf.get(fname)
            checked += 1
            ok = v is not None
            if ok and val[0] == "i" and re.match(r"^[A-Za-z_][\w.]*(\+0x[0-9a-f]+)?$", v):
                pass        # an address trace-cmd printed as the symbol it resolves to
            elif ok and val[0] == "i":
                try:
                    x = int(v, 16) if v.startswith("0x") else int(v, 10)
                    ok = (x - val[1]) % (1 << 64) == 0 or (x - val[1]) % (1 << 32) == 0
                except ValueError:
                    ok = False
            elif ok and val[0] == "s" and not v.startswith("ARRAY["):
                ok = printable(v) == val[1] or printable(v.rstrip()) == val[1]
            if not ok:
                bad += 1
                if bad <= 10:
                    print("FAIL: %s ts %d field %s: ours %r, trace-cmd %r (%s)" % (o[3], o[2], fname, val[1], v, t[4]))
    if bad:
        return 1
    print("ok: %d events, %d field values equal trace-cmd report -R's" % (len(ours), checked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
