//! The `rpc` workload, request/response: pairs of items that queue each other for many round
//! trips with little work each.
//!
//! One pair per producer thread (`--threads`, by default one per usable CPU). Each producer
//! (pinned, released together) queues its pair's first request and is done. A hop (a request
//! or a response) is a work item: it records when it started, burns `--work-ns` (none by
//! default) and, until the pair has made `--items` round trips, queues the other side, from the
//! worker it runs on. One hop of a pair is in flight at a time, so a pair keeps one worker
//! busy at most and leaves the others idle: the case where pulling costs and rarely finds.
//!
//! Reported: round trips per second (all pairs' round trips over the wall time until the last
//! response has run; items/sec counts hops, two per round trip), the queue call's latency,
//! and the per-hop latency: from just before the queue call of a hop to its start.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::executor::{burn, Executor, Spawn};
use super::harness::{nanos, new_histogram, run_producers, StartGate};
use super::measurement::{Measurement, Percentiles};
use super::tally::{record_slots, slots, Countdown};
use crate::error::CliError;

/// One pair: its handle on the system and its hops' times.
struct Pair<H> {
    /// Where each hop queues the next.
    handle: H,
    /// Busy-wait per hop.
    work: Duration,
    /// From the queue call of hop `n` to its start, in nanoseconds.
    hop_ns: Box<[AtomicU64]>,
    /// The queue call of hop `n`, in nanoseconds, stored by its queuer after the call.
    queue_ns: Box<[AtomicU64]>,
    /// Counts every hop once at its end and every queue call once after storing its time.
    left: Countdown,
    /// Round trips the responses counted, stored by the last hop.
    round_trips: AtomicU64,
    /// Set when the system refused a hop.
    refused: AtomicBool,
}

impl<H: Spawn> Pair<H> {
    /// A pair making `round_trips` round trips, reporting to `timer`.
    fn new(handle: H, round_trips: u64, work: Duration, timer: Thread) -> Result<Self, CliError> {
        let hops = round_trips.saturating_mul(2);
        Ok(Pair {
            handle,
            work,
            hop_ns: slots(hops, "rpc", "per-hop times")?,
            queue_ns: slots(hops, "rpc", "queue-call times")?,
            left: Countdown::new(hops.saturating_mul(2), timer),
            round_trips: AtomicU64::new(0),
            refused: AtomicBool::new(false),
        })
    }

    /// Hops in all: a request and a response per round trip.
    fn hops(&self) -> usize {
        self.hop_ns.len()
    }

    /// Queues hop `n` (even: a request, odd: a response), with the round trips counted
    /// before it, through `queue`; stores the queue call's time and counts it.
    fn queue_hop(self: &Arc<Self>, n: usize, round_trips: u64, queue: impl FnOnce(Hop<H>) -> bool) {
        let pair = Arc::clone(self);
        let t0 = Instant::now();
        let queued = queue(Hop {
            pair,
            n,
            queued: t0,
            round_trips,
        });
        let t1 = Instant::now();
        if queued {
            self.queue_ns[n].store(nanos(t1 - t0), Ordering::Relaxed);
            self.left.done_one();
        } else {
            self.refuse(n);
        }
    }

    /// The system refused hop `n`: it and the hops after it never run, nor are they queued.
    fn refuse(&self, n: usize) {
        self.refused.store(true, Ordering::Relaxed);
        self.left.done(2 * (self.hops() - n) as u64);
    }
}

/// One hop of a pair, queued as a work item.
struct Hop<H> {
    /// The pair.
    pair: Arc<Pair<H>>,
    /// Which hop: even ones are requests, odd ones responses.
    n: usize,
    /// Just before its queue call.
    queued: Instant,
    /// Round trips completed before it.
    round_trips: u64,
}

impl<H: Spawn> Hop<H> {
    /// Runs the hop: records its start, burns the work, queues the next hop from this worker
    /// (or, for the last, stores the round trips counted), and counts itself done.
    fn run(self) {
        let Hop {
            pair,
            n,
            queued,
            round_trips,
        } = self;
        let started = Instant::now();
        pair.hop_ns[n].store(nanos(started - queued), Ordering::Relaxed);
        burn(pair.work);
        let round_trips = round_trips + (n % 2) as u64;
        if n + 1 < pair.hops() {
            pair.queue_hop(n + 1, round_trips, |hop| {
                pair.handle.spawn(move || hop.run())
            });
        } else {
            pair.round_trips.store(round_trips, Ordering::Relaxed);
        }
        pair.left.done_one();
    }
}

