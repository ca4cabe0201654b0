//! Measures, on the machine at hand, the user-space analogues of the `kernel` profile's
//! operating-system costs: `cargo run --release -p podq-sim --example measure_os -- [ROUNDS]`.
//! The critical section and the test's loop are the profile's fixed `critical_section_ns`
//! and `producer_item_ns` (`src/calibrated.rs`); the wake call and the switch check the size
//! of the fitted `wake_call_ns`, which a switch costs too (`kernel_fit::derived`),
//! and are not used: on a shared VM they are the hypervisor's as much as the kernel's.
//!
//! - `wake_call_ns`: the waker's `FUTEX_WAKE` of a thread asleep on its own CPU less the
//!   same call finding no waiter: `try_to_wake_up` without the system call.
//! - `switch_ns`: half the round trip of two threads pinned to one CPU that wake each other
//!   by futex, less the wake call: a sleep and the switch to the next thread.
//! - `critical_section_ns`: an uncontended lock, a list append and removal and three count
//!   updates on one thread, the user-space analogue of `__queue_work`'s work under the lock.
//! - `producer_item_ns`: one pass of `lib/test_workqueue.c`'s loop outside `queue_work` when
//!   the item has run: `reinit_completion` and `wait_for_completion`'s check of a done
//!   completion (each an uncontended lock and a count), `INIT_WORK`'s stores, two clock
//!   reads and the latency's store.
//! - line move: half the round trip of one cache line between CPU 0 and each other CPU (up to
//!   63), the platform's line latency at that distance, as the public core-to-core tables
//!   measure it.
//! - remote wake: the `FUTEX_WAKE` call that wakes a thread asleep on another, idle CPU, and
//!   the time until that thread runs (the idle CPU's exit and the wake-up's path), after 20 us
//!   and 2 ms of idleness.
//!
//! Each figure but the remote wake's is the least of five medians, so that a burst of load on
//! a shared machine does not enter it. Linux only.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pin(cpu: usize) {
    // SAFETY: a zeroed `cpu_set_t` is a valid empty set; the calls only read it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "cannot pin to CPU {cpu}"
        );
    }
}

fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a live, aligned u32; the kernel only reads it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as `futex_wait`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median `FUTEX_WAKE` call that wakes a thread asleep on the waker's own CPU. The
/// sleeper is `SCHED_IDLE`, so the wake-up does not preempt the waker and the call is
/// `try_to_wake_up`'s own path, without an interrupt to another CPU (which a virtual
/// machine's hypervisor would inflate).
fn wake_call(rounds: usize) -> f64 {
    let sleeper = Sleeper::start(0, true, || {});
    pin(0);
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        sleeper.wait_asleep(std::thread::yield_now);
        // Long enough for the sleeper to be in the futex; yielding rather than sleeping,
        // so that the CPU does not idle (an idle exit, in a virtual machine a return from
        // the hypervisor, would enter the call's time).
        let wait = Instant::now();
        while wait.elapsed() < Duration::from_micros(50) {
            std::thread::yield_now();
        }
        sleeper.word.store(1, Ordering::Release);
        let start = Instant::now();
        futex_wake(&sleeper.word);
        samples.push(start.elapsed().as_nanos() as f64);
    }
    sleeper.stop(std::thread::yield_now);
    median(samples)
}

/// A thread pinned to a CPU that sleeps on a futex word, round after round: it sets the word
/// to 0 (asleep, or about to be) and sleeps until a waker sets it to 1, then calls its
/// `woken` and goes back to sleep; 2 stops it.
struct Sleeper {
    word: Arc<AtomicU32>,
    thread: std::thread::JoinHandle<()>,
}

impl Sleeper {
    /// Starts it on `cpu`, at `SCHED_IDLE` priority if `idle_class` (so that a wake-up does
    /// not preempt a waker on the same CPU).
    fn start(cpu: usize, idle_class: bool, mut woken: impl FnMut() + Send + 'static) -> Sleeper {
        let word = Arc::new(AtomicU32::new(1));
        let thread = {
            let word = Arc::clone(&word);
            std::thread::spawn(move || {
                pin(cpu);
                if idle_class {
                    // SAFETY: a zeroed `sched_param` is priority 0, what SCHED_IDLE requires.
                    unsafe {
                        let param: libc::sched_param = std::mem::zeroed();
                        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
                    }
                }
                let mut first = true;
                loop {
                    match word.load(Ordering::Acquire) {
                        2 => return,
                        1 => {
                            if !std::mem::take(&mut first) {
                                woken();
                            }
                            word.store(0, Ordering::Release);
                            while word.load(Ordering::Acquire) == 0 {
                                futex_wait(&word, 0);
                            }
                        }
                        _ => std::hint::spin_loop(),
                    }
                }
            })
        };
        Sleeper { word, thread }
    }

