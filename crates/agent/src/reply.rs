//! What an origin server answers to a request, whatever the protocol
//! it came in: the object its URL names, with its dates, the echo and
//! its size, after the server's think time.

use crate::local::Local;
use cacheoff_base::rng::SimRng;
use cacheoff_http::body;
use cacheoff_http::date;
use cacheoff_http::echo::echo_of;
use cacheoff_http::request::RequestHead;
use cacheoff_http::response::{write_response_head, ResponseSpec};
use cacheoff_http::Method;
use std::cell::RefCell;
use std::time::Duration;

/// A reply decided: its head in a lent buffer, and the body to follow.
pub struct Answer {
    pub head: Vec<u8>,
    pub seed: u64,
    /// Body bytes to send (0 for HEAD and 304).
    pub body_len: u64,
    /// Abort on purpose: send half the reply, then close.
    pub abort: bool,
}

/// Waits the server's think time (and a replayed trace's time to first
/// byte), then decides the reply to `head`; `None` if the URL names no
/// object of this server.
pub async fn answer(
    ctx: &Local,
    idx: u32,
    head: &RequestHead,
    rng: &RefCell<SimRng>,
    keep_alive: bool,
) -> Option<Answer> {
    let cfg = &ctx.shared.workload.servers;
    if !cfg.think_time.is_zero() {
        let secs = cfg.think_time.sample(&mut *rng.borrow_mut());
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }
    if let Some(us) = head.ttfb_us.filter(|&us| us > 0) {
        // A replayed trace's origin took this long to answer.
        tokio::time::sleep(Duration::from_micros(u64::from(us))).await;
    }
    let info = object_of(ctx, head, idx)?;
    let times = ctx.shared.times_now(&info);
    let last_modified = times.last_modified.map(date::DateText::new);
    let expires = date::DateText::new(times.expires);
    // 304 only when the object has not changed since the IMS date; an
    // object without Last-Modified is always sent whole.
    let not_modified =
        matches!((times.last_modified, head.ims), (Some(lm), Some(ims)) if lm <= ims as i64);
    let status = if not_modified { 304 } else { 200 };
    let md5 = (info.md5 && status == 200).then(|| body::content_md5(info.body_seed, info.size));
    let mut out = ctx.bufs.take();
    out.clear();
    ctx.with_date(|date| {
        write_response_head(
            &mut out,
            &ResponseSpec {
                status,
                content_length: info.size,
                cachable: info.cachable,
                date,
                last_modified: last_modified.as_ref().map(date::DateText::as_str),
                expires: Some(expires.as_str()),
                echo: head.xact.map(echo_of),
                keep_alive,
                content_type: ctx.shared.objects.mime(&info),
                content_md5: md5.as_deref(),
                http10: cfg.http10,
            },
        )
    });
    let send_body = head.method != Method::Head && !not_modified;
    let shared = &ctx.shared;
    Some(Answer {
        head: out,
        seed: info.body_seed,
        body_len: if send_body { info.size } else { 0 },
        abort: head.xact.is_some_and(|x| {
            shared
                .workload
                .aborts
                .server_aborts(shared.abort_key, x.get())
        }),
    })
}

/// Maps the URL path to its object, which must live on this server.
fn object_of(ctx: &Local, head: &RequestHead, idx: u32) -> Option<cacheoff_workload::ObjectInfo> {
    let info = ctx.shared.objects.parse_path(head.path())?;
    (info.server == idx).then_some(info)
}
