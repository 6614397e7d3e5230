//! Tests of `db_params`: masking, the shared reconnect, row ranges.

use super::*;

#[test]
fn passwords_are_masked_in_the_authority_and_the_query() {
    assert_eq!(
        masked("postgres://app:secret@db:5432/x?sslmode=require"),
        "postgres://app:***@db:5432/x?sslmode=require"
    );
    assert_eq!(
        masked("redis://:pw@127.0.0.1:6379/0"),
        "redis://:***@127.0.0.1:6379/0"
    );
    assert_eq!(masked("postgres://app@db/x"), "postgres://app@db/x");
    assert_eq!(
        masked("postgresql://db/x?user=a&password=p@ss&sslmode=disable"),
        "postgresql://db/x?user=a&password=***&sslmode=disable"
    );
    // An `@` after the authority: what a raw `/` or `?` in a password would
    // leave, so masked to the last `@` (the url crate would take no password
    // here: the mask hides more than it must, never less).
    assert_eq!(masked("redis://h:1/0?x=a:b@c"), "redis://***@c");
    // A Redis URL whose path names a shared schedule (`coordinate=`).
    assert_eq!(
        masked("redis://:s3cret@127.0.0.1:6379/checkout-load"),
        "redis://:***@127.0.0.1:6379/checkout-load"
    );
}

/// Regression (audit p15, H2): `masked` ended the user info at the first
/// `/` or `?`, while tokio-postgres takes it to the first `@`: a password
/// holding `/` or `?` connected and was printed in full in every message.
#[test]
fn a_postgres_password_is_masked_where_tokio_postgres_reads_it() {
    let cases = [
        (
            "postgres://app:pa/ss@127.0.0.1:1/db",
            "postgres://app:***@127.0.0.1:1/db",
        ),
        (
            "postgres://app:pa?ss@127.0.0.1:1/db",
            "postgres://app:***@127.0.0.1:1/db",
        ),
        (
            "postgres://app:pa/ss?x@127.0.0.1/db?sslmode=disable",
            "postgres://app:***@127.0.0.1/db?sslmode=disable",
        ),
        (
            "postgres://app:p%40ss@127.0.0.1:5432/db",
            "postgres://app:***@127.0.0.1:5432/db",
        ),
        // A raw `@`: the parser takes `p` and the host `ss@127.0.0.1`;
        // what the user meant as the password is hidden all the same.
        (
            "postgres://app:p@ss@127.0.0.1:5432/db",
            "postgres://app:***@127.0.0.1:5432/db",
        ),
        (
            "postgresql://app:s3cret@127.0.0.1/db",
            "postgresql://app:***@127.0.0.1/db",
        ),
        (
            "postgres://app:s3cret@127.0.0.1:5432",
            "postgres://app:***@127.0.0.1:5432",
        ),
        ("postgres://app:s3cret@db", "postgres://app:***@db"),
        (
            "postgres://app:s3cret@[::1]:5432/db",
            "postgres://app:***@[::1]:5432/db",
        ),
        (
            "postgres://app:s3cret@[::1]/db",
            "postgres://app:***@[::1]/db",
        ),
        (
            "jdbc:postgresql://db:5432/x?user=a&password=s3cret",
            "jdbc:postgresql://db:5432/x?user=a&password=***",
        ),
        (
            "jdbc:postgresql://a:pa/ss@db:5432/x?ApplicationName=t",
            "jdbc:postgresql://a:***@db:5432/x?ApplicationName=t",
        ),
        (
            "jdbc:postgresql:db?user=a&password=s3cret",
            "jdbc:postgresql:db?user=a&password=***",
        ),
        (
            "postgres://db/x?sslpassword=s3cret&Token=s3cret",
            "postgres://db/x?sslpassword=***&Token=***",
        ),
        // Refused by the parser (port `x`): masked to the last `@`.
        (
            "postgres://app:p@ss:x@127.0.0.1/db",
            "postgres://***@127.0.0.1/db",
        ),
        ("postgres://app@127.0.0.1/db", "postgres://app@127.0.0.1/db"),
    ];
    for (url, want) in cases {
        assert_eq!(masked(url), want, "{url}");
    }
}

