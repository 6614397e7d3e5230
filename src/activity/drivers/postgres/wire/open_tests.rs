//! Startup and authentication against a scripted server: the methods the
//! test cluster does not use (its TCP connections take SCRAM-SHA-256, its
//! socket trust: both in `postgres::tests`).

use super::hot::tests::{fake, msg};
use super::{Params, WireError, open};
use postgres_protocol::authentication::md5_hash;
use std::io::{Read, Write};
use std::net::TcpStream;

/// Reads the startup message: its parameters.
fn startup(s: &mut TcpStream) -> Vec<String> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize - 4];
    s.read_exact(&mut body).unwrap();
    body[4..]
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

fn welcome(s: &mut TcpStream) {
    let mut out = msg(b'R', &0i32.to_be_bytes());
    out.extend(msg(b'S', b"server_version\x0015\0"));
    out.extend(msg(b'K', b"\0\0\0\x01\0\0\0\x02"));
    out.extend(msg(b'Z', b"I"));
    s.write_all(&out).unwrap();
}

/// Reads one tagged message.
fn one(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4];
    s.read_exact(&mut body).unwrap();
    (head[0], body)
}

fn connect(url: &str) -> Result<(), WireError> {
    let config: tokio_postgres::Config = url.parse().unwrap();
    let p = Params {
        config: &config,
        tls: None,
        tls_required: false,
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { open(&p).await.map(|_| ()) })
}

#[test]
fn a_cleartext_password_is_sent_as_given() {
    let (port, server) = fake(|mut s| {
        let params = startup(&mut s);
        assert!(
            params.windows(2).any(|p| p == ["user", "app"]),
            "{params:?}"
        );
        assert!(
            params.windows(2).any(|p| p == ["database", "db"]),
            "{params:?}"
        );
        s.write_all(&msg(b'R', &3i32.to_be_bytes())).unwrap();
        assert_eq!(one(&mut s), (b'p', b"s3cret\0".to_vec()));
        welcome(&mut s);
    });
    connect(&format!("postgres://app:s3cret@127.0.0.1:{port}/db")).unwrap();
    server.join().unwrap();
}

#[test]
fn an_md5_password_is_hashed_with_the_user_and_salt() {
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        let mut r = 5i32.to_be_bytes().to_vec();
        r.extend_from_slice(&[1, 2, 3, 4]);
        s.write_all(&msg(b'R', &r)).unwrap();
        let want = md5_hash(b"app", b"s3cret", [1, 2, 3, 4]);
        let (tag, body) = one(&mut s);
        assert_eq!((tag, body), (b'p', format!("{want}\0").into_bytes()));
        welcome(&mut s);
    });
    connect(&format!("postgres://app:s3cret@127.0.0.1:{port}/db")).unwrap();
    server.join().unwrap();
}

#[test]
fn a_refused_password_and_an_unknown_method_say_so() {
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        s.write_all(&msg(b'R', &3i32.to_be_bytes())).unwrap();
        one(&mut s);
        s.write_all(&msg(
            b'E',
            b"SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user \"app\"\0\0",
        ))
        .unwrap();
    });
    let e = connect(&format!("postgres://app:wrong@127.0.0.1:{port}/db")).unwrap_err();
    assert!(
        matches!(&e, WireError::Db { code, fatal: true, .. } if code == "28P01"),
        "{e:?}"
    );
    server.join().unwrap();
    // GSSAPI (7): not a method this client has.
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        s.write_all(&msg(b'R', &7i32.to_be_bytes())).unwrap();
    });
    let e = connect(&format!("postgres://app:pw@127.0.0.1:{port}/db")).unwrap_err();
    assert!(e.to_string().contains("method 7"), "{e}");
    server.join().unwrap();
    // A password asked for and none given.
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        s.write_all(&msg(b'R', &3i32.to_be_bytes())).unwrap();
    });
    let e = connect(&format!("postgres://app@127.0.0.1:{port}/db")).unwrap_err();
    assert!(
        matches!(&e, WireError::Auth(m) if m.contains("gives none")),
        "{e:?}"
    );
    server.join().unwrap();
}

