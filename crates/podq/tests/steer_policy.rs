//! The steering policy (`podq::policy::steer`) driven with plain values and a fake clock:
//! decay, expiry, hysteresis, the vote interval, the overload fallback and the busy mean.

use std::time::Duration;

use podq::policy::steer::*;
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn idle(cpus: usize) -> impl FnOnce(usize) -> PodLoad {
    move |_| PodLoad {
        cpus,
        busy: Busy::IDLE,
    }
}

#[test]
fn decay_halves_every_half_life() {
    assert_eq!(decay(1024, Duration::ZERO), 1024);
    assert_eq!(decay(1024, HALF_LIFE), 512);
    assert_eq!(decay(1024, HALF_LIFE * 2), 256);
    assert_eq!(decay(1024, HALF_LIFE / 2), 768);
    assert_eq!(decay(u32::MAX, HALF_LIFE * 40), 0);
    assert_eq!(decay(WEIGHT_CAP, Duration::MAX), 0);
}

#[test]
fn the_first_item_makes_the_home_and_later_ones_at_home_weigh_more() {
    let mut p = Preference::default();
    assert_eq!(record(&mut p, 3, ms(1)), Recorded::Adopted);
    assert_eq!(p.home, Some(3));
    assert_eq!(p.weight, ITEM);
    assert_eq!(record(&mut p, 3, ms(1)), Recorded::AtHome);
    assert_eq!(p.weight, 2 * ITEM);
    // Ten milliseconds later the two items weigh one.
    assert_eq!(record(&mut p, 3, ms(11)), Recorded::AtHome);
    assert_eq!(p.weight, 2 * ITEM);
    for _ in 0..1000 {
        record(&mut p, 3, ms(11));
    }
    assert_eq!(p.weight, WEIGHT_CAP);
}

#[test]
fn a_preference_expires_after_fifty_ms_without_items() {
    let mut p = Preference::default();
    record(&mut p, 1, ms(100));
    assert_eq!(
        p.home_at(ms(100) + EXPIRY - Duration::from_nanos(1)),
        Some(1)
    );
    assert_eq!(p.home_at(ms(100) + EXPIRY), None);
    let plain = 0;
    assert_eq!(
        steer(p.snapshot(), ms(100) + EXPIRY, plain, 0, idle(1)),
        Steer::Plain(Unsteered::Expired)
    );
    // The next item adopts where it ran, at once: the old home is not held.
    assert_eq!(record(&mut p, 0, ms(100) + EXPIRY), Recorded::Adopted);
    assert_eq!(p.home, Some(0));
}

#[test]
fn the_home_moves_at_most_once_per_hold() {
    let mut p = Preference::default();
    record(&mut p, 0, ms(0));
    // Every item from now runs on pod 1, one per millisecond: the single item of weight
    // is outvoted at once, but the home holds until HOME_HOLD has passed.
    let mut moved_at = None;
    for t in 1..=200 {
        if let Recorded::Moved { from } = record(&mut p, 1, ms(t)) {
            assert_eq!(from, 0);
            moved_at = Some(ms(t));
            break;
        }
        assert_eq!(p.home, Some(0));
    }
    assert_eq!(moved_at, Some(HOME_HOLD));
    // And back: pod 0 again for every item, held another HOME_HOLD.
    let start = HOME_HOLD;
    let mut back = None;
    for t in 1..=300 {
        let now = start + ms(t);
        if let Recorded::Moved { .. } = record(&mut p, 0, now) {
            back = Some(now - start);
            break;
        }
    }
    assert_eq!(back, Some(HOME_HOLD));
}

#[test]
fn a_heavy_home_outlasts_a_few_strays() {
    let mut p = Preference::default();
    for t in 0..150 {
        record(&mut p, 2, ms(t) / 4);
    }
    let now = ms(200);
    // 150 items in 37 ms, the last ones capped; then strays on pod 5 past the hold.
    p.last_item = now;
    p.weight = WEIGHT_CAP;
    for _ in 0..63 {
        assert_eq!(record(&mut p, 5, now), Recorded::Elsewhere);
    }
    assert_eq!(record(&mut p, 5, now), Recorded::Moved { from: 2 });
}

#[test]
fn starts_vote_once_per_interval() {
    assert!(votes(Duration::ZERO, VOTE_INTERVAL));
    assert!(!votes(ms(1), ms(1) + VOTE_INTERVAL / 2));
    assert!(votes(ms(1), ms(1) + VOTE_INTERVAL));
    assert!(votes(ms(2), ms(1)), "a clock that went back votes");
}

#[test]
fn items_go_home_unless_crowded_or_loaded() {
    let mut p = Preference::default();
    record(&mut p, 1, ms(5));
    let snap = p.snapshot();
    assert_eq!(steer(snap, ms(6), 0, 0, idle(2)), Steer::Home(1));
    assert_eq!(steer(snap, ms(6), 0, 1, idle(2)), Steer::Home(1));
    // Two runnable on a two-CPU home: the third goes where ungrouped work goes.
    assert_eq!(
        steer(snap, ms(6), 0, 2, idle(2)),
        Steer::Plain(Unsteered::Crowded)
    );
    let at = |busy| {
        move |_| PodLoad {
            cpus: 2,
            busy: Busy::from_raw(busy),
        }
    };
    assert_eq!(
        steer(snap, ms(6), 0, 0, at(BUSY_LIMIT.raw())),
        Steer::Home(1)
    );
    assert_eq!(
        steer(snap, ms(6), 0, 0, at(BUSY_LIMIT.raw() + 1)),
        Steer::Plain(Unsteered::Loaded)
    );
    assert_eq!(Steer::Plain(Unsteered::Loaded).pod(0), 0);
    assert_eq!(Steer::Home(1).pod(0), 1);
}

