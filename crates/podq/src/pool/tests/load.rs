//! The load signal (`load.rs`) driven by hand: one sample per interval, the estimate without
//! probes, a refused sample.

use std::time::Duration;

use crate::policy::steer::{self as policy, Busy};
use crate::pool::load::{LoadSignal, Sample};

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

#[test]
fn one_sample_per_interval() {
    let signal = LoadSignal::new(2);
    let busy = |n| {
        Some(Sample {
            waiting: 3,
            busy_workers: Some(n),
        })
    };
    let first = signal.read(us(1000), || busy(2));
    assert_eq!(first.pod.busy, Busy::FULL);
    assert_eq!((first.waiting, first.busy_workers), (3, 2));
    // Within the interval: no sample.
    let again = signal.read(us(1100), || unreachable!("sampled within the interval"));
    assert_eq!(again, first);
    // After it: sampled, and averaged with the first (the samples cover less than a
    // window).
    let later = signal.read(us(1200), || busy(0));
    assert_eq!(later.busy_workers, 0);
    assert_eq!(later.pod.busy, policy::BUSY_LIMIT);
}

#[test]
fn without_probes_waiting_tasks_count_every_cpu_busy() {
    let signal = LoadSignal::new(4);
    let s = |waiting| {
        Some(Sample {
            waiting,
            busy_workers: None,
        })
    };
    assert_eq!(signal.read(us(0), || s(1)).busy_workers, 4);
    assert_eq!(signal.read(us(10_000), || s(0)).pod.busy, Busy::IDLE);
}

#[test]
fn a_refused_sample_keeps_the_old_values_until_the_next_interval() {
    let signal = LoadSignal::new(1);
    let before = signal.read(us(0), || None);
    assert_eq!(before.pod.busy, Busy::IDLE);
    let still = signal.read(us(100), || unreachable!("the claim stands"));
    assert_eq!(still, before);
}
