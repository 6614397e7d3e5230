//! The `redis` driver's error kinds that the other redis tests do not reach
//! (audit of issue 22, gap 10), against a real redis-server
//! (`tests/support/redis.rs`): `timeout` for a command past the op's
//! `timeout`, and which kinds a bare `retry:N` sends again (docs/drivers.md,
//! "retried by a bare `retry:N`"). Without redis-server each test prints
//! `skipping: ...` and passes.
#![cfg(all(feature = "redis", not(loom)))]

mod support;

use paceline::Snapshot;
use support::redis::server;
use support::redis_run::run;

fn errors(t: &Snapshot) -> Vec<(String, u64)> {
    t.errors().map(|(k, n)| (k.to_string(), n)).collect()
}

#[test]
fn a_command_past_the_ops_timeout_fails_as_timeout_and_a_bare_retry_does_not_resend_it() {
    let Some(r) = server() else { return };
    // `BLPOP` on an empty list holds its reply 2 s on the server; the op's
    // timeout is 100 ms.
    let t = run(
        &r.url(),
        "params: {driver: redis, url: 'URL', cycles: 3, timeout: 100ms, errors: 'retry:3'}\n\
         bindings: {k: Identity()}\n\
         ops: {wait: 'BLPOP empty:{k} 2'}\n",
    );
    assert_eq!(t.ops(), 3);
    assert_eq!(errors(&t), [("timeout".to_string(), 3)]);
    // `timeout` is not retried by a bare `retry:N`: the command may have run.
    assert_eq!(t.retries(), 0);
    // Each op ended at its timeout, not at the server's 2 s.
    assert!(
        t.service().max() < 1_500_000_000,
        "service max {} ns",
        t.service().max()
    );
}

/// Each op of `cycles` answers the error `code` on its first send and `OK`
/// on its second (a script counts the sends in `sent:CODE:CYCLE`), under a
/// bare `retry:3`. Returns the totals and each cycle's sends.
fn first_send_fails_with(r: &support::redis::RedisServer, code: &str) -> (Snapshot, Vec<i64>) {
    let yaml = format!(
        "params: {{driver: redis, url: 'URL', cycles: 4, errors: 'retry:3'}}\n\
         bindings: {{k: Identity()}}\n\
         ops:\n  once: {{command: [EVAL, \"local n = redis.call('INCR', KEYS[1]) \
         if n == 1 then return redis.error_reply(ARGV[1]) end return 'OK'\", '1', \
         'sent:{code}:{{k}}', '{code} told to fail once']}}\n"
    );
    let t = run(&r.url(), &yaml);
    let sent = (0..4)
        .map(|k| r.integer(&["INCRBY", &format!("sent:{code}:{k}"), "0"]))
        .collect();
    (t, sent)
}

#[test]
fn a_bare_retry_resends_the_kinds_the_server_says_to_come_back_with() {
    let Some(r) = server() else { return };
    // The server did not run the command and says to come back: sent again,
    // with the same key, and the second send passes.
    for code in ["TRYAGAIN", "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN"] {
        let (t, sent) = first_send_fails_with(&r, code);
        assert_eq!((t.ops(), errors(&t)), (4, vec![]), "{code}");
        assert_eq!(t.retries(), 4, "{code}");
        assert_eq!(sent, [2, 2, 2, 2], "{code}");
    }
}

#[test]
fn a_bare_retry_does_not_resend_the_errors_the_same_command_meets_again() {
    let Some(r) = server() else { return };
    for code in ["ERR", "WRONGTYPE", "NOSCRIPT", "OOM", "READONLY"] {
        let (t, sent) = first_send_fails_with(&r, code);
        assert_eq!(t.ops(), 4, "{code}");
        assert_eq!(errors(&t), [(code.to_string(), 4)], "{code}");
        assert_eq!(t.retries(), 0, "{code}");
        assert_eq!(sent, [1, 1, 1, 1], "{code}");
    }
}
