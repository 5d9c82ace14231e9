//! Per-thread record buffers: where the hot path writes, and the collector reads.
//!
//! Each thread that records owns a [`ThreadBuffer`](layout::ThreadBuffer): a linked list of fixed-size
//! chunks of 32-byte [`Slot`](layout::Slot)s. Only the owning thread writes; it publishes how many
//! slots are complete with one release store, and the collector reads that many with
//! one acquire load, so neither side ever takes a lock. The only lock is the registry's,
//! taken once per thread lifetime when the thread first records, and by the collector.
//!
//! Steady state allocates nothing: chunks are kept for the thread's lifetime and reused
//! by every later session (a session that records more than any before it grows the
//! list by one 32 KiB chunk per 1024 records, amortised over those records).
//!
//! A flight recorder's session instead writes each thread's records in a ring of a
//! fixed number of chunks, overwriting the oldest; [`ring`] says how a snapshot reads
//! it while it is being written.
//!
//!
//! Bottom up: [`layout`] (slots, chunks, records), [`decode`] and [`ring`] (reading
//! slots back, from a list or a ring), [`registry`] (every thread's buffer and the
//! session they write), [`event_ref`] (an open event's handle), [`writer`] (the hot path).

mod decode;
mod event_ref;
mod layout;
mod registry;
mod ring;
mod writer;

pub(crate) use event_ref::EventRef;
#[cfg(test)]
pub(crate) use layout::Slot;
pub(crate) use layout::{Dropped, Record};
pub(crate) use registry::{begin_session, buffers};
#[cfg(feature = "tracing")]
pub(crate) use writer::close_span_at_end;
pub(crate) use writer::{
    add_field, begin_event_with, end_event, instant_event, instant_event_with, sample, span_event,
    this_line,
};
