//! The CPU time this process has used, to tell how busy a run kept the machine.

use std::time::Duration;

/// Clock ticks per second in `/proc/<pid>/stat`: Linux's `USER_HZ`, 100 on every architecture
/// it exports the file for (`sysconf(_SC_CLK_TCK)`).
const TICKS_PER_SEC: u64 = 100;

/// CPU time used by every thread of this process so far, user and system together, from
/// `/proc/self/stat` (in steps of 10 ms); `None` where the file cannot be read or parsed.
pub(crate) fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    ticks_in_stat(&stat)
        .map(|ticks| Duration::from_millis(ticks.saturating_mul(1000 / TICKS_PER_SEC)))
}

/// `utime + stime` of one `/proc/<pid>/stat` line: fields 14 and 15, counted after the command
/// name in parentheses (which may hold spaces and parentheses itself).
fn ticks_in_stat(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // The fields after the name start with field 3 (the state).
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime.saturating_add(stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_system_ticks_are_read_after_the_name() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 120 0 0 0 250 37 0 0 20 0 3 0";
        assert_eq!(ticks_in_stat(line), Some(287));
        assert_eq!(ticks_in_stat("4242 (x) S 1"), None);
        assert_eq!(ticks_in_stat("no name"), None);
    }

    #[test]
    fn this_process_has_used_cpu_time_and_it_grows_while_it_works() {
        let before = process_cpu_time().expect("/proc/self/stat");
        let t0 = std::time::Instant::now();
        // Work until a tick is counted (10 ms of CPU), within a bound a loaded machine meets.
        while process_cpu_time() == Some(before) && t0.elapsed() < Duration::from_secs(10) {
            std::hint::black_box(t0.elapsed());
        }
        let after = process_cpu_time().expect("/proc/self/stat");
        assert!(after > before, "{before:?} then {after:?}");
    }
}
