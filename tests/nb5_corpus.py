#!/usr/bin/env python3
"""Dry-runs every scenario step of NB5's shipped workloads (not run by cargo test).

usage: tests/nb5_corpus.py CORPUS_DIR [PACELINE_BIN] [--fails] [--cwd DIR] [--auth-service]
       tests/nb5_corpus.py --self-test

CORPUS_DIR holds the YAML files under */src/main/resources/ of nosqlbench/nosqlbench
(extracted from a checkout: docs/nb5.md names the commit). Each step runs as
`paceline run FILE SCENARIO.STEP driver=stdout cycles=5 threads=1`; the tally counts
steps that exit 0, files whose every step did, and the first error line of each failure.

--cwd DIR runs paceline in DIR: give a DIR holding the data files NB5 bundles, for the
steps whose bindings read them. From a checkout NB5 of the same commit:

    mkdir -p DIR/data DIR/csv
    cp NB5/nb-virtdata/virtdata-lib-basics/src/main/resources/data/* DIR/data/
    cp NB5/nb-adapters/*/src/main/resources/data/* DIR/data/
    cp NB5/nb-adapters/adapter-amqp/src/main/resources/scenarios/csv/* DIR/csv/

The first is virtdata's `data/*.txt`; the second the adapters' own (cqld4's
`cql-starter-message.txt`, http's `docsapi-dataset.json`, mongodb's `mongo-test-ds.json`),
which NB5 finds as `data/NAME` in its jar; the third the CSV files the amqp scenarios
read as `csv/NAME.csv`, which the adapter ships next to them (NB5 finds them from
that directory: its classpath holds them under `scenarios/csv/`, not `csv/`).

--auth-service answers the Stargate auth requests of NB5's `Token(...)` on
127.0.0.1:8081 (what those steps need under NB5 too) with a fixed token. Say which options a figure was taken with. Run it in a network namespace of
its own (`unshare -rn sh -c 'ip link set lo up; tests/nb5_corpus.py ...'`) so that no other
process's service on 127.0.0.1:8081 answers the plain run's `Token` fetches.

A step whose command locks `cycles` or `threads` with `===` runs as an NB5 user runs it: NB5
refuses `cycles=5` there (`SCNamedParam.override`: "Unable to reassign value for locked
param"), so the step's template variable gets the value (`main-cycles=5`), or, when the
locked value is not a variable, the param is left off.

Two figures are printed: all steps, and the steps NB5 itself would run. A step is left out
of the second only for a reason NB5's own source gives (`nb5_cannot_run` below names the
class); each is listed with `--fails`.
"""
import collections, http.server, json, os, re, subprocess, sys, threading

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
    """[(step name or None, its raw command text or None, the file's own driver)]."""
    import yaml  # PyYAML: only the tally needs it, not --self-test
    try:
        doc = yaml.safe_load(open(path).read().replace('\t', ' '))
    except Exception:
        return None
    if not isinstance(doc, dict):
        return []
    params = doc.get('params') if isinstance(doc.get('params'), dict) else {}
    own = str(params.get('driver') or params.get('type') or '')
    sc = doc.get('scenarios')
    if not sc:
        return [(None, None, own)]  # no scenarios: the file runs as one activity
    out = []
    if isinstance(sc, dict):
        for name, body in sc.items():
            if isinstance(body, dict):
                out += [(f"{name}.{k}", v if isinstance(v, str) else None, own) for k, v in body.items()]
            elif isinstance(body, list):
                out += [(f"{name}.{i+1}", v if isinstance(v, str) else None, own) for i, v in enumerate(body)]
            else:
                out.append((str(name), body if isinstance(body, str) else None, own))
    return out

def lock(cmd, key):
    """The template variable of `key===TEMPLATE(var,...)` in `cmd`, '' for another `===`
    value, None when `key` is not locked with `===`."""
    if not cmd:
        return None
    m = re.search(r'(?:^|\s)' + key + r'===(\S*)', cmd)
    if not m:
        return None
    v = re.match(r'(?:TEMPLATE\(|<<)([A-Za-z0-9_.-]+)', m.group(1))
    return v.group(1) if v else ''

