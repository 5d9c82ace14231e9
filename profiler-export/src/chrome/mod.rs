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
//! `otherData.profile_start_unix_ns`. Times are written from integer nanoseconds, and
//! durations so that both a reader rounding to nanoseconds and one adding `ts + dur`
//! in doubles find each slice's exact end: a child that ends with its parent is not
//! read as ending after it (the DevTools engine drops such children). See `time`.
//!
//! Instants are written `I` (the engine behind the DevTools panel ignores the newer
//! `i`). Both events of a flow carry the category of the slice it starts from (viewers
//! key a flow by category, name and id; the engine binds an end to a slice of that
//! category, so a host-to-device flow is drawn only from its start), and are written
//! last, in time order: the engine reads them in file order and drops an end that
//! comes before its start. Holding them costs memory per flow, as the flow index
//! already does, not per event.
//!
//! ```
//! # let space = profiler_core::xspace::XSpace::default();
//! let mut json = Vec::new();
//! profiler_export::chrome::write_to(&space, &mut json)?;
//! assert!(json.starts_with(b"{"));
//! # Ok::<(), std::io::Error>(())
//! ```

mod quoted;
mod time;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use profiler_core::xspace::XSpace;
use profiler_core::{Error, Result};

use self::quoted::{json_str, Quoted};
use crate::atomic::write_streaming;
use crate::block::Blocks;
use crate::gzip;
use crate::sink::Sink;
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
    timeline_to(&Timeline::new(space), out)
}

/// Writes `space` as a gzipped Chrome JSON trace (`.trace.json.gz`) to `out`,
/// compressed on a second thread while the JSON is written (gzip's fast level), so
/// that it takes about as long as deflating it, not that plus writing the JSON.
///
/// # Errors
/// The output's I/O error.
pub fn write_gz_to<W: Write + Send>(space: &XSpace, out: W) -> io::Result<Totals> {
    let timeline = Timeline::new(space);
    gzip::gzip_to(out, |gz| timeline_to(&timeline, gz))
}

/// Writes the walk of `timeline` as a Chrome JSON trace to `out`.
pub(crate) fn timeline_to<W: Write>(timeline: &Timeline<'_>, out: W) -> io::Result<Totals> {
    let mut writer = Writer {
        out: Blocks::new(out),
        first: true,
        flows: Vec::new(),
        pid_tid: PidTid::default(),
        quoted: Quoted::default(),
    };
    let buf = &mut writer.out.buf;
    buf.extend_from_slice(
        b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"prof\",\"host\":",
    );
    json_str(buf, timeline.host_name());
    buf.extend_from_slice(b",\"profile_start_unix_ns\":");
    int(buf, timeline.origin().unix_ns);
    buf.extend_from_slice(b"},\"traceEvents\":[");
    let totals = timeline.walk(&mut writer)?;
    writer.write_flows()?;
    writer.out.buf.extend_from_slice(b"\n]}\n");
    writer.out.finish()?;
    Ok(totals)
}

/// Writes `space` as a Chrome JSON trace at `path`, atomically; gzipped when the path
/// ends in `.gz`.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path.
pub fn write(space: &XSpace, path: &Path) -> Result<Totals> {
    write_timeline(&Timeline::new(space), path)
}

/// A Chrome JSON trace file, gzipped when its path ends in `.gz`: the [`Sink`] of
/// [`write()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChromeJsonFile {
    path: PathBuf,
}

impl ChromeJsonFile {
    /// The trace at `path` (`.trace.json`, or `.trace.json.gz` gzipped).
    pub fn new(path: impl Into<PathBuf>) -> ChromeJsonFile {
        ChromeJsonFile { path: path.into() }
    }

    /// Where the trace goes.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Sink for ChromeJsonFile {
    type Report = Totals;

    fn export(&self, space: &XSpace) -> Result<Totals> {
        write(space, &self.path)
    }
}

/// Writes the walk of `timeline` as a Chrome JSON trace at `path`, atomically;
/// gzipped when the path ends in `.gz`.
pub(crate) fn write_timeline(timeline: &Timeline<'_>, path: &Path) -> Result<Totals> {
    let gzip = path.extension().is_some_and(|e| e == "gz");
    write_streaming(path, |out| {
        if gzip {
            gzip::gzip_to(out, |gz| timeline_to(timeline, gz))
        } else {
            timeline_to(timeline, out)
        }
    })
    .map_err(|e| Error::io("cannot write the Chrome JSON trace", path, e))
}

struct Writer<'a, W> {
    /// The output, and the JSON not yet handed to it.
    out: Blocks<W>,
    first: bool,
    /// Flow ends met so far, written after the slices.
    flows: Vec<FlowEnd<'a>>,
    /// The last `"pid":P,"tid":T` written: slices come a thread at a time, so this is
    /// nearly always the next one too.
    pid_tid: PidTid,
    /// The space's names and categories, quoted.
    quoted: Quoted<'a>,
}

