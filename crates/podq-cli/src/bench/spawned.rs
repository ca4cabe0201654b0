//! The workloads of items that queue items from the worker they run on, on every system alike
//! through its [`Spawn`] handle (podq: `Workqueue::queue` from a worker; tokio: a spawn from
//! inside a task; rayon: a spawn inside its pool; the channel pools: a push from a worker):
//!
//! * `chain`: each producer thread runs `--items` chains (default [`CHAINS`]) one after the
//!   other, each of `--depth` links (default [`DEFAULT_DEPTH`]): a link queues the next and
//!   returns, and the producer waits for a chain's last link before it starts the next chain.
//! * `yield`: each producer thread queues `--items` items (default [`YIELDING_ITEMS`]), each of
//!   which queues its own continuation `--yields` times (default [`DEFAULT_YIELDS`]) before it
//!   ends: a state machine that yields, all of them at once.
//! * `spawn-local`: each producer thread queues one item, which queues `--items` items (default
//!   [`SPAWNED_ITEMS`]) and returns: a fan-out from a worker.
//!
//! The ping-pong case is `rpc` ([`rpc`](super::rpc)). Reported: items/sec (every item run, over
//! the wall time from the producers' release until the last has run) and its inverse, the time
//! per item; for podq, the share of the items that the worker of the item that queued them ran
//! (`PoolStats::ran_by_queuer`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::executor::{burn, Completion, Executor, Spawn};
use super::harness::{new_histogram, run_producers, StartGate};
use super::measurement::Measurement;
use super::tally::Countdown;
use crate::error::CliError;

/// `chain`'s links per chain when `--depth` is not given: 1,000, as tokio's `chained_spawn`
/// benchmark.
pub(crate) const DEFAULT_DEPTH: u64 = 1_000;

/// `chain`'s chains per producer thread when `--items` is not given: 100, so that a run makes
/// 100,000 links per producer.
pub(crate) const CHAINS: u64 = 100;

/// `yield`'s continuations per item when `--yields` is not given: 1,000, as tokio's
/// `yield_many` benchmark.
pub(crate) const DEFAULT_YIELDS: u64 = 1_000;

/// `yield`'s items per producer thread when `--items` is not given: 200, as tokio's
/// `yield_many` benchmark.
pub(crate) const YIELDING_ITEMS: u64 = 200;

/// `spawn-local`'s items queued by the one item of each producer thread when `--items` is not
/// given: 10,000, as tokio's `spawn_many_local` benchmark.
pub(crate) const SPAWNED_ITEMS: u64 = 10_000;

/// Set by an item when the system refused an item it queued.
#[derive(Default)]
struct Refused(AtomicBool);

impl Refused {
    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn check(&self, workload: &str) -> Result<(), CliError> {
        if self.0.load(Ordering::Relaxed) {
            return Err(CliError::Failed(format!(
                "{workload}: the system refused an item queued from a worker"
            )));
        }
        Ok(())
    }
}

/// Runs producers on `cpus`, each making `items` items in all through `produce`, and measures
/// them.
fn measure<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    name: &str,
    produce: impl Fn(&E::Handle, &Refused) + Sync,
) -> Result<Measurement, CliError> {
    let refused = Refused::default();
    let producer = |_index: usize, gate: &StartGate| {
        let handle = executor.handle();
        gate.wait();
        produce(&handle, &refused);
        Ok(())
    };
    let (_, wall) = run_producers(executor, cpus, producer, |_: &[()]| {})?;
    refused.check(name)?;
    Ok(Measurement::of_run(
        items,
        cpus.len(),
        wall,
        &new_histogram(),
    ))
}

/// One link of a chain: burns `work`, then queues the next link with `left` links after it, or
/// completes the chain.
fn link<H: Spawn>(
    handle: H,
    left: u64,
    work: Duration,
    done: Arc<Completion>,
    refused: Arc<Refused>,
) {
    burn(work);
    if left == 0 {
        done.complete();
        return;
    }
    let next = handle.clone();
    let (on_refusal, refused_too) = (Arc::clone(&done), Arc::clone(&refused));
    if !handle.spawn(move || link(next, left - 1, work, done, refused)) {
        refused_too.set();
        on_refusal.complete();
    }
}

/// `chain`: `chains` chains of `depth` links per producer, one after the other.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, or the system refuses an
/// item.
pub(crate) fn chain<E: Executor>(
    executor: &E,
    cpus: &[usize],
    chains: u64,
    depth: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    measure(
        executor,
        cpus,
        chains.saturating_mul(depth),
        "chain",
        |handle, refused| {
            let done = Arc::new(Completion::for_current_thread());
            let failed = Arc::new(Refused::default());
            for _ in 0..chains {
                let (h, d, f) = (handle.clone(), Arc::clone(&done), Arc::clone(&failed));
                if !executor.spawn(move || link(h, depth - 1, work, d, f)) {
                    refused.set();
                    return;
                }
                done.wait();
                if failed.0.load(Ordering::Relaxed) {
                    refused.set();
                    return;
                }
            }
        },
    )
}

