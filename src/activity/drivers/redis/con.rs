//! A worker's connection: its TCP stream (with TLS on `rediss://`, see
//! [`super::tls`]) opened here, the `redis` crate's multiplexed connection
//! on it, and the task that reads and writes the socket, which this driver
//! spawns and owns on `redis://` and `rediss://` alike.
//!
//! Owning the task gives one rule the crate's own connect does not:
//!
//! | rule | test |
//! |---|---|
//! | a connection whose task has ended (the server closed it while the worker waited) is seen before a command is sent on it: one atomic load per op ([`Con::is_closed`]) | `a_connection_the_server_closed_while_idle_is_replaced_before_the_next_command` (tests/redis_tls.rs) |
//!
//! The socket closes when the last clone of the connection is dropped, not
//! before (an op still in flight on a dropped connection keeps it until its
//! own end): the task ends once the crate's sink has closed, and the crate
//! (1.2.1 on, which Cargo.toml requires) closes it with commands still in
//! flight. No guard of ours aborts the task: with the locked crate none
//! changed what the server sees, so none is kept.
//! `a_timed_out_blocking_command_leaves_no_server_client_behind_on_rediss_as_on_redis`
//! (tests/redis_tls.rs) guards the rule against a crate that does not.

use super::Shared;
use super::tls::{self, Failure};
use redis::aio::MultiplexedConnection;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// A worker's connection: the crate's multiplexed connection and the handle
/// of the task that drives it.
#[derive(Clone)]
pub(super) struct Con {
    pub(super) con: MultiplexedConnection,
    task: Rc<tokio::task::AbortHandle>,
}

impl Con {
    /// Whether its task has ended: the socket broke or the server closed it,
    /// and a command sent on it would fail without reaching the server. A
    /// close the worker has not yet read (the task not polled since) is not
    /// seen: the op sent on it then fails as `io`.
    pub(super) fn is_closed(&self) -> bool {
        self.task.is_finished()
    }
}

/// A new multiplexed connection to the server of `shared`, its TCP connect,
/// TLS handshake (`rediss://`) and the server's set-up (AUTH, SELECT) done
/// within `connect_timeout`; the crate times each command out after
/// `response_timeout` (`None`: the caller keeps the op timeout itself).
pub(super) async fn open(
    shared: &Shared,
    response_timeout: Option<Duration>,
) -> Result<Con, Failure> {
    let settings = redis::AsyncConnectionConfig::new().set_response_timeout(response_timeout);
    let (host, port) = (shared.addr.0.as_str(), shared.addr.1);
    let connect = async {
        let tcp = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(Failure::Connect)?;
        // Commands are small and each waits for its reply: no Nagle delay (a
        // paced run's lone commands would wait on the server's ACK).
        let _ = tcp.set_nodelay(true);
        match &shared.tls {
            Some(config) => {
                let stream = tls::handshake(tcp, (host, port), config).await?;
                start(shared, stream, settings).await
            }
            None => start(shared, tcp, settings).await,
        }
    };
    tokio::time::timeout(shared.connect_timeout, connect)
        .await
        .unwrap_or(Err(Failure::Timeout))
}

/// The crate's connection on `stream`, its task spawned.
async fn start<C>(
    shared: &Shared,
    stream: C,
    settings: redis::AsyncConnectionConfig,
) -> Result<Con, Failure>
where
    C: Unpin + AsyncRead + AsyncWrite + Send + 'static,
{
    let info = shared.client.get_connection_info().redis_settings();
    let (con, driver) = MultiplexedConnection::new_with_config(info, stream, settings)
        .await
        .map_err(Failure::Redis)?;
    let task = tokio::spawn(driver);
    Ok(Con {
        con,
        task: Rc::new(task.abort_handle()),
    })
}
