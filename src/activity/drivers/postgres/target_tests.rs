//! The connection settings from params and URLs.
use super::*;
use crate::sync::threads::Arc;

fn plan(params: &str) -> Arc<OpPlan> {
    let a = crate::Drivers::builtin()
        .loader()
        .from_str(
            &format!("params: {{{params}}}\nops: {{o: 'select 1'}}"),
            "t.yaml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(OpPlan::new(&a, &Default::default()))
}

fn ok(params: &str, jdbc: bool) -> (Settings, Vec<String>) {
    settings(&plan(params), jdbc).unwrap_or_else(|e| panic!("{params}: {e}"))
}

fn err(params: &str) -> String {
    settings(&plan(params), true).unwrap_err()
}

#[test]
fn nb5_jdbc_params_make_the_connection() {
    let (s, notes) = ok(
        "driver: jdbc, serverName: 127.0.0.1, portNumber: 5999, databaseName: bench, \
         user: app, password: pw, sslmode: disable",
        true,
    );
    let c = &s.config;
    assert_eq!(
        (c.get_user(), c.get_dbname(), c.get_ports()),
        (Some("app"), Some("bench"), &[5999][..])
    );
    assert_eq!(s.mode, Mode::Disable);
    assert!(notes.is_empty());
    assert_eq!(
        s.shown,
        "postgres://app:***@127.0.0.1:5999/bench?sslmode=disable"
    );
    // pgjdbc's URL with its query options; sslmode defaults to prefer.
    let (s, _) = ok(
        "driver: jdbc, url: 'jdbc:postgresql://db.local:6000/x?user=u&password=p&ApplicationName=nb&ssl=true'",
        true,
    );
    assert_eq!(s.config.get_ports(), &[6000]);
    assert_eq!(s.config.get_application_name(), Some("nb"));
    assert_eq!(s.mode, Mode::Prefer);
    assert!(!s.shown.contains("=p&"), "{}", s.shown);
    // NB5's default url `jdbc:postgresql:/` with the params.
    let (s, _) = ok(
        "driver: jdbc, url: 'jdbc:postgresql:/', user: u, password: p, portNumber: '7000'",
        true,
    );
    assert_eq!(s.config.get_ports(), &[7000]);
    assert!(
        matches!(&s.config.get_hosts()[0], tokio_postgres::config::Host::Tcp(h) if h == "localhost")
    );
}

#[test]
fn sslmodes_and_roots_come_from_the_url_or_the_params() {
    for m in [
        "disable",
        "allow",
        "prefer",
        "require",
        "verify-ca",
        "verify-full",
    ] {
        let (s, _) = ok(
            &format!("driver: postgres, url: 'postgres://u@h/d?sslmode={m}&sslrootcert=/ca.pem'"),
            false,
        );
        assert_eq!((s.mode.name(), s.root.as_deref()), (m, Some("/ca.pem")));
    }
    let (s, _) = ok(
        "driver: jdbc, serverName: h, user: u, password: p, sslmode: verify-full, sslrootcert: system",
        true,
    );
    assert_eq!(
        (s.mode, s.root.as_deref()),
        (Mode::VerifyFull, Some("system"))
    );
    assert!(err("driver: jdbc, url: 'postgres://u@h/d?sslmode=sure'").contains("not an sslmode"));
    let (s, notes) = ok(
        "driver: jdbc, url: 'postgres://u@h/d?sslmode=require', sslmode: disable",
        true,
    );
    assert_eq!(s.mode, Mode::Require);
    assert!(
        notes[0].contains("gives way to the sslmode in `url`"),
        "{notes:?}"
    );
}

#[test]
fn jdbc_params_that_do_not_apply_say_so_and_what_to_use() {
    let e = err("driver: jdbc, serverName: h, user: u, password: p, autoCommit: false");
    assert!(
        e.contains("param `autoCommit`") && e.contains("BEGIN"),
        "{e}"
    );
    let e = err("driver: jdbc, serverName: h, user: u, password: p, dml_batch: 10");
    assert!(e.contains("multi-row"), "{e}");
    let e = err("driver: jdbc, serverName: h, user: u, password: p, sslcert: /c.pem");
    assert!(e.contains("client certificates"), "{e}");
    let (_, notes) = ok(
        "driver: jdbc, serverName: h, user: u, password: p, num_conn: 10, use_hikaricp: true, \
         autoCommit: true, dml_batch: 1, poolName: x",
        true,
    );
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0].contains("`num_conn`") && notes[0].contains("concurrency=N"));
    let e = err("driver: jdbc, url: 'jdbc:postgresql://h/d?user=u&currentSchema=s'");
    assert!(e.contains("search_path"), "{e}");
    let e = err("driver: jdbc, serverName: h, password: p");
    assert!(e.contains("without `user`"), "{e}");
    let (s, notes) = ok(
        "driver: jdbc, url: 'postgres://u@a:1/d', serverName: b, portNumber: 2",
        true,
    );
    assert!(matches!(&s.config.get_hosts()[0], tokio_postgres::config::Host::Tcp(h) if h == "a"));
    assert_eq!(s.config.get_ports(), &[1]);
    assert!(
        notes[0].contains("param `serverName` (`b`) gives way to the host in `url` (`a`)"),
        "{notes:?}"
    );
    let e = err("driver: jdbc, serverName: h, user: u, portNumber: 99999");
    assert!(e.contains("not a port"), "{e}");
}

#[test]
fn url_options_the_driver_would_ignore_are_refused() {
    let e = err("driver: postgres, url: 'postgres://u@h/d?channel_binding=require'");
    assert!(e.contains("channel_binding=require"), "{e}");
    let e = err("driver: postgres, url: 'postgres://u@h/d?target_session_attrs=read-write'");
    assert!(e.contains("target_session_attrs"), "{e}");
    let (s, _) = ok(
        "driver: postgres, url: 'postgres://u@db.local:6000/d?hostaddr=127.0.0.1'",
        false,
    );
    assert_eq!(s.config.get_hostaddrs().len(), 1);
}
