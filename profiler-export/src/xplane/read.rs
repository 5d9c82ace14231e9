//! Reading `.xplane.pb` files written by anyone, defensively.
//!
//! - **Regular files only.** The file is opened without blocking (a FIFO would block
//!   `open` until a writer came) and its type checked on the opened descriptor, not by
//!   a separate look-up of the path that could race with a rename: FIFOs, devices
//!   (`/dev/zero` behind a link reads forever) and directories are refused.
//! - **Bounded.** Files over [`ReadLimits::max_bytes`] are refused before reading, and
//!   no length inside the file may point past its end, so no allocation is larger
//!   than the file. Host names, errors and warnings are lists a hostile file can make
//!   millions long for a few bytes each; only [`ReadLimits::max_strings`] of each are
//!   kept, and a warning says how many were not.
//! - **Streamed.** The file is decoded as it is read, never held whole beside the
//!   decoded space. The nesting (space, plane, line) is walked here; the small
//!   messages (events, stats, metadata) are decoded by prost from their own bytes.
//!   Field numbers are those of `profiler_core::xspace`'s messages, which a test
//!   checks by comparing with prost's decoding of the same bytes.
//! - **As tolerant as protobuf.** Unknown fields of every wire type are skipped, groups
//!   (wire types 3 and 4, nested up to protobuf's 100 levels) included: a file from a
//!   newer TensorFlow or JAX, whose schema grew, still opens. What protobuf refuses
//!   (a truncated field, an end-group tag with no group open, wire types 6 and 7) is
//!   refused.
//! - **Loses no more than it must.** An event that is valid protobuf but that no
//!   profile can hold (an offset or occurrence count beyond ±2^62, 53 days of
//!   picoseconds) is left out, and a warning says how many were and why; the rest of
//!   the file is read.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use profiler_core::xspace::{XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use profiler_core::{Error, ErrorKind, Result};
use prost::Message;

use super::fields::*;
use super::lazy::EncodedEvents;

/// Default [`ReadLimits::max_bytes`]: 4 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// Default [`ReadLimits::max_strings`].
pub const DEFAULT_MAX_STRINGS: usize = 64;

/// Limits on reading a `.xplane.pb` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Largest file read, in bytes ([`DEFAULT_MAX_BYTES`] by default).
    pub max_bytes: u64,
    /// How many host names, errors and warnings are kept, of each
    /// ([`DEFAULT_MAX_STRINGS`] by default).
    pub max_strings: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_bytes: DEFAULT_MAX_BYTES,
            max_strings: DEFAULT_MAX_STRINGS,
        }
    }
}

impl ReadLimits {
    /// Sets the largest file read, in bytes.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Sets how many host names, errors and warnings are kept, of each.
    pub fn max_strings(mut self, n: usize) -> Self {
        self.max_strings = n;
        self
    }
}

/// Opens `path` for reading if it is a regular file within `limits`, and returns it
/// with its length.
fn open_regular(path: &Path, limits: &ReadLimits) -> Result<(File, u64)> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading blocks until a writer opens it; non-blocking, it
        // returns at once and the check below refuses it. Regular files ignore it.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| Error::io("cannot open the .xplane.pb file", path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io("cannot read the .xplane.pb file", path, e))?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is {}, not a regular file: not read",
                path.display(),
                kind_of(&meta.file_type())
            ),
        ));
    }
    if meta.len() > limits.max_bytes {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is {} bytes, over the limit of {} bytes on input files",
                path.display(),
                meta.len(),
                limits.max_bytes
            ),
        ));
    }
    Ok((file, meta.len()))
}

