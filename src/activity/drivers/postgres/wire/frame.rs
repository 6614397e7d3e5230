//! The server's bytes cut into messages (a tag byte, a length that counts
//! itself, the body) in one reused buffer: a message split across reads
//! waits for its rest, several in one read are taken one by one.

use super::WireError;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Room for a read; a longer message grows the buffer as its bytes come.
const READ_SIZE: usize = 8 * 1024;

/// The longest message a server may send: PostgreSQL's own limit on a
/// value (1 GiB). A longer announced length is not a PostgreSQL server's.
pub(in super::super) const MAX_MESSAGE: usize = 1 << 30;

/// The longest message taken during startup and authentication, as libpq
/// refuses a longer one there.
pub(in super::super) const MAX_STARTUP_MESSAGE: usize = 30_000;

/// Bytes read and not yet taken: `buf[start..end]`.
pub(in super::super) struct Frames {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The longest message length (its own four bytes counted) taken.
    max: usize,
    /// Reads that brought bytes, for the tests that pin one read per answer.
    #[cfg(test)]
    pub(in super::super) reads: usize,
}

impl Default for Frames {
    fn default() -> Self {
        Self {
            buf: vec![0; READ_SIZE],
            start: 0,
            end: 0,
            max: MAX_MESSAGE,
            #[cfg(test)]
            reads: 0,
        }
    }
}

impl Frames {
    /// Whether nothing read is left.
    pub(in super::super) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Sets the longest message length taken (its own four bytes counted).
    pub(in super::super) fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// The bytes read and not yet taken, up to `n` (what a server that is
    /// not PostgreSQL said, for its error).
    pub(in super::super) fn head(&self, n: usize) -> &[u8] {
        &self.buf[self.start..self.end.min(self.start + n)]
    }

    /// Whether the next message's announced length is one a PostgreSQL
    /// server sends: at least 4 (it counts itself) and at most the limit.
    /// `Err` with what is wrong; such bytes are never taken, and the
    /// buffer is not grown for them.
    pub(in super::super) fn check(&self) -> Result<(), String> {
        let have = &self.buf[self.start..self.end];
        if have.len() < 5 {
            return Ok(());
        }
        let len = u32::from_be_bytes([have[1], have[2], have[3], have[4]]) as usize;
        if len < 4 || len > self.max {
            return Err(format!(
                "a message `{}` announcing {len} bytes, outside 4..={}",
                escape(&have[..1]),
                self.max
            ));
        }
        Ok(())
    }

    /// The next whole message, its tag and body, if it is all here (and
    /// its length passes [`Frames::check`]).
    pub(in super::super) fn next_message(&mut self) -> Option<(u8, &[u8])> {
        let have = &self.buf[self.start..self.end];
        if have.len() < 5 {
            return None;
        }
        let len = u32::from_be_bytes([have[1], have[2], have[3], have[4]]) as usize;
        if len < 4 || len > self.max {
            return None;
        }
        let total = 1 + len;
        if have.len() < total {
            return None;
        }
        let at = self.start;
        self.start += total;
        Some((self.buf[at], &self.buf[at + 5..at + total]))
    }

