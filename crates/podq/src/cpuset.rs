//! [`CpuSet`]: a set of CPU ids, as the kernel writes them (`0-3,8-11` or `0000000f`).
//!
//! A `CpuSet` is a bitset: `contains` is one shift and one load, which matters because the
//! runtime looks CPUs up on every `queue`. Sets compare, hash and print by their members only.

use std::fmt;
use std::str::FromStr;

/// Bits per word of the bitset.
const WORD_BITS: usize = 64;

/// The largest CPU id a parsed set may hold: 2^22 - 1, far above any real machine (the kernel's
/// `NR_CPUS` tops out at 8192), yet small enough that a hostile `0-99999999999` cannot make
/// podq allocate gigabytes.
pub const MAX_CPU_ID: usize = (1 << 22) - 1;

/// A set of CPU ids, ascending, no duplicates.
///
/// ```
/// use podq::CpuSet;
/// let set = CpuSet::parse_list("0-3,8-11\n").unwrap();
/// assert_eq!(set.len(), 8);
/// assert!(set.contains(9));
/// assert_eq!(set.to_string(), "0-3,8-11");
/// assert_eq!(CpuSet::parse_mask("00000000,00000f0f").unwrap(), set);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, Debug)]
pub struct CpuSet {
    /// Bit `c % 64` of word `c / 64` is set when CPU `c` is a member. Invariant: the last word,
    /// if any, is not zero, so that equal sets have equal `words` (derived `Eq` and `Hash`).
    words: Vec<u64>,
}

/// A CPU list or mask that could not be parsed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("invalid CPU {form} '{text}': {reason}")]
pub struct ParseCpuSetError {
    /// `"list"` or `"mask"`: the form that was expected.
    pub form: &'static str,
    /// The text as given (NUL bytes and surrounding whitespace removed).
    pub text: String,
    /// What is wrong, and what was expected.
    pub reason: String,
}

impl ParseCpuSetError {
    fn list(text: &str, reason: impl Into<String>) -> Self {
        ParseCpuSetError {
            form: "list",
            text: text.to_owned(),
            reason: reason.into(),
        }
    }

    fn mask(text: &str, reason: impl Into<String>) -> Self {
        ParseCpuSetError {
            form: "mask",
            text: text.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Removes NUL bytes and surrounding whitespace (sysfs files end in `\n`, some old kernels pad
/// with NULs).
fn clean(s: &str) -> String {
    s.chars()
        .filter(|&c| c != '\0')
        .collect::<String>()
        .trim()
        .to_owned()
}

impl CpuSet {
    /// An empty set.
    pub fn new() -> Self {
        CpuSet { words: Vec::new() }
    }

    /// Parses a CPU list such as `0-3,8-11`, `5`, or the empty string.
    ///
    /// NUL bytes, whitespace and trailing newlines are ignored. Ranges may overlap.
    ///
    /// # Errors
    ///
    /// [`ParseCpuSetError`] naming the text when an element is not a CPU id or an ascending
    /// range `a-b`, or when an id exceeds [`MAX_CPU_ID`].
    pub fn parse_list(s: &str) -> Result<Self, ParseCpuSetError> {
        let text = clean(s);
        let mut set = CpuSet::new();
        if text.is_empty() {
            return Ok(set);
        }
        let id = |part: &str| -> Result<usize, ParseCpuSetError> {
            let part = part.trim();
            let cpu: usize = part.parse().map_err(|_| {
                ParseCpuSetError::list(
                    &text,
                    format!("'{part}' is not a CPU id; expected ids and ranges such as 0-3,8-11"),
                )
            })?;
            if cpu > MAX_CPU_ID {
                return Err(ParseCpuSetError::list(
                    &text,
                    format!("CPU {cpu} is above the largest supported id {MAX_CPU_ID}"),
                ));
            }
            Ok(cpu)
        };
        for element in text.split(',') {
            match element.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (id(lo)?, id(hi)?);
                    if lo > hi {
                        return Err(ParseCpuSetError::list(
                            &text,
                            format!("range '{element}' is descending; expected low-high"),
                        ));
                    }
                    set.insert_range(lo, hi);
                }
                None => {
                    set.insert(id(element)?);
                }
            }
        }
        Ok(set)
    }

    /// Parses a hex CPU mask such as `00000000,0000000f`: comma-separated 32-bit words, highest
    /// word first, any number of words (the last word holds CPUs 0-31).
    ///
    /// NUL bytes, whitespace and trailing newlines are ignored; an empty text is the empty set.
    ///
    /// # Errors
    ///
    /// [`ParseCpuSetError`] naming the text when a word is empty, longer than 8 hex digits or
    /// not hexadecimal, or when the mask names a CPU above [`MAX_CPU_ID`].
    pub fn parse_mask(s: &str) -> Result<Self, ParseCpuSetError> {
        let text = clean(s);
        let mut set = CpuSet::new();
        if text.is_empty() {
            return Ok(set);
        }
        let words: Vec<&str> = text.split(',').map(str::trim).collect();
        for (i, word) in words.iter().rev().enumerate() {
            let word = word.strip_prefix("0x").unwrap_or(word);
            if word.is_empty() || word.len() > 8 {
                return Err(ParseCpuSetError::mask(
                    &text,
                    format!("'{word}' is not a 32-bit word; expected 1 to 8 hex digits per comma-separated word, such as 00000000,0000000f"),
                ));
            }
            let bits = u32::from_str_radix(word, 16).map_err(|_| {
                ParseCpuSetError::mask(
                    &text,
                    format!(
                        "'{word}' is not hexadecimal; expected words such as 00000000,0000000f"
                    ),
                )
            })?;
            if bits == 0 {
                continue;
            }
            let base = i * 32;
            let top = base + 31 - bits.leading_zeros() as usize;
            if top > MAX_CPU_ID {
                return Err(ParseCpuSetError::mask(
                    &text,
                    format!("CPU {top} is above the largest supported id {MAX_CPU_ID}"),
                ));
            }
            for bit in 0..32 {
                if bits & (1 << bit) != 0 {
                    set.insert(base + bit);
                }
            }
        }
        Ok(set)
    }

    /// Whether `cpu` is in the set.
    #[inline]
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / WORD_BITS)
            .is_some_and(|w| w & (1 << (cpu % WORD_BITS)) != 0)
    }

