//! A chunked response body (RFC 9112 section 7.1), decoded as its bytes
//! arrive: [`Chunked::feed_with`] reads what the connection has buffered, hands
//! the data on and says how much it used. It runs once per read of a chunked
//! body; the head that chose it is [`super::wire`]'s.

use super::wire::{MAX_LINE, Malformed};

/// Where a chunked body's decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk's data, with this many bytes to go.
    Data(u64),
    /// After a chunk's data, before its CRLF.
    DataEnd,
    /// After the last chunk: trailer lines up to an empty one.
    Trailers,
    /// The body is over.
    Done,
}

/// Decodes a chunked body as its bytes arrive, counting the data bytes.
#[derive(Debug, Clone)]
pub(crate) struct Chunked {
    state: ChunkState,
}

impl Default for Chunked {
    fn default() -> Self {
        Self {
            state: ChunkState::Size,
        }
    }
}

impl Chunked {
    /// Whether the last chunk and the trailers have been read.
    pub(crate) fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Reads as much of `buf` as it can: returns the bytes used and how many of
    /// them were body data. Uses nothing when `buf` holds only part of a
    /// chunk-size line, a CRLF or a trailer line: read more and call again with
    /// the unused bytes first. Stops at the end of the body.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn feed(&mut self, buf: &[u8]) -> Result<(usize, u64), Malformed> {
        self.feed_with(buf, |_| {})
    }

    /// `feed`, handing each run of body data to `data` as it
    /// goes (a response check keeps the body).
    pub(crate) fn feed_with(
        &mut self,
        buf: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<(usize, u64), Malformed> {
        let mut at = 0;
        let mut data = 0;
        loop {
            let rest = &buf[at..];
            match self.state {
                ChunkState::Done => break,
                ChunkState::Size => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, 0))) => {
                        at += n;
                        self.state = ChunkState::Trailers;
                    }
                    Ok(httparse::Status::Complete((n, size))) => {
                        at += n;
                        self.state = ChunkState::Data(size);
                    }
                    Ok(httparse::Status::Partial) if rest.len() >= MAX_LINE => {
                        return Err(Malformed("a chunk-size line is too long".to_string()));
                    }
                    Ok(httparse::Status::Partial) => break,
                    Err(_) => return Err(bad_chunk_size(rest)),
                },
                ChunkState::Data(left) => {
                    if rest.is_empty() {
                        break;
                    }
                    let n = left.min(rest.len() as u64);
                    on_data(&rest[..n as usize]);
                    at += n as usize;
                    data += n;
                    self.state = if n == left {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - n)
                    };
                }
                ChunkState::DataEnd => {
                    if rest.len() < 2 {
                        break;
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(Malformed(
                            "a chunk's data is longer than its size".to_string(),
                        ));
                    }
                    at += 2;
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailers => match rest.windows(2).position(|w| w == b"\r\n") {
                    Some(0) => {
                        at += 2;
                        self.state = ChunkState::Done;
                    }
                    Some(n) => at += n + 2,
                    None if rest.len() >= MAX_LINE => {
                        return Err(Malformed("a trailer line is too long".to_string()));
                    }
                    None => break,
                },
            }
        }
        Ok((at, data))
    }
}

/// The error for a chunk-size line that is not one: the line's start, its
/// control characters escaped (never a raw line break in a message).
fn bad_chunk_size(rest: &[u8]) -> Malformed {
    let line = rest[..rest.len().min(20)]
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or_default();
    if line.is_empty() {
        Malformed("a chunk-size line is empty; a chunk starts with its size in hex".to_string())
    } else {
        Malformed(format!(
            "`{}` is not a chunk size; a chunk starts with its size in hex",
            line.escape_ascii()
        ))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_decode_across_any_split() {
        let body =
            b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nx-t: 1\r\n\r\nNEXT";
        let body_len = body.len() - 4;
        // Fed whole, and fed in every pair of pieces: the same count and end.
        for cut in 0..=body_len {
            let mut c = Chunked::default();
            let mut pending: Vec<u8> = Vec::new();
            let mut data = 0;
            let mut kept = Vec::new();
            for piece in [&body[..cut], &body[cut..]] {
                pending.extend_from_slice(piece);
                let (used, n) = if cut % 2 == 0 {
                    c.feed(&pending).unwrap()
                } else {
                    // What a response check keeps: the data, without framing.
                    c.feed_with(&pending, |d| kept.extend_from_slice(d))
                        .unwrap()
                };
                pending.drain(..used);
                data += n;
            }
            assert!(c.done(), "cut {cut}");
            assert_eq!(data, 23, "cut {cut}");
            if cut % 2 == 1 {
                assert_eq!(kept, b"Wikipedia in\r\n\r\nchunks.", "cut {cut}");
            }
            assert_eq!(pending, b"NEXT", "cut {cut}: stops at the end of the body");
        }
    }

    #[test]
    fn a_bad_chunk_size_is_shown_without_its_line_break() {
        let e = |b: &[u8]| Chunked::default().feed(b).unwrap_err().0;
        assert_eq!(
            e(b"zz\r\n"),
            "`zz` is not a chunk size; a chunk starts with its size in hex"
        );
        assert_eq!(
            e(b"x\x01y\r\n"),
            "`x\\x01y` is not a chunk size; a chunk starts with its size in hex"
        );
        assert!(!e(b"\nq\r\n").contains('\n'));
    }

    #[test]
    fn bad_chunks_are_malformed() {
        assert!(
            Chunked::default()
                .feed(b"zz\r\n")
                .unwrap_err()
                .0
                .contains("chunk size")
        );
        assert!(
            Chunked::default()
                .feed(b"2\r\nabc\r\n")
                .unwrap_err()
                .0
                .contains("longer than its size")
        );
        let long = vec![b'1'; MAX_LINE];
        assert!(Chunked::default().feed(&long).is_err());
    }
}
