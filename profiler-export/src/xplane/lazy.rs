//! [`LazySpace`]: a space whose events stay encoded until they are walked.
//!
//! A decoded [`XEvent`] takes 32 bytes, and its first stat a 176-byte block (room
//! for four), where the file spends 15 to 25 bytes on the event: a decoded profile is
//! three to ten times its file. Converting a file needs each event only while it is
//! written out, so here each line keeps its events as the file had them (length, then
//! bytes) and decodes them one at a time, into one reused event, during the walk.

use std::cmp::Reverse;

use profiler_core::xspace::{XEvent, XSpace};
use prost::encoding::{decode_varint, encode_varint};
use prost::Message;

/// A space read for conversion: planes, metadata and line headers decoded, each line's
/// events kept encoded (about the size of the file) and decoded one at a time while
/// [`Timeline::lazy`](crate::timeline::Timeline::lazy) walks them.
#[derive(Debug)]
pub struct LazySpace {
    space: XSpace,
    /// Per plane, per line.
    events: Vec<Vec<EncodedEvents>>,
    /// What the reader said of the file (also among the space's warnings).
    notes: Vec<String>,
}

impl LazySpace {
    pub(super) fn new(
        space: XSpace,
        events: Vec<Vec<EncodedEvents>>,
        notes: Vec<String>,
    ) -> LazySpace {
        LazySpace {
            space,
            events,
            notes,
        }
    }

    /// What reading the file left out, in words for a user (events no profile can
    /// hold, host names past the limit); the space's `warnings` end with these too.
    pub fn read_warnings(&self) -> &[String] {
        &self.notes
    }

    /// The space without its events: its lines' `events` are empty (they are decoded
    /// while walked).
    pub fn space(&self) -> &XSpace {
        &self.space
    }

    /// How many events the lines hold.
    pub fn event_count(&self) -> usize {
        self.events.iter().flatten().map(|e| e.len).sum()
    }

    /// The encoded events of line `line` of plane `plane`.
    pub(crate) fn events(&self, plane: usize, line: usize) -> Option<&EncodedEvents> {
        self.events.get(plane)?.get(line)
    }
}

/// Where an event sorts in XProf's order: offset, then longest first.
fn order_key(event: &XEvent) -> (i64, Reverse<i64>) {
    (event.offset_ps(), Reverse(event.duration_ps))
}

/// One line's events as encoded in the file.
#[derive(Debug, Default)]
pub(crate) struct EncodedEvents {
    /// Each event's length (a varint), then its bytes.
    bytes: Vec<u8>,
    len: usize,
    /// Whether some event sorts before the one it follows.
    unsorted: bool,
    last: Option<(i64, Reverse<i64>)>,
}

impl EncodedEvents {
    /// Makes room for `bytes` more bytes.
    pub(super) fn reserve(&mut self, bytes: u64) {
        self.bytes.reserve(usize::try_from(bytes).unwrap_or(0));
    }

    /// Appends an event: its bytes, and the event they decode to.
    pub(super) fn push(&mut self, bytes: &[u8], event: &XEvent) {
        encode_varint(bytes.len() as u64, &mut self.bytes);
        self.bytes.extend_from_slice(bytes);
        self.len += 1;
        let key = order_key(event);
        self.unsorted |= self.last.is_some_and(|last| key < last);
        self.last = Some(key);
    }

    /// Whether the line has no events.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Calls `f` with each event, in the file's order or (`sorted`) in XProf's order.
    /// One event is decoded at a time; sorting an unsorted line holds its order, 24
    /// bytes per event.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub(crate) fn for_each<E>(
        &self,
        sorted: bool,
        mut f: impl FnMut(&XEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut event = XEvent::default();
        if !(sorted && self.unsorted) {
            return self.each_encoded(|_, bytes| match decode(&mut event, bytes) {
                true => f(&event),
                false => Ok(()),
            });
        }
        let mut order = Vec::with_capacity(self.len);
        let _ = self.each_encoded(|at, bytes| {
            if decode(&mut event, bytes) {
                order.push((order_key(&event), at));
            }
            Ok::<(), ()>(())
        });
        // The position breaks ties as the stable sort of decoded lines does.
        order.sort_unstable();
        for (_, at) in order {
            let mut rest = &self.bytes[at..];
            if let Some(bytes) = next(&mut rest) {
                if decode(&mut event, bytes) {
                    f(&event)?;
                }
            }
        }
        Ok(())
    }

    /// Calls `f` with each event's position and bytes, in the file's order.
    fn each_encoded<E>(&self, mut f: impl FnMut(usize, &[u8]) -> Result<(), E>) -> Result<(), E> {
        let mut rest = &self.bytes[..];
        loop {
            let at = self.bytes.len() - rest.len();
            let Some(bytes) = next(&mut rest) else {
                return Ok(());
            };
            f(at, bytes)?;
        }
    }
}

/// Splits the next event's bytes off `rest`.
fn next<'b>(rest: &mut &'b [u8]) -> Option<&'b [u8]> {
    if rest.is_empty() {
        return None;
    }
    let n = usize::try_from(decode_varint(rest).ok()?).ok()?;
    let (bytes, tail) = rest.split_at_checked(n)?;
    *rest = tail;
    Some(bytes)
}

/// Decodes `bytes` into `event`, reusing its allocations. Every event was decoded once
/// when read, so this cannot fail; if it did, the event would be left out.
fn decode(event: &mut XEvent, bytes: &[u8]) -> bool {
    event.clear();
    event.merge(bytes).is_ok()
}
