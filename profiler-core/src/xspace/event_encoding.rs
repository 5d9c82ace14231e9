//! [`XEvent`]'s protobuf encoding, written by hand: an event is 32 bytes in memory
//! (see [`XEvent`]), which prost's derive cannot lay out, and encoding a profile is
//! nearly all events, so their fields reach the buffer in one copy.

use super::model::{XEvent, XEventData, XStat, XStatValue};

// Field numbers of `XEvent` in xplane.proto.
const EVENT_METADATA_ID: u32 = 1;
const EVENT_OFFSET_PS: u32 = 2;
const EVENT_DURATION_PS: u32 = 3;
const EVENT_NUM_OCCURRENCES: u32 = 5;
const EVENT_STATS: u32 = 4;
// Field numbers of `XStat`.
const STAT_METADATA_ID: u32 = 1;
const STAT_DOUBLE: u32 = 2;
const STAT_UINT64: u32 = 3;
const STAT_INT64: u32 = 4;
const STAT_REF: u32 = 7;
/// The key of an event's stat: its field number and wire type 2 (length-delimited).
const STAT_KEY: u8 = (EVENT_STATS << 3) as u8 | 2;

/// An event's scalar fields, and in front of them room for its key and length, encoded
/// into one small array so that they reach the buffer in one copy: prost's encoder puts
/// each varint byte by byte, each a capacity check, and those were half the time of
/// encoding a profile.
struct Scalars {
    bytes: [u8; Scalars::MAX],
    /// Where the bytes written start: the head is written last, right before the fields.
    start: usize,
    len: usize,
}

impl Scalars {
    /// Room for the head in front of the fields: a one-byte key and the event's length,
    /// a varint of at most ten bytes.
    const HEAD: usize = 11;
    /// What `append_to` copies: the longest head and fields, three of a one-byte key
    /// and a varint of at most ten bytes.
    const COPY: usize = Scalars::HEAD + 3 * 11;
    /// The head, the fields, and room past them for the last varint's whole eight-byte
    /// store (see `varint_at`) and for a copy of `COPY` from a head shorter than `HEAD`.
    const MAX: usize = Scalars::HEAD + 3 * 11 + Scalars::HEAD;

    /// Empty, with the fields to start after the room for the head when `framed`.
    #[inline(always)]
    fn new(framed: bool) -> Scalars {
        let start = if framed { Scalars::HEAD } else { 0 };
        Scalars {
            bytes: [0; Scalars::MAX],
            start,
            len: start,
        }
    }

