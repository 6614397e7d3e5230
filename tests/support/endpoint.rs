//! The port a `paceline run --control/--metrics 127.0.0.1:0` child bound, read
//! from the line it prints, so that tests never guess a free port (a port freed
//! by one test and bound by another in parallel reset connections in CI).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The rest of a child's stderr, read on a thread so the child never blocks on
/// a full pipe.
pub struct Stderr {
    head: String,
    rest: Option<JoinHandle<String>>,
}

impl Stderr {
    /// Everything the child wrote to stderr; waits for the pipe to close (the
    /// child to exit).
    pub fn text(&mut self) -> String {
        if let Some(rest) = self.rest.take() {
            let tail = rest.join().unwrap_or_default();
            self.head.push_str(&tail);
        }
        self.head.clone()
    }
}

/// Starts `cmd` (the binary and its arguments) with `--control 127.0.0.1:0`
/// after them, stdout to /dev/null and stderr piped, for [`bound_port`].
pub fn spawn_control(cmd: &mut Command) -> Child {
    cmd.args(["--control", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"))
}

/// Reads the child's stderr (which must be piped) until it names the endpoint
/// `what` (`"control endpoint"` or `"metrics endpoint"`) and returns its port.
/// Panics with what the child wrote if it exits first or says nothing for 20 s.
pub fn bound_port(child: &mut Child, what: &'static str) -> (u16, Stderr) {
    let pipe = child.stderr.take().expect("stderr must be piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = BufReader::new(pipe);
        let mut head = String::new();
        let mut port = None;
        loop {
            let mut line = String::new();
            match lines.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            head.push_str(&line);
            if line.contains(what) {
                port = line
                    .trim_end()
                    .rsplit_once("http://")
                    .and_then(|(_, a)| a.split('/').next())
                    .and_then(|a| a.rsplit_once(':'))
                    .and_then(|(_, p)| p.parse::<u16>().ok());
                if port.is_some() {
                    break;
                }
            }
        }
        let _ = tx.send((port, head));
        let mut rest = String::new();
        let _ = lines.read_to_string(&mut rest);
        rest
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok((Some(port), head)) => (
            port,
            Stderr {
                head,
                rest: Some(reader),
            },
        ),
        Ok((None, head)) => panic!("the run named no {what}:\n{head}"),
        Err(_) => panic!("the run named no {what} within 20 s"),
    }
}

/// Sends one request, retrying the connect until the endpoint is up; returns
/// (status, head, body).
pub fn request(port: u16, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let t0 = Instant::now();
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut s) => {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                write!(
                    s,
                    "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap_or_else(|e| panic!("write: {e}"));
                let mut raw = String::new();
                s.read_to_string(&mut raw)
                    .unwrap_or_else(|e| panic!("read: {e}"));
                let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
                let status = head
                    .split(' ')
                    .nth(1)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                return (status, head.to_string(), body.to_string());
            }
            Err(_) if t0.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("no endpoint on port {port}: {e}"),
        }
    }
}
