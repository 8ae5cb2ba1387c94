//! Finding where a head ends without rereading it: a reader that parses
//! the whole buffer after every read does O(n²) work on a head dripped a
//! byte at a time, so it asks a [`HeadScanner`] first and parses once.

use crate::HttpError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Before the start line; httparse skips empty lines here.
    #[default]
    Lead,
    LeadCr,
    InLine,
    /// Just after a line's end: an empty line now ends the head.
    LineStart,
    LineStartCr,
    Done(usize),
}

/// Resumable search for the end of a message head (the empty line after
/// the start line and fields), accepting the same line ends the parsers
/// do (CRLF or bare LF). Feed it the same buffer as it grows; call
/// [`HeadScanner::reset`] once the caller drops the head from the buffer.
#[derive(Debug, Clone, Default)]
pub struct HeadScanner {
    state: State,
    /// Bytes of the buffer already looked at.
    scanned: usize,
}

impl HeadScanner {
    pub fn new() -> HeadScanner {
        HeadScanner::default()
    }

    /// Starts over, for a buffer that now begins with the next message.
    pub fn reset(&mut self) {
        *self = HeadScanner::default();
    }

    /// The length of the head (blank line included) once `buf` holds all
    /// of it, looking only at bytes not seen by earlier calls. `buf` must
    /// be the buffer of those calls, grown only at its end.
    pub fn scan(&mut self, buf: &[u8]) -> Option<usize> {
        for (i, &b) in buf.iter().enumerate().skip(self.scanned) {
            self.state = match (self.state, b) {
                (State::Done(n), _) => return Some(n),
                (State::Lead, b'\n') => State::Lead,
                (State::Lead, b'\r') => State::LeadCr,
                (State::LeadCr, b'\n') => State::Lead,
                (State::LineStart, b'\r') => State::LineStartCr,
                (State::LineStart | State::LineStartCr, b'\n') => State::Done(i + 1),
                (_, b'\n') => State::LineStart,
                _ => State::InLine,
            };
        }
        self.scanned = self.scanned.max(buf.len());
        match self.state {
            State::Done(n) => Some(n),
            _ => None,
        }
    }

    /// [`HeadScanner::scan`] within a header block limit: a head (found or
    /// still open) longer than `max_head` bytes is an error, as the
    /// parsers' `*_within` functions say.
    pub fn scan_within(&mut self, buf: &[u8], max_head: usize) -> Result<Option<usize>, HttpError> {
        // Never look further than the limit allows, however much arrived.
        let seen = &buf[..buf.len().min(max_head + 1)];
        match self.scan(seen) {
            Some(n) if n <= max_head => Ok(Some(n)),
            None if seen.len() <= max_head => Ok(None),
            _ => Err(HttpError::HeadTooLarge(max_head)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_request;
    use crate::response::parse_response;

    /// The answer for `wire` scanned whole, or in the pieces of every
    /// split into two and of one byte at a time.
    fn scans(wire: &[u8]) -> Option<usize> {
        let whole = HeadScanner::new().scan(wire);
        for cut in 0..=wire.len() {
            let mut s = HeadScanner::new();
            let first = s.scan(&wire[..cut]);
            assert!(first.is_none() || first == whole, "cut {cut}");
            assert_eq!(s.scan(wire), whole, "cut {cut}");
        }
        let mut s = HeadScanner::new();
        let dripped = (1..=wire.len()).map(|n| s.scan(&wire[..n])).last();
        assert_eq!(dripped.flatten(), whole);
        whole
    }

    #[test]
    fn resumes_anywhere_and_agrees_with_the_parsers() {
        let requests: [&[u8]; 6] = [
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\n\r\n",
            b"\r\n\nGET / HTTP/1.1\nHost: a\n\nbody",
            b"GET / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n",
            b"\r\n\r\n",
        ];
        for wire in requests {
            let want = parse_request(wire, false).unwrap().map(|h| h.head_len);
            assert_eq!(scans(wire), want, "{:?}", String::from_utf8_lossy(wire));
        }
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let want = parse_response(wire, false, false).unwrap().unwrap();
        assert_eq!(scans(wire), Some(want.head_len));
    }

    #[test]
    fn limits_the_head_found_or_not() {
        let wire = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        let fits = wire.len();
        assert_eq!(HeadScanner::new().scan_within(wire, fits), Ok(Some(fits)));
        let over = Err(HttpError::HeadTooLarge(fits - 1));
        assert_eq!(HeadScanner::new().scan_within(wire, fits - 1), over);
        let open = &wire[..fits - 2];
        assert_eq!(HeadScanner::new().scan_within(open, fits - 2), Ok(None));
        assert_eq!(
            HeadScanner::new().scan_within(open, fits - 3),
            Err(HttpError::HeadTooLarge(fits - 3))
        );
    }
}
