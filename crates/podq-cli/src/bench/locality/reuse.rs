//! Whether an item ran on the CPU where its group's previous item ran, whose private caches may
//! still hold the group's data, or moved to another CPU, and what each cost.
//!
//! Steering sends a group's items to a pod; this says whether they also reached a CPU, for
//! every system alike (the peers have no groups, and their items land where they land). Each
//! working set remembers the CPU that walked it last ([`super::WorkingSet::walked_here`]); an
//! item that starts on that CPU counts as [`Placed::Same`], on another as [`Placed::Moved`], and
//! the first item of a group, or one on a system that cannot tell the CPU, as
//! [`Placed::Unknown`]. Two items of one group running at once both compare with whoever
//! recorded last: the count is a measure, not a lock.

use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;

use crate::bench::harness::new_histogram;

/// Where an item ran, against its group's previous item; kept per item as a `u64` slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placed {
    /// The first item of its group, or the CPU could not be read.
    Unknown = 0,
    /// On the CPU where its group's previous item ran.
    Same = 1,
    /// On another CPU.
    Moved = 2,
}

impl Placed {
    /// Where an item ran on `cpu`, its group's previous item having run on `last`.
    pub(crate) fn of(cpu: Option<usize>, last: Option<usize>) -> Placed {
        match (cpu, last) {
            (Some(cpu), Some(last)) if cpu == last => Placed::Same,
            (Some(_), Some(_)) => Placed::Moved,
            _ => Placed::Unknown,
        }
    }

    /// The slot's value.
    pub(crate) fn raw(self) -> u64 {
        self as u64
    }

    /// What a slot holds.
    fn from_raw(raw: u64) -> Placed {
        [Placed::Same, Placed::Moved]
            .into_iter()
            .find(|p| p.raw() == raw)
            .unwrap_or(Placed::Unknown)
    }
}

/// One run's or several runs' split of the items by [`Placed`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct CpuReuse {
    /// Of the items whose place is known, the fraction that ran on their group's previous
    /// item's CPU.
    pub(crate) same: f64,
    /// Run time p50 of the items that ran on their group's previous item's CPU, in ns.
    pub(crate) same_p50: Option<u64>,
    /// Run time p50 of the items that ran on another CPU, in ns.
    pub(crate) moved_p50: Option<u64>,
}

impl CpuReuse {
    /// The split of the items of every producer in `producers`, each its items' places and
    /// run times (the same item at the same index); `None` when no item's place is known.
    pub(crate) fn of<'a>(
        producers: impl IntoIterator<Item = (&'a [AtomicU64], &'a [AtomicU64])>,
    ) -> Option<CpuReuse> {
        Self::of_items(producers.into_iter().flat_map(|(placed, run_ns)| {
            placed
                .iter()
                .zip(run_ns)
                .map(|(p, ns)| (p.load(Ordering::Relaxed), ns.load(Ordering::Relaxed)))
        }))
    }

    /// The split of `items`, each a [`Placed::raw`] and a run time in ns.
    fn of_items(items: impl IntoIterator<Item = (u64, u64)>) -> Option<CpuReuse> {
        let (mut same, mut moved): (Histogram<u64>, Histogram<u64>) =
            (new_histogram(), new_histogram());
        for (placed, ns) in items {
            match Placed::from_raw(placed) {
                Placed::Same => same.saturating_record(ns),
                Placed::Moved => moved.saturating_record(ns),
                Placed::Unknown => {}
            }
        }
        let known = same.len() + moved.len();
        let p50 = |h: &Histogram<u64>| (!h.is_empty()).then(|| h.value_at_quantile(0.5));
        (known > 0).then(|| CpuReuse {
            same: same.len() as f64 / known as f64,
            same_p50: p50(&same),
            moved_p50: p50(&moved),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_is_placed_against_its_groups_previous_cpu() {
        assert_eq!(Placed::of(Some(3), Some(3)), Placed::Same);
        assert_eq!(Placed::of(Some(3), Some(1)), Placed::Moved);
        assert_eq!(Placed::of(Some(3), None), Placed::Unknown);
        assert_eq!(Placed::of(None, Some(3)), Placed::Unknown);
        for p in [Placed::Unknown, Placed::Same, Placed::Moved] {
            assert_eq!(Placed::from_raw(p.raw()), p);
        }
    }

    #[test]
    fn the_split_counts_known_items_and_takes_each_sides_median() {
        let (s, m, u) = (
            Placed::Same.raw(),
            Placed::Moved.raw(),
            Placed::Unknown.raw(),
        );
        let items = [(s, 100), (s, 110), (s, 120), (m, 900), (u, 5)];
        let reuse = CpuReuse::of_items(items).expect("known items");
        assert!((reuse.same - 0.75).abs() < 1e-9, "{reuse:?}");
        assert_eq!(reuse.same_p50, Some(110));
        assert_eq!(reuse.moved_p50, Some(900));
        // Only unknown places: nothing to say.
        assert_eq!(CpuReuse::of_items([(u, 5)]), None);
        // Every item on its group's CPU: no moved side.
        let all = CpuReuse::of_items([(s, 7)]).expect("one item");
        assert_eq!((all.same, all.moved_p50), (1.0, None));
    }
}