/// Regression (audit p15, H2): a Redis URL the `url` crate refuses
/// (`:pa/ss` is no host and port) was printed whole at exit 2.
#[test]
fn a_redis_password_is_masked_where_the_url_crate_reads_it_or_to_the_last_at() {
    let cases = [
        (
            "redis://:pa/ss@127.0.0.1:6379/0",
            "redis://***@127.0.0.1:6379/0",
        ),
        (
            "redis://:pa?ss@127.0.0.1:6379/0",
            "redis://***@127.0.0.1:6379/0",
        ),
        // The url crate reads host `u`, port 12 and no password.
        (
            "redis://u:12?ss@127.0.0.1:6379/0",
            "redis://***@127.0.0.1:6379/0",
        ),
        (
            "redis://user:pa/ss@127.0.0.1:6379/0",
            "redis://***@127.0.0.1:6379/0",
        ),
        // Parses (host `u`, port 1) but the database `2@h/0` is no number.
        ("redis://u:1/2@h/0", "redis://***@h/0"),
        (
            "redis://:p%40ss@127.0.0.1:6379/0",
            "redis://:***@127.0.0.1:6379/0",
        ),
        // The url crate takes the user info to the authority's last `@`.
        (
            "redis://:p@ss@127.0.0.1:6379/0",
            "redis://:***@127.0.0.1:6379/0",
        ),
        ("redis://:s3cret@127.0.0.1", "redis://:***@127.0.0.1"),
        (
            "redis://default:s3cret@127.0.0.1:6379",
            "redis://default:***@127.0.0.1:6379",
        ),
        ("redis://:s3cret@[::1]:6379/0", "redis://:***@[::1]:6379/0"),
        (
            "rediss://:s3cret@127.0.0.1:6380/0#insecure",
            "rediss://:***@127.0.0.1:6380/0#insecure",
        ),
        (
            "http://u:s3cret@127.0.0.1:8080/x",
            "http://u:***@127.0.0.1:8080/x",
        ),
    ];
    for (url, want) in cases {
        assert_eq!(masked(url), want, "{url}");
    }
    // No user info: unchanged, whatever else the URL holds.
    for url in ["redis://127.0.0.1:6379/0", "redis://h:1/x?y=z", "not a url"] {
        assert_eq!(masked(url), url);
    }
}

/// Audit p15, L5: ops that start while a connect is in progress wait for
/// it instead of opening their own; a failed connect fails each of them;
/// the next loss connects anew.
#[cfg(not(loom))]
#[test]
fn ops_during_a_connect_share_it_and_its_error() {
    use std::cell::Cell;
    use std::rc::Rc;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let one = Rc::new(OneConnect::<u32, String>::new());
        let opened = Rc::new(Cell::new(0u32));
        let (release, gate) = tokio::sync::watch::channel(false);
        let connect = |ok: bool| {
            let opened = opened.clone();
            let mut gate = gate.clone();
            move || async move {
                opened.set(opened.get() + 1);
                let _ = gate.wait_for(|open| *open).await;
                if ok {
                    Ok(opened.get())
                } else {
                    Err("refused".to_string())
                }
            }
        };
        let ops: Vec<_> = (0..5)
            .map(|_| {
                let (one, connect) = (one.clone(), connect(true));
                tokio::task::spawn_local(async move { one.join(connect).await })
            })
            .collect();
        tokio::task::yield_now().await;
        release.send(true).unwrap();
        for op in ops {
            assert_eq!(op.await.unwrap(), Ok(1));
        }
        assert_eq!(opened.get(), 1);
        // The connect ended: the next one runs anew, and its error goes to
        // every op that waited for it.
        release.send(false).unwrap();
        let ops: Vec<_> = (0..3)
            .map(|_| {
                let (one, connect) = (one.clone(), connect(false));
                tokio::task::spawn_local(async move { one.join(connect).await })
            })
            .collect();
        tokio::task::yield_now().await;
        release.send(true).unwrap();
        for op in ops {
            assert_eq!(op.await.unwrap(), Err("refused".to_string()));
        }
        assert_eq!(opened.get(), 2);
        assert_eq!(one.join(connect(true)).await, Ok(3));
    });
}

#[test]
fn row_ranges() {
    let p = |s: serde_json::Value| RowRange::parse(&s);
    assert_eq!(p(serde_json::json!(3)), Ok(RowRange { lo: 3, hi: 3 }));
    assert_eq!(
        p(serde_json::json!("1..10")),
        Ok(RowRange { lo: 1, hi: 10 })
    );
    assert_eq!(p(serde_json::json!("1..")).unwrap().to_string(), "1..");
    assert!(p(serde_json::json!("5..2")).is_err());
    assert!(p(serde_json::json!("x")).is_err());
    assert!(p(serde_json::json!("0..=2")).unwrap().admits(2));
}
