//! Chrome's JSON trace event format (`.trace.json`, or `.trace.json.gz`), read by
//! chrome://tracing, the DevTools performance panel and ui.perfetto.dev.
//!
//! Each plane is a process and each line a thread (named by `M` metadata events), each
//! event a complete `X` slice or a thread-scoped instant `i` with its stats as `args`,
//! each counter sample a `C` event, and each link with both ends an `s`/`f` flow pair.
//! Every event has a name, and slices on one thread never partially overlap (the
//! shared [`timeline`](crate::timeline) walk moves such events to another lane).
//!
//! Timestamps are microseconds from the profile start with nanosecond decimals, not
//! Unix time: a double holds Unix microseconds only to a quarter of a microsecond,
//! which would make neighbouring slices overlap. The wall-clock start is kept in
//! `otherData.profile_start_unix_ns`.
//!
//! ```
//! # let space = profiler_core::xspace::XSpace::default();
//! let mut json = Vec::new();
//! profiler_export::chrome::write_to(&space, &mut json)?;
//! assert!(json.starts_with(b"{"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use profiler_core::xspace::XSpace;
use profiler_core::{Error, Result};

use crate::atomic::write_streaming;
use crate::timeline::{Arg, CounterTrack, Process, Slice, Thread, Timeline, Totals, Visitor};

/// File extension of Chrome JSON traces.
pub const EXTENSION: &str = "trace.json";
/// File extension of gzipped Chrome JSON traces.
pub const EXTENSION_GZ: &str = "trace.json.gz";

/// Writes `space` as a Chrome JSON trace to `out` (buffered here).
///
/// # Errors
/// The output's I/O error.
pub fn write_to<W: Write>(space: &XSpace, out: W) -> io::Result<Totals> {
    let timeline = Timeline::new(space);
    let mut writer = Writer {
        out: io::BufWriter::new(out),
        first: true,
    };
    writer
        .out
        .write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"prof\",\"host\":")?;
    json_str(&mut writer.out, timeline.host_name())?;
    write!(
        writer.out,
        ",\"profile_start_unix_ns\":{}}},\"traceEvents\":[",
        timeline.origin().unix_ns
    )?;
    let totals = timeline.walk(&mut writer)?;
    writer.out.write_all(b"\n]}\n")?;
    writer.out.flush()?;
    Ok(totals)
}

/// Writes `space` as a Chrome JSON trace at `path`, atomically; gzipped when the path
/// ends in `.gz`.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path.
pub fn write(space: &XSpace, path: &Path) -> Result<Totals> {
    let gzip = path.extension().is_some_and(|e| e == "gz");
    write_streaming(path, |out| {
        if gzip {
            let mut gz = GzEncoder::new(out, flate2::Compression::fast());
            let totals = write_to(space, &mut gz)?;
            gz.finish()?;
            Ok(totals)
        } else {
            write_to(space, out)
        }
    })
    .map_err(|e| Error::io("cannot write the Chrome JSON trace", path, e))
}

struct Writer<W> {
    out: W,
    first: bool,
}

impl<W: Write> Writer<W> {
    /// Starts the next element of `traceEvents`.
    fn next(&mut self) -> io::Result<()> {
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        self.out.write_all(sep)
    }

    fn metadata(
        &mut self,
        what: &str,
        pid: u32,
        tid: u32,
        key: &str,
        value: Arg<'_>,
    ) -> io::Result<()> {
        self.next()?;
        write!(
            self.out,
            "{{\"name\":\"{what}\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"{key}\":"
        )?;
        json_arg(&mut self.out, value)?;
        self.out.write_all(b"}}")
    }

    fn flow(&mut self, phase: &str, id: u64, at_ps: i64, thread: &Thread<'_>) -> io::Result<()> {
        self.next()?;
        // Ids stay below 2^53 so JavaScript readers keep them exact.
        write!(
            self.out,
            "{{\"name\":\"link\",\"cat\":\"flow\",\"ph\":\"{phase}\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
            id & ((1 << 53) - 1),
            thread.pid,
            thread.tid
        )?;
        micros(&mut self.out, at_ps)?;
        if phase == "f" {
            self.out.write_all(b",\"bp\":\"e\"")?;
        }
        self.out.write_all(b"}")
    }
}

impl<'a, W: Write> Visitor<'a> for Writer<W> {
    type Error = io::Error;

    fn process(&mut self, process: &Process<'a>) -> io::Result<()> {
        self.metadata(
            "process_name",
            process.pid,
            0,
            "name",
            Arg::Str(process.name),
        )?;
        self.metadata(
            "process_sort_index",
            process.pid,
            0,
            "sort_index",
            Arg::Uint(u64::from(process.pid)),
        )
    }

    fn thread(&mut self, thread: &Thread<'a>) -> io::Result<()> {
        self.metadata(
            "thread_name",
            thread.pid,
            thread.tid,
            "name",
            Arg::Str(&thread.name),
        )
    }

