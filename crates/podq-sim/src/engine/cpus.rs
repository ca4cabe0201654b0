//! The CPUs' side of the engine: which thread runs where, idle CPUs as a bit set, and the
//! search for an idle CPU in a mask.

use std::collections::VecDeque;

/// One CPU: the thread on it and the threads waiting for it.
#[derive(Clone, Debug, Default)]
pub(super) struct Cpu {
    /// The thread running (or spinning, or switching in) on this CPU.
    pub(super) current: Option<u32>,
    /// Runnable threads waiting for this CPU, in order.
    pub(super) runq: VecDeque<u32>,
    /// When `current` began its time slice.
    pub(super) slice_start: u64,
}

/// A set of dense CPU indices, 64 to a word.
pub(super) type Mask = Vec<u64>;

/// A mask of `len` CPUs with `cpus` set.
pub(super) fn mask_of(len: usize, cpus: impl IntoIterator<Item = usize>) -> Mask {
    let mut mask = vec![0u64; len.div_ceil(64)];
    for cpu in cpus {
        mask[cpu / 64] |= 1 << (cpu % 64);
    }
    mask
}

/// Whether `cpu` is in `mask`.
#[inline]
pub(super) fn contains(mask: &[u64], cpu: usize) -> bool {
    mask[cpu / 64] & (1 << (cpu % 64)) != 0
}

/// Sets or clears `cpu` in `mask`.
#[inline]
pub(super) fn assign(mask: &mut [u64], cpu: usize, on: bool) {
    if on {
        mask[cpu / 64] |= 1 << (cpu % 64);
    } else {
        mask[cpu / 64] &= !(1 << (cpu % 64));
    }
}

/// The first CPU at or after `start` (wrapping around) that is in both `a` and `b`.
pub(super) fn first_common(a: &[u64], b: &[u64], start: usize) -> Option<usize> {
    let words = a.len();
    let (first_word, first_bit) = (start / 64, start % 64);
    for k in 0..=words {
        let w = (first_word + k) % words;
        let mut bits = a[w] & b[w];
        if k == 0 {
            bits &= u64::MAX << first_bit;
        } else if k == words {
            bits &= !(u64::MAX << first_bit);
        }
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_wraps_around_from_its_start() {
        let a = mask_of(130, [3, 70, 129]);
        let all = mask_of(130, 0..130);
        assert_eq!(first_common(&a, &all, 0), Some(3));
        assert_eq!(first_common(&a, &all, 4), Some(70));
        assert_eq!(first_common(&a, &all, 71), Some(129));
        assert_eq!(first_common(&a, &all, 130 - 1), Some(129));
        let b = mask_of(130, [3]);
        assert_eq!(first_common(&a, &b, 100), Some(3));
        assert_eq!(first_common(&a, &mask_of(130, []), 0), None);
        let mut m = mask_of(130, []);
        assign(&mut m, 65, true);
        assert!(contains(&m, 65));
        assign(&mut m, 65, false);
        assert!(!contains(&m, 65));
    }
}
