//! The async pool against a real redis-server (tests/support/redis.rs), on a
//! current_thread runtime with many commands in flight on one connection.

use super::{Pool, shared};
use crate::activity::drivers::OpPlan;
use crate::sync::threads::Arc;

#[path = "../../../../tests/support/redis.rs"]
mod redis_support;

#[test]
fn commands_in_flight_share_one_multiplexed_connection() {
    let Some(server) = redis_support::server() else {
        return;
    };
    let a = crate::Drivers::builtin()
        .loader()
        .from_str(
            &format!(
                "params: {{driver: redis, url: '{}', cycles: 200}}\nbindings: {{k: Mod(100)}}\n\
                 ops: {{incr: {{stmt: 'INCR n:{{k}}', expect_reply: '/^[12]$/'}}}}",
                server.url()
            ),
            "r.yaml",
        )
        .unwrap();
    let shared = shared(Arc::new(OpPlan::new(&a, &Default::default()))).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let errors = local.block_on(&rt, async move {
        let pool = std::rc::Rc::new(Pool::open(Arc::new(shared)).await.unwrap());
        let tasks: Vec<_> = (0..200u64)
            .map(|c| {
                let pool = pool.clone();
                tokio::task::spawn_local(async move { pool.run(c).await })
            })
            .collect();
        let mut errors = 0;
        for t in tasks {
            errors += usize::from(t.await.unwrap().is_err());
        }
        errors
    });
    assert_eq!(errors, 0);
    assert_eq!(server.command(&["GET", "n:42"]).unwrap(), "$1\r\n2\r\n");
    assert_eq!(server.integer(&["DBSIZE"]), 100);
}

/// Regression (issue 22, redis paced at 80 %): the crate leaves TCP_NODELAY
/// off, so a paced run's lone commands could wait on Nagle for the server's
/// ACK; `redis://` connections now set it (no server needed to see it).
#[test]
fn plain_connections_set_tcp_nodelay() {
    let a = crate::Drivers::builtin()
        .loader()
        .from_str(
            "params: {driver: redis, url: 'redis://127.0.0.1:1/0'}\nops: {get: 'GET k'}",
            "r.yaml",
        )
        .unwrap();
    let shared = shared(Arc::new(OpPlan::new(&a, &Default::default()))).unwrap();
    assert!(shared.client.get_connection_info().tcp_settings().nodelay());
}
