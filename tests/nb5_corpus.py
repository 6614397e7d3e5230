#!/usr/bin/env python3
"""Dry-runs every scenario step of NB5's shipped workloads (not run by cargo test).

usage: tests/nb5_corpus.py CORPUS_DIR [PACELINE_BIN] [--fails] [--cwd DIR] [--auth-service]

CORPUS_DIR holds the YAML files under */src/main/resources/ of nosqlbench/nosqlbench
(extracted from a checkout: docs/nb5.md names the commit). Each step runs as
`paceline run FILE SCENARIO.STEP driver=stdout cycles=5 threads=1`; the tally counts
steps that exit 0, files whose every step did, and the first error line of each failure.

--cwd DIR runs paceline in DIR: give a DIR holding NB5's bundled `data/*.txt` (from
nb-virtdata/virtdata-lib-basics/src/main/resources/data/ of the same commit) for the
steps whose bindings read them. --auth-service answers the Stargate auth requests of
NB5's `Token(...)` on 127.0.0.1:8081 (what those steps need under NB5 too) with a
fixed token. Say which options a figure was taken with.
"""
import collections, http.server, json, os, subprocess, sys, threading, yaml

def auth_service():
    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get('Content-Length', 0))
            creds = json.loads(self.rfile.read(n) or b'{}')
            body = json.dumps({'authToken': 'corpus-token-for-' + str(creds.get('username'))}).encode()
            self.send_response(201)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 8081), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

def steps(path):
    try:
        doc = yaml.safe_load(open(path).read().replace('\t', ' '))
    except Exception:
        return None
    if not isinstance(doc, dict):
        return []
    sc = doc.get('scenarios')
    if not sc:
        return [None]  # no scenarios: the file runs as one activity
    out = []
    if isinstance(sc, dict):
        for name, body in sc.items():
            if isinstance(body, dict):
                out += [f"{name}.{k}" for k in body]
            elif isinstance(body, list):
                out += [f"{name}.{i+1}" for i in range(len(body))]
            else:
                out.append(str(name))
    return out

def main():
    corpus = os.path.abspath(sys.argv[1])
    cwd = sys.argv[sys.argv.index('--cwd') + 1] if '--cwd' in sys.argv else None
    if '--auth-service' in sys.argv:
        auth_service()
    exe = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith('--') else 'target/debug/paceline')
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(corpus) for f in fs
                   if f.endswith(('.yaml', '.yml')) and 'metrics.yaml' != f and 'cqlgen' not in d)
    total = ok = files_ok = files_n = 0
    errs = collections.Counter()
    fails = []
    for f in files:
        st = steps(f)
        if not st:
            continue
        files_n += 1
        all_ok = True
        for s in st:
            total += 1
            try:
                p = subprocess.run([exe, 'run', f] + ([s] if s else []) + ['driver=stdout', 'cycles=5', 'threads=1'],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, timeout=60, cwd=cwd)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = 'timeout', 'timeout'
            if rc == 0:
                ok += 1
            else:
                all_ok = False
                lines = [l for l in err.splitlines() if l.strip() and ': note: ' not in l and ' locks `' not in l]
                first = lines[0] if lines else f'exit {rc}'
                fails.append((f.replace(corpus, ''), s, first))
                key = first.split(': ', 1)[-1][:110]
                errs[key] += 1
        files_ok += all_ok
    print(f"steps: {ok} of {total} ran; files: {files_ok} of {files_n} ran fully")
    for e, n in errs.most_common(40):
        print(f"{n:4d} {e}")
    if '--fails' in sys.argv:
        for f, s, e in fails:
            print(f"{f} {s}: {e}")

main()
