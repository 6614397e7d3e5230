//! A real PostgreSQL cluster in a temp directory, on a free loopback port, for
//! the `postgres` driver's tests.
//!
//! `initdb` refuses to run as root, so when the tests run as root the cluster
//! directory is handed to the `postgres` OS user and `initdb`/`pg_ctl` run as
//! that user (`runuser`). TCP connections need the password (scram-sha-256);
//! the unix socket (in the cluster's directory) trusts its local users. The
//! server is stopped (`pg_ctl stop -m immediate`) and the directory removed on
//! drop.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// The password of the `postgres` user over TCP.
pub const PASSWORD: &str = "pace-secret";

/// A running cluster; stopped on drop.
pub struct PgServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// A running cluster, or `None` after printing why the test skips (no
/// server binaries, or a machine where initdb cannot run): the one way every
/// test that needs PostgreSQL gets one.
pub fn server() -> Option<PgServer> {
    skip_unless(PgServer::start())
}

/// [`server`] with TLS on, serving `cert_pem` with `key_pem`.
pub fn tls_server(cert_pem: &str, key_pem: &str) -> Option<PgServer> {
    skip_unless(PgServer::start_tls(cert_pem, key_pem))
}

fn skip_unless(started: Result<PgServer, String>) -> Option<PgServer> {
    match started {
        Ok(s) => Some(s),
        Err(why) => {
            eprintln!("skipping: no PostgreSQL cluster ({why})");
            None
        }
    }
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// The directory holding `initdb`, `pg_ctl` and `psql`, or why there is none.
fn bin_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("PG_BIN") {
        return Ok(PathBuf::from(d));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|r| r.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.sort();
    found
        .into_iter()
        .rev()
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        .ok_or_else(|| {
            "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin; install them \
             (`apt-get install postgresql`, as .ci/run does) or set PG_BIN=/path/to/bin"
                .to_string()
        })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl PgServer {
    /// Creates and starts a cluster, or says why it cannot.
    pub fn start() -> Result<Self, String> {
        Self::start_with(None)
    }

    /// [`start`](Self::start) with TLS on (`ssl=on`), serving `cert_pem` with
    /// `key_pem`; plain connections are still taken.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> Result<Self, String> {
        Self::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> Result<Self, String> {
        let bin = bin_dir()?;
        let as_postgres = is_root();
        let dir = std::env::temp_dir().join(format!(
            "paceline-pg-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).map_err(|e| format!("password file: {e}"))?;
        let mut ssl = String::new();
        if let Some((cert, key)) = tls {
            use std::os::unix::fs::PermissionsExt;
            let (c, k) = (dir.join("server.crt"), dir.join("server.key"));
            std::fs::write(&c, cert).map_err(|e| format!("certificate: {e}"))?;
            std::fs::write(&k, key).map_err(|e| format!("key: {e}"))?;
            // The server refuses a key others can read.
            std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("key: {e}"))?;
            ssl = format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                c.display(),
                k.display()
            );
        }
        let mut server = PgServer {
            bin,
            dir,
            port: 0,
            as_postgres,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&server.dir)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err("cannot hand the cluster directory to the `postgres` user".into());
            }
        }
        let data = server.dir.join("data");
        let out = server.run_as(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "--auth-local=trust".as_ref(),
                "--auth-host=scram-sha-256".as_ref(),
                "--pwfile".as_ref(),
                pwfile.as_os_str(),
                "--no-sync".as_ref(),
            ],
        )?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let mut last = String::new();
        for _ in 0..5 {
            server.port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .map_err(|e| format!("no free port: {e}"))?;
            let opts = format!(
                "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=200{ssl}",
                server.port,
                server.dir.display()
            );
            let out = server.run_as(
                "pg_ctl",
                &[
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-o".as_ref(),
                    opts.as_ref(),
                    "-l".as_ref(),
                    server.dir.join("log").as_os_str(),
                    "-w".as_ref(),
                    "-t".as_ref(),
                    "60".as_ref(),
                    "start".as_ref(),
                ],
            )?;
            if out.status.success() {
                return Ok(server);
            }
            last = format!(
                "pg_ctl start failed: {}{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(server.dir.join("log")).unwrap_or_default()
            );
        }
        Err(last)
    }

    fn run_as(&self, tool: &str, args: &[&std::ffi::OsStr]) -> Result<Output, String> {
        let path = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        cmd.args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres:{PASSWORD}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// psql over the unix socket as `postgres`, unaligned and tuples-only,
    /// stopping at the first error; add `-c SQL`, or feed its stdin for a
    /// session that stays open (a transaction holding a lock).
    pub fn psql_command(&self) -> Command {
        let psql = if self.bin.join("psql").is_file() {
            self.bin.join("psql")
        } else {
            PathBuf::from("psql")
        };
        let mut cmd = Command::new(psql);
        cmd.args([
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            "-U",
            "postgres",
        ])
        .arg("-h")
        .arg(&self.dir)
        .args(["-p", &self.port.to_string(), "-d", "postgres"]);
        cmd
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Runs `sql` with psql over the unix socket; its unaligned, tuples-only output.
    pub fn psql(&self, sql: &str) -> String {
        let out = self
            .psql_command()
            .args(["-c", sql])
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql `{sql}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The cluster's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.run_as(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
