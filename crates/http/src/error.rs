/// Why a message could not be parsed. Kinds, not text, are what callers
/// count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("malformed message head: {0}")]
    Malformed(String),
    #[error("header block larger than {0} bytes")]
    HeadTooLarge(usize),
    #[error("invalid Content-Length")]
    BadContentLength,
    #[error("ambiguous framing (Content-Length with Transfer-Encoding, or conflicting lengths)")]
    AmbiguousFraming,
    #[error("malformed chunked encoding")]
    BadChunk,
}

impl From<httparse::Error> for HttpError {
    fn from(e: httparse::Error) -> Self {
        HttpError::Malformed(e.to_string())
    }
}
