//! loom models of the lane lock (`crates/podq/src/pool/core/queue/lane_lock.rs`): threads that
//! find it held sleep and are woken by a release that fences instead of exchanging, every
//! access to the guarded value checked by loom's cell. A lost wake-up is a deadlock, which loom
//! reports.

// The lock names `crate::sync`: here it is loom's.
use podq_loom::sync;

#[path = "../../podq/src/pool/core/queue/lane_lock.rs"]
#[allow(dead_code)]
mod lane_lock;

use lane_lock::LaneLock;
use sync::{thread, Arc};

/// Adds one to the guarded count under the lock, reading and writing it in two steps; the lock
/// is taken as the lanes take it, with a try first.
fn add_one(lock: &LaneLock<usize>) {
    let mut guard = match lock.try_lock() {
        Some(guard) => guard,
        None => lock.lock(),
    };
    let seen = guard.with(|count| *count);
    thread::yield_now();
    guard.with(|count| *count = seen + 1);
}

/// Two threads add one each: neither's access overlaps the other's, neither sleeps for good,
/// and both additions count.
#[test]
fn two_lockers_take_turns_and_both_count() {
    podq_loom::check(3, || {
        let lock = Arc::new(LaneLock::new(0usize));
        let other = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || add_one(&lock))
        };
        add_one(&lock);
        other.join().expect("the other locker");
        assert_eq!(lock.lock().with(|count| *count), 2);
    });
}

/// Three threads, so that two can sleep at once: every release wakes a sleeper that is still
/// needed, and all three additions count.
#[test]
fn three_lockers_with_two_asleep_all_count() {
    podq_loom::check(2, || {
        let lock = Arc::new(LaneLock::new(0usize));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let lock = Arc::clone(&lock);
                thread::spawn(move || add_one(&lock))
            })
            .collect();
        add_one(&lock);
        for other in others {
            other.join().expect("another locker");
        }
        assert_eq!(lock.lock().with(|count| *count), 3);
    });
}

/// `unlock` fences after the release: a flag stored before the lock is taken by one thread and
/// a flag the other stores and then reads after its own fence form a Dekker pair, as a push
/// and a worker's last look do (P3, W10): at least one of the two sees the other's store.
#[test]
fn unlock_fences_after_the_release() {
    use sync::atomic::{fence, AtomicBool, Ordering};
    podq_loom::check(3, || {
        let lock = Arc::new(LaneLock::new(()));
        let published = Arc::new(AtomicBool::new(false));
        let watching = Arc::new(AtomicBool::new(false));
        let worker = {
            let (published, watching) = (Arc::clone(&published), Arc::clone(&watching));
            thread::spawn(move || {
                watching.store(true, Ordering::Relaxed);
                fence(Ordering::SeqCst);
                published.load(Ordering::Relaxed)
            })
        };
        let guard = lock.lock();
        published.store(true, Ordering::Relaxed);
        let _fenced = guard.unlock();
        let pusher_saw = watching.load(Ordering::Relaxed);
        let worker_saw = worker.join().expect("the worker");
        assert!(pusher_saw || worker_saw, "neither saw the other");
    });
}