    /// Returns once it is asleep or about to be, calling `wait` meanwhile.
    fn wait_asleep(&self, wait: impl Fn()) {
        while self.word.load(Ordering::Acquire) != 0 {
            wait();
        }
    }

    /// Stops it and waits for its end.
    fn stop(self, wait: impl Fn()) {
        self.wait_asleep(wait);
        self.word.store(2, Ordering::Release);
        futex_wake(&self.word);
        self.thread.join().unwrap();
    }
}

/// The median `FUTEX_WAKE` call that finds no waiter: the system call's own cost, which the
/// kernel's wake-ups (`wake_up_process` from inside the kernel) do not pay.
fn empty_wake(rounds: usize) -> f64 {
    let word = AtomicU32::new(0);
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        futex_wake(&word);
        samples.push(start.elapsed().as_nanos() as f64);
    }
    median(samples)
}

/// The median of one pass, in a loop of 1,000, of what `__queue_work` does under the pool
/// lock, in user space on one thread: take and release an uncontended lock, append an item
/// to a list and take one off, and update three counts.
fn critical_section(rounds: usize) -> f64 {
    const BATCH: usize = 1_000;
    let lock = Ticket::default();
    let mut list = std::collections::VecDeque::with_capacity(16);
    let mut counts = [0u64; 3];
    let mut samples = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let start = Instant::now();
        for i in 0..BATCH {
            lock.take();
            list.push_back(std::hint::black_box(r + i));
            std::hint::black_box(list.pop_front());
            for c in &mut counts {
                *c = std::hint::black_box(*c + 1);
            }
            lock.give();
        }
        samples.push(start.elapsed().as_nanos() as f64 / BATCH as f64);
    }
    median(samples)
}

/// The median of one pass, in a loop of 1,000, of the kernel test's loop outside its queue
/// call when the item has already run, in user space on one thread: the completion's lock
/// taken twice (re-initialised, then found done), the work's three words set, two clock
/// reads and the latency stored.
fn producer_item(rounds: usize) -> f64 {
    const BATCH: usize = 1_000;
    let completion = Ticket::default();
    let mut work = [0usize; 3];
    let mut latencies = vec![0u64; BATCH];
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for (i, slot) in latencies.iter_mut().enumerate() {
            completion.take();
            let mut done = std::hint::black_box(0u32);
            completion.give();
            work = std::hint::black_box([i, i + 1, i + 2]);
            let t0 = Instant::now();
            let t1 = Instant::now();
            *slot = std::hint::black_box((t1 - t0).as_nanos() as u64);
            completion.take();
            done = std::hint::black_box(done + 1);
            completion.give();
            std::hint::black_box(done);
        }
        std::hint::black_box((&work, &latencies));
        samples.push(start.elapsed().as_nanos() as f64 / BATCH as f64);
    }
    median(samples)
}

/// A ticket spin lock in one line, as the kernel's queued spin lock is one word.
#[derive(Default)]
struct Ticket {
    next: AtomicU32,
    serving: AtomicU32,
}

impl Ticket {
    fn take(&self) {
        let mine = self.next.fetch_add(1, Ordering::Relaxed);
        while self.serving.load(Ordering::Acquire) != mine {
            std::hint::spin_loop();
        }
    }

    fn give(&self) {
        self.serving.fetch_add(1, Ordering::Release);
    }
}

/// Half the median round trip of two threads on CPU 0 that wake each other by futex.
fn half_round_trip_one_cpu(rounds: usize) -> f64 {
    let turn = Arc::new(AtomicU32::new(0));
    let other = {
        let turn = Arc::clone(&turn);
        std::thread::spawn(move || {
            pin(0);
            for _ in 0..rounds {
                while turn.load(Ordering::Acquire) != 1 {
                    futex_wait(&turn, 0);
                }
                turn.store(0, Ordering::Release);
                futex_wake(&turn);
            }
        })
    };
    pin(0);
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        turn.store(1, Ordering::Release);
        futex_wake(&turn);
        while turn.load(Ordering::Acquire) != 0 {
            futex_wait(&turn, 1);
        }
        samples.push(start.elapsed().as_nanos() as f64 / 2.0);
    }
    other.join().unwrap();
    median(samples)
}

