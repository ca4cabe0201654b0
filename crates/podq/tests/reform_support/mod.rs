//! Helpers shared by the tests of re-formed pods: the main thread's affinity, and a producer
//! that checks ordering and `max_active` while the pods change.

#![allow(dead_code)] // each test crate uses its own part of these helpers

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use podq::Workqueue;

/// The main thread's affinity (what `taskset -p` reads).
pub(crate) fn main_thread_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is an empty set; we pass its size and a live pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(
            libc::getpid(),
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        );
        assert_eq!(rc, 0, "sched_getaffinity");
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Sets the main thread's affinity (what `taskset -p` does).
pub(crate) fn set_main_thread_cpus(cpus: &[usize]) {
    // SAFETY: as above; every id is below CPU_SETSIZE (they come from the kernel).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        let rc =
            libc::sched_setaffinity(libc::getpid(), std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(rc, 0, "sched_setaffinity");
    }
}

/// What the items of a [`Sequenced`] producer see.
#[derive(Default)]
struct Seen {
    /// Items run so far; an item numbered `n` expects `n` before it when one runs at a time.
    next: AtomicU64,
    /// Items running now.
    running: AtomicUsize,
    /// The most items seen running at once.
    most: AtomicUsize,
    /// Items that ran before one queued earlier.
    out_of_order: AtomicU64,
}

/// One thread queueing numbered items on a workqueue until [`Sequenced::finish`], with a
/// backlog of at most 256 (the changes, not the queue's length, are the test).
pub(crate) struct Sequenced {
    wq: Arc<Workqueue>,
    max_active: usize,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    producer: JoinHandle<u64>,
}

impl Sequenced {
    /// Starts queueing on `wq`, whose `max_active` is `max_active` (1: ordered).
    pub(crate) fn start(wq: &Arc<Workqueue>, max_active: usize) -> Sequenced {
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let producer = {
            let (wq, seen, stop) = (Arc::clone(wq), Arc::clone(&seen), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    while seq - seen.next.load(Ordering::SeqCst) > 256
                        && !stop.load(Ordering::Relaxed)
                    {
                        std::thread::yield_now();
                    }
                    let (seen, mine) = (Arc::clone(&seen), seq);
                    seq += 1;
                    assert!(wq.queue(move || {
                        let now = seen.running.fetch_add(1, Ordering::SeqCst) + 1;
                        seen.most.fetch_max(now, Ordering::SeqCst);
                        if max_active == 1 && seen.next.load(Ordering::SeqCst) != mine {
                            seen.out_of_order.fetch_add(1, Ordering::SeqCst);
                        }
                        seen.next.fetch_add(1, Ordering::SeqCst);
                        seen.running.fetch_sub(1, Ordering::SeqCst);
                    }));
                }
                seq
            })
        };
        Sequenced {
            wq: Arc::clone(wq),
            max_active,
            seen,
            stop,
            producer,
        }
    }

    /// Stops the producer, flushes, and checks that every item ran, in order when one runs at
    /// a time, and never more than `max_active` at once.
    pub(crate) fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let queued = self.producer.join().expect("producer");
        assert!(self.wq.flush());
        let seen = &self.seen;
        assert_eq!(seen.next.load(Ordering::SeqCst), queued, "items lost");
        assert_eq!(seen.out_of_order.load(Ordering::SeqCst), 0, "out of order");
        assert!(
            seen.most.load(Ordering::SeqCst) <= self.max_active,
            "over max_active"
        );
    }
}

/// Items queued (counted once the queue call returned) and items run.
#[derive(Default)]
struct Counts {
    queued: AtomicU64,
    ran: AtomicU64,
}

/// Producers flooding a workqueue until [`Flood::finish`]: each round a one-shot item, one
/// queued with `queue_on` when CPUs are given, and every 64 rounds its reusable item, queued
/// then flushed; the backlog stays under 4096 items.
pub(crate) struct Flood {
    wq: Arc<Workqueue>,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    producers: Vec<JoinHandle<()>>,
}

impl Flood {
    /// Starts one producer per CPU the calling thread may use, pinned there when `pin`, each
    /// also queueing on `on[p % len]` (producer `p`) when `on` is not empty.
    pub(crate) fn start(wq: &Arc<Workqueue>, pin: bool, on: &[usize]) -> Flood {
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let cpus: Vec<usize> = podq::affinity::allowed_cpus()
            .expect("affinity")
            .iter()
            .collect();
        let producers = cpus
            .iter()
            .enumerate()
            .map(|(p, &cpu)| {
                let (wq, counts, stop) = (Arc::clone(wq), Arc::clone(&counts), Arc::clone(&stop));
                let on = (!on.is_empty()).then(|| on[p % on.len()]);
                std::thread::spawn(move || {
                    if pin {
                        let here = podq::CpuSet::from_iter([cpu]);
                        podq::affinity::pin_current_thread(&here).expect("pin");
                    }
                    produce(&wq, &counts, &stop, on);
                })
            })
            .collect();
        Flood {
            wq: Arc::clone(wq),
            counts,
            stop,
            producers,
        }
    }

    /// Flushes the workqueue and checks that everything queued before it has run.
    pub(crate) fn flush(&self) {
        let before = self.counts.queued.load(Ordering::SeqCst);
        assert!(self.wq.flush());
        assert!(
            self.counts.ran.load(Ordering::SeqCst) >= before,
            "flush returned early"
        );
    }

    /// Stops the producers, flushes, checks that every item ran, and returns how many were
    /// queued.
    pub(crate) fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for p in self.producers {
            p.join().expect("producer");
        }
        assert!(self.wq.flush());
        let queued = self.counts.queued.load(Ordering::SeqCst);
        assert_eq!(self.counts.ran.load(Ordering::SeqCst), queued, "items lost");
        queued
    }
}

/// One producer's loop (see [`Flood`]).
fn produce(wq: &Workqueue, counts: &Arc<Counts>, stop: &AtomicBool, on: Option<usize>) {
    let count = Arc::clone(counts);
    let work = podq::Work::new(move || {
        count.ran.fetch_add(1, Ordering::Relaxed);
    });
    let item = || {
        let counts = Arc::clone(counts);
        move || {
            counts.ran.fetch_add(1, Ordering::Relaxed);
        }
    };
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        assert!(wq.queue(item()));
        counts.queued.fetch_add(1, Ordering::SeqCst);
        if let Some(cpu) = on {
            assert!(wq.queue_on(cpu, item()).expect("an allowed CPU"));
            counts.queued.fetch_add(1, Ordering::SeqCst);
        }
        n += 1;
        if n.is_multiple_of(64) {
            if wq.queue_work(&work) {
                counts.queued.fetch_add(1, Ordering::SeqCst);
            }
            work.flush();
            while counts.queued.load(Ordering::SeqCst) > counts.ran.load(Ordering::SeqCst) + 4096
                && !stop.load(Ordering::Relaxed)
            {
                std::thread::yield_now();
            }
        }
    }
}