def args_for(cmd):
    """`cycles=5 threads=1`, as NB5 takes them for this step."""
    # A step that locks its driver with `===` keeps it (NB5 refuses `driver=stdout` there).
    out = [] if lock(cmd, 'driver') is not None or lock(cmd, 'type') is not None else ['driver=stdout']
    for key, val in (('cycles', '5'), ('threads', '1')):
        var = lock(cmd, key)
        if var is None:
            out.append(f'{key}={val}')
        elif var:
            out.append(f'{var}={val}')
    return out

SYNTHETIC = {'stdout', 'diag', 'tcpclient', 'tcpserver'}

def no_synthetic(driver):
    """Why no synthetic op saves the step: the driver the file names makes none, or the file
    names none and leaves it to the user's command line, which names its database's."""
    if driver:
        return f'driver `{driver}` makes no synthetic op'
    return ('the file names no driver: its user names the database\'s on the command line, '
            'and such a driver makes no synthetic op')

def nb5_cannot_run(err, cmd, own, cwd):
    """Why NB5 itself cannot run this step (from NB5's source), or None."""
    if 'Unclosed quote found in scenario cmd' in err:
        return ('unbalanced quotes in the step command (NBCLIScenarioPreprocessor.splitCommand: '
                '"Unclosed quote found in scenario cmd")')
    m = re.search(r'(?:^|\s)(?:driver|type)=+(\S+)', cmd or '')
    driver = m.group(1) if m else own
    if 'selects no op with a ratio above 0' in err and driver not in SYNTHETIC:
        return (f'the tag filter selects no op under NB5\'s rules too (TagFilter: the whole value '
                f'a regex); {no_synthetic(driver)}, so Activity.loadOpTemplates stops: '
                f'"No op templates were provided"')
    if 'fetching one failed' in err and 'auth service' in err:
        return ('Token(...) fetches its token from the auth service when the binding is made '
                '(virtdata Token.authTokenStargate: BasicError when it does not answer)')
    m = re.search(r'(?:reads vectors from|cannot read the [a-z0-9]+ file|reads the file) `([^`]*)`', err)
    if m and 'UNSET:' in m.group(1):
        return (f'the file `{m.group(1)}` names a template variable the step does not set (NB5 writes '
                f'`UNSET:name` for a TEMPLATE without a default, and finds no such file either)')
    m = re.search(r'(?:reads vectors from|cannot read the [fi]vec file) `([^`]*)`', err)
    if m and not os.path.exists(os.path.join(cwd or '.', m.group(1))):
        return (f'the dataset `{m.group(1)}` is not present (not shipped; HdfFileToFloatList / '
                f'FVecReader / IVecReader open it when the binding is made: NBIO.fs().search(..).one())')
    if 'NB5 cannot run this file either' in err:
        return ('the file has no ops and no bindings (Activity.loadOpTemplates: "No op templates were '
                'provided"; the stdout driver makes no synthetic op without bindings)')
    if re.search(r'unknown binding `\{[^}]*\}`', err) and 'NB5 cannot run such an op either' in err:
        return ('an op names a binding the file does not define (ParsedTemplateString.getBindPoints: '
                '"No binding spec was provided for bind point")')
    if 'cannot run this step alone either' in err:
        return ('an optimizer step run alone: NB5\'s findmax / optimo / reset act on a running '
                'activity that an earlier step of the scenario starts (nbr SimFrameUtils.findFlywheelActivity)')
    if "NB5's `CqlVector` has no form without it" in err:
        return ('`CqlVector()` without an argument: NB5\'s to_cqlvector/CqlVector has one constructor, '
                'taking the list function, so its resolver finds none')
    if "NB5's parser refuses it too" in err:
        return ('a binding NB5\'s parser refuses (a `)` too many: ANTLR makes an error node, and '
                'VirtDataDSL.parse stops with "Error parsing input")')
    if 'UNSET' in err and 'expected `(` after `UNSET`' in err:
        return ('a binding holds a template variable without a default that the step does not set '
                '(NB5 writes `UNSET:name` there, which its binding parser refuses too)')
    return None

