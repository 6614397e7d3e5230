//! HTTP/1.1 on the wire for the `http` driver: the request head it writes and
//! the response head and body framing it reads (RFC 9112), over byte slices.
//!
//! Nothing here does I/O: [`parse_head`] and [`Chunked::feed_with`] read what the
//! connection has buffered and say how much they used, or that they need more.
//! Response heads are parsed by `httparse` (the parser under hyper and ureq);
//! the body is only counted, never kept.
//!
//! What a response head decides ([`Head`]):
//!
//! | the answer | body | connection afterwards |
//! |---|---|---|
//! | to `HEAD`, or `1xx`, `204`, `304` | none | kept (unless `connection: close`) |
//! | `transfer-encoding` ending in `chunked` | chunked | kept (closed if `content-length` was there too) |
//! | other `transfer-encoding` | until the server closes | closed |
//! | `content-length: N` | N bytes | kept |
//! | neither | until the server closes | closed |
//!
//! `HTTP/1.1` keeps the connection unless the answer says `connection: close`;
//! `HTTP/1.0` closes it unless the answer says `connection: keep-alive`.

use std::fmt;

pub(crate) use super::chunked::Chunked;
use std::mem::MaybeUninit;

/// The most bytes a response head may take: 256 KiB, about curl's limit
/// (300 KB). The input buffer grows this far only for a head that needs it.
pub(crate) const MAX_HEAD: usize = 256 * 1024;

/// The most header fields a response head may have. Their slots are left
/// uninitialised, so a higher limit costs an answer nothing.
const MAX_HEADERS: usize = 512;

/// The most bytes a chunk-size line or a trailer line may take.
pub(super) const MAX_LINE: usize = 8 * 1024;

/// What a response says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code.
    pub(crate) status: u16,
    /// Bytes the head took, through its empty line.
    pub(crate) len: usize,
    /// How the body is delimited.
    pub(crate) body: Framing,
    /// Whether the connection may carry another request after this answer.
    pub(crate) keep_alive: bool,
    /// The `location` header of a `3xx`.
    pub(crate) location: Option<String>,
}

impl Head {
    /// An interim answer (`100 Continue`, `103 Early Hints`): the real one follows.
    pub(crate) fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }
}

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding ([`Chunked`]).
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// An answer that is not HTTP/1.x as this client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(pub(crate) String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses the response head at the start of `buf`: `None` while it is
/// incomplete (read more; at [`MAX_HEAD`] bytes it is an error), else the head.
/// `head_request`: the request was `HEAD`, so the answer has no body whatever it
/// says.
pub(crate) fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, Malformed> {
    if buf.is_empty() {
        return Ok(None);
    }
    // Uninitialised slots: a 4 KiB array of empty headers would be written on
    // every answer.
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let mut config = httparse::ParserConfig::default();
    // RFC 9112 §5.2: a user agent replaces a folded line's break with spaces.
    config.allow_obsolete_multiline_headers_in_responses(true);
    let len = match config.parse_response_with_uninit_headers(&mut resp, buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Err(Malformed(format!(
                "the response head is larger than {} KiB, the most this client reads",
                MAX_HEAD / 1024
            )));
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Malformed(format!(
                "the response has more than {MAX_HEADERS} header fields, the most this client reads"
            )));
        }
        Err(e) => return Err(Malformed(format!("not an HTTP/1.x response ({e})"))),
    };
    let status = resp.code.unwrap_or(0);
    if !(100..=999).contains(&status) {
        return Err(Malformed(format!(
            "status {status:03} is not an HTTP status"
        )));
    }
    let mut keep_alive = resp.version == Some(1);
    let mut length: Option<u64> = None;
    let mut chunked = None::<bool>;
    let mut location = None;
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = parse_length(h.value)?;
            if length.is_some_and(|l| l != n) {
                return Err(Malformed(
                    "the response has two different content-length values".to_string(),
                ));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // The last coding of the last field decides.
            chunked = Some(
                tokens(h.value)
                    .last()
                    .is_some_and(|t| t.eq_ignore_ascii_case(b"chunked")),
            );
        } else if name.eq_ignore_ascii_case(b"connection") {
            for t in tokens(h.value) {
                if t.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if t.eq_ignore_ascii_case(b"keep-alive") && resp.version == Some(0) {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"location") && (300..400).contains(&status) {
            location = Some(String::from_utf8_lossy(h.value).trim().to_string());
        }
    }
    let body = if head_request || status < 200 || status == 204 || status == 304 {
        Framing::Empty
    } else {
        match (chunked, length) {
            (Some(true), Some(_)) => {
                // Both: the coding decides, and the connection is not trusted after.
                keep_alive = false;
                Framing::Chunked
            }
            (Some(true), None) => Framing::Chunked,
            (Some(false), _) | (None, None) => Framing::UntilClose,
            (None, Some(n)) => Framing::Length(n),
        }
    };
    // An HTTP/1.0 answer with transfer-encoding is faulty framing (RFC 9112 §6.1).
    if body == Framing::UntilClose
        || status == 101
        || (chunked.is_some() && resp.version == Some(0))
    {
        keep_alive = false;
    }
    Ok(Some(Head {
        status,
        len,
        body,
        keep_alive,
        location,
    }))
}