/// One step of a yielding item: burns `work`, then queues its continuation with `left` steps
/// after it, or counts the item done.
fn step<H: Spawn>(
    handle: H,
    left: u64,
    work: Duration,
    done: Arc<Countdown>,
    refused: Arc<Refused>,
) {
    burn(work);
    if left == 0 {
        done.done_one();
        return;
    }
    let next = handle.clone();
    let (on_refusal, refused_too) = (Arc::clone(&done), Arc::clone(&refused));
    if !handle.spawn(move || step(next, left - 1, work, done, refused)) {
        refused_too.set();
        on_refusal.done_one();
    }
}

/// `yield`: `items` items per producer, each queueing its continuation `yields` times.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, or the system refuses an
/// item.
pub(crate) fn yielding<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    yields: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    measure(
        executor,
        cpus,
        items.saturating_mul(yields + 1),
        "yield",
        |handle, refused| {
            let done = Arc::new(Countdown::new(items, thread::current()));
            let failed = Arc::new(Refused::default());
            for _ in 0..items {
                let (h, d, f) = (handle.clone(), Arc::clone(&done), Arc::clone(&failed));
                if !executor.spawn(move || step(h, yields, work, d, f)) {
                    refused.set();
                    done.done_one();
                }
            }
            done.wait();
            if failed.0.load(Ordering::Relaxed) {
                refused.set();
            }
        },
    )
}

/// `spawn-local`: per producer, one item that queues `items` items and returns.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, or the system refuses an
/// item.
pub(crate) fn spawn_local<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    measure(
        executor,
        cpus,
        items.saturating_add(1),
        "spawn-local",
        |handle, refused| {
            let done = Arc::new(Countdown::new(items + 1, thread::current()));
            let failed = Arc::new(Refused::default());
            let (h, d, f) = (handle.clone(), Arc::clone(&done), Arc::clone(&failed));
            let parent = move || {
                for _ in 0..items {
                    let leaf = Arc::clone(&d);
                    if !h.spawn(move || {
                        burn(work);
                        leaf.done_one();
                    }) {
                        f.set();
                        d.done_one();
                    }
                }
                burn(work);
                d.done_one();
            };
            if !executor.spawn(parent) {
                refused.set();
                done.done(items + 1);
            }
            done.wait();
            if failed.0.load(Ordering::Relaxed) {
                refused.set();
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use podq::AffinityScope;

    use super::*;
    use crate::bench::harness::test_cpus;
    use crate::bench::peers::{ChannelPeer, RayonPeer, TokioPeer};
    use crate::bench::workqueue::PodqExecutor;

    /// Runs the three workloads with small counts on `executor`; returns the items each ran.
    fn all_three<E: Executor>(executor: &E, cpus: &[usize]) -> [f64; 3] {
        let work = Duration::ZERO;
        let measured = [
            chain(executor, cpus, 3, 50, work).expect("chain"),
            yielding(executor, cpus, 4, 20, work).expect("yield"),
            spawn_local(executor, cpus, 100, work).expect("spawn-local"),
        ];
        measured.map(|m| m.items as f64)
    }

    #[test]
    fn every_item_of_every_workload_runs_on_podq_and_is_counted() {
        let cpus = test_cpus();
        let podq = PodqExecutor::new(AffinityScope::System, 8, true).expect("a workqueue");
        let items = all_three(&podq, &cpus);
        let producers = cpus.len() as f64;
        assert_eq!(
            items,
            [150.0 * producers, 84.0 * producers, 101.0 * producers]
        );
        assert_eq!(podq.completed() as f64, items.iter().sum::<f64>());
        // Links and continuations are queued from the workers: podq's held items.
        assert!(podq.pool_counts().ran_by_queuer > 0);
    }

    #[test]
    fn every_peer_runs_every_workload() {
        let cpus = test_cpus();
        let expected = all_three(
            &PodqExecutor::new(AffinityScope::System, 8, true).expect("podq"),
            &cpus,
        );
        assert_eq!(
            all_three(&TokioPeer::new(2).expect("tokio"), &cpus),
            expected
        );
        assert_eq!(
            all_three(&RayonPeer::new(2).expect("rayon"), &cpus),
            expected
        );
        assert_eq!(
            all_three(&ChannelPeer::new(2).expect("channel"), &cpus),
            expected
        );
    }
}
