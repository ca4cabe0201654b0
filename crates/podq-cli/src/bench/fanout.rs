//! The `fanout` workload, the hackbench analogue: teams of sender items and receivers that
//! exchange messages as work items, open loop, CPU-bound.
//!
//! One team per producer thread (`--threads`, by default one per usable CPU), so the teams
//! grow with the CPUs. A team is [`SENDERS`] sender items and [`RECEIVERS`] receivers; it
//! carries `--items` messages. Each producer (pinned, released together) queues its team's
//! senders and is done. A sender item, run on some worker, queues one message to each receiver
//! of its team (message `n` goes to receiver `n % RECEIVERS`), then queues itself again, until
//! it has sent its share of the messages; it waits for nothing. A message is a work item that
//! records when it started, counts itself on its receiver (one cache line per receiver, the
//! state messages to one receiver share) and burns `--work-ns`. Senders queue from workers, so
//! on podq their messages go to the pool of the worker's pod.
//!
//! Reported: messages/sec (all messages over the wall time until every message has run), the
//! queue call's latency for messages, and each message's queue-to-start time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::executor::{burn, Executor, Spawn};
use super::harness::{nanos, new_histogram, run_producers, StartGate};
use super::measurement::{Measurement, Percentiles};
use super::tally::{record_slots, slots, Countdown, Tally};
use crate::error::CliError;

/// Sender items per team. hackbench's group is 20 sender and 20 receiver processes; 4 and 4
/// keep a team's backlog at about 20 items (per sender, a round of [`RECEIVERS`] messages and
/// the sender itself), which at the default 10 us per message is some 160 us of work queued
/// per team.
pub(crate) const SENDERS: usize = 4;

/// Receivers per team: each sender's round queues one message to each.
pub(crate) const RECEIVERS: usize = 4;

/// One team: its handle on the system, its messages' times and counts.
struct Team<H> {
    /// Where the senders queue messages and themselves.
    handle: H,
    /// Busy-wait per message.
    work: Duration,
    /// Messages: when each started, and how many have not run.
    messages: Tally,
    /// The queue call of message `n`, in nanoseconds, stored by its sender after the call.
    queue_ns: Box<[AtomicU64]>,
    /// Messages each receiver got.
    received: [CachePadded<AtomicU64>; RECEIVERS],
    /// Senders that have not finished; each counts down after storing its last queue time.
    senders: Countdown,
    /// Set when the system refused a message or a sender.
    refused: AtomicBool,
}

impl<H: Spawn> Team<H> {
    /// A team of `senders` (the non-empty shares of `items` messages), reporting to `timer`.
    fn new(
        handle: H,
        items: u64,
        work: Duration,
        timer: Thread,
        senders: u64,
    ) -> Result<Team<H>, CliError> {
        Ok(Team {
            handle,
            work,
            messages: Tally::new(items, timer.clone(), "fanout")?,
            queue_ns: slots(items, "fanout", "queue-call times")?,
            received: Default::default(),
            senders: Countdown::new(senders, timer),
            refused: AtomicBool::new(false),
        })
    }

    /// One run of a sender whose messages `next..end` are still to send: queues one message
    /// to each receiver (fewer in its last round), then itself for the rest.
    fn send_round(self: Arc<Self>, next: usize, end: usize) {
        let round_end = end.min(next + RECEIVERS);
        for n in next..round_end {
            let team = Arc::clone(&self);
            let t0 = Instant::now();
            let queued = self.handle.spawn(move || team.receive(n, t0));
            let t1 = Instant::now();
            if !queued {
                self.refuse(n, end);
                return;
            }
            self.queue_ns[n].store(nanos(t1 - t0), Ordering::Relaxed);
        }
        if round_end == end {
            self.senders.done_one();
            return;
        }
        let team = Arc::clone(&self);
        if !self.handle.spawn(move || team.send_round(round_end, end)) {
            self.refuse(round_end, end);
        }
    }

    /// Message `n`, queued at `queued`, reaches its receiver.
    fn receive(&self, n: usize, queued: Instant) {
        self.messages.start(n, queued);
        self.received[n % RECEIVERS].fetch_add(1, Ordering::Relaxed);
        burn(self.work);
        self.messages.finish();
    }

    /// The system refused message `from` or the sender queueing `from..end`: those messages
    /// never run, and the sender is done.
    fn refuse(&self, from: usize, end: usize) {
        self.refused.store(true, Ordering::Relaxed);
        self.messages.skip((end - from) as u64);
        self.senders.done_one();
    }

    /// Waits (on the timer thread) until every message has run and every sender is done.
    fn wait(&self) {
        self.messages.wait_all_run();
        self.senders.wait();
    }

    /// Checks, once the team is done, that every message reached its receiver.
    fn check(&self, team: usize) -> Result<(), CliError> {
        if self.refused.load(Ordering::Relaxed) {
            return Err(CliError::Failed(format!(
                "fanout: the system refused a message or a sender of team {team}"
            )));
        }
        let items = self.messages.len() as u64;
        for (r, received) in self.received.iter().enumerate() {
            let expected =
                items / RECEIVERS as u64 + u64::from((r as u64) < items % RECEIVERS as u64);
            let got = received.load(Ordering::Relaxed);
            if got != expected {
                return Err(CliError::Failed(format!(
                    "fanout: receiver {r} of team {team} got {got} messages, expected {expected}"
                )));
            }
        }
        Ok(())
    }
}