/// A cache line of its own, so that a ping-pong moves only that line.
#[repr(align(128))]
struct Line(AtomicU32);

/// Half the median round trip of a cache line between threads pinned to CPUs `a` and `b`,
/// each spinning until the other has written it: one line move at that distance, in batches
/// of 1,000 round trips.
fn line_move(a: usize, b: usize, rounds: usize) -> f64 {
    const BATCH: u32 = 1_000;
    let line = Arc::new(Line(AtomicU32::new(0)));
    let total = rounds as u32 * BATCH;
    let other = {
        let line = Arc::clone(&line);
        std::thread::spawn(move || {
            pin(b);
            let mut n = 1;
            while n < 2 * total {
                while line.0.load(Ordering::Acquire) != n {
                    std::hint::spin_loop();
                }
                line.0.store(n + 1, Ordering::Release);
                n += 2;
            }
        })
    };
    pin(a);
    let mut samples = Vec::with_capacity(rounds);
    let mut n = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..BATCH {
            line.0.store(n + 1, Ordering::Release);
            while line.0.load(Ordering::Acquire) != n + 2 {
                std::hint::spin_loop();
            }
            n += 2;
        }
        samples.push(start.elapsed().as_nanos() as f64 / (2 * BATCH) as f64);
    }
    other.join().unwrap();
    pin(0);
    median(samples)
}

/// The median `FUTEX_WAKE` call that wakes a thread asleep on idle CPU `b` from CPU `a`,
/// and the median time from before that call until the woken thread runs (the idle CPU's
/// exit and the wake-up's path), with `gap_us` between rounds for the CPU to go idle.
fn remote_wake(a: usize, b: usize, rounds: usize, gap_us: u64) -> (f64, f64) {
    let woke = Arc::new(std::sync::Mutex::new(Vec::with_capacity(rounds)));
    let origin = Instant::now();
    let sleeper = {
        let woke = Arc::clone(&woke);
        Sleeper::start(b, false, move || {
            let t = origin.elapsed().as_nanos() as u64;
            woke.lock().unwrap().push(t);
        })
    };
    pin(a);
    let (mut calls, mut sent) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        sleeper.wait_asleep(std::hint::spin_loop);
        std::thread::sleep(Duration::from_micros(gap_us));
        let t0 = origin.elapsed().as_nanos() as u64;
        sleeper.word.store(1, Ordering::Release);
        futex_wake(&sleeper.word);
        let t1 = origin.elapsed().as_nanos() as u64;
        calls.push((t1 - t0) as f64);
        sent.push(t0);
    }
    sleeper.stop(std::hint::spin_loop);
    pin(0);
    let woke = woke.lock().unwrap();
    let latency = sent
        .iter()
        .zip(woke.iter())
        .map(|(s, w)| w.saturating_sub(*s) as f64)
        .collect();
    (median(calls), median(latency))
}

fn least_of_five(mut f: impl FnMut() -> f64) -> f64 {
    (0..5).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    pin(0);
    let call = least_of_five(|| empty_wake(rounds));
    let wake = least_of_five(|| wake_call(rounds));
    let half = least_of_five(|| half_round_trip_one_cpu(rounds));
    let critical = least_of_five(|| critical_section(rounds / 10));
    let own = least_of_five(|| producer_item(rounds / 10));
    println!("FUTEX_WAKE, no waiter     {call:.0}");
    println!("FUTEX_WAKE, a sleeper     {wake:.0}   (on the same CPU)");
    println!("half round trip           {half:.0}   (two threads on one CPU waking each other)");
    println!(
        "wake_call_ns              {:.0}   (the wake less the empty call)",
        wake - call
    );
    println!(
        "switch_ns                 {:.0}   (the half round trip less the wake)",
        half - wake
    );
    println!("critical_section_ns       {critical:.1}");
    println!("producer_item_ns          {own:.1}");
    for b in 1..cpus.min(64) {
        let line = least_of_five(|| line_move(0, b, rounds / 10));
        println!("line move 0<->{b:<3}          {line:.1}");
        for gap in [20, 2_000] {
            let (call, latency) = remote_wake(0, b, rounds / 4, gap);
            println!(
                "remote wake 0->{b:<3} gap {gap:>5} us   call {call:.0}   until it runs {latency:.0}"
            );
        }
    }
}
