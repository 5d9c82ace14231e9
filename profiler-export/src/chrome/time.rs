//! Times in Chrome JSON: microseconds with nanosecond decimals, written so that what
//! readers compute from them agrees with the nanoseconds they came from.
//!
//! Readers differ. Perfetto's trace processor rounds `ts * 1000` to integer
//! nanoseconds; the DevTools engine keeps the parsed doubles and nests slices by
//! comparing `ts + dur` sums: a child whose sum exceeds its parent's by one step is
//! dropped. Written from integers with three decimals, `ts` is exact for both. `dur`
//! is chosen: the exact duration, added to `ts` in doubles, misses the end in about a
//! fifth of small cases, in either direction, and some ends cannot be hit at all from
//! some starts (when the sum falls exactly half-way, rounding goes to the even
//! neighbour). So every slice ending at nanosecond `e` is written to sum to the same
//! double, the one of `e` rounded down to an even mantissa, which every start can
//! reach: slices that end together still end together, and a slice never ends after
//! the `ts` of one that starts where it ends. `dur` is then the exact decimal when
//! that lands there, else a neighbouring double (in the shortest text that reads back
//! as it), which still rounds to the exact nanoseconds.

use std::io::{self, Write};

/// Picoseconds as the whole nanoseconds the trace is written in (rounded down).
pub(super) fn ns(ps: i64) -> i64 {
    ps.div_euclid(1000)
}

/// Writes `ns` nanoseconds as microseconds, from integers: exact, trailing zeros of
/// the three decimals dropped (`1234.5`, `2`).
///
/// Formatted into one stack buffer and written with one call: two timestamps per
/// slice, and each write of a piece of unknown length is a call to `memcpy`.
pub(super) fn micros(out: &mut impl Write, ns: i64) -> io::Result<()> {
    // Sign, 17 integer digits of i64::MIN / 1000, point and three decimals.
    let mut buf = [0u8; 24];
    let mut len = 0;
    if ns < 0 {
        buf[0] = b'-';
        len = 1;
    }
    let abs = ns.unsigned_abs();
    let mut whole = itoa::Buffer::new();
    let whole = whole.format(abs / 1000).as_bytes();
    buf[len..len + whole.len()].copy_from_slice(whole);
    len += whole.len();
    let frac = abs % 1000;
    if frac != 0 {
        let digits = [
            b'.',
            digit(frac / 100),
            digit(frac / 10 % 10),
            digit(frac % 10),
        ];
        let n = 4 - digits[1..].iter().rev().take_while(|&&d| d == b'0').count();
        buf[len..len + n].copy_from_slice(&digits[..n]);
        len += n;
    }
    out.write_all(&buf[..len])
}

fn digit(d: u64) -> u8 {
    b'0' + (d % 10) as u8
}

/// The double a reader parses from what [`micros`] writes for `ns`. Both are the
/// double nearest to `ns / 1000`: IEEE division of the exactly held integer rounds
/// correctly, as parsing the exact decimal does.
fn read_back(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// Writes the duration of a slice from `start_ns` to `end_ns` (not before it), so
/// that a reader's `ts + dur` in doubles is [`end_sum`] of the end, and `dur * 1000`
/// rounds to `end_ns - start_ns`.
pub(super) fn duration(out: &mut impl Write, start_ns: i64, end_ns: i64) -> io::Result<()> {
    let dur_ns = end_ns - start_ns;
    let (ts, end, exact) = (read_back(start_ns), end_sum(end_ns), read_back(dur_ns));
    let fits = |d: f64| ts + d == end && (d * 1000.0).round() == dur_ns as f64;
    if fits(exact) {
        return micros(out, dur_ns);
    }
    // The difference of the two doubles is within half a step of one that fits;
    // rounding the sum may need a step either way.
    let near = end - ts;
    let found = (0..=3)
        .flat_map(|k| [step(near, k), step(near, -k)])
        .find(|&d| d >= 0.0 && fits(d));
    match found {
        Some(d) => out.write_all(ryu::Buffer::new().format_finite(d).as_bytes()),
        // Not met in the tests; a zero duration lands here, and is exact.
        None => micros(out, dur_ns),
    }
}

/// What `ts + dur` of every slice ending at `end_ns` sums to: the double of the end,
/// or the one below it when that has an odd mantissa (which a sum from some starts
/// can never round to).
fn end_sum(end_ns: i64) -> f64 {
    let end = read_back(end_ns);
    if end > 0.0 && end.to_bits() & 1 == 1 {
        f64::from_bits(end.to_bits() - 1)
    } else {
        end
    }
}

/// The double `k` representable steps above (or below, for negative `k`) a finite
/// non-negative `x` (never below zero).
fn step(x: f64, k: i64) -> f64 {
    if x < 0.0 {
        return x;
    }
    let bits = x.to_bits() as i64 + k;
    f64::from_bits(bits.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).expect("write");
        String::from_utf8(v).expect("utf-8")
    }

    #[test]
    fn micros_are_exact_decimals() {
        assert_eq!(text(|o| micros(o, 1_234_567)), "1234.567");
        assert_eq!(text(|o| micros(o, 1_500)), "1.5");
        assert_eq!(text(|o| micros(o, 2_000)), "2");
        assert_eq!(text(|o| micros(o, 7)), "0.007");
        assert_eq!(text(|o| micros(o, 0)), "0");
        assert_eq!(text(|o| micros(o, -1_500)), "-1.5");
        assert_eq!(text(|o| micros(o, 10_000_000_000)), "10000000");
        assert_eq!(text(|o| micros(o, 1_000_020)), "1000.02");
        assert_eq!(text(|o| micros(o, i64::MIN)), "-9223372036854775.808");
        assert_eq!(text(|o| micros(o, i64::MAX)), "9223372036854775.807");
        assert_eq!(ns(999), 0);
        assert_eq!(ns(-1), -1);
    }

    /// Every start and end in the first few microseconds, and some far from the
    /// origin: both readers' views of the written numbers agree with the nanoseconds,
    /// slices ending together sum to one double, and none sums past its end's `ts`.
    #[test]
    fn both_readers_get_back_the_nanoseconds_and_the_end() {
        let parse = |s: String| s.parse::<f64>().expect("number");
        let mut starts: Vec<i64> = (0..1200).collect();
        starts.extend((0..150).map(|i| 3_600_000_000_000 + i * 7_919));
        let mut sums = std::collections::HashMap::new();
        for start in starts {
            for len in (1..700).chain([999, 1000, 1001, 123_456_789]) {
                let end = start + len;
                let ts = parse(text(|o| micros(o, start)));
                let dur = parse(text(|o| duration(o, start, end)));
                let end_ts = parse(text(|o| micros(o, end)));
                assert_eq!((ts * 1000.0).round() as i64, start);
                assert_eq!((dur * 1000.0).round() as i64, len, "{start}..{end}");
                let sum = ts + dur;
                assert!(sum <= end_ts, "{start}..{end}: {sum} > {end_ts}");
                let first = *sums.entry(end).or_insert(sum);
                assert_eq!(sum, first, "{start}..{end}");
            }
        }
    }

    #[test]
    fn a_zero_duration_is_zero() {
        assert_eq!(text(|o| duration(o, 1, 1)), "0");
    }
}
