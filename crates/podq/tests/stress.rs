//! Many threads queue, cancel, flush and drop at once, with panicking items mixed in; every
//! execution is counted: each successful queue call is matched by exactly one run or one
//! cancellation, and each one-shot closure runs exactly once.
//!
//! Sized for a few seconds on two cores in a debug build.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use podq::{AffinityScope, DelayedWork, Work, Workqueue};

const ROUNDS: usize = 12;
const THREADS: usize = 4;
const OPS: usize = 6_000;
const ITEMS: usize = 6;

/// What one reusable item saw: successful queue calls, runs and cancels of a pending execution.
#[derive(Default)]
struct Tally {
    queued: AtomicUsize,
    runs: AtomicUsize,
    cancelled: AtomicUsize,
}

/// A tiny xorshift so each thread makes its own reproducible choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
}

fn item(tally: &Arc<Tally>, panics: bool) -> impl FnMut() + Send + 'static {
    let tally = Arc::clone(tally);
    let mut n = 0u64;
    move || {
        tally.runs.fetch_add(1, Ordering::SeqCst);
        n += 1;
        if panics && n.is_multiple_of(3) {
            panic!("stress: a reusable item panics on purpose");
        }
    }
}

/// Silences the panics this test causes on purpose, keeps every other panic message.
fn quiet_intended_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let intended = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|m| m.contains("on purpose"));
        if !intended {
            default(info);
        }
    }));
}

#[test]
fn every_execution_runs_once_or_is_cancelled() {
    quiet_intended_panics();
    let mut panicked = 0;
    for round in 0..ROUNDS {
        let scope = [
            AffinityScope::Cpu,
            AffinityScope::System,
            AffinityScope::CacheShard,
        ][round % 3];
        let mut builder = Workqueue::builder(format!("stress-{round}")).scope(scope);
        if round % 2 == 1 {
            builder = builder.max_active(1 + round % 3);
        }
        let wq = Arc::new(builder.build().unwrap());
        let tallies: Vec<Arc<Tally>> = (0..ITEMS).map(|_| Arc::new(Tally::default())).collect();
        let works: Vec<Work> = tallies[..ITEMS - 2]
            .iter()
            .enumerate()
            .map(|(i, t)| Work::new(item(t, i % 2 == 0)))
            .collect();
        let delayed: Vec<DelayedWork> = tallies[ITEMS - 2..]
            .iter()
            .map(|t| DelayedWork::new(item(t, false)))
            .collect();
        let once_runs: Arc<Vec<AtomicU8>> =
            Arc::new((0..THREADS * OPS).map(|_| AtomicU8::new(0)).collect());
        let once_queued = Arc::new(AtomicUsize::new(0));

        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let wq = Arc::clone(&wq);
                let (works, delayed, tallies) = (works.clone(), delayed.clone(), tallies.clone());
                let (once_runs, once_queued) = (Arc::clone(&once_runs), Arc::clone(&once_queued));
                thread::spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((round * THREADS + t) as u64 + 1));
                    for op in 0..OPS {
                        let id = t * OPS + op;
                        match rng.below(20) {
                            0..=6 => {
                                let runs = Arc::clone(&once_runs);
                                let panics = rng.below(10) == 0;
                                if wq.queue(move || {
                                    runs[id].fetch_add(1, Ordering::SeqCst);
                                    if panics {
                                        panic!("stress: a closure panics on purpose");
                                    }
                                }) {
                                    once_queued.fetch_add(1, Ordering::SeqCst);
                                } else {
                                    // Never refused: nobody drains here.
                                    panic!("queue refused outside a drain");
                                }
                            }
                            7..=12 => {
                                let i = rng.below(works.len() as u64);
                                if wq.queue_work(&works[i]) {
                                    tallies[i].queued.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                            13..=14 => {
                                let i = rng.below(works.len() as u64);
                                if works[i].cancel_sync() {
                                    tallies[i].cancelled.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                            15 => {
                                let i = rng.below(delayed.len() as u64);
                                let delay = Duration::from_micros(rng.below(500) as u64);
                                let tally = &tallies[works.len() + i];
                                if rng.below(2) == 0 {
                                    if wq.queue_delayed(&delayed[i], delay) {
                                        tally.queued.fetch_add(1, Ordering::SeqCst);
                                    }
                                } else if !wq.mod_delayed(&delayed[i], delay) {
                                    // Idle before: queued anew (unless a cancel ran, which
                                    // this test never does on delayed items).
                                    tally.queued.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                            16 => {
                                assert!(wq.flush(), "flush from a test thread waits");
                            }
                            17 => {
                                let i = rng.below(works.len() as u64);
                                works[i].flush();
                            }
                            18 => {
                                let i = rng.below(delayed.len() as u64);
                                delayed[i].flush();
                            }
                            _ => thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats_before_drop = wq.stats();
        // The last handle: runs everything queued, including armed delayed items.
        drop(Arc::into_inner(wq).expect("threads let go of the workqueue"));

        for (i, runs) in once_runs.iter().enumerate() {
            assert!(runs.load(Ordering::SeqCst) <= 1, "closure {i} ran twice");
        }
        let ran: usize = once_runs
            .iter()
            .map(|r| usize::from(r.load(Ordering::SeqCst)))
            .sum();
        assert_eq!(
            ran,
            once_queued.load(Ordering::SeqCst),
            "round {round}: closures lost"
        );
        for (i, t) in tallies.iter().enumerate() {
            let (q, r, c) = (
                t.queued.load(Ordering::SeqCst),
                t.runs.load(Ordering::SeqCst),
                t.cancelled.load(Ordering::SeqCst),
            );
            assert_eq!(
                q,
                r + c,
                "round {round}, item {i}: queued {q}, ran {r}, cancelled {c}"
            );
        }
        for w in &works {
            assert!(!w.is_pending() && !w.is_running());
        }
        let s = stats_before_drop;
        assert!(
            s.panicked <= s.completed && s.completed <= s.started,
            "{s:?}"
        );
        panicked += s.panicked;
    }
    assert!(panicked > 0, "panicking items were counted");
}