/// The messages `start..end` sender `s` of a team of `items` messages sends: consecutive
/// shares, sizes differing by at most one, empty when there are fewer messages than senders.
fn share(items: usize, s: usize) -> (usize, usize) {
    (items * s / SENDERS, items * (s + 1) / SENDERS)
}

/// Runs the fanout on `executor`: one team per CPU of `cpus`, `items` messages per team, each
/// message busy for `work`.
///
/// # Errors
///
/// [`CliError::Failed`] when a producer cannot be started or pinned, the times do not fit in
/// memory, the system refuses a sender or a message, or a receiver's count is wrong.
pub(crate) fn run<E: Executor>(
    executor: &E,
    cpus: &[usize],
    items: u64,
    work: Duration,
) -> Result<Measurement, CliError> {
    let timer = thread::current();
    let len = usize::try_from(items).unwrap_or(usize::MAX);
    let shares: Vec<(usize, usize)> = (0..SENDERS)
        .map(|s| share(len, s))
        .filter(|(start, end)| start < end)
        .collect();
    let producer = |_index: usize, gate: &StartGate| {
        let team = Team::new(
            executor.handle(),
            items,
            work,
            timer.clone(),
            shares.len() as u64,
        );
        let team = match team {
            Ok(team) => Arc::new(team),
            Err(err) => {
                gate.wait();
                return Err(err);
            }
        };
        gate.wait();
        for &(start, end) in &shares {
            let mine = Arc::clone(&team);
            if !executor.spawn(move || mine.send_round(start, end)) {
                team.refuse(start, end);
            }
        }
        Ok(team)
    };
    let wait_all = |teams: &[Arc<Team<E::Handle>>]| teams.iter().for_each(|team| team.wait());
    let (teams, wall) = run_producers(executor, cpus, producer, wait_all)?;

    let mut latency = new_histogram();
    let mut queue_to_start = new_histogram();
    for (index, team) in teams.iter().enumerate() {
        team.check(index)?;
        record_slots(&team.queue_ns, &mut latency);
        team.messages.record_into(&mut queue_to_start);
    }
    Ok(Measurement {
        queue_to_start: Some(Percentiles::of(&queue_to_start)),
        ..Measurement::of_run(items, cpus.len(), wall, &latency)
    })
}

#[cfg(test)]
mod tests {
    use podq::AffinityScope;

    use super::*;
    use crate::bench::harness::test_cpus;
    use crate::bench::peers::{ChannelPeer, MutexPeer, RayonPeer, TokioPeer};
    use crate::bench::workqueue::PodqExecutor;

    /// Messages per team in the runs below: not a multiple of the senders or the receivers.
    const ITEMS: u64 = 101;

    #[test]
    fn every_message_and_every_sender_round_runs_once_on_podq() {
        let cpus = test_cpus();
        for pull in [true, false] {
            let podq = PodqExecutor::new(AffinityScope::Cpu, 8, pull).expect("a workqueue");
            let measured = run(&podq, &cpus, ITEMS, Duration::ZERO).expect("the run");
            // Each sender runs once per round of up to RECEIVERS messages.
            let rounds: usize = (0..SENDERS)
                .map(|s| share(ITEMS as usize, s))
                .map(|(start, end)| (end - start).div_ceil(RECEIVERS))
                .sum();
            assert_eq!(
                podq.completed(),
                cpus.len() as u64 * (ITEMS + rounds as u64),
                "pull {pull}"
            );
            assert!(measured.items_per_sec > 0.0);
            assert!(measured.queue_to_start.is_some());
        }
    }

    #[test]
    fn every_peer_delivers_every_message() {
        let cpus = test_cpus();
        let check = |measured: Result<Measurement, CliError>| {
            let measured = measured.expect("the run");
            assert!(measured.items_per_sec > 0.0 && measured.queue_to_start.is_some());
        };
        let work = Duration::from_micros(1);
        check(run(&TokioPeer::new(2).expect("tokio"), &cpus, ITEMS, work));
        check(run(&RayonPeer::new(2).expect("rayon"), &cpus, ITEMS, work));
        check(run(
            &ChannelPeer::new(2).expect("channel"),
            &cpus,
            ITEMS,
            work,
        ));
        check(run(&MutexPeer::new(2).expect("mutex"), &cpus, ITEMS, work));
    }

    #[test]
    fn shares_cover_every_message_once() {
        for items in [1, 3, 4, 10, 1001] {
            let mut next = 0;
            for s in 0..SENDERS {
                let (start, end) = share(items, s);
                assert_eq!(start, next, "{items} messages, sender {s}");
                assert!(end - start <= items / SENDERS + 1);
                next = end;
            }
            assert_eq!(next, items);
        }
    }
}