/// What a file that is not a regular file is, for the error.
fn kind_of(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// A space as read: what the reader had to say about it (also appended to the
/// space's warnings), and, when asked for, each line's events still encoded (per
/// plane, per line).
pub(super) struct ReadSpace {
    pub(super) space: XSpace,
    pub(super) notes: Vec<String>,
    pub(super) encoded: Vec<Vec<EncodedEvents>>,
}

/// Reads the space at `path`, its events decoded.
pub(super) fn read_space(path: &Path, limits: &ReadLimits) -> Result<XSpace> {
    read_with(path, limits, false).map(|read| read.space)
}

/// Reads the space at `path` with each line's events left encoded.
pub(super) fn read_encoded(path: &Path, limits: &ReadLimits) -> Result<ReadSpace> {
    read_with(path, limits, true)
}

fn read_with(path: &Path, limits: &ReadLimits, keep_encoded: bool) -> Result<ReadSpace> {
    let (file, len) = open_regular(path, limits)?;
    let input = BufReader::with_capacity(1 << 16, file);
    let mut parser = Parser::new(input, limits.max_strings, keep_encoded);
    match parser.space(len) {
        Ok(space) => Ok(parser.finish(space)),
        Err(Failure::Io(e)) => Err(Error::io("cannot read the .xplane.pb file", path, e)),
        Err(Failure::Invalid(why)) => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is not an XSpace protobuf (a .xplane.pb as prof, JAX and TensorFlow write \
                 it): {why} (at byte {})",
                path.display(),
                parser.pos
            ),
        )),
    }
}

/// Parses a space from `bytes` as a file is read, keeping every host name, error and
/// warning.
pub(super) fn decode_bytes(bytes: &[u8]) -> Result<XSpace> {
    let mut parser = Parser::new(bytes, usize::MAX, false);
    match parser.space(bytes.len() as u64) {
        Ok(space) => Ok(parser.finish(space).space),
        Err(Failure::Io(e)) => {
            Err(Error::new(ErrorKind::InvalidArgument, "not an XSpace protobuf").with_source(e))
        }
        Err(Failure::Invalid(why)) => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("not an XSpace protobuf: {why} (at byte {})", parser.pos),
        )),
    }
}

/// Why parsing stopped.
enum Failure {
    Io(io::Error),
    Invalid(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Failure::Invalid("the file ends inside a message".into())
        } else {
            Failure::Io(e)
        }
    }
}

impl From<prost::DecodeError> for Failure {
    fn from(e: prost::DecodeError) -> Self {
        Failure::Invalid(e.to_string())
    }
}

type Parsed<T> = std::result::Result<T, Failure>;

// Wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// How deep groups may nest inside one another: protobuf's default recursion limit.
const MAX_GROUP_DEPTH: usize = 100;

/// An event as the schema has it, its offset and count any int64: what an event that
/// [`XEvent`] refused decodes to when its only fault is a value no profile holds.
#[derive(Clone, PartialEq, prost::Message)]
struct AnyEvent {
    #[prost(int64, tag = "1")]
    metadata_id: i64,
    #[prost(int64, tag = "2")]
    offset_ps: i64,
    #[prost(int64, tag = "3")]
    duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    stats: Vec<XStat>,
    #[prost(int64, tag = "5")]
    num_occurrences: i64,
}

/// One entry of `XPlane.event_metadata` as encoded (a map entry message).
#[derive(Clone, PartialEq, prost::Message)]
struct EventMetadataEntry {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(message, optional, tag = "2")]
    value: Option<XEventMetadata>,
}

/// One entry of `XPlane.stat_metadata` as encoded.
#[derive(Clone, PartialEq, prost::Message)]
struct StatMetadataEntry {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(message, optional, tag = "2")]
    value: Option<XStatMetadata>,
}

struct Parser<R> {
    input: R,
    /// Bytes read so far.
    pos: u64,
    /// The small message being decoded (reused).
    buf: Vec<u8>,
    /// An event decoded to check it (reused, so its stats keep their allocation).
    scratch: XEvent,
    max_strings: usize,
    keep_encoded: bool,
    encoded: Vec<Vec<EncodedEvents>>,
    /// Events left out because they hold a value no event can (see [`AnyEvent`]).
    impossible: u64,
    /// Why the first of them was.
    first_impossible: Option<String>,
    /// Host names, errors and warnings beyond `max_strings`, not kept.
    dropped_strings: u64,
}

