//! A space as `.xplane.pb` bytes, each event's length computed once ahead.
//!
//! prost's derived encoders write a nested message's length prefix from its
//! `encoded_len`, which sums its children's: an event's length was computed once per
//! message around it (the space, its plane, its line) and again for its own prefix,
//! four times in all, and that was a third of encoding a profile. Here the lines,
//! which hold nearly all of a profile, are written by hand: each event's length is
//! computed once for its line's (and so its plane's) prefix, and an event writing
//! itself gets its own from encoding its fields first (`XEvent::encode_field`).
//! Keeping every event's length between the two passes instead cost 8 bytes per
//! event written and read back. Everything else (ids, names, metadata, stats) goes
//! through prost's field encoders. The bytes are prost's: the same fields in the same
//! order (by field number, as prost-derive writes them), which a test checks.
//!
//! The lengths are computed first, as a [`Layout`], so that a writer knows the file's
//! size before writing a byte of it; a layout may leave out the events that start
//! before a time ([`Keep::From`]), which is how a profile too large for XProf is cut
//! (see `crate::fit`).

use prost::encoding::{
    btree_map, encode_key, encode_varint, encoded_len_varint, int64, key_len, message, string,
    WireType,
};
use std::io::{self, Write};

use prost::Message;

use profiler_core::xspace::{XEvent, XEventData, XLine, XPlane, XSpace};

use super::fields::*;

/// Which events a layout writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Every event.
    All,
    /// Those that start at or after this many picoseconds on the lines' time axis
    /// ([`start_ps`]), and every aggregated event (they have no time).
    From(i64),
}

impl Keep {
    #[inline]
    fn keeps(self, line: &XLine, event: &XEvent) -> bool {
        match (self, event.data()) {
            (Keep::All, _) | (_, XEventData::NumOccurrences(_)) => true,
            (Keep::From(from), XEventData::OffsetPs(offset)) => start_ps(line, offset) >= from,
        }
    }
}

/// Where an event at `offset_ps` on `line` starts, in picoseconds on the axis all of
/// a space's lines share (prof's lines start relative to the profile's start).
#[inline]
pub(crate) fn start_ps(line: &XLine, offset_ps: i64) -> i64 {
    line.timestamp_ns
        .saturating_mul(1000)
        .saturating_add(offset_ps)
}

/// Every length of a space's encoding, computed before any byte is written.
#[derive(Debug)]
pub(crate) struct Layout {
    keep: Keep,
    line_lens: Vec<usize>,
    plane_lens: Vec<usize>,
    total: usize,
}

impl Layout {
    /// The layout of `space` with the events `keep` keeps.
    pub(crate) fn of(space: &XSpace, keep: Keep) -> Layout {
        // Every line's length, from its events'; then every plane's from them. An event
        // gives its own length again as it is written (`XEvent::encode_field`).
        let line_lens: Vec<usize> = space
            .planes
            .iter()
            .flat_map(|p| &p.lines)
            .map(|line| {
                let events = line.events.iter().filter(|e| keep.keeps(line, e));
                let events = events.map(Message::encoded_len);
                line_head_len(line) + nested_len(LINE_EVENTS, events) + line_tail_len(line)
            })
            .collect();
        let mut at = 0;
        let plane_lens: Vec<usize> = space
            .planes
            .iter()
            .map(|plane| {
                let lines = &line_lens[at..at + plane.lines.len()];
                at += lines.len();
                plane_head_len(plane)
                    + nested_len(PLANE_LINES, lines.iter().copied())
                    + plane_tail_len(plane)
            })
            .collect();
        let total = nested_len(SPACE_PLANES, plane_lens.iter().copied())
            + string::encoded_len_repeated(SPACE_ERRORS, &space.errors)
            + string::encoded_len_repeated(SPACE_WARNINGS, &space.warnings)
            + string::encoded_len_repeated(SPACE_HOSTNAMES, &space.hostnames);
        Layout {
            keep,
            line_lens,
            plane_lens,
            total,
        }
    }

    /// The encoding's size in bytes.
    pub(crate) fn total(&self) -> u64 {
        self.total as u64
    }
}

/// The bytes an event takes in its line: key, length and message.
#[inline]
pub(crate) fn framed_len(event: &XEvent) -> usize {
    let len = event.encoded_len();
    key_len(LINE_EVENTS) + encoded_len_varint(len as u64) + len
}