def self_test():
    """The script's own sentences, pinned (`tests/nb5_corpus_script.rs` runs this)."""
    err = ('x.yaml:31:15: the tag filter `block:main-.*` selects no op with a ratio above 0; '
           'NB5 cannot run this step either')
    # Regression: a file naming no driver read "driver `of the command line` makes no synthetic op".
    why = nb5_cannot_run(err, 'run tags==block:main-.* cycles=10', '', None)
    assert why and 'of the command line`' not in why and '``' not in why, why
    assert 'the file names no driver' in why, why
    why = nb5_cannot_run(err, 'run driver=cql tags==block:main-.*', '', None)
    assert 'driver `cql` makes no synthetic op' in why, why
    why = nb5_cannot_run(err, 'run tags==block:main-.*', 'mongodb', None)
    assert 'driver `mongodb` makes no synthetic op' in why, why
    assert nb5_cannot_run(err, 'run driver=stdout tags==block:main-.*', '', None) is None
    err = ("x.yaml:28:72: binding `list_sized`, at character 58: a `)` too many after the chain; "
           "remove it: NB5's parser refuses it too (ANTLR's \"extraneous input ')'\", then "
           "\"Error parsing input\"), so NB5 cannot run this binding either")
    assert 'Error parsing input' in nb5_cannot_run(err, 'run driver=stdout', '', None)
    err = ("x.yaml:12:18: binding `simple_vector`, at character 1: `CqlVector` needs the function "
           "that makes the list: NB5's `CqlVector` has no form without it (its one constructor "
           "takes it), so NB5 cannot run this binding either")
    assert 'one constructor' in nb5_cannot_run(err, 'run driver=stdout', '', None)
    print('self-test: ok')

def main():
    if '--self-test' in sys.argv:
        return self_test()
    corpus = os.path.abspath(sys.argv[1])
    cwd = sys.argv[sys.argv.index('--cwd') + 1] if '--cwd' in sys.argv else None
    if '--auth-service' in sys.argv:
        auth_service()
    exe = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith('--') else 'target/debug/paceline')
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(corpus) for f in fs
                   if f.endswith(('.yaml', '.yml')) and 'metrics.yaml' != f and 'cqlgen' not in d)
    total = ok = files_ok = files_n = 0
    excluded = []
    errs = collections.Counter()
    fails = []
    for f in files:
        st = steps(f)
        if not st:
            continue
        files_n += 1
        all_ok = True
        for s, cmd, own in st:
            total += 1
            try:
                p = subprocess.run([exe, 'run', f] + ([s] if s else []) + args_for(cmd),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, timeout=60, cwd=cwd)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = 'timeout', 'timeout'
            if rc == 0:
                ok += 1
                continue
            all_ok = False
            lines = [l for l in err.splitlines() if l.strip() and ': note: ' not in l]
            first = lines[0] if lines else f'exit {rc}'
            why = nb5_cannot_run(err, cmd, own, cwd)
            if why:
                excluded.append((f.replace(corpus, ''), s, why))
                continue
            fails.append((f.replace(corpus, ''), s, first))
            key = first.split(': ', 1)[-1][:110]
            errs[key] += 1
        files_ok += all_ok
    runnable = total - len(excluded)
    print(f"steps: {ok} of {total} ran ({100 * ok / max(total, 1):.0f} %); files: {files_ok} of {files_n} ran fully")
    print(f"steps NB5 itself would run: {ok} of {runnable} ran ({100 * ok / max(runnable, 1):.0f} %); "
          f"{len(excluded)} left out, NB5 cannot run them either:")
    for why, n in collections.Counter(w for _, _, w in excluded).most_common():
        print(f"{n:4d} {why}")
    print("failures among the steps NB5 would run:")
    for e, n in errs.most_common(40):
        print(f"{n:4d} {e}")
    if '--fails' in sys.argv:
        for f, s, e in excluded:
            print(f"left out: {f} {s}: {e}")
        for f, s, e in fails:
            print(f"{f} {s}: {e}")

main()