    /// Writes `v` as a protobuf varint at `at` (seven bits a byte, low first, the top
    /// bit of each byte but the last set) and gives its length.
    ///
    /// A value below 2^56 (every offset and duration of a profile shorter than 20
    /// hours) is spread into its bytes at once and stored as one word: a byte-at-a-time
    /// loop took six instructions and an index check per byte, and an event's offset
    /// is five or six bytes. Always inlined: as a call it cost more than it saved.
    #[inline(always)]
    fn varint_at(&mut self, at: usize, mut v: u64) -> usize {
        if v < 0x80 {
            self.bytes[at] = v as u8;
            return 1;
        }
        if v < 1 << 56 {
            // Halve the groups three times: 28-bit halves into 32-bit lanes, 14-bit
            // quarters into 16-bit lanes, 7-bit eighths into bytes.
            let x = (v & 0x0fff_ffff) | ((v & 0x00ff_ffff_f000_0000) << 4);
            let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x0fff_c000_0fff_c000) << 2);
            let x = (x & 0x007f_007f_007f_007f) | ((x & 0x3f80_3f80_3f80_3f80) << 1);
            // 2 to 8 bytes; every one before the last continues.
            let n = (70 - v.leading_zeros() as usize) / 7;
            let more = 0x8080_8080_8080_8080_u64 >> (64 - 8 * (n - 1));
            self.bytes[at..at + 8].copy_from_slice(&(x | more).to_le_bytes());
            return n;
        }
        let mut n = 0;
        while v >= 0x80 {
            self.bytes[at + n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        self.bytes[at + n] = v as u8;
        n + 1
    }

    /// Appends field `field` (below 16, so its key is one byte) as an int64 varint.
    #[inline(always)]
    fn int64(&mut self, field: u32, value: i64) {
        debug_assert!(field < 16);
        // Key: field number and wire type 0 (varint); int64 is its two's complement.
        self.bytes[self.len] = (field << 3) as u8;
        self.len += 1 + self.varint_at(self.len + 1, value as u64);
    }

    /// Appends field `field` (below 16, so its key is one byte) as a fixed64: a double's
    /// bits.
    #[inline(always)]
    fn fixed64(&mut self, field: u32, bits: u64) {
        debug_assert!(field < 16);
        self.bytes[self.len] = (field << 3) as u8 | 1;
        self.bytes[self.len + 1..self.len + 9].copy_from_slice(&bits.to_le_bytes());
        self.len += 9;
    }

    /// Appends `stat` to `out` framed as an event's stat, when its value is a number;
    /// false, with nothing written, for a string or bytes, which prost writes. Events'
    /// stats are mostly numbers (ids, steps, sizes), and prost's encoder took some 240
    /// instructions for one.
    #[inline]
    fn append_stat(stat: &XStat, out: &mut Vec<u8>) -> bool {
        let mut scalars = Scalars::new(true);
        if stat.metadata_id != 0 {
            scalars.int64(STAT_METADATA_ID, stat.metadata_id);
        }
        // A oneof member is written whatever its value.
        match stat.value {
            Some(XStatValue::Double(v)) => scalars.fixed64(STAT_DOUBLE, v.to_bits()),
            Some(XStatValue::Uint64(v)) => scalars.int64(STAT_UINT64, v as i64),
            Some(XStatValue::Int64(v)) => scalars.int64(STAT_INT64, v),
            Some(XStatValue::Ref(v)) => scalars.int64(STAT_REF, v as i64),
            Some(XStatValue::Str(_) | XStatValue::Bytes(_)) => return false,
            None => {}
        }
        let len = (scalars.len - Scalars::HEAD) as u64;
        scalars.head(Some(STAT_KEY), len);
        scalars.append_to(out);
        true
    }

    /// Writes the head in front of the fields: `key` (one byte) if any, then `len`.
    #[inline(always)]
    fn head(&mut self, key: Option<u8>, len: u64) {
        use prost::encoding::encoded_len_varint;
        let at = Scalars::HEAD - encoded_len_varint(len);
        // Byte by byte: `varint_at`'s word would run over the fields. Nearly every
        // event is shorter than 128 bytes, one byte here.
        let mut v = len;
        for byte in &mut self.bytes[at..Scalars::HEAD - 1] {
            *byte = v as u8 | 0x80;
            v >>= 7;
        }
        self.bytes[Scalars::HEAD - 1] = v as u8;
        self.start = match key {
            Some(key) => {
                self.bytes[at - 1] = key;
                at - 1
            }
            None => at,
        };
    }

    /// The bytes written.
    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..self.len]
    }

    /// Appends the bytes written: a copy of a fixed size, then cut back, since a copy
    /// of a known size is a few moves where one of a computed length is a call to
    /// `memmove` (for every event of a profile).
    #[inline(always)]
    fn append_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&self.bytes[self.start..self.start + Scalars::COPY]);
        out.truncate(at + self.len - self.start);
    }

    /// Appends the event's scalar fields.
    #[inline(always)]
    fn of(&mut self, event: &XEvent) {
        // proto3: scalars at their default value are not written.
        if event.metadata_id != 0 {
            self.int64(EVENT_METADATA_ID, event.metadata_id);
        }
        // Written even when 0, as a oneof member is: its presence says which it is.
        match event.data() {
            XEventData::OffsetPs(v) => self.int64(EVENT_OFFSET_PS, v),
            XEventData::NumOccurrences(v) => self.int64(EVENT_NUM_OCCURRENCES, v),
        }
        if event.duration_ps != 0 {
            self.int64(EVENT_DURATION_PS, event.duration_ps);
        }
    }
}

impl XEvent {
    /// Appends the event as field `field` of an enclosing message (an `XLine`'s
    /// events), as prost's `message::encode` writes it: its key, its length and its
    /// bytes. Its scalar fields are encoded first, which gives its length without a
    /// pass of their own, and its key and length are then written in front of them:
    /// all but its stats reach `out` in one copy of a known size.
    pub fn encode_field(&self, field: u32, out: &mut Vec<u8>) {
        use prost::encoding::{encode_key, message, WireType};
        let mut scalars = Scalars::new(true);
        scalars.of(self);
        let stats_len = if self.stats.is_empty() {
            0
        } else {
            message::encoded_len_repeated(EVENT_STATS, &self.stats)
        };
        let len = (scalars.len - Scalars::HEAD + stats_len) as u64;
        if field < 16 {
            scalars.head(
                Some((field << 3) as u8 | WireType::LengthDelimited as u8),
                len,
            );
        } else {
            encode_key(field, WireType::LengthDelimited, out);
            scalars.head(None, len);
        }
        scalars.append_to(out);
        for stat in &self.stats {
            if !Scalars::append_stat(stat, out) {
                message::encode(EVENT_STATS, stat, out);
            }
        }
    }
}

