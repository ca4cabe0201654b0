//! The cache sizes of a machine read from sysfs (`--machine this`, `--sysfs DIR`): the private
//! L2 and the last-level cache of its first CPU, for the `locality` workload's cost model
//! (`podq_sim::Caches`).

use std::path::Path;

use podq_sim::SimMachine;

/// What the caches' figures are when their sizes come from sysfs.
const FROM_SYSFS: &str = "sizes from sysfs; latencies measured on a Zen 4 VM";

/// `machine` with the L2 and last-level cache sizes of the sysfs tree under `root` (a folder
/// holding `sys/devices/system/cpu`), where it gives them; unchanged where it gives neither.
pub(crate) fn with_sysfs_sizes(machine: SimMachine, root: &Path) -> SimMachine {
    let (l2, llc) = read_sizes(root);
    if l2.is_none() && llc.is_none() {
        return machine;
    }
    let caches = machine.caches().with_sizes(l2, llc);
    machine.with_caches(caches, FROM_SYSFS)
}

/// The KiB of the first CPU's level-2 cache and of its highest-level cache (data or unified),
/// each where sysfs gives it.
fn read_sizes(root: &Path) -> (Option<u64>, Option<u64>) {
    let dir = root.join("sys/devices/system/cpu/cpu0/cache");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (None, None);
    };
    let mut l2 = None;
    let mut last: Option<(u32, u64)> = None;
    for entry in entries.flatten() {
        let path = entry.path();
        let read = |name: &str| std::fs::read_to_string(path.join(name)).ok();
        let (Some(level), Some(size), Some(kind)) = (read("level"), read("size"), read("type"))
        else {
            continue;
        };
        let (Ok(level), Some(kb)) = (level.trim().parse::<u32>(), parse_kb(size.trim())) else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        if level == 2 {
            l2 = Some(kb);
        }
        if last.is_none_or(|(at, _)| level > at) {
            last = Some((level, kb));
        }
    }
    (l2, last.filter(|&(level, _)| level >= 2).map(|(_, kb)| kb))
}

/// A sysfs cache size (`1024K`, `32M`, `512`) in KiB.
fn parse_kb(text: &str) -> Option<u64> {
    let (digits, factor) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 1),
        b'M' | b'm' => (&text[..text.len() - 1], 1024),
        b'G' | b'g' => (&text[..text.len() - 1], 1024 * 1024),
        _ => return text.parse::<u64>().ok().map(|bytes| bytes / 1024),
    };
    digits.parse::<u64>().ok().map(|n| n * factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_sysfs_writes_them() {
        assert_eq!(parse_kb("1024K"), Some(1024));
        assert_eq!(parse_kb("32M"), Some(32 * 1024));
        assert_eq!(parse_kb("2048"), Some(2));
        assert_eq!(parse_kb("big"), None);
    }

    #[test]
    fn a_tree_gives_its_l2_and_last_level_cache() {
        let root = tempfile::tempdir().unwrap();
        for (index, level, kind, size) in [
            (0, 1, "Data", "32K"),
            (1, 1, "Instruction", "32K"),
            (2, 2, "Unified", "512K"),
            (3, 3, "Unified", "16384K"),
        ] {
            let dir = root
                .path()
                .join(format!("sys/devices/system/cpu/cpu0/cache/index{index}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(dir.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(dir.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(read_sizes(root.path()), (Some(512), Some(16384)));
        assert_eq!(read_sizes(&root.path().join("none")), (None, None));
    }
}