impl<R: BufRead> Parser<R> {
    fn new(input: R, max_strings: usize, keep_encoded: bool) -> Parser<R> {
        Parser {
            input,
            pos: 0,
            buf: Vec::new(),
            scratch: XEvent::default(),
            max_strings,
            keep_encoded,
            encoded: Vec::new(),
            impossible: 0,
            first_impossible: None,
            dropped_strings: 0,
        }
    }

    /// The space read, with what the reader has to say about it added to its warnings.
    fn finish(self, mut space: XSpace) -> ReadSpace {
        let mut notes = Vec::new();
        if self.dropped_strings > 0 {
            notes.push(format!(
                "{} more host names, errors or warnings were in the file; \
                 {} of each were read",
                self.dropped_strings, self.max_strings
            ));
        }
        if let Some(first) = self.first_impossible {
            let n = self.impossible;
            let (events, them) = if n == 1 {
                ("event was", "it")
            } else {
                ("events were", "them")
            };
            notes.push(format!(
                "{n} {events} left out as no profile can hold {them} ({first}); \
                 everything else in the file was read"
            ));
        }
        space.warnings.extend(notes.iter().cloned());
        ReadSpace {
            space,
            notes,
            encoded: self.encoded,
        }
    }

    fn space(&mut self, end: u64) -> Parsed<XSpace> {
        let mut space = XSpace::default();
        while self.pos < end {
            let (field, wire) = self.key()?;
            let list = match (field, wire) {
                (SPACE_PLANES, LEN) => {
                    let plane_end = self.len(end)?;
                    let plane = self.plane(plane_end)?;
                    space.planes.push(plane);
                    continue;
                }
                (SPACE_ERRORS, LEN) => &mut space.errors,
                (SPACE_WARNINGS, LEN) => &mut space.warnings,
                (SPACE_HOSTNAMES, LEN) => &mut space.hostnames,
                _ => {
                    self.skip(field, wire, end)?;
                    continue;
                }
            };
            if list.len() < self.max_strings {
                let s = self.string(end)?;
                list.push(s);
            } else {
                let skip_end = self.len(end)?;
                self.skip_to(skip_end)?;
                self.dropped_strings += 1;
            }
        }
        Ok(space)
    }

    fn plane(&mut self, end: u64) -> Parsed<XPlane> {
        let mut plane = XPlane::default();
        let mut encoded = Vec::new();
        while self.pos < end {
            let (field, wire) = self.key()?;
            match (field, wire) {
                (PLANE_ID, VARINT) => plane.id = self.varint()? as i64,
                (PLANE_NAME, LEN) => plane.name = self.string(end)?,
                (PLANE_LINES, LEN) => {
                    let line_end = self.len(end)?;
                    let (line, events) = self.line(line_end)?;
                    plane.lines.push(line);
                    encoded.push(events);
                }
                (PLANE_EVENT_METADATA, LEN) => {
                    self.message(end)?;
                    let entry = EventMetadataEntry::decode(self.buf.as_slice())?;
                    plane
                        .event_metadata
                        .insert(entry.key, entry.value.unwrap_or_default());
                }
                (PLANE_STAT_METADATA, LEN) => {
                    self.message(end)?;
                    let entry = StatMetadataEntry::decode(self.buf.as_slice())?;
                    plane
                        .stat_metadata
                        .insert(entry.key, entry.value.unwrap_or_default());
                }
                (PLANE_STATS, LEN) => {
                    self.message(end)?;
                    plane.stats.push(XStat::decode(self.buf.as_slice())?);
                }
                _ => self.skip(field, wire, end)?,
            }
        }
        self.ended_at(end)?;
        if self.keep_encoded {
            self.encoded.push(encoded);
        }
        Ok(plane)
    }

