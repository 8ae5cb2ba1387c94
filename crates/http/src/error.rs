/// Why a message could not be parsed. Kinds, not text, are what callers
/// count; [`HttpError::status`] is the answer a server owes each kind.
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
    #[error("more than {0} header lines")]
    TooManyHeaders(usize),
    #[error("invalid Transfer-Encoding (chunked not final, repeated, or malformed)")]
    BadTransferEncoding,
    #[error("unsupported transfer coding {0:?}")]
    UnsupportedTransferCoding(String),
    #[error("HTTP/1.1 request without Host")]
    MissingHost,
    #[error("more than one Host header line")]
    MultipleHosts,
    #[error("invalid Host value")]
    BadHost,
}

impl HttpError {
    /// The status a server answers a request failing this way with
    /// (RFC 9112 §3.2, §6.1, §6.3; RFC 6585 §5 for 431).
    pub fn status(&self) -> u16 {
        match self {
            HttpError::HeadTooLarge(_) | HttpError::TooManyHeaders(_) => 431,
            HttpError::UnsupportedTransferCoding(_) => 501,
            HttpError::Malformed(_)
            | HttpError::BadContentLength
            | HttpError::AmbiguousFraming
            | HttpError::BadChunk
            | HttpError::BadTransferEncoding
            | HttpError::MissingHost
            | HttpError::MultipleHosts
            | HttpError::BadHost => 400,
        }
    }
}

impl From<httparse::Error> for HttpError {
    fn from(e: httparse::Error) -> Self {
        match e {
            httparse::Error::TooManyHeaders => HttpError::TooManyHeaders(crate::MAX_HEADERS),
            e => HttpError::Malformed(e.to_string()),
        }
    }
}
