//! The `tracing` feature: a span per work item run and events for the life of workers.
//!
//! What is emitted, with its level, target and fields, is listed in `docs/observability.md`;
//! this module is the one place that calls the `tracing` macros, so the other modules carry
//! one cfg-gated call each and the names stay together:
//!
//! * [`RUN`], a span at trace level around each run of a work item, with the workqueue, the
//!   pod and the time from the queue call to the start of the run;
//! * events at debug level under [`WORKER`]: a worker started, a worker exits, a pool grows
//!   (and why), a pool shuts down; at warn level, the OS refused a worker thread.
//!
//! The queue call takes a timestamp ([`Stamp::now`]) only while the run span is enabled, so a
//! program without a subscriber at trace level for `podq` pays one check of the level filter
//! per queue call and nothing more.

use std::sync::OnceLock;
use std::time::Instant;

use tracing::{debug, trace_span, warn, Level};

/// Target of the span around each run of a work item.
pub(crate) const RUN: &str = "podq::work";

/// Target of the worker events (start, exit, growth, shutdown).
pub(crate) const WORKER: &str = "podq::worker";

/// When a work item was queued: nanoseconds since the process's first stamp, plus one; 0 when
/// none was taken (the run span was disabled at queue time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stamp(u64);

/// The instant stamps count from: the first time one was asked for.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Stamp {
    /// Now, if the run span is enabled; otherwise the empty stamp.
    #[inline]
    pub(crate) fn now() -> Stamp {
        if tracing::enabled!(target: RUN, Level::TRACE) {
            Stamp::since_epoch()
        } else {
            Stamp(0)
        }
    }

    /// Now, as nanoseconds since the epoch plus one (never 0).
    fn since_epoch() -> Stamp {
        let nanos = u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        Stamp(nanos + 1)
    }

    /// Nanoseconds from this stamp to now; `None` for the empty stamp.
    fn elapsed_ns(self) -> Option<u64> {
        (self.0 != 0).then(|| Stamp::since_epoch().0.saturating_sub(self.0))
    }
}

/// The span of one run of a work item of `workqueue`, queued to `pod` at `queued`, entered:
/// it ends when the returned guard is dropped.
///
/// Fields: `workqueue` (its name), `pod` (the pod id it was queued to), `queue_to_start_ns`
/// (from the queue call to this run; absent when the span was off at queue time).
#[inline]
pub(crate) fn run_span(workqueue: &str, pod: usize, queued: Stamp) -> tracing::span::EnteredSpan {
    trace_span!(
        target: RUN,
        "run",
        workqueue,
        pod,
        queue_to_start_ns = queued.elapsed_ns()
    )
    .entered()
}

/// A worker of `pool` started (on its own thread, before it takes its first item).
pub(crate) fn worker_started(pool: &str) {
    debug!(target: WORKER, pool, "worker started");
}

/// A worker of `pool` exits: retired after the idle timeout, or its pool shut down (a
/// `pool shut down` event of the same pool came first).
pub(crate) fn worker_exits(pool: &str) {
    debug!(target: WORKER, pool, "worker exits");
}

/// `pool` starts more workers because of `reason`: `busy` (work waits and every worker is
/// busy, below the pod's CPU count), `blocked` (the stall watchdog found busy workers asleep in
/// their items) or `stall` (the stall watchdog saw queued work make no progress).
pub(crate) fn pool_grows(pool: &str, reason: &'static str) {
    debug!(target: WORKER, pool, reason, "pool grows");
}

/// The last user of `pool` let go: its workers run what is queued and exit.
pub(crate) fn pool_shut_down(pool: &str) {
    debug!(target: WORKER, pool, "pool shut down");
}

/// The OS refused to start a worker thread for `pool`, which has been refused workers for
/// `refused_for` (0 at the first refusal since a worker last started): its waiting items go
/// to its rescuer.
pub(crate) fn spawn_failed(pool: &str, error: &std::io::Error, refused_for: std::time::Duration) {
    let refused_for_ms = u64::try_from(refused_for.as_millis()).unwrap_or(u64::MAX);
    warn!(target: WORKER, pool, %error, refused_for_ms, "worker thread refused by the OS");
}