impl prost::Message for XEvent {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        use prost::encoding::message;
        let mut scalars = Scalars::new(false);
        scalars.of(self);
        buf.put_slice(scalars.as_slice());
        for stat in &self.stats {
            message::encode(EVENT_STATS, stat, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        use prost::encoding::{int64, message, skip_field};
        let field = |mut e: prost::DecodeError, name: &'static str| {
            e.push("XEvent", name);
            e
        };
        match tag {
            EVENT_METADATA_ID => int64::merge(wire_type, &mut self.metadata_id, buf, ctx)
                .map_err(|e| field(e, "metadata_id")),
            EVENT_OFFSET_PS | EVENT_NUM_OCCURRENCES => {
                let offset = tag == EVENT_OFFSET_PS;
                let name = if offset {
                    "offset_ps"
                } else {
                    "num_occurrences"
                };
                let mut value = 0;
                int64::merge(wire_type, &mut value, buf, ctx).map_err(|e| field(e, name))?;
                if !(XEvent::MIN_OFFSET_PS..=XEvent::MAX_OFFSET_PS).contains(&value) {
                    return Err(field(out_of_range(value), name));
                }
                self.set_data(if offset {
                    XEventData::OffsetPs(value)
                } else {
                    XEventData::NumOccurrences(value)
                });
                Ok(())
            }
            EVENT_DURATION_PS => int64::merge(wire_type, &mut self.duration_ps, buf, ctx)
                .map_err(|e| field(e, "duration_ps")),
            EVENT_STATS => {
                let mut stat = XStat::default();
                message::merge(wire_type, &mut stat, buf, ctx).map_err(|e| field(e, "stats"))?;
                self.stats.push(stat);
                Ok(())
            }
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        use prost::encoding::{int64, message};
        let mut len = 0;
        if self.metadata_id != 0 {
            len += int64::encoded_len(EVENT_METADATA_ID, &self.metadata_id);
        }
        len += match self.data() {
            XEventData::OffsetPs(v) => int64::encoded_len(EVENT_OFFSET_PS, &v),
            XEventData::NumOccurrences(v) => int64::encoded_len(EVENT_NUM_OCCURRENCES, &v),
        };
        if self.duration_ps != 0 {
            len += int64::encoded_len(EVENT_DURATION_PS, &self.duration_ps);
        }
        len + message::encoded_len_repeated(EVENT_STATS, &self.stats)
    }

    fn clear(&mut self) {
        *self = XEvent::default();
    }
}

/// The error for an offset or count that [`XEvent`] cannot hold.
#[cold]
fn out_of_range(value: i64) -> prost::DecodeError {
    // The one way a hand-written `Message` can describe its own failure; prost marks
    // it deprecated for users outside `Message` implementations.
    #[allow(deprecated)]
    prost::DecodeError::new(format!(
        "{value} is beyond the ±2^62 (53 days of picoseconds) an event holds"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xspace::{Stats, XLine, XStatValue};
    use prost::Message;

    #[test]
    fn field_numbers_match_the_public_schema() {
        // XEvent{metadata_id=1: 3, offset_ps=2: 5, duration_ps=3: 7}
        let e = XEvent::new(3, 5, 7).with_stats(Stats::from([XStat {
            metadata_id: 1,
            value: Some(XStatValue::Int64(9)),
        }]));
        assert_eq!(
            e.encode_to_vec(),
            [0x08, 3, 0x10, 5, 0x18, 7, 0x22, 4, 0x08, 1, 0x20, 9]
        );
        let line = XLine {
            id: 1,
            display_id: 2,
            duration_ps: 3,
            display_name: "d".into(),
            ..XLine::default()
        };
        assert_eq!(
            line.encode_to_vec(),
            [0x08, 1, 0x48, 3, 0x50, 2, 0x5a, 1, b'd']
        );
    }

    #[test]
    fn int64_fields_are_written_as_prost_writes_them() {
        // Every length of varint, at both of its ends.
        let edges = (0..64).flat_map(|k| {
            let p = 1i64 << k;
            [p, p.wrapping_sub(1), p.wrapping_neg()]
        });
        for field in [1, 2, 3, 5, 15] {
            for value in [0, 1, -1, 300, i64::MAX, i64::MIN, 0x1234_5678_9abc]
                .into_iter()
                .chain(edges.clone())
            {
                let (mut ours, mut prosts) = (Vec::new(), Vec::new());
                let mut scalars = Scalars::new(false);
                scalars.int64(field, value);
                scalars.int64(field, value);
                ours.extend_from_slice(scalars.as_slice());
                prost::encoding::int64::encode(field, &value, &mut prosts);
                prost::encoding::int64::encode(field, &value, &mut prosts);
                assert_eq!(ours, prosts, "field {field}, value {value}");
            }
        }
    }

    #[test]
    fn a_framed_event_is_what_prost_writes_for_a_message_field() {
        let stat = |id, value| XStat {
            metadata_id: id,
            value: Some(value),
        };
        let mut aggregated = XEvent::new(0, 0, 0);
        aggregated.set_data(XEventData::NumOccurrences(12));
        let long = XEvent::new(1, 5, 0)
            .with_stats(Stats::from([stat(4, XStatValue::Str("x".repeat(300)))]));
        let events = [
            XEvent::default(),
            XEvent::new(3, 1 << 40, 1 << 20),
            XEvent::new(i64::MAX, XEvent::MAX_OFFSET_PS, i64::MIN),
            XEvent::new(-1, XEvent::MIN_OFFSET_PS, -1).with_stats(Stats::from([
                stat(2, XStatValue::Int64(-7)),
                stat(9, XStatValue::Double(0.5)),
            ])),
            aggregated,
            long,
            // Every kind of number a stat holds, at the ends of its range, with and
            // without a metadata id, and a stat with no value.
            XEvent::new(2, 9, 1).with_stats(Stats::from([
                stat(0, XStatValue::Uint64(u64::MAX)),
                stat(i64::MAX, XStatValue::Uint64(0)),
                stat(-1, XStatValue::Ref(1 << 56)),
                stat(127, XStatValue::Int64(i64::MIN)),
                stat(128, XStatValue::Double(-0.0)),
                stat(1, XStatValue::Double(f64::NAN)),
                stat(3, XStatValue::Bytes(vec![1, 2, 3])),
                XStat {
                    metadata_id: 5,
                    value: None,
                },
                XStat::default(),
            ])),
        ];
        for field in [1, 4, 15, 16, 2047, 1 << 20] {
            for event in &events {
                let (mut ours, mut prosts) = (vec![0xaa], vec![0xaa]);
                event.encode_field(field, &mut ours);
                prost::encoding::message::encode(field, event, &mut prosts);
                assert_eq!(ours, prosts, "field {field}, {event:?}");
            }
        }
    }

    #[test]
    fn an_event_is_four_words_and_decodes_to_what_was_encoded() {
        // What a long session's memory is made of: keep it at 32 bytes.
        assert_eq!(std::mem::size_of::<XEvent>(), 32);
        let events = [
            XEvent::default(),
            XEvent::new(3, -5, 7).with_stats(Stats::from([
                XStat {
                    metadata_id: 1,
                    value: Some(XStatValue::Str("op".into())),
                },
                XStat {
                    metadata_id: 2,
                    value: Some(XStatValue::Double(0.5)),
                },
            ])),
            XEvent::aggregated(4, 12, 0),
            XEvent::new(1, XEvent::MAX_OFFSET_PS, 1),
            XEvent::new(1, XEvent::MIN_OFFSET_PS, 1),
            XEvent::aggregated(1, XEvent::MAX_OFFSET_PS, 1),
        ];
        for event in events {
            let bytes = event.encode_to_vec();
            assert_eq!(bytes.len(), event.encoded_len());
            assert_eq!(XEvent::decode(&bytes[..]).expect("decodes"), event);
        }
        // A field this schema does not know is skipped, as a derived message would.
        let mut bytes = vec![0x08, 3, 0x30, 99];
        bytes.extend([0x18, 7]);
        let e = XEvent::decode(&bytes[..]).expect("decodes");
        assert_eq!((e.metadata_id, e.duration_ps), (3, 7));
        // Neither an offset nor a count: offset 0, as XProf reads it.
        assert_eq!(e.data(), XEventData::OffsetPs(0));
        // A truncated stat is an error naming where it was.
        let err = XEvent::decode(&[0x22, 9, 0x08][..])
            .expect_err("truncated")
            .to_string();
        assert!(err.contains("XEvent.stats"), "{err}");
    }

    #[test]
    fn an_offset_the_event_cannot_hold_is_an_error_naming_it() {
        for (field, name) in [(0x10, "offset_ps"), (0x28, "num_occurrences")] {
            for value in [
                i64::MAX,
                XEvent::MAX_OFFSET_PS + 1,
                XEvent::MIN_OFFSET_PS - 1,
            ] {
                let mut bytes = vec![field];
                prost::encoding::encode_varint(value as u64, &mut bytes);
                let err = XEvent::decode(&bytes[..])
                    .expect_err("out of range")
                    .to_string();
                assert!(err.contains(&format!("XEvent.{name}")), "{err}");
                assert!(err.contains(&value.to_string()), "{err}");
            }
        }
    }
}
