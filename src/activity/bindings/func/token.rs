//! NB5's `Token` without a token: one HTTP/1.1 `POST` of the credentials to the
//! auth service (Stargate's `v1/auth`), as NB5 makes it, and the `authToken` of
//! its `201` answer.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long the auth service has to connect, and then to answer.
const CONNECT: Duration = Duration::from_secs(3);
const ANSWER: Duration = Duration::from_secs(10);

/// Posts `{"username": uid, "password": password}` to `uri` (an `http://` URL)
/// and returns the `authToken` of a `201` answer; any other outcome is the
/// message saying what went wrong.
pub(crate) fn post_for_token(uri: &str, uid: &str, password: &str) -> Result<String, String> {
    let rest = uri.strip_prefix("http://").ok_or_else(|| {
        format!("the auth service `{uri}` is not an `http://` URL (https is not fetched here)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr_text = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = addr_text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{authority}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{authority}` resolves to no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, CONNECT)
        .map_err(|e| format!("cannot reach the auth service at `{uri}`: {e}"))?;
    let _ = stream.set_read_timeout(Some(ANSWER));
    let _ = stream.set_write_timeout(Some(ANSWER));
    let body = serde_json::json!({"username": uid, "password": password}).to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("cannot send to the auth service at `{uri}`: {e}"))?;
    let mut answer = Vec::new();
    stream
        .take(1 << 20)
        .read_to_end(&mut answer)
        .map_err(|e| format!("no answer from the auth service at `{uri}`: {e}"))?;
    // The head is split off and the body dechunked as bytes, and only then decoded:
    // a chunk's size counts bytes, and a chunk may end inside a character.
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("the auth service at `{uri}` gave no HTTP answer"))?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let body = &answer[split + 4..];
    let status = head.split_whitespace().nth(1).unwrap_or("?");
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        String::from_utf8_lossy(&dechunk(body)).into_owned()
    } else {
        String::from_utf8_lossy(body).into_owned()
    };
    if status != "201" {
        return Err(format!(
            "the auth service at `{uri}` answered {status}, not 201: {}",
            body.trim()
        ));
    }
    let json: serde_json::Value = serde_json::from_str(body.trim())
        .map_err(|e| format!("the auth service at `{uri}` answered no JSON ({e})"))?;
    match json.get("authToken").and_then(|t| t.as_str()) {
        Some(t) if !t.is_empty() => Ok(t.to_string()),
        _ => Err(format!(
            "the auth service at `{uri}` answered without an `authToken`"
        )),
    }
}

/// A chunked body's data, as bytes: a chunk's size counts bytes.
fn dechunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let (size, after) = (&rest[..eol], &rest[eol + 2..]);
        let size = String::from_utf8_lossy(size);
        let n = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.extend_from_slice(&after[..n]);
        rest = after[n..].strip_prefix(b"\r\n").unwrap_or(&after[n..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-shot auth service on loopback answering `status` and `body`; the
    /// request it read comes back through the handle.
    fn serve(
        status: &'static str,
        body: &'static str,
    ) -> (String, std::thread::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let uri = format!("http://{}/v1/auth", l.local_addr().unwrap());
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let mut req = Vec::new();
            while !String::from_utf8_lossy(&req).contains("}") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
            }
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            s.write_all(answer.as_bytes()).unwrap();
            String::from_utf8_lossy(&req).into_owned()
        });
        (uri, h)
    }

    #[test]
    fn the_token_comes_from_a_201_answer_to_the_posted_credentials() {
        let (uri, h) = serve("201 Created", r#"{"authToken":"abc-123"}"#);
        assert_eq!(post_for_token(&uri, "cassandra", "pw").unwrap(), "abc-123");
        let req = h.join().unwrap();
        assert!(req.starts_with("POST /v1/auth HTTP/1.1\r\n"), "{req}");
        assert!(req.contains(r#""username":"cassandra""#), "{req}");
        assert!(req.contains(r#""password":"pw""#), "{req}");
    }

    #[test]
    fn a_refusal_or_no_service_is_a_message() {
        let (uri, h) = serve("401 Unauthorized", "bad credentials");
        let e = post_for_token(&uri, "u", "p").unwrap_err();
        assert!(e.contains("answered 401, not 201: bad credentials"), "{e}");
        h.join().unwrap();
        // A port nobody listens on.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let uri = format!("http://{}/v1/auth", l.local_addr().unwrap());
        drop(l);
        let e = post_for_token(&uri, "u", "p").unwrap_err();
        assert!(e.contains("cannot reach the auth service"), "{e}");
        assert!(post_for_token("https://x/v1/auth", "u", "p").is_err());
    }

    #[test]
    fn chunked_bodies_are_read() {
        assert_eq!(dechunk(b"5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n"), b"hello!");
    }

    /// A one-shot service on loopback writing `answer` as it is, after the request.
    fn serve_raw(answer: Vec<u8>) -> (String, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let uri = format!("http://{}/v1/auth", l.local_addr().unwrap());
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let mut req = Vec::new();
            while !String::from_utf8_lossy(&req).contains('}') {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
            }
            s.write_all(&answer).unwrap();
        });
        (uri, h)
    }

    /// Audit p16 H3: a chunk that ends inside a character panicked (`dechunk`
    /// sliced the decoded text by the chunk's byte count).
    #[test]
    fn a_chunk_ending_inside_a_character_is_read_whole() {
        let body = r#"{"authToken":"ték"}"#.as_bytes();
        let cut = body.iter().position(|&b| b == 0xC3).unwrap() + 1;
        let mut answer = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in [&body[..cut], &body[cut..]] {
            answer.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            answer.extend_from_slice(part);
            answer.extend_from_slice(b"\r\n");
        }
        answer.extend_from_slice(b"0\r\n\r\n");
        let (uri, h) = serve_raw(answer);
        assert_eq!(post_for_token(&uri, "u", "p").unwrap(), "ték");
        h.join().unwrap();
    }

    proptest::proptest! {
        /// Any bytes dechunk without a panic, and a body cut anywhere into chunks
        /// dechunks to itself.
        #[test]
        fn dechunk_takes_any_bytes(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
                                   text in ".{0,24}", cut in 0usize..64) {
            let _ = dechunk(&raw);
            let b = text.as_bytes();
            let cut = cut.min(b.len());
            let mut chunked = Vec::new();
            for part in [&b[..cut], &b[cut..]] {
                if !part.is_empty() {
                    chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
                    chunked.extend_from_slice(part);
                    chunked.extend_from_slice(b"\r\n");
                }
            }
            chunked.extend_from_slice(b"0\r\n\r\n");
            proptest::prop_assert_eq!(dechunk(&chunked), b.to_vec());
        }
    }
}
