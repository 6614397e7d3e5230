#!/usr/bin/env python3
"""Counts calls to the allocator per transaction, by call site (issue 22).

    benches/pg_callgrind_mallocs.py SHORT LONG TXNS [TOP]

SHORT and LONG are callgrind files of one client (`benches/pg_callgrind.sh`
keeps them as cg.LABEL.MODE.short and .long) and TXNS the difference of their
transactions. Callgrind records every call edge with its count (`calls=`
lines); this reads the edges into `malloc`, `realloc`, `calloc` and `free`
(glibc's), walks up through Rust's allocator shims (`__rust_alloc`,
`__rdl_alloc`, `alloc::alloc::...`, `RawVec` growth, ...) so that each count
lands on the first caller that is not a shim, and prints, per transaction
(LONG's count less SHORT's, over TXNS), each allocator function's calls and
the TOP (default 20) call sites of each. A call site is the function the
call was compiled into: code inlined into a function counts as that
function's.
"""
import re
import sys
from collections import defaultdict

ALLOCATORS = ("malloc", "realloc", "calloc", "free")
# Functions that only pass an allocation on: their callers are the site.
SHIM = re.compile(
    r"^(?:__rustc::)?(__rust_alloc|__rust_dealloc|__rust_realloc|__rust_alloc_zeroed|__rdl_|__rg_|"
    r"alloc::alloc::|<alloc::alloc::Global|alloc::raw_vec::|<alloc::raw_vec::|"
    r"alloc::raw_vec::finish_grow|core::ptr::drop_in_place<alloc::boxed::Box|"
    r"_int_malloc|_int_free|tcache|malloc_consolidate)")


def edges(path):
    """{(caller, callee): calls} over the whole file."""
    names = {}
    out = defaultdict(int)
    fn = None
    callee = None

    def name(kind_value):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", kind_value)
        if not m:
            return kind_value.strip()
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2).strip()
        return names.get(m.group(1), m.group(1))

    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                fn = name(line[3:].strip())
            elif line.startswith("cfn="):
                callee = name(line[4:].strip())
            elif line.startswith("calls=") and fn is not None and callee is not None:
                out[(fn, callee)] += int(line[6:].split()[0])
    return out


def sites_simple(e):
    """{allocator: {site: calls}}, walking up through shims: a shim's calls
    are given to its callers in proportion to their calls into it."""
    callers = defaultdict(list)
    for (a, b), n in e.items():
        if a != b:
            callers[b].append((a, n))
    res = {}
    for alloc in ALLOCATORS:
        got = defaultdict(float)
        stack = [(a, float(n)) for a, n in callers.get(alloc, [])]
        depth = 0
        while stack and depth < 100000:
            depth += 1
            f, calls = stack.pop()
            if SHIM.search(f):
                ins = callers.get(f, [])
                total = sum(n for _, n in ins)
                if total:
                    stack.extend((a, calls * n / total) for a, n in ins)
                    continue
            got[f] += calls
        res[alloc] = got
    return res


def main():
    short, long_, txns = sys.argv[1], sys.argv[2], float(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    a, b = sites_simple(edges(short)), sites_simple(edges(long_))
    for alloc in ALLOCATORS:
        per = {s: (b[alloc].get(s, 0) - a[alloc].get(s, 0)) / txns
               for s in set(a[alloc]) | set(b[alloc])}
        total = sum(per.values())
        print(f"{alloc}: {total:.2f} calls/txn")
        for s, c in sorted(per.items(), key=lambda x: -x[1])[:top]:
            if abs(c) >= 0.005:
                print(f"  {c:7.2f}  {s[:160]}")


main()