#[test]
fn an_item_issued_at_home_stays_without_a_look_at_the_load() {
    let mut p = Preference::default();
    record(&mut p, 4, ms(0));
    let looked = |_| -> PodLoad { unreachable!("no load look for an item issued at home") };
    assert_eq!(steer(p.snapshot(), ms(1), 4, 100, looked), Steer::Home(4));
    assert_eq!(
        steer(Snapshot::default(), ms(1), 4, 0, looked),
        Steer::Plain(Unsteered::NoHome)
    );
}

#[test]
fn the_busy_mean_follows_samples_over_the_window() {
    let step = LOAD_WINDOW / LOAD_SAMPLES;
    assert_eq!(step, SAMPLE_INTERVAL);
    // The first sample is the mean; the next ones average with it until a window is
    // covered.
    let first = busy_mean(BusyMean::default(), Busy::FULL, Duration::ZERO);
    assert_eq!(first.mean, Busy::FULL);
    let second = busy_mean(first, Busy::IDLE, step);
    assert!((second.mean.as_f64() - 0.5).abs() < 0.01, "{second:?}");
    let mut mean = BusyMean::default();
    for _ in 0..4 * LOAD_SAMPLES {
        mean = busy_mean(mean, Busy::FULL, step);
    }
    assert_eq!(mean.covers, LOAD_WINDOW);
    assert_eq!(mean.mean, Busy::FULL);
    // Past the window, one sample moves the mean by its share of it.
    let after = busy_mean(mean, Busy::IDLE, step);
    assert!((after.mean.as_f64() - 0.975).abs() < 0.001, "{after:?}");
    // A whole window without samples: the next sample is the mean.
    assert_eq!(
        busy_mean(mean, Busy::IDLE, LOAD_WINDOW * 3).mean,
        Busy::IDLE
    );
    // Alternating samples settle near one half.
    let mut mean = BusyMean::default();
    for k in 0..400 {
        let sample = if k % 2 == 0 { Busy::FULL } else { Busy::IDLE };
        mean = busy_mean(mean, sample, step);
    }
    assert!((mean.mean.as_f64() - 0.5).abs() < 0.05, "{mean:?}");
    assert_eq!(Busy::of(3, 2), Busy::FULL);
    assert_eq!(Busy::of(1, 2), BUSY_LIMIT);
    assert_eq!(Busy::of(1, 0), Busy::IDLE);
}

proptest! {
    #[test]
    fn decay_never_grows_and_halves_exactly(w in 0u32..=u32::MAX, a in 0u64..200_000_000, b in 0u64..200_000_000) {
        let (short, long) = (a.min(b), a.max(b));
        prop_assert!(decay(w, Duration::from_nanos(long)) <= decay(w, Duration::from_nanos(short)));
        prop_assert!(decay(w, Duration::from_nanos(short)) <= w);
        prop_assert_eq!(decay(w, HALF_LIFE), w / 2);
    }

    #[test]
    fn the_home_never_moves_twice_within_the_hold(
        pods in proptest::collection::vec(0usize..4, 1..300),
        gaps in proptest::collection::vec(0u64..3_000_000, 300),
    ) {
        let mut p = Preference::default();
        let mut now = Duration::ZERO;
        let mut last_move: Option<Duration> = None;
        for (i, &pod) in pods.iter().enumerate() {
            now += Duration::from_nanos(gaps[i]);
            let before = p.home;
            match record(&mut p, pod, now) {
                Recorded::Moved { from } => {
                    prop_assert_eq!(before, Some(from));
                    if let Some(prev) = last_move {
                        prop_assert!(now - prev >= HOME_HOLD);
                    }
                    prop_assert!(now - p.home_changed < HOME_HOLD + Duration::from_nanos(1));
                    last_move = Some(now);
                }
                Recorded::Adopted => last_move = None,
                Recorded::AtHome => prop_assert_eq!(before, Some(pod)),
                Recorded::Elsewhere => prop_assert_ne!(before, Some(pod)),
            }
            prop_assert!(p.weight <= WEIGHT_CAP);
            prop_assert_eq!(p.last_item, now);
            prop_assert!(p.home.is_some());
        }
    }

    #[test]
    fn steering_never_sends_to_a_loaded_or_crowded_home(
        home in 0usize..8, plain in 0usize..8, runnable in 0usize..8,
        cpus in 1usize..8, busy in 0u32..=65536, age in 0u64..100,
    ) {
        let snap = Snapshot { home: Some(home), last_item: ms(1000) };
        let now = ms(1000 + age);
        let load = PodLoad { cpus, busy: Busy::from_raw(busy) };
        let to = steer(snap, now, plain, runnable, |_| load).pod(plain);
        if to != plain {
            prop_assert_eq!(to, home);
            prop_assert!(runnable < cpus && load.busy <= BUSY_LIMIT);
            prop_assert!(ms(age) < EXPIRY);
        }
    }
}