/// A `content-length` value: digits, or a list of the same digits.
fn parse_length(value: &[u8]) -> Result<u64, Malformed> {
    let mut out = None;
    for t in tokens(value) {
        let n = std::str::from_utf8(t)
            .ok()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                Malformed(format!(
                    "content-length `{}` is not a number",
                    String::from_utf8_lossy(value)
                ))
            })?;
        if out.is_some_and(|o| o != n) {
            return Err(Malformed(format!(
                "content-length `{}` holds different values",
                String::from_utf8_lossy(value)
            )));
        }
        out = Some(n);
    }
    out.ok_or_else(|| Malformed("content-length is empty".to_string()))
}

/// The comma-separated tokens of a header value, trimmed, empty ones skipped.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').filter_map(|t| {
        let t = t.trim_ascii();
        (!t.is_empty()).then_some(t)
    })
}

/// Writes a request head into `out` (after what is there): the request line,
/// then the header lines the caller adds with [`header`], then [`end_head`].
pub(crate) fn request_line(out: &mut Vec<u8>, method: &str, target: &str) {
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
}

/// Writes one header line.
pub(crate) fn header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Writes `content-length` (when `body_len` is set) and the empty line.
pub(crate) fn end_head(out: &mut Vec<u8>, body_len: Option<usize>) {
    if let Some(n) = body_len {
        out.extend_from_slice(b"content-length: ");
        push_decimal(out, n);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Whether `value` may be sent as a header value: visible ASCII, spaces, tabs
/// and bytes above 0x7F (RFC 9110 §5.5), but no control characters, so no
/// line break can end the header early.
pub(crate) fn valid_header_value(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// The first byte of a request target that cannot be sent as is (a space,
/// a control character or a byte above 0x7F), with its position.
pub(crate) fn bad_target_byte(target: &str) -> Option<(usize, u8)> {
    target
        .bytes()
        .enumerate()
        .find(|&(_, b)| b <= 0x20 || b >= 0x7f)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes(), false)
            .expect("parses")
            .expect("complete")
    }

    #[test]
    fn content_length_frames_the_body_and_http_1_1_keeps_the_connection() {
        let h = head("HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 2\r\n\r\nok");
        assert_eq!(
            h,
            Head {
                status: 200,
                len: 49,
                body: Framing::Length(2),
                keep_alive: true,
                location: None
            }
        );
        // The same value twice, or as a list, is one length.
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 7, 7\r\ncontent-length: 7\r\n\r\n");
        assert_eq!(h.body, Framing::Length(7));
    }

    #[test]
    fn an_incomplete_head_asks_for_more_until_it_is_too_large() {
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nconte", false), Ok(None));
        let mut big = b"HTTP/1.1 200 OK\r\nx-a: ".to_vec();
        big.resize(MAX_HEAD, b'a');
        assert_eq!(
            parse_head(&big, false).unwrap_err().0,
            "the response head is larger than 256 KiB, the most this client reads"
        );
    }

    #[test]
    fn a_64_kib_header_line_and_150_headers_are_read_and_the_limits_are_named() {
        let mut long = b"HTTP/1.1 200 OK\r\nx-a: ".to_vec();
        long.resize(long.len() + 64 * 1024, b'a');
        long.extend_from_slice(b"\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(parse_head(&long, false).unwrap().unwrap().status, 200);
        let many = |n: usize| {
            let mut h = "HTTP/1.1 200 OK\r\n".to_string();
            for i in 0..n {
                h.push_str(&format!("x-{i}: v\r\n"));
            }
            h + "\r\n"
        };
        assert_eq!(
            parse_head(many(150).as_bytes(), false)
                .unwrap()
                .unwrap()
                .status,
            200
        );
        assert_eq!(
            parse_head(many(MAX_HEADERS + 1).as_bytes(), false)
                .unwrap_err()
                .0,
            "the response has more than 512 header fields, the most this client reads"
        );
    }

    #[test]
    fn connection_tokens_and_versions_decide_reuse() {
        assert!(
            !head("HTTP/1.1 200 OK\r\nconnection: keep-alive, Close\r\ncontent-length: 0\r\n\r\n")
                .keep_alive
        );
        assert!(!head("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n").keep_alive);
        assert!(
            head("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\ncontent-length: 0\r\n\r\n")
                .keep_alive
        );
        // Without a length the body runs to the close.
        let h = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Framing::UntilClose, false));
    }

    #[test]
    fn transfer_encoding_overrides_content_length_and_other_codings_run_to_the_close() {
        let h = head("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Framing::Chunked, true));
        let h = head(
            "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
        );
        assert_eq!((h.body, h.keep_alive), (Framing::Chunked, false));
        let h = head("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Framing::UntilClose, false));
    }

    #[test]
    fn bodiless_answers_have_no_body_whatever_they_say() {
        for status in ["204 No Content", "304 Not Modified", "100 Continue"] {
            let h = head(&format!("HTTP/1.1 {status}\r\ncontent-length: 9\r\n\r\n"));
            assert_eq!((h.body, h.keep_alive), (Framing::Empty, true), "{status}");
        }
        assert!(head("HTTP/1.1 100 Continue\r\n\r\n").is_interim());
        assert!(!head("HTTP/1.1 101 Switching\r\n\r\n").is_interim());
        assert!(!head("HTTP/1.1 101 Switching\r\n\r\n").keep_alive);
        let h = parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!((h.body, h.keep_alive), (Framing::Empty, true));
    }

    #[test]
    fn a_status_below_100_is_malformed_and_http_1_0_chunked_is_not_reused() {
        let e = parse_head(b"HTTP/1.1 000 X\r\ncontent-length: 5\r\n\r\n", false).unwrap_err();
        assert!(e.0.contains("status 000"), "{e}");
        let h =
            head("HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Framing::Chunked, false));
    }

    #[test]
    fn a_folded_header_line_is_one_value() {
        let h = head("HTTP/1.1 200 OK\r\nx-a: one\r\n two\r\ncontent-length: 2\r\n\r\nok");
        assert_eq!(h.body, Framing::Length(2));
    }

    #[test]
    fn a_redirect_carries_its_location() {
        let h = head("HTTP/1.1 302 Found\r\nLocation:  /next?a=1 \r\ncontent-length: 0\r\n\r\n");
        assert_eq!(h.location.as_deref(), Some("/next?a=1"));
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nlocation: /x\r\ncontent-length: 0\r\n\r\n").location,
            None
        );
    }

    #[test]
    fn malformed_heads_say_what_is_wrong() {
        let e = |t: &str| parse_head(t.as_bytes(), false).unwrap_err().0;
        assert!(e("FOO\r\n\r\n").contains("not an HTTP/1.x response"));
        assert!(
            e("HTTP/1.1 200 OK\r\ncontent-length: x1\r\n\r\n").contains("`x1` is not a number")
        );
        assert!(e("HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n").contains("different values"));
        assert!(
            e("HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n")
                .contains("two different")
        );
    }

    #[test]
    fn the_request_head_is_written_in_order() {
        let mut out = Vec::new();
        request_line(&mut out, "POST", "/a?b=1");
        header(&mut out, b"host", b"127.0.0.1:8080");
        end_head(&mut out, Some(12));
        assert_eq!(
            out,
            b"POST /a?b=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\ncontent-length: 12\r\n\r\n"
        );
    }

    #[test]
    fn values_and_targets_with_control_characters_are_refused() {
        assert!(valid_header_value(b"a b\tc\xc3\xa9"));
        assert!(!valid_header_value(b"a\r\nb"));
        assert_eq!(bad_target_byte("/a/b?c=d%20"), None);
        assert_eq!(bad_target_byte("/a b"), Some((2, b' ')));
        assert_eq!(bad_target_byte("/é"), Some((1, 0xc3)));
    }
}
