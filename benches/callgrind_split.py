#!/usr/bin/env python3
"""Instructions per transaction from benches/pgbench_count.sh's CALLGRIND runs.

    benches/callgrind_split.py DIR
    benches/callgrind_split.py SHORT_DIR LONG_DIR

With two directories (the same runs, two lengths), the marginal cost:
(long - short) / (long's transactions - short's), per function: what a
transaction costs without the run's start, its interval reports and its
summary, which a run pays once or once a second.

DIR holds cg.NAME (callgrind's output) and n.NAME (the transactions of that
run). Prints each run's instructions per transaction and, for paceline runs,
the self cost of every function given to a component by its (demangled)
name: the first pattern in COMPONENTS that the name or its object file
matches. Inlined code counts where the compiler left it.
"""
import glob, os, re, subprocess, sys

COMPONENTS = [
    ("malloc", r"\b(malloc|free|realloc|calloc|_int_malloc|_int_free|_int_realloc|malloc_consolidate|"
               r"unlink_chunk|tcache|posix_memalign|_int_memalign|__memmove|__memcpy|__memset|memcpy|memmove|"
               r"memset|__rust_alloc|__rust_dealloc|__rust_realloc|alloc::alloc|_mid_memalign|cfree)"),
    ("clock", r"(clock_gettime|quanta|paceline::clock|__vdso|Instant::now|Timespec::now)"),
    # libc's own epoll_wait (callgrind names it FILE:epoll_wait) is a
    # system-call wrapper, before tokio's "epoll" catches it.
    ("libc system-call wrappers", r"(^|:)(__GI_)?epoll_p?wait\b"),
    ("tokio IO readiness", r"(tokio::runtime::io|tokio::io::|mio::|epoll|scheduled_io|PollEvented|registration)"),
    ("tokio scheduler", r"(tokio::)"),
    ("driver", r"(paceline::activity::drivers::postgres|postgres_protocol|postgres_types|bytes::|fallible_iterator)"),
    ("recorder", r"(paceline::metrics|hdrhistogram)"),
    # Legacy demangling drops generics: every thread-local accessor
    # (`LocalKey<T>::with`: tokio's, the recorder's, ...) counts here.
    ("async worker", r"(paceline::engine::async_motor|__rust_begin_short_backtrace|LocalKey<T>::with)"),
    ("pacer", r"(paceline::pace|paceline::engine::(seam|pacer|runtime|input)|\brand(_\w+)?::|paceline::limiters)"),
    ("op glue / workload", r"(paceline::engine|paceline::activity)"),
    ("libc system-call wrappers", r"\b(send|recv|sendto|recvfrom|__libc_send|__libc_recv|epoll_wait|read|write|"
                                  r"timerfd_settime|syscall|__GI___|ppoll|__poll|futex|pthread)"),
]


def selfcost(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", path],
                         capture_output=True, text=True, check=True).stdout
    total, rows = None, []
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if not m:
            m2 = re.match(r"\s*([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", line)
            if m2:
                total = int(m2.group(1).replace(",", ""))
            continue
        if "PROGRAM TOTALS" in m.group(2):
            total = int(m.group(1).replace(",", ""))
            continue
        rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return total, rows


def runs(d):
    for cg in sorted(glob.glob(os.path.join(d, "cg.*"))):
        name = cg.split("cg.", 1)[1]
        n = int(open(os.path.join(d, f"n.{name}")).read())
        yield name, n, cg


def main():
    if len(sys.argv) > 2:
        short = {name: (n, cg) for name, n, cg in runs(sys.argv[1])}
        for name, n, cg in runs(sys.argv[2]):
            if name not in short:
                sys.exit(f"{name}: in {sys.argv[2]} but not in {sys.argv[1]}; give both "
                         "directories the same runs")
            n0, cg0 = short[name]
            t0, r0 = selfcost(cg0)
            t1, r1 = selfcost(cg)
            a = {}
            for ir, fn in r1:
                a[fn] = a.get(fn, 0) + ir
            for ir, fn in r0:
                a[fn] = a.get(fn, 0) - ir
            report(f"{name} (marginal, {n0} and {n} txns)", n - n0, t1 - t0,
                   [(ir, fn) for fn, ir in a.items()])
        return
    for name, n, cg in runs(sys.argv[1]):
        total, rows = selfcost(cg)
        report(name, n, total, rows)


def report(name, n, total, rows):
    print(f"{name}: {total:,} instructions, {n} txns: {total / n:,.0f} per txn")
    comp = {}
    for ir, fn in rows:
        for c, pat in COMPONENTS:
            if re.search(pat, fn):
                break
        else:
            c = "other"
        comp[c] = comp.get(c, 0) + ir
    for c, ir in sorted(comp.items(), key=lambda kv: -kv[1]):
        print(f"  {c:28s} {ir / n:9,.0f} per txn  {100 * ir / total:5.1f} %")
    print("  top functions (self):")
    for ir, fn in sorted(rows, reverse=True)[:40]:
        print(f"    {ir / n:8,.0f}  {fn[:150]}")

if __name__ == "__main__":
    main()