/// Encodes `space` as prost would.
pub(super) fn encode(space: &XSpace) -> Vec<u8> {
    let mut out = Vec::new();
    let layout = Layout::of(space, Keep::All);
    // Never handed over (`spill_at` is never reached), so nothing can fail.
    let _ = encode_with(space, &layout, &mut out, usize::MAX, &mut |_| Ok(()));
    out
}

/// Bytes encoded before they go to the writer: the file is never whole in memory.
const BLOCK: usize = 1 << 20;

/// Encodes `space` as prost would into `w` as `layout` lays it out (the events it
/// keeps), a block at a time, so that a long session's file is not held in memory
/// beside its profile.
pub(crate) fn encode_to(space: &XSpace, layout: &Layout, w: &mut impl Write) -> io::Result<()> {
    let mut out = Vec::with_capacity(BLOCK + 64);
    encode_with(space, layout, &mut out, BLOCK, &mut |bytes: &mut Vec<
        u8,
    >| {
        w.write_all(bytes)?;
        bytes.clear();
        Ok(())
    })?;
    w.write_all(&out)
}

/// Encodes `space` as `layout` says into `out`, handing `out` to `spill` (which
/// empties it) whenever it holds `spill_at` bytes or more after an event.
fn encode_with(
    space: &XSpace,
    layout: &Layout,
    out: &mut Vec<u8>,
    spill_at: usize,
    spill: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    let total = layout.total;
    out.reserve(total.min(spill_at.saturating_add(64)));
    let mut out = Spilling {
        out,
        spill_at,
        spill,
        spilled: 0,
        keep: layout.keep,
    };
    let mut lines = &layout.line_lens[..];
    for (plane, &len) in space.planes.iter().zip(&layout.plane_lens) {
        prefix(SPACE_PLANES, len, out.out);
        put_plane(plane, &mut lines, &mut out)?;
    }
    let out_ = &mut *out.out;
    string::encode_repeated(SPACE_ERRORS, &space.errors, out_);
    string::encode_repeated(SPACE_WARNINGS, &space.warnings, out_);
    string::encode_repeated(SPACE_HOSTNAMES, &space.hostnames, out_);
    debug_assert_eq!(out.spilled + out.out.len(), total);
    Ok(())
}

/// The encoder's output, handed over whenever it passes `spill_at` bytes.
struct Spilling<'a> {
    out: &'a mut Vec<u8>,
    spill_at: usize,
    spill: &'a mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    /// Bytes handed over so far.
    spilled: usize,
    /// The events written.
    keep: Keep,
}

impl Spilling<'_> {
    /// Checked after each event: lines hold nearly all of a profile's bytes.
    #[inline]
    fn after_event(&mut self) -> io::Result<()> {
        if self.out.len() >= self.spill_at {
            self.spilled += self.out.len();
            (self.spill)(self.out)?;
        }
        Ok(())
    }
}

/// The length of repeated message field `field` whose messages are `lens` long.
fn nested_len(field: u32, lens: impl Iterator<Item = usize>) -> usize {
    lens.map(|len| key_len(field) + encoded_len_varint(len as u64) + len)
        .sum()
}

/// The first `n` of `lens`, which then start after them.
fn take<'a>(lens: &mut &'a [usize], n: usize) -> &'a [usize] {
    let (first, rest) = lens.split_at(n);
    *lens = rest;
    first
}

