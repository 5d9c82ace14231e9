//! A space as `.xplane.pb` bytes, each event's length computed once.
//!
//! prost's derived encoders write a nested message's length prefix from its
//! `encoded_len`, which sums its children's: an event's length was computed once per
//! message around it (the space, its plane, its line) and again for its own prefix,
//! four times in all, and that was a third of encoding a profile. Here the lines,
//! which hold nearly all of a profile, are written by hand: each event's length is
//! computed once, kept for the line's and the plane's prefixes, and used for its own.
//! Everything else (ids, names, metadata, stats) goes through prost's field
//! encoders. The bytes are prost's: the same fields in the same order (by field
//! number, as prost-derive writes them), which a test checks. The kept lengths cost
//! 8 bytes per event while encoding, beside the 15 or so of the output.

use prost::encoding::{
    btree_map, encode_key, encode_varint, encoded_len_varint, int64, key_len, message, string,
    WireType,
};
use prost::Message;

use profiler_core::xspace::{XLine, XPlane, XSpace};

use super::fields::*;

/// Encodes `space` as prost would.
pub(super) fn encode(space: &XSpace) -> Vec<u8> {
    let lines = || space.planes.iter().flat_map(|p| &p.lines);
    // Every event's length, in walk order, computed once; then every line's and
    // every plane's from them.
    let event_lens: Vec<usize> = lines()
        .flat_map(|l| &l.events)
        .map(Message::encoded_len)
        .collect();
    let mut at = 0;
    let line_lens: Vec<usize> = lines()
        .map(|line| {
            let events = &event_lens[at..at + line.events.len()];
            at += events.len();
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
            plane_head_len(plane) + nested_len(PLANE_LINES, lines) + plane_tail_len(plane)
        })
        .collect();
    let total = nested_len(SPACE_PLANES, &plane_lens)
        + string::encoded_len_repeated(SPACE_ERRORS, &space.errors)
        + string::encoded_len_repeated(SPACE_WARNINGS, &space.warnings)
        + string::encoded_len_repeated(SPACE_HOSTNAMES, &space.hostnames);

    let mut out = Vec::with_capacity(total);
    let (mut events, mut lines) = (&event_lens[..], &line_lens[..]);
    for (plane, &len) in space.planes.iter().zip(&plane_lens) {
        prefix(SPACE_PLANES, len, &mut out);
        put_plane(plane, &mut lines, &mut events, &mut out);
    }
    string::encode_repeated(SPACE_ERRORS, &space.errors, &mut out);
    string::encode_repeated(SPACE_WARNINGS, &space.warnings, &mut out);
    string::encode_repeated(SPACE_HOSTNAMES, &space.hostnames, &mut out);
    debug_assert_eq!(out.len(), total);
    out
}

/// The length of repeated message field `field` whose messages are `lens` long.
fn nested_len(field: u32, lens: &[usize]) -> usize {
    lens.iter()
        .map(|&len| key_len(field) + encoded_len_varint(len as u64) + len)
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

/// Writes `plane`, taking its lines' lengths from `lines` and their events' from
/// `events`.
fn put_plane(plane: &XPlane, lines: &mut &[usize], events: &mut &[usize], out: &mut Vec<u8>) {
    put_int64(PLANE_ID, plane.id, out);
    put_string(PLANE_NAME, &plane.name, out);
    for (line, &len) in plane.lines.iter().zip(take(lines, plane.lines.len())) {
        prefix(PLANE_LINES, len, out);
        put_line(line, take(events, line.events.len()), out);
    }
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

fn put_line(line: &XLine, event_lens: &[usize], out: &mut Vec<u8>) {
    put_int64(LINE_ID, line.id, out);
    put_string(LINE_NAME, &line.name, out);
    put_int64(LINE_TIMESTAMP_NS, line.timestamp_ns, out);
    for (event, &len) in line.events.iter().zip(event_lens) {
        prefix(LINE_EVENTS, len, out);
        event.encode_raw(out);
    }
    put_int64(LINE_DURATION_PS, line.duration_ps, out);
    put_int64(LINE_DISPLAY_ID, line.display_id, out);
    put_string(LINE_DISPLAY_NAME, &line.display_name, out);
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
    }
}