    fn slice(&mut self, slice: &Slice<'a, '_>) -> io::Result<()> {
        self.next()?;
        self.out.write_all(b"{\"name\":")?;
        json_str(&mut self.out, slice.name)?;
        self.out.write_all(b",\"cat\":")?;
        json_str(&mut self.out, slice.category)?;
        if slice.is_instant() {
            self.out.write_all(b",\"ph\":\"i\",\"s\":\"t\",\"ts\":")?;
            micros(&mut self.out, slice.start_ps)?;
        } else {
            self.out.write_all(b",\"ph\":\"X\",\"ts\":")?;
            micros(&mut self.out, slice.start_ps)?;
            self.out.write_all(b",\"dur\":")?;
            // Both ends are rounded down to nanoseconds, so nesting survives rounding.
            let start_ns = slice.start_ps.div_euclid(1000);
            let end_ns = (slice.start_ps + slice.duration_ps).div_euclid(1000);
            micros(&mut self.out, (end_ns - start_ns) * 1000)?;
        }
        write!(
            self.out,
            ",\"pid\":{},\"tid\":{}",
            slice.thread.pid, slice.thread.tid
        )?;
        let mut args = slice.args().peekable();
        if args.peek().is_some() {
            self.out.write_all(b",\"args\":{")?;
            for (i, (name, value)) in args.enumerate() {
                if i > 0 {
                    self.out.write_all(b",")?;
                }
                json_str(&mut self.out, name)?;
                self.out.write_all(b":")?;
                json_arg(&mut self.out, value)?;
            }
            self.out.write_all(b"}")?;
        }
        self.out.write_all(b"}")?;
        for &id in slice.flows_out.as_slice() {
            self.flow("s", id, slice.start_ps, slice.thread)?;
        }
        for &id in slice.flows_in.as_slice() {
            self.flow("f", id, slice.start_ps, slice.thread)?;
        }
        Ok(())
    }

    fn slice_end(&mut self, _thread: &Thread<'a>, _end_ps: i64) -> io::Result<()> {
        Ok(()) // complete events carry their duration
    }

    fn counter_track(&mut self, _track: &CounterTrack<'a>) -> io::Result<()> {
        Ok(()) // a counter is declared by its first sample
    }

    fn counter(&mut self, track: &CounterTrack<'a>, at_ps: i64, value: Arg<'a>) -> io::Result<()> {
        self.next()?;
        self.out.write_all(b"{\"name\":")?;
        json_str(&mut self.out, &track.name)?;
        write!(
            self.out,
            ",\"ph\":\"C\",\"pid\":{},\"tid\":0,\"ts\":",
            track.pid
        )?;
        micros(&mut self.out, at_ps)?;
        self.out.write_all(b",\"args\":{")?;
        json_str(&mut self.out, track.series)?;
        self.out.write_all(b":")?;
        json_arg(&mut self.out, value)?;
        self.out.write_all(b"}}")
    }
}

/// Picoseconds as microseconds with three decimals (nanoseconds, rounded down).
fn micros(out: &mut impl Write, ps: i64) -> io::Result<()> {
    let ns = ps.div_euclid(1000);
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    write!(out, "{sign}{}.{:03}", ns / 1000, ns % 1000)
}

fn json_arg(out: &mut impl Write, arg: Arg<'_>) -> io::Result<()> {
    match arg {
        Arg::Int(v) => write!(out, "{v}"),
        Arg::Uint(v) => write!(out, "{v}"),
        Arg::Double(v) if v.is_finite() => write!(out, "{v}"),
        // JSON has no NaN or infinity.
        Arg::Double(v) => json_str(out, &v.to_string()),
        Arg::Str(s) => json_str(out, s),
        Arg::Bytes(b) => json_str(out, &format!("<{} bytes>", b.len())),
    }
}

/// Writes `s` as a JSON string.
fn json_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut plain = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.write_all(&bytes[plain..i])?;
        match escape {
            Some(e) => out.write_all(e)?,
            None => write!(out, "\\u{b:04x}")?,
        }
        plain = i + 1;
    }
    out.write_all(&bytes[plain..])?;
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).expect("write");
        String::from_utf8(v).expect("utf-8")
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(
            s(|o| json_str(o, "a\"b\\c\nd\u{1}é")),
            r#""a\"b\\c\nd\u0001é""#
        );
    }

    #[test]
    fn micros_keep_nanoseconds() {
        assert_eq!(s(|o| micros(o, 1_234_567_890)), "1234.567");
        assert_eq!(s(|o| micros(o, 999)), "0.000");
        assert_eq!(s(|o| micros(o, -1_500_000)), "-1.500");
    }

    #[test]
    fn non_finite_doubles_stay_valid_json() {
        assert_eq!(s(|o| json_arg(o, Arg::Double(f64::NAN))), "\"NaN\"");
        assert_eq!(s(|o| json_arg(o, Arg::Double(0.5))), "0.5");
    }
}