fn prefix(field: u32, len: usize, out: &mut Vec<u8>) {
    encode_key(field, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

/// The plane's fields numbered below its lines'.
fn plane_head_len(plane: &XPlane) -> usize {
    int64_len(PLANE_ID, plane.id) + string_len(PLANE_NAME, &plane.name)
}

/// The plane's fields numbered above its lines'.
fn plane_tail_len(plane: &XPlane) -> usize {
    btree_map::encoded_len(
        int64::encoded_len,
        message::encoded_len,
        PLANE_EVENT_METADATA,
        &plane.event_metadata,
    ) + btree_map::encoded_len(
        int64::encoded_len,
        message::encoded_len,
        PLANE_STAT_METADATA,
        &plane.stat_metadata,
    ) + message::encoded_len_repeated(PLANE_STATS, &plane.stats)
}

/// Writes `plane`, taking its lines' lengths from `lines`.
fn put_plane(plane: &XPlane, lines: &mut &[usize], spilling: &mut Spilling<'_>) -> io::Result<()> {
    put_int64(PLANE_ID, plane.id, spilling.out);
    put_string(PLANE_NAME, &plane.name, spilling.out);
    for (line, &len) in plane.lines.iter().zip(take(lines, plane.lines.len())) {
        prefix(PLANE_LINES, len, spilling.out);
        put_line(line, spilling)?;
    }
    let out = &mut *spilling.out;
    btree_map::encode(
        int64::encode,
        int64::encoded_len,
        message::encode,
        message::encoded_len,
        PLANE_EVENT_METADATA,
        &plane.event_metadata,
        out,
    );
    btree_map::encode(
        int64::encode,
        int64::encoded_len,
        message::encode,
        message::encoded_len,
        PLANE_STAT_METADATA,
        &plane.stat_metadata,
        out,
    );
    for stat in &plane.stats {
        message::encode(PLANE_STATS, stat, out);
    }
    Ok(())
}

/// The line's fields numbered below its events'.
fn line_head_len(line: &XLine) -> usize {
    int64_len(LINE_ID, line.id)
        + string_len(LINE_NAME, &line.name)
        + int64_len(LINE_TIMESTAMP_NS, line.timestamp_ns)
}

/// The line's fields numbered above its events'.
fn line_tail_len(line: &XLine) -> usize {
    int64_len(LINE_DURATION_PS, line.duration_ps)
        + int64_len(LINE_DISPLAY_ID, line.display_id)
        + string_len(LINE_DISPLAY_NAME, &line.display_name)
}

fn put_line(line: &XLine, spilling: &mut Spilling<'_>) -> io::Result<()> {
    put_int64(LINE_ID, line.id, spilling.out);
    put_string(LINE_NAME, &line.name, spilling.out);
    put_int64(LINE_TIMESTAMP_NS, line.timestamp_ns, spilling.out);
    let keep = spilling.keep;
    for event in line.events.iter().filter(|e| keep.keeps(line, e)) {
        event.encode_field(LINE_EVENTS, spilling.out);
        spilling.after_event()?;
    }
    let out = &mut *spilling.out;
    put_int64(LINE_DURATION_PS, line.duration_ps, out);
    put_int64(LINE_DISPLAY_ID, line.display_id, out);
    put_string(LINE_DISPLAY_NAME, &line.display_name, out);
    Ok(())
}

// proto3: a scalar at its default value is not written.
fn int64_len(field: u32, value: i64) -> usize {
    if value == 0 {
        0
    } else {
        int64::encoded_len(field, &value)
    }
}

fn string_len(field: u32, value: &String) -> usize {
    if value.is_empty() {
        0
    } else {
        string::encoded_len(field, value)
    }
}

fn put_int64(field: u32, value: i64, out: &mut Vec<u8>) {
    if value != 0 {
        int64::encode(field, &value, out);
    }
}

fn put_string(field: u32, value: &String, out: &mut Vec<u8>) {
    if !value.is_empty() {
        string::encode(field, value, out);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use profiler_core::xspace::{
        XEvent, XEventData, XEventMetadata, XStat, XStatMetadata, XStatValue,
    };

    use super::*;

    #[test]
    fn the_bytes_are_prosts() {
        let stat = |id, value| XStat {
            metadata_id: id,
            value: Some(value),
        };
        let event = |id, data, duration, stats: Vec<XStat>| {
            let mut e = XEvent::new(id, 0, duration).with_stats(stats.into_iter().collect());
            e.set_data(data);
            e
        };
        let line = |id, events| XLine {
            id,
            display_id: id * 3,
            name: format!("line {id}"),
            display_name: if id % 2 == 0 {
                String::new()
            } else {
                "shown".into()
            },
            timestamp_ns: id * 1000,
            duration_ps: id * 7,
            events,
        };
        let mut event_metadata = BTreeMap::new();
        event_metadata.insert(
            1,
            XEventMetadata {
                id: 1,
                name: "op".into(),
                ..XEventMetadata::default()
            },
        );
        let mut stat_metadata = BTreeMap::new();
        stat_metadata.insert(
            2,
            XStatMetadata {
                id: 2,
                name: "step_num".into(),
                ..XStatMetadata::default()
            },
        );
        let space = XSpace {
            planes: vec![
                XPlane {
                    id: 1,
                    name: "/host:CPU".into(),
                    lines: vec![
                        line(
                            1,
                            vec![
                                event(1, XEventData::OffsetPs(5), 10, vec![]),
                                event(
                                    1,
                                    XEventData::OffsetPs(-1 << 40),
                                    0,
                                    vec![
                                        stat(2, XStatValue::Int64(-3)),
                                        stat(2, XStatValue::Str("x".repeat(300))),
                                    ],
                                ),
                                event(0, XEventData::NumOccurrences(7), 1 << 50, vec![]),
                                event(
                                    1,
                                    XEventData::OffsetPs(0),
                                    3,
                                    vec![stat(2, XStatValue::Double(0.5))],
                                ),
                            ],
                        ),
                        line(0, vec![]),
                        line(
                            2,
                            (0..200)
                                .map(|i| event(1, XEventData::OffsetPs(i), i, vec![]))
                                .collect(),
                        ),
                    ],
                    event_metadata,
                    stat_metadata,
                    stats: vec![stat(2, XStatValue::Uint64(9))],
                },
                XPlane::default(),
                XPlane {
                    id: 0,
                    name: String::new(),
                    lines: vec![line(3, vec![event(2, XEventData::OffsetPs(1), 1, vec![])])],
                    ..XPlane::default()
                },
            ],
            errors: vec!["e".into()],
            warnings: vec!["w1".into(), "w2".into()],
            hostnames: vec!["host".into()],
        };
        assert_eq!(encode(&space), space.encode_to_vec());
        assert_eq!(
            encode(&XSpace::default()),
            XSpace::default().encode_to_vec()
        );
        // Handed over in blocks of any size, the bytes are the same.
        for spill_at in [1, 7, 100, 1 << 30] {
            let (mut out, mut written, mut handovers) = (Vec::new(), Vec::new(), 0);
            let layout = Layout::of(&space, Keep::All);
            encode_with(
                &space,
                &layout,
                &mut out,
                spill_at,
                &mut |bytes: &mut Vec<u8>| {
                    assert!(bytes.len() >= spill_at);
                    written.extend_from_slice(bytes);
                    bytes.clear();
                    handovers += 1;
                    Ok(())
                },
            )
            .expect("encoded");
            written.extend_from_slice(&out);
            assert_eq!(written, space.encode_to_vec(), "blocks of {spill_at}");
            assert_eq!(
                handovers > 0,
                spill_at < written.len(),
                "blocks of {spill_at}"
            );
        }
        let mut streamed = Vec::new();
        encode_to(&space, &Layout::of(&space, Keep::All), &mut streamed).expect("encoded");
        assert_eq!(streamed, space.encode_to_vec());
        // A layout keeping the events from a time on writes the bytes of the space
        // without the others.
        for from in [i64::MIN, 0, 5, 6, 1_000_100, i64::MAX] {
            let mut cut = space.clone();
            for line in cut.planes.iter_mut().flat_map(|p| &mut p.lines) {
                let timestamp = line.timestamp_ns;
                line.events.retain(|e| match e.data() {
                    XEventData::OffsetPs(o) => timestamp * 1000 + o >= from,
                    XEventData::NumOccurrences(_) => true,
                });
            }
            let layout = Layout::of(&space, Keep::From(from));
            assert_eq!(layout.total(), cut.encoded_len() as u64, "from {from}");
            let mut streamed = Vec::new();
            encode_to(&space, &layout, &mut streamed).expect("encoded");
            assert_eq!(streamed, cut.encode_to_vec(), "from {from}");
        }
    }

    /// A writer that takes `left` bytes, then fails as a full disk does.
    struct FillsUp(usize);

    impl Write for FillsUp {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_stops_the_encoding_with_its_error() {
        let line = XLine {
            events: (0..300_000).map(|i| XEvent::new(1, i, i)).collect(),
            ..XLine::default()
        };
        let space = XSpace {
            planes: vec![XPlane {
                lines: vec![line],
                ..XPlane::default()
            }],
            ..XSpace::default()
        };
        let layout = Layout::of(&space, Keep::All);
        let err = encode_to(&space, &layout, &mut FillsUp(1000)).expect_err("the disk filled up");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }
}
