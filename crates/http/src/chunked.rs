//! Incremental decoder for `Transfer-Encoding: chunked` bodies.

use crate::HttpError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size { digits: u8 },
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    EndLf,
    Done,
}

/// Decodes a chunked body fed in pieces of any size.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder {
            state: State::Size { digits: 0 },
            size: 0,
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
                    Some(d) if digits < 15 => {
                        self.size = self.size << 4 | u64::from(d);
                        self.state = State::Size { digits: digits + 1 };
                    }
                    _ if digits == 0 => return Err(HttpError::BadChunk),
                    None if b == b';' || b == b' ' || b == b'\t' => self.state = State::Ext,
                    None if b == b'\r' => self.state = State::SizeLf,
                    _ => return Err(HttpError::BadChunk),
                },
                State::Ext => {
                    if b == b'\r' {
                        self.state = State::SizeLf;
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
                    self.state = if b == b'\r' {
                        State::EndLf
                    } else {
                        State::TrailerLine
                    };
                }
                State::TrailerLine => {
                    if b == b'\n' {
                        self.state = State::TrailerStart;
                    }
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
}