/// `"pid":P,"tid":T` for one pid and tid, kept in a fixed array so that it is
/// appended with a copy of known size (a call to `memmove` otherwise).
struct PidTid {
    of: Option<(u32, u32)>,
    text: [u8; PidTid::MAX],
    len: usize,
}

impl Default for PidTid {
    fn default() -> PidTid {
        PidTid {
            of: None,
            text: [0; PidTid::MAX],
            len: 0,
        }
    }
}

impl PidTid {
    /// `"pid":` and `,"tid":` with ten digits each.
    const MAX: usize = 33;

    fn set(&mut self, pid: u32, tid: u32) {
        let mut text = Vec::with_capacity(Self::MAX);
        text.extend_from_slice(b"\"pid\":");
        int(&mut text, pid);
        text.extend_from_slice(b",\"tid\":");
        int(&mut text, tid);
        self.text[..text.len()].copy_from_slice(&text);
        self.len = text.len();
        self.of = Some((pid, tid));
    }
}

/// One end of a flow: where its slice starts.
struct FlowEnd<'a> {
    ns: i64,
    /// Starts sort before ends at the same time.
    is_end: bool,
    id: u64,
    pid: u32,
    tid: u32,
    category: &'a str,
}

impl<'a, W: Write> Writer<'a, W> {
    /// Starts the next element of `traceEvents`.
    #[inline]
    fn next(&mut self) {
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        self.out.buf.extend_from_slice(sep);
    }

    /// `"pid":P,"tid":T`
    #[inline]
    fn pid_tid(&mut self, pid: u32, tid: u32) {
        if self.pid_tid.of != Some((pid, tid)) {
            self.pid_tid.set(pid, tid);
        }
        let at = self.out.buf.len();
        self.out.buf.extend_from_slice(&self.pid_tid.text);
        self.out.buf.truncate(at + self.pid_tid.len);
    }

    /// An `M` event `what` with the one argument `key: value`.
    fn metadata(
        &mut self,
        what: &str,
        (pid, tid): (u32, u32),
        key: &str,
        value: Arg<'_>,
    ) -> io::Result<()> {
        self.next();
        self.out.buf.extend_from_slice(b"{\"name\":");
        json_str(&mut self.out.buf, what);
        self.out.buf.extend_from_slice(b",\"ph\":\"M\",");
        self.pid_tid(pid, tid);
        self.out.buf.extend_from_slice(b",\"args\":{");
        json_str(&mut self.out.buf, key);
        self.out.buf.push(b':');
        json_arg(&mut self.out.buf, value);
        self.out.buf.extend_from_slice(b"}}");
        self.out.done()
    }

    fn write_flows(&mut self) -> io::Result<()> {
        let mut flows = std::mem::take(&mut self.flows);
        flows.sort_by_key(|f| (f.ns, f.is_end));
        // Viewers key a flow by category, name and id: both ends take the category of
        // the slice the flow starts from (a launch's `host` for the kernel it ran).
        let mut started: HashMap<u64, &'a str> = HashMap::new();
        for flow in &flows {
            let category = if flow.is_end {
                started.get(&flow.id).copied().unwrap_or(flow.category)
            } else {
                *started.entry(flow.id).or_insert(flow.category)
            };
            self.next();
            self.out
                .buf
                .extend_from_slice(b"{\"name\":\"link\",\"cat\":");
            json_str(&mut self.out.buf, category);
            let phase: &[u8] = if flow.is_end {
                b"\"f\",\"bp\":\"e\""
            } else {
                b"\"s\""
            };
            self.out.buf.extend_from_slice(b",\"ph\":");
            self.out.buf.extend_from_slice(phase);
            // Ids stay below 2^53 so JavaScript readers keep them exact.
            self.out.buf.extend_from_slice(b",\"id\":");
            int(&mut self.out.buf, flow.id & ((1 << 53) - 1));
            self.out.buf.push(b',');
            self.pid_tid(flow.pid, flow.tid);
            self.out.buf.extend_from_slice(b",\"ts\":");
            time::micros(&mut self.out.buf, flow.ns);
            self.out.buf.push(b'}');
            self.out.done()?;
        }
        Ok(())
    }
}

