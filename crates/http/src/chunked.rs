//! Incremental decoder for `Transfer-Encoding: chunked` bodies.

use crate::HttpError;

/// Most bytes of chunk extensions (and the white space before them) one
/// body may carry: they are skipped unread, so without a bound a peer could
/// keep a decoder busy forever without sending data.
pub const MAX_EXTENSIONS: usize = 16 * 1024;
/// Most bytes of the trailer section (after the last chunk).
pub const MAX_TRAILERS: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size {
        digits: u8,
    },
    /// White space after the size: only an extension or CRLF may follow.
    SizeWs,
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    TrailerLf,
    EndLf,
    Done,
}

/// Decodes a chunked body fed in pieces of any size (RFC 9112 §7.1).
/// Lines end with CRLF only: a bare CR or LF anywhere in the framing is an
/// error, since another parser might take it for a line end (smuggling).
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
    /// Extension bytes so far, over the whole body.
    ext_len: usize,
    trailer_len: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder {
            state: State::Size { digits: 0 },
            size: 0,
            ext_len: 0,
            trailer_len: 0,
        }
    }
}

impl ChunkedDecoder {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes from `input`, passing body data to `on_data`. Returns
    /// how many input bytes were used (fewer than all only once done).
    pub fn decode(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<usize, HttpError> {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            match self.state {
                State::Done => return Ok(i),
                State::Size { digits } => match (b as char).to_digit(16) {
                    // 15 digits keep the size well inside u64.
                    Some(d) if digits < 15 => {
                        self.size = self.size << 4 | u64::from(d);
                        self.state = State::Size { digits: digits + 1 };
                    }
                    _ if digits == 0 => return Err(HttpError::BadChunk),
                    None if b == b' ' || b == b'\t' => {
                        self.state = self.extension(State::SizeWs)?
                    }
                    None if b == b';' => self.state = self.extension(State::Ext)?,
                    None if b == b'\r' => self.state = State::SizeLf,
                    _ => return Err(HttpError::BadChunk),
                },
                State::SizeWs => {
                    self.state = match b {
                        b' ' | b'\t' => self.extension(State::SizeWs)?,
                        b';' => self.extension(State::Ext)?,
                        b'\r' => State::SizeLf,
                        _ => return Err(HttpError::BadChunk),
                    }
                }
                State::Ext => {
                    self.state = match b {
                        b'\r' => State::SizeLf,
                        b'\n' => return Err(HttpError::BadChunk),
                        b if b.is_ascii_control() && b != b'\t' => return Err(HttpError::BadChunk),
                        _ => self.extension(State::Ext)?,
                    }
                }
                State::SizeLf => {
                    if b != b'\n' {
                        return Err(HttpError::BadChunk);
                    }
                    self.state = if self.size == 0 {
                        State::TrailerStart
                    } else {
                        State::Data
                    };
                }
                State::Data => {
                    let n = (self.size as usize).min(input.len() - i);
                    on_data(&input[i..i + n]);
                    self.size -= n as u64;
                    i += n;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    continue;
                }
                State::DataCr => {
                    if b != b'\r' {
                        return Err(HttpError::BadChunk);
                    }
                    self.state = State::DataLf;
                }
                State::DataLf => {
                    if b != b'\n' {
                        return Err(HttpError::BadChunk);
                    }
                    self.state = State::Size { digits: 0 };
                }
                State::TrailerStart => {
                    self.state = match b {
                        b'\r' => State::EndLf,
                        b'\n' => return Err(HttpError::BadChunk),
                        _ => self.trailer(State::TrailerLine)?,
                    };
                }
                State::TrailerLine => {
                    self.state = match b {
                        b'\r' => self.trailer(State::TrailerLf)?,
                        b'\n' => return Err(HttpError::BadChunk),
                        _ => self.trailer(State::TrailerLine)?,
                    };
                }
                State::TrailerLf => {
                    if b != b'\n' {
                        return Err(HttpError::BadChunk);
                    }
                    self.state = self.trailer(State::TrailerStart)?;
                }
                State::EndLf => {
                    if b != b'\n' {
                        return Err(HttpError::BadChunk);
                    }
                    self.state = State::Done;
                }
            }
            i += 1;
        }
        Ok(i)
    }

    /// Counts one extension byte; `next` if within [`MAX_EXTENSIONS`].
    fn extension(&mut self, next: State) -> Result<State, HttpError> {
        self.ext_len += 1;
        if self.ext_len > MAX_EXTENSIONS {
            return Err(HttpError::BadChunk);
        }
        Ok(next)
    }