    /// Adds `cpu`; returns whether it was new.
    pub fn insert(&mut self, cpu: usize) -> bool {
        let (w, bit) = (cpu / WORD_BITS, 1u64 << (cpu % WORD_BITS));
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let new = self.words[w] & bit == 0;
        self.words[w] |= bit;
        new
    }

    /// Removes `cpu`; returns whether it was a member.
    pub fn remove(&mut self, cpu: usize) -> bool {
        let (w, bit) = (cpu / WORD_BITS, 1u64 << (cpu % WORD_BITS));
        let Some(word) = self.words.get_mut(w) else {
            return false;
        };
        let was = *word & bit != 0;
        *word &= !bit;
        self.trim();
        was
    }

    /// Adds every CPU from `lo` to `hi`, both included.
    fn insert_range(&mut self, lo: usize, hi: usize) {
        for cpu in lo..=hi {
            self.insert(cpu);
        }
    }

    /// Restores the invariant that the last word is not zero.
    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// The number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set has no CPU.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The CPUs, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(i * WORD_BITS + bit)
            })
        })
    }

    /// The lowest CPU, or `None` when empty.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The highest CPU, or `None` when empty.
    pub fn last(&self) -> Option<usize> {
        let w = self.words.len().checked_sub(1)?;
        let word = self.words[w];
        Some(w * WORD_BITS + (WORD_BITS - 1 - word.leading_zeros() as usize))
    }

    /// The CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut set = CpuSet {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
        };
        set.trim();
        set
    }

    /// The CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let (long, short) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut words = long.words.clone();
        for (w, s) in words.iter_mut().zip(&short.words) {
            *w |= s;
        }
        CpuSet { words }
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

impl Extend<usize> for CpuSet {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, iter: I) {
        for cpu in iter {
            self.insert(cpu);
        }
    }
}

