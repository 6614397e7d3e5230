//! The `http` driver's HTTP/1.1 on the wire, against scripted servers on
//! loopback: how it reads responses framed each way HTTP/1.1 allows, when it
//! keeps a connection and when it opens a new one, how it follows redirects,
//! and the request it writes.
//!
//! Each test starts its own [`Server`]: a listener on `127.0.0.1:0`, a thread
//! per connection, answering each request with the bytes a closure returns and
//! recording every request it read and the connection it came on. Runs use one
//! thread and count errors, so the ops run in the order written and every cycle
//! runs. Nothing here depends on how the driver is built, only on what crosses
//! the socket and what the public API reports.
//!
//! One test binary, a module per behaviour: `responses` (framing),
//! `failures` (broken answers and their error kinds), `connections` (reuse and
//! retry), `redirects` and `requests` (what the driver writes); `server` holds
//! the scripted server and the run helper.

#[path = "../support/drive.rs"]
mod drive;

mod connections;
mod failures;
mod redirects;
mod requests;
mod responses;
mod server;