#[test]
fn hostaddr_is_dialled_and_the_host_name_only_names_the_server() {
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        welcome(&mut s);
    });
    // `no-such-host.invalid` never resolves: the connection goes to hostaddr.
    connect(&format!(
        "postgres://app@no-such-host.invalid:{port}/db?hostaddr=127.0.0.1"
    ))
    .unwrap();
    server.join().unwrap();
}

fn connect_with(url: &str, with_tls: bool, required: bool) -> Result<(), WireError> {
    let config: tokio_postgres::Config = url.parse().unwrap();
    let tls = std::sync::Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    );
    let p = Params {
        config: &config,
        tls: with_tls.then_some(&tls),
        tls_required: required,
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { open(&p).await.map(|_| ()) })
}

/// A server that reads what comes and answers `answer` once.
fn wrong_server(answer: &'static [u8]) -> (u16, std::thread::JoinHandle<()>) {
    fake(move |mut s| {
        let mut buf = [0u8; 512];
        let _ = s.read(&mut buf);
        let _ = s.write_all(answer);
        // Held open, as redis and HTTP servers keep the connection: the
        // client must not wait for more.
        std::thread::sleep(std::time::Duration::from_millis(300));
    })
}

/// Bug: a `url` at the wrong server (redis's `-ERR`, an HTTP server's
/// `HTTP/1.1 400`) had its bytes read as a message of about 1.4 GB,
/// allocated at once, then the connection timed out and was blamed on a
/// slow server. Now: refused at once, saying what answered.
#[test]
fn a_server_that_is_not_postgresql_is_named_at_once() {
    const REDIS: &[u8] = b"-ERR unknown command '\\x00\\x00', with args beginning with: \r\n";
    const HTTP: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    for (answer, tls, what) in [
        (REDIS, false, "-ERR unknown"),
        (HTTP, false, "HTTP/1.1 400"),
        (REDIS, true, "-ERR unknown"),
        (HTTP, true, "HTTP/1.1 400"),
    ] {
        let (port, server) = wrong_server(answer);
        let t0 = std::time::Instant::now();
        let e =
            connect_with(&format!("postgres://app@127.0.0.1:{port}/db"), tls, false).unwrap_err();
        assert!(
            matches!(&e, WireError::NotPostgres(got) if got.contains(what)),
            "tls {tls}: {e:?}"
        );
        assert!(
            e.to_string()
                .contains("did not answer as a PostgreSQL server"),
            "{e}"
        );
        // Before the server's 300 ms hold ends: no wait for a length.
        assert!(
            t0.elapsed() < std::time::Duration::from_millis(250),
            "{:?}",
            t0.elapsed()
        );
        server.join().unwrap();
    }
}

/// A first message that is PostgreSQL's tag but not its length (an `R` of
/// 1 MB during startup): refused, as libpq refuses it.
#[test]
fn a_startup_message_over_the_startup_limit_is_refused() {
    let (port, server) = wrong_server(b"R\x00\x10\x00\x00\x00\x00\x00\x00");
    let e = connect(&format!("postgres://app@127.0.0.1:{port}/db")).unwrap_err();
    assert!(matches!(&e, WireError::NotPostgres(_)), "{e:?}");
    server.join().unwrap();
}