/// Writes the compact CPU list (`0-7,88-95`; empty for the empty set), as the kernel does.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cpus = self.iter().peekable();
        let mut first = true;
        while let Some(lo) = cpus.next() {
            let mut hi = lo;
            while cpus.peek() == Some(&(hi + 1)) {
                hi += 1;
                cpus.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if hi == lo {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

/// Parses a CPU list, as [`CpuSet::parse_list`].
impl FromStr for CpuSet {
    type Err = ParseCpuSetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse_list(s)
    }
}

/// Serializes as an array of CPU ids, ascending.
#[cfg(feature = "serde")]
impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Deserializes from an array of CPU ids, in any order.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ids = <Vec<usize> as serde::Deserialize>::deserialize(deserializer)?;
        if let Some(&bad) = ids.iter().find(|&&c| c > MAX_CPU_ID) {
            return Err(serde::de::Error::custom(format!(
                "CPU {bad} is above the largest supported id {MAX_CPU_ID}"
            )));
        }
        Ok(ids.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[usize]) -> CpuSet {
        ids.iter().copied().collect()
    }

    #[test]
    fn parses_lists() {
        assert_eq!(CpuSet::parse_list("").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse_list("\n").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse_list("5").unwrap(), set(&[5]));
        assert_eq!(
            CpuSet::parse_list("0-3,8-11\n").unwrap(),
            set(&[0, 1, 2, 3, 8, 9, 10, 11])
        );
        assert_eq!(CpuSet::parse_list("0-1\0\0\n").unwrap(), set(&[0, 1]));
        assert_eq!(CpuSet::parse_list(" 7 , 3-4 ").unwrap(), set(&[3, 4, 7]));
        assert_eq!(CpuSet::parse_list("2,2,1-2").unwrap(), set(&[1, 2]));
        assert_eq!(CpuSet::parse_list("200").unwrap().last(), Some(200));
    }

    #[test]
    fn rejects_garbage_lists_and_names_the_text() {
        for bad in [
            "x",
            "1-",
            "-1",
            "3-1",
            "1,,2",
            "0-3;8",
            "1.5",
            "99999999999",
        ] {
            let err = CpuSet::parse_list(bad).unwrap_err();
            assert_eq!(err.text, bad);
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn parses_masks() {
        assert_eq!(
            CpuSet::parse_mask("0000000f\n").unwrap(),
            set(&[0, 1, 2, 3])
        );
        assert_eq!(
            CpuSet::parse_mask("00000000,0000000f").unwrap(),
            set(&[0, 1, 2, 3])
        );
        assert_eq!(
            CpuSet::parse_mask("00000001,80000000").unwrap(),
            set(&[31, 32])
        );
        assert_eq!(
            CpuSet::parse_mask("1,00000000,00000000\0").unwrap(),
            set(&[64])
        );
        assert_eq!(
            CpuSet::parse_mask("ff").unwrap(),
            set(&[0, 1, 2, 3, 4, 5, 6, 7])
        );
        assert_eq!(CpuSet::parse_mask("").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse_mask("00000000").unwrap(), CpuSet::new());
    }

    #[test]
    fn rejects_garbage_masks() {
        for bad in ["xyz", "0000000g", "1,,2", "123456789", "0-3"] {
            let err = CpuSet::parse_mask(bad).unwrap_err();
            assert_eq!(err.form, "mask");
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn displays_compact_lists() {
        assert_eq!(CpuSet::new().to_string(), "");
        assert_eq!(set(&[3]).to_string(), "3");
        assert_eq!(set(&[0, 1, 2, 5, 7, 8]).to_string(), "0-2,5,7-8");
        let epyc: CpuSet = (0..8).chain(88..96).collect();
        assert_eq!(epyc.to_string(), "0-7,88-95");
        assert_eq!(CpuSet::parse_list(&epyc.to_string()).unwrap(), epyc);
    }

    #[test]
    fn set_operations() {
        let a = set(&[1, 2, 3, 70]);
        let b = set(&[2, 3, 4]);
        assert_eq!(a.intersection(&b), set(&[2, 3]));
        assert_eq!(a.union(&b), set(&[1, 2, 3, 4, 70]));
        assert!(set(&[2, 3]).is_subset(&a));
        assert!(!a.is_subset(&b));
        assert!(CpuSet::new().is_subset(&b));
        assert_eq!(a.first(), Some(1));
        assert_eq!(a.last(), Some(70));
        assert_eq!(a.len(), 4);
        // Equal members, equal sets, whatever the history.
        let mut c = set(&[1, 2, 3, 70, 130]);
        assert!(c.remove(130));
        assert!(!c.remove(500));
        assert_eq!(c, a);
        assert_eq!(set(&[70]).intersection(&set(&[1])), CpuSet::new());
        assert!(set(&[70]).intersection(&set(&[1])).is_empty());
        let mut d = CpuSet::new();
        assert!(d.insert(4));
        assert!(!d.insert(4));
        assert_eq!(d.iter().collect::<Vec<_>>(), vec![4]);
    }

    /// The kernel's mask form of `set`: 32-bit words, highest first.
    fn mask_of(set: &CpuSet) -> String {
        let words = set.last().map_or(1, |l| l / 32 + 1);
        (0..words)
            .rev()
            .map(|w| {
                let bits = set
                    .iter()
                    .filter(|c| c / 32 == w)
                    .fold(0u32, |acc, c| acc | 1 << (c % 32));
                format!("{bits:08x}")
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_a_sorted_set_and_round_trips(
            a in proptest::collection::btree_set(0usize..300, 0..40),
            b in proptest::collection::btree_set(0usize..300, 0..40),
        ) {
            let (x, y): (CpuSet, CpuSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            proptest::prop_assert_eq!(x.iter().collect::<Vec<_>>(), a.iter().copied().collect::<Vec<_>>());
            proptest::prop_assert_eq!(x.len(), a.len());
            proptest::prop_assert_eq!(x.first(), a.first().copied());
            proptest::prop_assert_eq!(x.last(), a.last().copied());
            let both: Vec<usize> = a.intersection(&b).copied().collect();
            proptest::prop_assert_eq!(x.intersection(&y).iter().collect::<Vec<_>>(), both);
            let either: Vec<usize> = a.union(&b).copied().collect();
            proptest::prop_assert_eq!(x.union(&y).iter().collect::<Vec<_>>(), either);
            proptest::prop_assert_eq!(x.is_subset(&y), a.is_subset(&b));
            proptest::prop_assert_eq!(CpuSet::parse_list(&x.to_string()).unwrap(), x.clone());
            proptest::prop_assert_eq!(CpuSet::parse_mask(&mask_of(&x)).unwrap(), x.clone());
            for cpu in 0..310 {
                proptest::prop_assert_eq!(x.contains(cpu), a.contains(&cpu));
            }
        }
    }

    #[test]
    #[cfg(feature = "serde")]
    fn serializes_as_an_array() {
        let a = set(&[0, 1, 88]);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "[0,1,88]");
        let back: CpuSet = serde_json::from_str("[88,0,1]").unwrap();
        assert_eq!(back, a);
    }
}
