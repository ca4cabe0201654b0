//! Numbers as people read them: `1.60M`, `812k`, `6.1 us`, `1.42x`, `2 min 40 s`.

use std::time::Duration;

/// A rate or count with three significant digits and a k/M/G suffix: `812`, `81.2k`, `1.60M`.
pub(crate) fn count(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_owned();
    }
    let (scaled, suffix) = match value.abs() {
        v if v >= 1e9 => (value / 1e9, "G"),
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    format!("{}{suffix}", three_digits(scaled))
}

/// Nanoseconds in the unit that reads best: `850 ns`, `6.1 us`, `1.2 ms`, `2.50 s`.
pub(crate) fn nanos(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".to_owned();
    }
    let (scaled, unit) = match ns.abs() {
        v if v >= 1e9 => (ns / 1e9, "s"),
        v if v >= 1e6 => (ns / 1e6, "ms"),
        v if v >= 1e3 => (ns / 1e3, "us"),
        _ => (ns, "ns"),
    };
    format!("{} {unit}", three_digits(scaled))
}

/// A ratio to two decimals: `1.42x`.
pub(crate) fn ratio(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.2}x")
    } else {
        "-".to_owned()
    }
}

/// A share as a whole percentage: `42 %`.
pub(crate) fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// A prediction's error against a measurement (`predicted / measured - 1`): `+63 %`, `-81 %`,
/// and from +100 % on the factor it is over, `48x over`, which reads better than `+4719 %`.
pub(crate) fn error(err: f64) -> String {
    if !err.is_finite() {
        "-".to_owned()
    } else if err >= 1.0 {
        format!("{}x over", three_digits(1.0 + err))
    } else {
        format!("{:+.0} %", err * 100.0)
    }
}

/// A duration to the tenth of a second below 10 s, else to the second: `0.4 s`, `45 s`,
/// `2 min 40 s`, `1 h 5 min`.
pub(crate) fn duration(d: Duration) -> String {
    if d.as_secs_f64() < 9.95 {
        return format!("{:.1} s", d.as_secs_f64());
    }
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 if s.is_multiple_of(60) => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Three significant digits, without a trailing `.0`: `812`, `81.2`, `1.60`.
fn three_digits(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 || magnitude == 0.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_times_read_as_people_write_them() {
        assert_eq!(count(1_600_000.0), "1.60M");
        assert_eq!(error(0.634), "+63 %");
        assert_eq!(error(-0.81), "-81 %");
        assert_eq!(error(47.19), "48.2x over");
        assert_eq!(error(112.2), "113x over");
        assert_eq!(count(812.0), "812");
        assert_eq!(count(81_234.0), "81.2k");
        assert_eq!(count(0.0), "0");
        assert_eq!(nanos(850.0), "850 ns");
        assert_eq!(nanos(6_100.0), "6.10 us");
        assert_eq!(nanos(2_500_000_000.0), "2.50 s");
        assert_eq!(ratio(1.4249), "1.42x");
        assert_eq!(percent(0.76), "76 %");
        assert_eq!(duration(Duration::from_secs(160)), "2 min 40 s");
        assert_eq!(duration(Duration::from_secs(180)), "3 min");
        assert_eq!(duration(Duration::from_millis(4_420)), "4.4 s");
        assert_eq!(duration(Duration::from_secs(45)), "45 s");
    }
}
