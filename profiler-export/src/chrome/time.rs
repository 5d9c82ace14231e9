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

/// Picoseconds as the whole nanoseconds the trace is written in (rounded down).
pub(super) fn ns(ps: i64) -> i64 {
    ps.div_euclid(1000)
}

/// Writes `ns` nanoseconds as microseconds, from integers: exact, trailing zeros of
/// the three decimals dropped (`1234.5`, `2`).
///
/// Two timestamps per slice, so the digits go straight into one stack buffer (two
/// at a time for the whole part, the three decimals together), which is appended
/// whole and cut back: a copy of a known 24 bytes is a few moves, where one of
/// unknown length is a call to `memmove`.
pub(super) fn micros(out: &mut Vec<u8>, ns: i64) {
    // Sign, 16 integer digits of i64::MIN / 1000, point and three decimals.
    let mut buf = [0u8; 24];
    let mut len = usize::from(ns < 0);
    buf[0] = b'-';
    let abs = ns.unsigned_abs();
    let mut whole = abs / 1000;
    let digits = whole.checked_ilog10().map_or(1, |d| d as usize + 1);
    len += digits;
    let mut at = len;
    while whole >= 10 {
        let pair = (whole % 100) as usize;
        whole /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[2 * pair..2 * pair + 2]);
    }
    if at > usize::from(ns < 0) {
        // One digit left over: an odd count of them (or the whole part is 0).
        buf[at - 1] = b'0' + whole as u8;
    }
    let frac = abs % 1000;
    if frac != 0 {
        let pair = (frac / 10) as usize;
        buf[len..len + 4].copy_from_slice(&[
            b'.',
            PAIRS[2 * pair],
            PAIRS[2 * pair + 1],
            b'0' + (frac % 10) as u8,
        ]);
        len += if frac.is_multiple_of(100) {
            2
        } else if frac.is_multiple_of(10) {
            3
        } else {
            4
        };
    }
    let at = out.len();
    out.extend_from_slice(&buf);
    out.truncate(at + len);
}

/// `00`, `01`, ... `99`, two bytes each.
const PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// The double a reader parses from what [`micros`] writes for `ns`. Both are the
/// double nearest to `ns / 1000`: IEEE division of the exactly held integer rounds
/// correctly, as parsing the exact decimal does.
fn read_back(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// Writes the duration of a slice from `start_ns` to `end_ns` (not before it), so
/// that a reader's `ts + dur` in doubles is [`end_sum`] of the end, and `dur * 1000`
/// rounds to `end_ns - start_ns`.
pub(super) fn duration(out: &mut Vec<u8>, start_ns: i64, end_ns: i64) {
    let dur_ns = end_ns - start_ns;
    let (ts, end, exact) = (read_back(start_ns), end_sum(end_ns), read_back(dur_ns));
    // `d * 1000` rounds to `dur_ns` (half away from zero, as `f64::round`), compared
    // with the two exact bounds instead: `round` is a call into libm on x86-64
    // without SSE4.1, and this runs for every slice.
    let (low, high) = (dur_ns as f64 - 0.5, dur_ns as f64 + 0.5);
    let fits = |d: f64| d >= 0.0 && ts + d == end && (low..high).contains(&(d * 1000.0));
    if fits(exact) {
        return micros(out, dur_ns);
    }
    // The difference of the two doubles is within half a step of one that fits;
    // rounding the sum may need a step either way.
    let near = end - ts;
    for k in 0..=3 {
        for d in [step(near, k), step(near, -k)] {
            if fits(d) {
                out.extend_from_slice(ryu::Buffer::new().format_finite(d).as_bytes());
                return;
            }
        }
    }
    // Not met in the tests; a zero duration lands here, and is exact.
    micros(out, dur_ns);
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
    use crate::chrome::written;

    #[test]
    fn micros_are_exact_decimals() {
        assert_eq!(written(|o| micros(o, 1_234_567)), "1234.567");
        assert_eq!(written(|o| micros(o, 1_500)), "1.5");
        assert_eq!(written(|o| micros(o, 2_000)), "2");
        assert_eq!(written(|o| micros(o, 7)), "0.007");
        assert_eq!(written(|o| micros(o, 0)), "0");
        assert_eq!(written(|o| micros(o, -1_500)), "-1.5");
        assert_eq!(written(|o| micros(o, 10_000_000_000)), "10000000");
        assert_eq!(written(|o| micros(o, 1_000_020)), "1000.02");
        assert_eq!(written(|o| micros(o, i64::MIN)), "-9223372036854775.808");
        assert_eq!(written(|o| micros(o, i64::MAX)), "9223372036854775.807");
        assert_eq!(ns(999), 0);
        assert_eq!(ns(-1), -1);
    }

    #[test]
    fn micros_agree_with_decimal_formatting() {
        let reference = |ns: i64| {
            let (sign, abs) = (if ns < 0 { "-" } else { "" }, ns.unsigned_abs());
            let frac = format!("{:03}", abs % 1000);
            let frac = frac.trim_end_matches('0');
            let point = if frac.is_empty() { "" } else { "." };
            format!("{sign}{}{point}{frac}", abs / 1000)
        };
        let mut values: Vec<i64> = (-2_000..200_000).collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            // xorshift: values of every size.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x >> (x % 64)) as i64);
            values.push(-((x >> 1) as i64));
        }
        values.extend(
            (0..19)
                .map(|p| 10i64.pow(p))
                .flat_map(|v| [v - 1, v, v + 1, -v]),
        );
        for ns in values {
            assert_eq!(written(|o| micros(o, ns)), reference(ns), "{ns}");
        }
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
                let ts = parse(written(|o| micros(o, start)));
                let dur = parse(written(|o| duration(o, start, end)));
                let end_ts = parse(written(|o| micros(o, end)));
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
        assert_eq!(written(|o| duration(o, 1, 1)), "0");
    }
}
