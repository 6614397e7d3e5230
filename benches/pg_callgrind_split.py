#!/usr/bin/env python3
"""Splits the instructions of callgrind runs by component (issue 22).

    benches/pg_callgrind_split.py SHORT LONG TXNS [TOP]

SHORT and LONG are callgrind files of one client (`benches/pg_callgrind.sh`
keeps them as cg.LABEL.MODE.short and .long) and TXNS the difference of their
transactions: each function's self instructions in LONG less those in SHORT,
over TXNS, are given to the component its name says (the first pattern below
that matches; code inlined into a function counts as that function's), then
summed. Prints the components, then the TOP (default 25) functions.
"""
import re
import subprocess
import sys
from collections import defaultdict

COMPONENTS = [
    ("driver (postgres)", r"paceline::activity::drivers::postgres|postgres_protocol|postgres_types"),
    ("op glue (activity, engine::workload)", r"paceline::activity|paceline::engine::workload|paceline::engine::async_op"),
    ("async worker (engine::async_motor)", r"paceline::engine::async_motor"),
    ("engine runtime", r"paceline::engine::runtime|paceline::engine"),
    ("recorder (metrics)", r"paceline::metrics|hdrhistogram"),
    ("pacer (pace, limiters)", r"paceline::pace|paceline::limiters"),
    ("clock", r"paceline::clock|quanta|clock_gettime|__vdso"),
    ("tokio and mio", r"tokio::|mio::|<tokio|<mio"),
    ("malloc, free, memmove", r"malloc|free|memmove|memcpy|memset|realloc|posix_memalign|_int_"),
    ("libc system call wrappers", r"\b(recv|send|recvfrom|sendto|epoll_wait|epoll_ctl|read|write|writev|ppoll|poll|futex|syscall|__libc_|__GI_)"),
]


def self_costs(path):
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
        capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)", line)
        if not m or ":" not in m.group(2):
            continue
        fn = m.group(2).split(":", 1)[1].strip()
        fn = re.sub(r"\s*\[[^\]]*\]$", "", fn)
        costs[fn] = costs.get(fn, 0) + int(m.group(1).replace(",", ""))
    return costs


def main():
    short, long_, txns = sys.argv[1], sys.argv[2], float(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    a, b = self_costs(short), self_costs(long_)
    per = {f: (b.get(f, 0) - a.get(f, 0)) / txns for f in set(a) | set(b)}
    groups = defaultdict(float)
    for f, c in per.items():
        for name, pat in COMPONENTS:
            if re.search(pat, f):
                groups[name] += c
                break
        else:
            groups["other"] += c
    total = sum(per.values())
    print(f"instructions/txn {total:.0f}")
    for name, c in sorted(groups.items(), key=lambda x: -x[1]):
        print(f"  {c:8.0f}  {100 * c / total:5.1f} %  {name}")
    print(f"top {top} functions (self instructions/txn):")
    for f, c in sorted(per.items(), key=lambda x: -x[1])[:top]:
        print(f"  {c:8.0f}  {f[:150]}")


main()