    fn line(&mut self, end: u64) -> Parsed<(XLine, EncodedEvents)> {
        let mut line = XLine::default();
        let mut encoded = EncodedEvents::default();
        if self.keep_encoded {
            // The events take at most the line's bytes, which the file holds: one
            // allocation of the right size rather than doublings.
            encoded.reserve(end - self.pos);
        }
        while self.pos < end {
            let (field, wire) = self.key()?;
            match (field, wire) {
                (LINE_ID, VARINT) => line.id = self.varint()? as i64,
                (LINE_DISPLAY_ID, VARINT) => line.display_id = self.varint()? as i64,
                (LINE_NAME, LEN) => line.name = self.string(end)?,
                (LINE_DISPLAY_NAME, LEN) => line.display_name = self.string(end)?,
                (LINE_TIMESTAMP_NS, VARINT) => line.timestamp_ns = self.varint()? as i64,
                (LINE_DURATION_PS, VARINT) => line.duration_ps = self.varint()? as i64,
                (LINE_EVENTS, LEN) => {
                    self.message(end)?;
                    // Decoded into the reused event: prost grows stats four at a time
                    // (160 bytes for one), and shrinking that later leaves holes.
                    self.scratch.clear();
                    if let Err(e) = self.scratch.merge(self.buf.as_slice()) {
                        self.impossible_event(e)?;
                        continue;
                    }
                    if self.keep_encoded {
                        // Decoded here all the same, so that a bad event fails the
                        // read, not the walk.
                        encoded.push(&self.buf, &self.scratch);
                    } else {
                        let stats = self.scratch.stats.drain(..).collect();
                        // The scratch's stats are drained: the clone allocates nothing.
                        let mut event = self.scratch.clone();
                        event.stats = stats;
                        line.events.push(event);
                    }
                }
                _ => self.skip(field, wire, end)?,
            }
        }
        self.ended_at(end)?;
        Ok((line, encoded))
    }

    /// An event in the buffer that [`XEvent`] refused with `error`: left out, and
    /// counted, when it is protobuf the schema allows and only its values are beyond
    /// what an event holds; otherwise the error, as the file is not an XSpace.
    #[cold]
    fn impossible_event(&mut self, error: prost::DecodeError) -> Parsed<()> {
        if AnyEvent::decode(self.buf.as_slice()).is_err() {
            return Err(error.into());
        }
        self.impossible += 1;
        if self.first_impossible.is_none() {
            // prost's words name the message, the field and the value.
            let why = error.to_string();
            let why = why
                .strip_prefix("failed to decode Protobuf message: ")
                .unwrap_or(&why);
            let at = self.pos - self.buf.len() as u64;
            self.first_impossible = Some(format!("the first, at byte {at}: {why}"));
        }
        Ok(())
    }

    /// Checks that a message ended exactly where its length said.
    fn ended_at(&self, end: u64) -> Parsed<()> {
        if self.pos == end {
            Ok(())
        } else {
            Err(Failure::Invalid("a field runs past its message".into()))
        }
    }

    fn byte(&mut self) -> Parsed<u8> {
        let mut b = [0u8];
        self.input.read_exact(&mut b)?;
        self.pos += 1;
        Ok(b[0])
    }

