//! What a request asks for: a workload fact that robots, stats and reports
//! share.

use crate::closed_set;

closed_set! {
    /// What a request asks for. Only basic requests count in hit ratios.
    RequestType {
        Basic = "basic": "a plain GET",
        Ims200 = "ims200": "a GET with If-Modified-Since one second before Last-Modified: the answer must be 200 with the body",
        Ims304 = "ims304": "a GET with If-Modified-Since one second after Last-Modified: the answer must be 304",
        Reload = "reload": "a GET with Cache-Control: no-cache and Pragma: no-cache: the answer must come from the origin server",
        Post = "post": "a POST with a body: the answer must come from the origin server",
        Head = "head": "a HEAD: the answer is the object's head without a body",
    }
}

impl RequestType {
    /// A cache that misses this request can store the object: any GET
    /// (an ideal cache answers a conditional miss by fetching the whole
    /// object). HEAD and POST leave a cache empty.
    pub fn fills_cache(self) -> bool {
        !matches!(self, RequestType::Post | RequestType::Head)
    }

    /// A cache must drop what it holds for the URL after this request
    /// (an unsafe method, RFC 9111 §4.4).
    pub fn empties_cache(self) -> bool {
        self == RequestType::Post
    }
}