/// Bug: once SCRAM began, an AuthenticationOk without SASLFinal was taken,
/// so the server's proof that it knows the password was never checked.
#[test]
fn scram_without_the_servers_proof_is_refused() {
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        let mut r = 10i32.to_be_bytes().to_vec();
        r.extend_from_slice(b"SCRAM-SHA-256\0\0");
        s.write_all(&msg(b'R', &r)).unwrap();
        // SASLInitialResponse: mechanism, length, `n,,n=,r=NONCE`.
        let (tag, body) = one(&mut s);
        assert_eq!(tag, b'p');
        let first = String::from_utf8_lossy(&body[b"SCRAM-SHA-256\0".len() + 4..]).into_owned();
        let nonce = first.rsplit("r=").next().unwrap().to_string();
        let mut r = 11i32.to_be_bytes().to_vec();
        r.extend_from_slice(format!("r={nonce}server,s=c2FsdHNhbHQ=,i=4096").as_bytes());
        s.write_all(&msg(b'R', &r)).unwrap();
        let (tag, _) = one(&mut s);
        assert_eq!(tag, b'p');
        // AuthenticationOk, without SASLFinal.
        welcome(&mut s);
    });
    let e = connect(&format!("postgres://app:s3cret@127.0.0.1:{port}/db")).unwrap_err();
    assert!(
        matches!(&e, WireError::Auth(m) if m.contains("SASLFinal")),
        "{e:?}"
    );
    server.join().unwrap();
}

/// The SSLRequest answered `N` (no TLS): `prefer` goes on in clear,
/// `require` refuses with a clear error.
#[test]
fn an_ssl_request_answered_n_goes_on_in_clear_under_prefer_and_is_refused_under_require() {
    fn ssl_request(s: &mut TcpStream) {
        let mut req = [0u8; 8];
        s.read_exact(&mut req).unwrap();
        assert_eq!(req, [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f], "SSLRequest");
        s.write_all(b"N").unwrap();
    }
    let (port, server) = fake(|mut s| {
        ssl_request(&mut s);
        startup(&mut s);
        welcome(&mut s);
    });
    connect_with(&format!("postgres://app@127.0.0.1:{port}/db"), true, false).unwrap();
    server.join().unwrap();
    let (port, server) = fake(|mut s| {
        ssl_request(&mut s);
        // Nothing more comes: the client leaves.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{rest:?}");
    });
    let e = connect_with(&format!("postgres://app@127.0.0.1:{port}/db"), true, true).unwrap_err();
    assert!(matches!(e, WireError::NoTls), "{e:?}");
    assert!(e.to_string().contains("server does not support TLS"), "{e}");
    server.join().unwrap();
}

/// Review (session 13): an array type whose element the server names as
/// itself (no PostgreSQL server does: a cycle is a server that is not one)
/// made the client look it up again and again. The look-up stops at depth 2,
/// that element bound as text: three queries, then an answer.
#[test]
fn an_array_type_whose_element_is_itself_is_looked_up_at_most_three_times() {
    fn row(cols: &[&str]) -> Vec<u8> {
        let mut body = (cols.len() as i16).to_be_bytes().to_vec();
        for c in cols {
            body.extend((c.len() as i32).to_be_bytes());
            body.extend(c.as_bytes());
        }
        msg(b'D', &body)
    }
    let (port, server) = fake(|mut s| {
        startup(&mut s);
        welcome(&mut s);
        for _ in 0..3 {
            let (tag, _) = one(&mut s);
            assert_eq!(tag, b'Q');
            let mut out = row(&["cyc", "public", "99999", "A"]);
            out.extend(msg(b'C', b"SELECT 1\0"));
            out.extend(msg(b'Z', b"I"));
            s.write_all(&out).unwrap();
        }
        // A fourth question would find the connection closed.
    });
    let config: tokio_postgres::Config = format!("postgres://app@127.0.0.1:{port}/db")
        .parse()
        .unwrap();
    let p = Params {
        config: &config,
        tls: None,
        tls_required: false,
    };
    let t = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut o = open(&p).await.unwrap();
            o.type_of(99999, 0).await
        })
        .unwrap();
    server.join().unwrap();
    let postgres_types::Kind::Array(e) = t.kind() else {
        panic!("{t:?}")
    };
    let postgres_types::Kind::Array(e) = e.kind() else {
        panic!("{e:?}")
    };
    assert_eq!(e.kind(), &postgres_types::Kind::Simple);
    assert_eq!(e.name(), "cyc");
}