    fn varint(&mut self) -> Parsed<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(Failure::Invalid("a varint longer than ten bytes".into()))
    }

    fn key(&mut self) -> Parsed<(u32, u8)> {
        let key = self.varint()?;
        let field = u32::try_from(key >> 3)
            .ok()
            .filter(|&f| f > 0)
            .ok_or_else(|| Failure::Invalid(format!("invalid field key {key}")))?;
        Ok((field, (key & 7) as u8))
    }

    /// Reads a length and returns where the field it prefixes ends, which must be
    /// within `end`.
    fn len(&mut self, end: u64) -> Parsed<u64> {
        let n = self.varint()?;
        match self.pos.checked_add(n) {
            Some(field_end) if field_end <= end => Ok(field_end),
            _ => Err(Failure::Invalid(format!(
                "a length of {n} bytes runs past its message"
            ))),
        }
    }

    /// Reads a length-delimited field into the reused buffer.
    fn message(&mut self, end: u64) -> Parsed<()> {
        let mut buf = std::mem::take(&mut self.buf);
        let read = self.read_field(end, &mut buf);
        self.buf = buf;
        read
    }

    /// Reads a length-delimited field into `buf`, which is cleared first.
    fn read_field(&mut self, end: u64, buf: &mut Vec<u8>) -> Parsed<()> {
        let field_end = self.len(end)?;
        let n = usize::try_from(field_end - self.pos)
            .map_err(|_| Failure::Invalid("a message too large for memory".into()))?;
        buf.clear();
        buf.resize(n, 0);
        self.input.read_exact(buf)?;
        self.pos = field_end;
        Ok(())
    }

    /// A string field, in an allocation of its own size.
    fn string(&mut self, end: u64) -> Parsed<String> {
        let mut bytes = Vec::new();
        self.read_field(end, &mut bytes)?;
        String::from_utf8(bytes).map_err(|_| Failure::Invalid("a string is not UTF-8".into()))
    }

    /// Skips the value of unknown field `field` of wire type `wire`, within `end`.
    fn skip(&mut self, field: u32, wire: u8, end: u64) -> Parsed<()> {
        match wire {
            START_GROUP => self.skip_group(field, end),
            END_GROUP => Err(Failure::Invalid(format!(
                "an end-group tag (field {field}) with no group open"
            ))),
            _ => self.skip_value(wire, end),
        }
    }

    /// Skips a group that field `field` opened, nested groups and all, up to its
    /// end-group tag, within `end`.
    fn skip_group(&mut self, field: u32, end: u64) -> Parsed<()> {
        // The groups open, innermost last: a loop, not recursion, so a hostile file
        // cannot grow the stack.
        let mut open = vec![field];
        while let Some(&innermost) = open.last() {
            if self.pos >= end {
                return Err(Failure::Invalid(format!(
                    "group field {innermost} does not end within its message"
                )));
            }
            let (inner, wire) = self.key()?;
            match wire {
                START_GROUP if open.len() >= MAX_GROUP_DEPTH => {
                    return Err(Failure::Invalid(format!(
                        "groups nested deeper than {MAX_GROUP_DEPTH}"
                    )));
                }
                START_GROUP => open.push(inner),
                END_GROUP if inner == innermost => {
                    open.pop();
                }
                END_GROUP => {
                    return Err(Failure::Invalid(format!(
                        "an end-group tag of field {inner} inside group field {innermost}"
                    )));
                }
                _ => self.skip_value(wire, end)?,
            }
        }
        Ok(())
    }

    /// Skips a value of a wire type other than a group's, within `end`.
    fn skip_value(&mut self, wire: u8, end: u64) -> Parsed<()> {
        let field_end = match wire {
            VARINT => return self.varint().map(drop),
            FIXED64 => self.pos + 8,
            FIXED32 => self.pos + 4,
            LEN => self.len(end)?,
            other => return Err(Failure::Invalid(format!("invalid wire type {other}"))),
        };
        if field_end > end {
            return Err(Failure::Invalid("a field runs past its message".into()));
        }
        self.skip_to(field_end)
    }

    fn skip_to(&mut self, field_end: u64) -> Parsed<()> {
        let n = field_end - self.pos;
        let skipped = io::copy(&mut (&mut self.input).take(n), &mut io::sink())?;
        self.pos += skipped;
        if skipped < n {
            return Err(Failure::Invalid("the file ends inside a message".into()));
        }
        Ok(())
    }
}