    /// Counts one trailer byte; `next` if within [`MAX_TRAILERS`].
    fn trailer(&mut self, next: State) -> Result<State, HttpError> {
        self.trailer_len += 1;
        if self.trailer_len > MAX_TRAILERS {
            return Err(HttpError::BadChunk);
        }
        Ok(next)
    }
}

/// Appends `data` as one chunk (used by test peers that send chunked).
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(wire: &[u8], piece: usize) -> Result<(Vec<u8>, bool, usize), HttpError> {
        let mut d = ChunkedDecoder::default();
        let mut out = Vec::new();
        let mut used = 0;
        for p in wire.chunks(piece) {
            used += d.decode(p, |x| out.extend_from_slice(x))?;
            if d.is_done() {
                break;
            }
        }
        Ok((out, d.is_done(), used))
    }

    #[test]
    fn decodes_in_any_pieces_with_extensions_and_trailers() {
        let mut wire = Vec::new();
        write_chunk(&mut wire, b"hello ");
        wire.extend_from_slice(b"5;name=x\r\nworld\r\n0\r\nX-T: 1\r\n\r\nEXTRA");
        for piece in [1, 2, 3, 7, 100] {
            let (out, done, _) = decode_all(&wire, piece).unwrap();
            assert_eq!(out, b"hello world");
            assert!(done, "piece {piece}");
        }
        let (_, _, used) = decode_all(&wire, wire.len()).unwrap();
        assert_eq!(used, wire.len() - b"EXTRA".len());
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode_all(b"zz\r\n", 10).is_err());
        assert!(decode_all(b"3\r\nabcX\r\n", 10).is_err());
        assert!(decode_all(b"ffffffffffffffffff\r\n", 100).is_err());
    }

    /// Every case fails the same whichever way the bytes arrive.
    fn refused(wire: &[u8]) -> bool {
        [1, 2, 5, wire.len()]
            .iter()
            .all(|&piece| decode_all(wire, piece) == Err(HttpError::BadChunk))
    }

    #[test]
    fn sizes_that_would_overflow_are_refused() {
        // 15 hex digits are the most accepted; 16 (or 17) could wrap u64.
        assert!(refused(b"1000000000000000\r\n"));
        assert!(refused(b"10000000000000000\r\n"));
        let (_, done, _) = decode_all(b"fffffffffffffff\r\nab", 100).unwrap();
        assert!(!done);
    }

    #[test]
    fn bare_cr_or_lf_in_the_framing_is_refused() {
        assert!(refused(b"3\nabc\r\n0\r\n\r\n"));
        assert!(refused(b"3;ext\nabc\r\n0\r\n\r\n"));
        assert!(refused(b"3;ext\rabc\r\n0\r\n\r\n"));
        assert!(refused(b"3;e\x00\r\nabc\r\n0\r\n\r\n"));
        assert!(refused(b"3 x\r\nabc\r\n0\r\n\r\n"));
        assert!(refused(b"3\r\nabc\n0\r\n\r\n"));
        assert!(refused(b"3\r\nabc0\r\n\r\n"));
        assert!(refused(b"3\r\nabc\r\n0\r\n\n"));
        assert!(refused(b"3\r\nabc\r\n0\r\nX: 1\n\r\n"));
        assert!(refused(b"3\r\nabc\r\n0\r\nX: 1\r\r\n"));
        let (out, done, _) = decode_all(b"3 \t; a=\"b c\"\r\nabc\r\n0\r\n\r\n", 1).unwrap();
        assert_eq!((out.as_slice(), done), (&b"abc"[..], true));
    }

    #[test]
    fn extensions_and_trailers_are_bounded() {
        let mut wire = Vec::new();
        for _ in 0..MAX_EXTENSIONS / 1024 {
            wire.extend_from_slice(b"1;");
            wire.resize(wire.len() + 1023, b'x');
            wire.extend_from_slice(b"\r\na\r\n");
        }
        wire.extend_from_slice(b"0\r\n\r\n");
        assert!(decode_all(&wire, 4096).unwrap().1, "exactly at the limit");
        let mut over = b"1;x".to_vec();
        over.extend_from_slice(&wire[2..]);
        assert!(refused(&over));

        let mut wire = b"0\r\n".to_vec();
        while wire.len() - 3 < MAX_TRAILERS - 8 {
            wire.extend_from_slice(b"T: v\r\n");
        }
        let fits = [&wire[..], b"\r\n"].concat();
        assert!(decode_all(&fits, 512).unwrap().1);
        let mut over = wire;
        over.extend_from_slice(b"Trailer: too far\r\n\r\n");
        assert!(refused(&over));
    }
}
