//! Quantities as people read them: durations and byte counts in the largest unit
//! that keeps them at 1 or more.

/// A duration in the largest unit that keeps it at 1 or more, to the nanosecond.
pub(crate) fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.3} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

/// A byte count in binary units (KiB, MiB, ...), to a tenth.
pub(crate) fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_their_digits() {
        assert_eq!(duration(950), "950 ns");
        assert_eq!(duration(12_345), "12.345 µs");
        assert_eq!(duration(12_345_678), "12.346 ms");
        assert_eq!(duration(12_345_678_901), "12.346 s");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(3.5 * 1024.0 * 1024.0), "3.5 MiB");
    }
}
