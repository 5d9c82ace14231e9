//! The part of the trace encoded by hand, not through prost: the field numbers of the
//! messages written on the hot path (packets, track events, debug annotations) and the
//! protobuf wire encoding they are written with.

use prost::encoding::WireType;

// Field numbers of the hand-encoded messages (see `proto` for their documentation).
/// `Trace.packet`: every packet is one, framed with its length.
pub(super) const TRACE_PACKET: u32 = 1;
pub(super) const PACKET_TIMESTAMP: u32 = 8;
pub(super) const PACKET_SEQUENCE_ID: u32 = 10;
pub(super) const PACKET_TRACK_EVENT: u32 = 11;
pub(super) const PACKET_INTERNED_DATA: u32 = 12;
pub(super) const PACKET_SEQUENCE_FLAGS: u32 = 13;
pub(super) const EVENT_CATEGORY_IIDS: u32 = 3;
pub(super) const EVENT_CATEGORIES: u32 = 22;
pub(super) const EVENT_NAME: u32 = 23;
pub(super) const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
pub(super) const EVENT_TYPE: u32 = 9;
pub(super) const EVENT_NAME_IID: u32 = 10;
pub(super) const EVENT_COUNTER_VALUE: u32 = 30;
pub(super) const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
pub(super) const EVENT_FLOW_IDS: u32 = 47;
pub(super) const EVENT_TERMINATING_FLOW_IDS: u32 = 48;
pub(super) const ANNOTATION_NAME_IID: u32 = 1;
pub(super) const ANNOTATION_NAME: u32 = 10;
pub(super) const ANNOTATION_UINT: u32 = 3;
pub(super) const ANNOTATION_INT: u32 = 4;
pub(super) const ANNOTATION_DOUBLE: u32 = 5;
pub(super) const ANNOTATION_STRING: u32 = 6;

/// Appends `value` as a protobuf varint with one capacity check, not one per byte:
/// prost's encoder, generic over `BufMut`, pushes byte by byte, and was the largest
/// cost of the export (a sixth of it), at several varints per packet.
#[inline(always)]
pub(super) fn varint(buf: &mut Vec<u8>, mut value: u64) {
    if value < 0x80 {
        buf.push(value as u8);
        return;
    }
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while value >= 0x80 {
        bytes[n] = value as u8 | 0x80;
        value >>= 7;
        n += 1;
    }
    bytes[n] = value as u8;
    buf.extend_from_slice(&bytes[..=n]);
}

#[inline(always)]
pub(super) fn key(buf: &mut Vec<u8>, field: u32, wire: WireType) {
    varint(buf, u64::from(field << 3 | wire as u32));
}

#[inline(always)]
pub(super) fn put_varint(buf: &mut Vec<u8>, field: u32, value: u64) {
    key(buf, field, WireType::Varint);
    varint(buf, value);
}

#[inline(always)]
pub(super) fn put_fixed64(buf: &mut Vec<u8>, field: u32, value: u64) {
    key(buf, field, WireType::SixtyFourBit);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// Bytes varint field `field` holding `value` takes.
#[inline(always)]
pub(super) fn varint_field_len(field: u32, value: u64) -> usize {
    prost::encoding::key_len(field) + prost::encoding::encoded_len_varint(value)
}

/// Bytes length-delimited field `field` of `len` bytes takes.
#[inline(always)]
pub(super) fn bytes_field_len(field: u32, len: usize) -> usize {
    prost::encoding::key_len(field) + prost::encoding::encoded_len_varint(len as u64) + len
}

#[inline(always)]
pub(super) fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(buf, field, WireType::LengthDelimited);
    varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}