    /// Makes room at the end for a read: moves what is left to the front,
    /// and grows the buffer (doubling) when less than half a read's room is
    /// left: a long message grows it as its bytes come, never to the
    /// length it announces (a server that is not PostgreSQL announces
    /// gigabytes).
    fn room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.start > 0 && self.buf.len() - self.end < READ_SIZE / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < READ_SIZE / 2 {
            let grown = (self.buf.len() * 2).max(self.end + READ_SIZE);
            self.buf.resize(grown, 0);
        }
    }

    #[cfg(test)]
    pub(in super::super) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Reads what the socket has now into the buffer: the byte count (0:
    /// the server closed it), or `Pending` with `cx` woken when more comes.
    pub(in super::super) fn poll_read_from<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        self.room();
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        match Pin::new(stream).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                self.end += n;
                #[cfg(test)]
                if n > 0 {
                    self.reads += 1;
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Reads into the buffer with `read`, which takes the room at its end
    /// and says how many bytes it filled (0: the server closed it), as a
    /// non-blocking read does.
    pub(in super::super) fn read_with(
        &mut self,
        read: impl FnOnce(&mut [u8]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        self.room();
        let n = read(&mut self.buf[self.end..])?;
        self.end += n;
        #[cfg(test)]
        if n > 0 {
            self.reads += 1;
        }
        Ok(n)
    }

    /// Reads once, waiting for bytes: the byte count (0: closed).
    pub(in super::super) async fn read_from<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<usize, WireError> {
        std::future::poll_fn(|cx| self.poll_read_from(stream, cx))
            .await
            .map_err(WireError::Io)
    }

    #[cfg(test)]
    pub(in super::super) fn push(&mut self, bytes: &[u8]) {
        self.room();
        if self.buf.len() - self.end < bytes.len() {
            self.buf.resize(self.end + bytes.len(), 0);
        }
        self.buf[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }
}

/// Bytes as printable text, the rest escaped: what a server said.
pub(in super::super) fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// An ErrorResponse's body as an error: its SQLSTATE, message and whether it
/// ends the connection.
pub(in super::super) fn error_of(body: &[u8]) -> WireError {
    let mut code = String::new();
    let mut message = String::new();
    let mut severity = String::new();
    let mut rest = body;
    while let Some((&field, tail)) = rest.split_first() {
        if field == 0 {
            break;
        }
        let n = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        let value = String::from_utf8_lossy(&tail[..n]);
        match field {
            b'C' => code = value.into_owned(),
            b'M' => message = value.into_owned(),
            b'V' => severity = value.into_owned(),
            b'S' if severity.is_empty() => severity = value.into_owned(),
            _ => {}
        }
        rest = tail.get(n + 1..).unwrap_or(&[]);
    }
    WireError::Db {
        code,
        message,
        fatal: matches!(severity.as_str(), "FATAL" | "PANIC"),
    }
}

/// The rows a CommandComplete's tag counts (`INSERT 0 5`: 5, `SELECT 3`: 3,
/// `CREATE TABLE`: 0): its last word read as a `u64`, 0 when that is not
/// one. Digits read in place, with no UTF-8 check and no `str::parse`
/// (every op's answer ends with a tag); the same number as
/// `str::parse::<u64>` on the last word, pinned by
/// `a_tags_count_is_its_last_word_parsed`.
pub(in super::super) fn command_count(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = match tag.iter().rposition(|b| *b == b' ') {
        Some(i) => &tag[i + 1..],
        None => tag,
    };
    // `str::parse` takes one leading `+`.
    let digits = last.strip_prefix(b"+").unwrap_or(last);
    if digits.is_empty() {
        return 0;
    }
    let mut n: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return 0;
        }
        n = match n.checked_mul(10).and_then(|n| n.checked_add(u64::from(d))) {
            Some(n) => n,
            None => return 0,
        };
    }
    n
}

/// A DataRow's columns as text (NULL as the empty string).
pub(in super::super) fn text_row(body: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let n = body
        .get(..2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]) as usize);
    let mut at = 2;
    for _ in 0..n {
        let Some(len) = body.get(at..at + 4) else {
            break;
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        at += 4;
        if len < 0 {
            out.push(String::new());
            continue;
        }
        let end = (at + len as usize).min(body.len());
        out.push(String::from_utf8_lossy(&body[at..end]).into_owned());
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_message_split_across_reads_waits_for_its_rest() {
        let mut f = Frames::default();
        let mut bytes = msg(b'D', b"\x00\x01\x00\x00\x00\x01x");
        bytes.extend(msg(b'Z', b"I"));
        // Byte by byte: nothing until a message is whole, then each once.
        let mut got = Vec::new();
        for b in &bytes {
            f.push(&[*b]);
            while let Some((tag, body)) = f.next_message() {
                got.push((tag, body.to_vec()));
            }
        }
        assert_eq!(
            got,
            vec![
                (b'D', b"\x00\x01\x00\x00\x00\x01x".to_vec()),
                (b'Z', b"I".to_vec())
            ]
        );
        assert!(f.is_empty());
    }

    #[test]
    fn a_message_longer_than_the_buffer_grows_it() {
        let mut f = Frames::default();
        let body = vec![7u8; 3 * READ_SIZE];
        let bytes = msg(b'D', &body);
        f.push(&bytes[..10]);
        assert!(f.next_message().is_none());
        for chunk in bytes[10..].chunks(1000) {
            f.push(chunk);
        }
        let (tag, got) = f.next_message().expect("whole");
        assert_eq!((tag, got.len()), (b'D', body.len()));
    }

    /// Bug: the announced length was trusted, the buffer grown to it at
    /// once (a redis answer's `-ERR u...` read as a 1.38 GB message,
    /// allocated and zeroed per connection attempt).
    #[test]
    fn an_announced_length_is_checked_and_never_allocated_ahead() {
        let mut f = Frames::default();
        // 1 GiB less one: within the limit, but only the bytes that came
        // are held.
        f.push(b"D\x3f\xff\xff\xffabc");
        assert!(f.check().is_ok());
        assert!(f.next_message().is_none());
        f.push(&[0u8; 100]);
        assert!(f.capacity() <= 2 * READ_SIZE, "{}", f.capacity());
        // Over 1 GiB: refused, never taken.
        let mut f = Frames::default();
        f.push(b"ERR u");
        let e = f.check().unwrap_err();
        assert!(e.contains("1381113973"), "{e}");
        assert!(f.next_message().is_none());
        // Under 4: refused.
        let mut f = Frames::default();
        f.push(b"Z\0\0\0\x03");
        assert!(f.check().is_err());
        assert!(f.next_message().is_none());
        // The startup limit.
        let mut f = Frames::default();
        f.set_max(MAX_STARTUP_MESSAGE);
        f.push(&msg(b'R', &[0u8; 30_000]));
        assert!(f.check().is_err());
    }

    /// The count as `str::parse` read it before (session 16): the last word
    /// of the tag, 0 unless it is a `u64`.
    fn command_count_by_parse(body: &[u8]) -> u64 {
        let tag = body.strip_suffix(&[0]).unwrap_or(body);
        let last = tag.rsplit(|b| *b == b' ').next().unwrap_or(&[]);
        std::str::from_utf8(last)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    proptest::proptest! {
        #[test]
        fn a_tags_count_is_its_last_word_parsed(
            word in "[A-Z]{0,8}",
            n in proptest::prelude::any::<u64>(),
            tail in "[+0-9]{0,25}",
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
        ) {
            for body in [
                format!("{word} 0 {n}\0").into_bytes(),
                format!("{word} {n}").into_bytes(),
                format!("{word} {tail}\0").into_bytes(),
                format!("{tail}\0").into_bytes(),
                format!("{word} +{n}\0").into_bytes(),
                format!("{word} {n}0\0").into_bytes(),
                raw.clone(),
            ] {
                proptest::prop_assert_eq!(command_count(&body), command_count_by_parse(&body), "{:?}", body);
            }
        }
    }

    #[test]
    fn an_error_response_gives_its_sqlstate_message_and_severity() {
        let e = error_of(b"SFATAL\0VFATAL\0C57P01\0Mterminating connection\0\0");
        assert!(
            matches!(&e, WireError::Db { code, message, fatal: true } if code == "57P01" && message == "terminating connection"),
            "{e:?}"
        );
        let e = error_of(b"SERROR\0C23505\0Mduplicate key\0\0");
        assert!(matches!(e, WireError::Db { fatal: false, .. }));
        assert_eq!(command_count(b"INSERT 0 5\0"), 5);
        assert_eq!(command_count(b"SELECT 3\0"), 3);
        assert_eq!(command_count(b"CREATE TABLE\0"), 0);
        assert_eq!(
            text_row(b"\x00\x02\x00\x00\x00\x02ab\xff\xff\xff\xff"),
            vec!["ab".to_string(), String::new()]
        );
    }
}
