//! SIGINT and SIGTERM, one way for every command: the first stops the
//! work gracefully (what was measured is kept), the second aborts at once
//! (exit 130) after what the command must not leave behind (a product
//! under test killed). A service waits for one and ignores the rest.

use cacheoff_agent::StopHandle;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Stops `stop` at the first signal, saying `stopping`; at the second,
/// runs `abort` and exits 130. The flag says whether a signal came.
pub fn on_signals(stop: &StopHandle, stopping: &'static str, abort: fn()) -> Arc<AtomicBool> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let seen = Arc::new(AtomicBool::new(false));
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return seen;
    };
    let (stop, flag) = (stop.clone(), seen.clone());
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if flag.swap(true, Ordering::SeqCst) || stop.is_stopped() {
                abort();
                std::process::exit(130);
            }
            eprintln!("cacheoff: {stopping} (signal again to abort)");
            stop.stop();
        }
    });
    seen
}

/// A run's: the current interval is finished and the run written.
pub fn stop_runs_on_signals(stop: &StopHandle) {
    on_signals(stop, "stopping (finishing the current interval)", || {});
}

/// Blocks until the first signal, for a service that stops gracefully
/// after it (the proxy writes out its access log): signals after the
/// first are ignored, since a supervisor may send one to the process and
/// one to its group, and an abort would lose the log.
pub fn wait() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        // Without signal handling the default action (exit) still applies.
        loop {
            std::thread::park();
        }
    };
    signals.forever().next();
}