impl<'a, W: Write> Visitor<'a> for Writer<'a, W> {
    type Error = io::Error;

    fn process(&mut self, process: &Process<'a>) -> io::Result<()> {
        let at = (process.pid, 0);
        self.metadata("process_name", at, "name", Arg::Str(process.name))?;
        let order = Arg::Uint(u64::from(process.pid));
        self.metadata("process_sort_index", at, "sort_index", order)
    }

    fn thread(&mut self, thread: &Thread<'a>) -> io::Result<()> {
        self.metadata(
            "thread_name",
            (thread.pid, thread.tid),
            "name",
            Arg::Str(&thread.name),
        )
    }

    fn slice(&mut self, slice: &Slice<'a, '_>) -> io::Result<()> {
        self.next();
        self.out.buf.extend_from_slice(b"{\"name\":");
        match &slice.name {
            Cow::Borrowed(name) => self.quoted.put(&mut self.out.buf, name),
            Cow::Owned(name) => json_str(&mut self.out.buf, name),
        }
        self.out.buf.extend_from_slice(b",\"cat\":");
        self.quoted.put(&mut self.out.buf, slice.category);
        let start = time::ns(slice.start_ps);
        if slice.is_instant() {
            // A marker's scope (prof::domain::MarkerScope) is the instant's scope.
            let scope = slice.args().find_map(|(key, value)| match (key, value) {
                (profiler_core::schema::SCOPE, Arg::Str("global")) => Some("g"),
                (profiler_core::schema::SCOPE, Arg::Str("process")) => Some("p"),
                _ => None,
            });
            self.out.buf.extend_from_slice(b",\"ph\":\"I\",\"s\":\"");
            self.out
                .buf
                .extend_from_slice(scope.unwrap_or("t").as_bytes());
            self.out.buf.extend_from_slice(b"\",\"ts\":");
            time::micros(&mut self.out.buf, start);
        } else {
            self.out.buf.extend_from_slice(b",\"ph\":\"X\",\"ts\":");
            time::micros(&mut self.out.buf, start);
            self.out.buf.extend_from_slice(b",\"dur\":");
            let end = time::ns(slice.start_ps + slice.duration_ps);
            time::duration(&mut self.out.buf, start, end);
        }
        self.out.buf.push(b',');
        self.pid_tid(slice.thread.pid, slice.thread.tid);
        let mut args = slice.args().peekable();
        if args.peek().is_some() {
            self.out.buf.extend_from_slice(b",\"args\":{");
            for (i, (name, value)) in args.enumerate() {
                if i > 0 {
                    self.out.buf.push(b',');
                }
                self.quoted.put(&mut self.out.buf, name);
                self.out.buf.push(b':');
                json_arg(&mut self.out.buf, value);
            }
            self.out.buf.push(b'}');
        }
        self.out.buf.push(b'}');
        let ends = slice.flows_out.as_slice().iter().map(|&id| (id, false));
        let ends = ends.chain(slice.flows_in.as_slice().iter().map(|&id| (id, true)));
        for (id, is_end) in ends {
            self.flows.push(FlowEnd {
                ns: start,
                is_end,
                id,
                pid: slice.thread.pid,
                tid: slice.thread.tid,
                category: slice.category,
            });
        }
        self.out.done()
    }

    fn slice_end(&mut self, _thread: &Thread<'a>, _end_ps: i64) -> io::Result<()> {
        Ok(()) // complete events carry their duration
    }

    fn counter_track(&mut self, _track: &CounterTrack<'a>) -> io::Result<()> {
        Ok(()) // a counter is declared by its first sample
    }

    fn counter(&mut self, track: &CounterTrack<'a>, at_ps: i64, value: Arg<'_>) -> io::Result<()> {
        self.next();
        self.out.buf.extend_from_slice(b"{\"name\":");
        json_str(&mut self.out.buf, &track.name);
        self.out.buf.extend_from_slice(b",\"ph\":\"C\",");
        self.pid_tid(track.pid, 0);
        self.out.buf.extend_from_slice(b",\"ts\":");
        time::micros(&mut self.out.buf, time::ns(at_ps));
        self.out.buf.extend_from_slice(b",\"args\":{");
        json_str(&mut self.out.buf, track.series);
        self.out.buf.push(b':');
        json_arg(&mut self.out.buf, value);
        self.out.buf.extend_from_slice(b"}}");
        self.out.done()
    }
}

/// A double in its shortest form that parses back to the same double.
fn number(out: &mut Vec<u8>, v: f64) {
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v);
    // ryu writes `1.0`; the trailing `.0` is noise in a trace of millions of numbers.
    out.extend_from_slice(text.strip_suffix(".0").unwrap_or(text).as_bytes());
}

fn int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn json_arg(out: &mut Vec<u8>, arg: Arg<'_>) {
    match arg {
        Arg::Int(v) => int(out, v),
        Arg::Uint(v) => int(out, v),
        Arg::Double(v) if v.is_finite() => number(out, v),
        // JSON has no NaN or infinity.
        Arg::Double(v) => json_str(out, &v.to_string()),
        Arg::Str(s) => json_str(out, s),
        Arg::Bytes(b) => json_str(out, &format!("<{} bytes>", b.len())),
    }
}

/// What `f` appends, as text: for the tests of this module and its parts.
#[cfg(test)]
fn written(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut v = Vec::new();
    f(&mut v);
    String::from_utf8(v).expect("utf-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_doubles_stay_valid_json() {
        assert_eq!(written(|o| json_arg(o, Arg::Double(f64::NAN))), "\"NaN\"");
        assert_eq!(written(|o| json_arg(o, Arg::Double(0.5))), "0.5");
    }
}
