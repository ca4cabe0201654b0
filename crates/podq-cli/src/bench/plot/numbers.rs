//! How numbers read on the plots: k and M on item rates, thousands separators on nanoseconds.

/// An axis value with k or M: `0`, `950`, `12.5k`, `250k`, `1.6M`, `12M`.
pub(super) fn si(value: &f64) -> String {
    let v = *value;
    let (scaled, suffix) = if v.abs() >= 1e6 {
        (v / 1e6, "M")
    } else if v.abs() >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = if scaled.abs() >= 100.0 || suffix.is_empty() {
        format!("{scaled:.0}")
    } else {
        let text = format!("{scaled:.1}");
        text.strip_suffix(".0").map(str::to_owned).unwrap_or(text)
    };
    format!("{text}{suffix}")
}

/// A whole number with thousands separators: `12,345`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// An axis value rounded to a whole number, with thousands separators.
pub(super) fn thousands_f64(value: &f64) -> String {
    // Axis values are 0 or more; rounding to a whole number is the label's precision.
    thousands(value.max(0.0).round() as u64)
}
