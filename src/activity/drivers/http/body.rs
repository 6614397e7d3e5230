//! A response body read as it arrives, framed as its head said: the decision
//! of how much of what the connection buffered belongs to the body, with no
//! I/O (both clients feed it what they read).

use super::transport::Failure;
use super::wire::{Chunked, Framing};
use std::io;

/// Where a body's reading is.
#[derive(Debug)]
pub(super) struct Body {
    framing: Framing,
    /// Bytes left of a `content-length` body.
    left: u64,
    chunks: Chunked,
    done: bool,
}

impl Body {
    /// A body framed as `framing`.
    pub(super) fn new(framing: Framing) -> Self {
        Self {
            framing,
            left: match framing {
                Framing::Length(n) => n,
                _ => 0,
            },
            chunks: Chunked::default(),
            done: matches!(framing, Framing::Empty | Framing::Length(0)),
        }
    }

    /// Whether the whole body has been read.
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// Takes what of `data` belongs to the body: the bytes used (the caller
    /// consumes them) and how many were body data, handed to `keep` when
    /// given.
    pub(super) fn feed(
        &mut self,
        data: &[u8],
        keep: Option<&mut Vec<u8>>,
    ) -> Result<(usize, u64), Failure> {
        match self.framing {
            Framing::Empty => Ok((0, 0)),
            Framing::Length(_) => {
                let n = (data.len() as u64).min(self.left);
                if let Some(k) = keep {
                    k.extend_from_slice(&data[..n as usize]);
                }
                self.left -= n;
                self.done = self.left == 0;
                Ok((n as usize, n))
            }
            Framing::Chunked => {
                let mut keep = keep;
                let (used, n) = self
                    .chunks
                    .feed_with(data, |d| {
                        if let Some(k) = keep.as_deref_mut() {
                            k.extend_from_slice(d);
                        }
                    })
                    .map_err(|m| Failure::Protocol(m.0))?;
                self.done = self.chunks.done();
                Ok((used, n))
            }
            Framing::UntilClose => {
                if let Some(k) = keep {
                    k.extend_from_slice(data);
                }
                Ok((data.len(), data.len() as u64))
            }
        }
    }

    /// What the server's close means at this point: the end of a body read
    /// up to the close, or a body cut short.
    pub(super) fn closed(&mut self) -> Result<(), Failure> {
        let cut = |what: String| Failure::Io(io::Error::new(io::ErrorKind::UnexpectedEof, what));
        match self.framing {
            Framing::UntilClose => {
                self.done = true;
                Ok(())
            }
            _ if self.done => Ok(()),
            Framing::Length(_) => Err(cut(format!(
                "the server closed the connection {} bytes before the end of the body",
                self.left
            ))),
            _ => Err(cut(
                "the server closed the connection in the middle of a chunked body".to_string(),
            )),
        }
    }
}

/// The failure of a server that closed the connection before a whole response
/// head (`partial`: some of it had come).
pub(super) fn closed_in_head(partial: bool) -> Failure {
    let what = if partial {
        "the server closed the connection in the middle of the response head"
    } else {
        "the server closed the connection without answering"
    };
    Failure::Io(io::Error::new(io::ErrorKind::UnexpectedEof, what))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Feeds `parts` one after another the way a client does (unused bytes
    /// stay first): the data kept and whether the body ended.
    fn read(framing: Framing, parts: &[&[u8]]) -> (Vec<u8>, bool, usize) {
        let mut b = Body::new(framing);
        let mut pending = Vec::new();
        let mut kept = Vec::new();
        for p in parts {
            pending.extend_from_slice(p);
            let (used, _) = b.feed(&pending, Some(&mut kept)).unwrap();
            pending.drain(..used);
            if b.done() {
                break;
            }
        }
        (kept, b.done(), pending.len())
    }

    #[test]
    fn a_length_body_ends_at_its_length_and_leaves_the_next_answer() {
        assert_eq!(
            read(Framing::Length(5), &[b"he", b"lloHTTP"]),
            (b"hello".to_vec(), true, 4)
        );
        assert!(Body::new(Framing::Length(0)).done());
        assert!(Body::new(Framing::Empty).done());
    }

    #[test]
    fn a_chunked_body_ends_after_its_trailers() {
        assert_eq!(
            read(Framing::Chunked, &[b"3\r\nabc\r", b"\n0\r\n\r\nX"]),
            (b"abc".to_vec(), true, 1)
        );
    }

    #[test]
    fn a_close_ends_a_body_read_to_the_close_and_cuts_any_other() {
        let mut b = Body::new(Framing::UntilClose);
        b.feed(b"abc", None).unwrap();
        assert!(!b.done());
        assert!(b.closed().is_ok() && b.done());
        let mut b = Body::new(Framing::Length(9));
        b.feed(b"abc", None).unwrap();
        let e = b.closed().unwrap_err().to_string();
        assert!(e.contains("6 bytes before the end of the body"), "{e}");
        let e = Body::new(Framing::Chunked)
            .closed()
            .unwrap_err()
            .to_string();
        assert!(e.contains("middle of a chunked body"), "{e}");
    }
}