/// Runs the pairs on `executor`: one pair per CPU of `cpus`, `round_trips` round trips each,
/// each hop busy for `work`.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, the times do not fit in
/// memory, the system refuses a hop, or a pair counted a wrong number of round trips.
pub(crate) fn run<E: Executor>(
    executor: &E,
    cpus: &[usize],
    round_trips: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    let timer = thread::current();
    let producer = |_index: usize, gate: &StartGate| {
        let pair = Pair::new(executor.handle(), round_trips, work, timer.clone());
        let pair = match pair {
            Ok(pair) => Arc::new(pair),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        gate.wait();
        pair.queue_hop(0, 0, |hop| executor.spawn(move || hop.run()));
        Ok(pair)
    };
    let wait_all = |pairs: &[Arc<Pair<E::Handle>>]| pairs.iter().for_each(|pair| pair.left.wait());
    let (pairs, wall) = run_producers(executor, cpus, producer, wait_all)?;

    let mut latency = new_histogram();
    let mut per_hop = new_histogram();
    let mut counted = 0;
    for (index, pair) in pairs.iter().enumerate() {
        if pair.refused.load(Ordering::Relaxed) {
            return Err(CliError::Failed(format!(
                "rpc: the system refused a hop of pair {index}"
            )));
        }
        let made = pair.round_trips.load(Ordering::Relaxed);
        if made != round_trips {
            return Err(CliError::Failed(format!(
                "rpc: pair {index} counted {made} round trips, expected {round_trips}"
            )));
        }
        counted += made;
        record_slots(&pair.queue_ns, &mut latency);
        record_slots(&pair.hop_ns, &mut per_hop);
    }
    Ok(Measurement {
        queue_to_start: Some(Percentiles::of(&per_hop)),
        round_trips: Some(counted),
        ..Measurement::of_run(round_trips.saturating_mul(2), cpus.len(), wall, &latency)
    })
}

#[cfg(test)]
mod tests {
    use podq::AffinityScope;

    use super::*;
    use crate::bench::harness::test_cpus;
    use crate::bench::peers::{MpscPeer, RayonPeer, TokioPeer};
    use crate::bench::workqueue::PodqExecutor;

    /// Round trips per pair in the runs below.
    const ROUND_TRIPS: u64 = 150;

    #[test]
    fn every_pair_makes_every_round_trip_on_podq() {
        let cpus = test_cpus();
        for pull in [true, false] {
            let podq = PodqExecutor::new(AffinityScope::Cpu, 8, pull).expect("a workqueue");
            let measured = run(&podq, &cpus, ROUND_TRIPS, Duration::ZERO).expect("the run");
            let pairs = cpus.len() as u64;
            assert_eq!(
                measured.round_trips,
                Some(pairs * ROUND_TRIPS),
                "pull {pull}"
            );
            assert_eq!(
                podq.completed(),
                pairs * 2 * ROUND_TRIPS,
                "two hops per round trip"
            );
            let hop = measured.queue_to_start.expect("per-hop latency");
            assert!(hop.p50 <= hop.p99);
        }
    }

    #[test]
    fn every_peer_counts_every_round_trip() {
        let cpus = test_cpus();
        let expected = Some(cpus.len() as u64 * ROUND_TRIPS);
        let work = Duration::ZERO;
        let tokio = run(&TokioPeer::new(2).expect("tokio"), &cpus, ROUND_TRIPS, work);
        assert_eq!(tokio.expect("tokio run").round_trips, expected);
        let rayon = run(&RayonPeer::new(2).expect("rayon"), &cpus, ROUND_TRIPS, work);
        assert_eq!(rayon.expect("rayon run").round_trips, expected);
        let mpsc = run(&MpscPeer::new(2).expect("mpsc"), &cpus, ROUND_TRIPS, work);
        assert_eq!(mpsc.expect("mpsc run").round_trips, expected);
    }

    #[test]
    fn one_round_trip_is_a_request_and_a_response() {
        let cpus = test_cpus();
        let podq = PodqExecutor::new(AffinityScope::System, 8, true).expect("a workqueue");
        let measured = run(&podq, &cpus[..1], 1, Duration::ZERO).expect("the run");
        assert_eq!(measured.round_trips, Some(1));
        assert_eq!(podq.completed(), 2);
    }
}
