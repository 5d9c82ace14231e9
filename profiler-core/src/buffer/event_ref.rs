//! [`EventRef`]: where an open event's record lives, packed in two words.

#![allow(unsafe_code)]

use std::ptr::NonNull;

use super::layout::Slot;

/// Where an open event lives, so its guard can close it and add fields.
///
/// Two words, so that a guard holding one (a `Trace`, with its flags in the slot
/// address's spare bits) is passed in registers: built on the stack with 8-byte
/// stores and moved with a 16-byte load, a wider guard stalled on store forwarding on
/// every annotation (Intel Xeon). A third word, or flags in a field of their own,
/// would bring that back.
#[derive(Debug)]
pub(crate) struct EventRef {
    /// The slot's address, non-null so that `Option<EventRef>` needs no tag word; its
    /// low [`EventRef::FLAG_BITS`] bits, always zero in a slot's address (slots are
    /// 32-byte aligned), carry the holder's flags.
    slot: NonNull<Slot>,
    /// The record number in the high 48 bits (enough for 2^48 records in one
    /// session of one thread), the session's generation modulo 2^16 in the low 16.
    /// A guard kept open across 65,536 later sessions could take a record of the
    /// last for its own and set its end or a field: never memory unsafety, since the
    /// slot stays its thread's (see `end_event`).
    key: u64,
}

const GENERATION_BITS: u32 = 16;

impl EventRef {
    /// Bits of the slot address free for the holder's flags.
    pub(crate) const FLAG_BITS: u32 = 3;
    const FLAG_MASK: usize = (1 << Self::FLAG_BITS) - 1;

    #[inline(always)]
    pub(super) fn new(slot: &Slot, seq: u64, generation: u64) -> EventRef {
        const { assert!(std::mem::align_of::<Slot>() > EventRef::FLAG_MASK) };
        EventRef {
            slot: NonNull::from(slot),
            key: seq << GENERATION_BITS | (generation & ((1 << GENERATION_BITS) - 1)),
        }
    }

    /// The event's record number in its thread's buffer.
    #[inline(always)]
    pub(crate) fn seq(&self) -> u64 {
        self.key >> GENERATION_BITS
    }

    /// Whether this event belongs to the session of `generation`.
    #[inline(always)]
    pub(super) fn of_generation(&self, generation: u64) -> bool {
        (self.key ^ generation) & ((1 << GENERATION_BITS) - 1) == 0
    }

    /// The holder's flags (zero as made).
    #[inline(always)]
    pub(crate) fn flags(&self) -> usize {
        self.slot.addr().get() & Self::FLAG_MASK
    }

    /// Sets the holder's flags, the low [`EventRef::FLAG_BITS`] bits of `flags`, on a
    /// reference that has none yet (they are set once, when the event opens). Or-ed
    /// in, not masked in: the compiler then knows the bits just set, and the guard's
    /// later tests of them fold away.
    #[inline(always)]
    pub(crate) fn set_flags(&mut self, flags: usize) {
        debug_assert_eq!(self.flags(), 0, "flags are set once");
        self.slot = self.slot.map_addr(|addr| addr | (flags & Self::FLAG_MASK));
    }

    /// Adds flags to those set when the event opened: for what is learnt of an event
    /// later (a `tracing` span's `step_num`, given with its fields after its entry).
    #[cfg(feature = "tracing")]
    #[inline]
    pub(crate) fn add_flags(&mut self, flags: usize) {
        self.slot = self.slot.map_addr(|addr| addr | (flags & Self::FLAG_MASK));
    }

    /// The slot's address, without the holder's flags.
    #[inline(always)]
    pub(super) fn slot_ptr(&self) -> NonNull<Slot> {
        self.slot.map_addr(|addr| {
            // SAFETY: a slot's address is a multiple of its alignment, above the flag
            // bits, so it keeps a set bit once they are cleared.
            unsafe { std::num::NonZeroUsize::new_unchecked(addr.get() & !Self::FLAG_MASK) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_ref_keeps_its_slot_seq_generation_and_flags_apart() {
        let slot = Slot::new();
        let seq = (1 << 47) + 12_345;
        let mut event = EventRef::new(&slot, seq, 0x1_2345);
        assert_eq!((event.seq(), event.flags()), (seq, 0));
        event.set_flags(0b111);
        assert_eq!(event.flags(), 0b111);
        assert_eq!(
            event.slot_ptr(),
            NonNull::from(&slot),
            "flags stay out of the address"
        );
        assert_eq!(event.seq(), seq);
        assert!(event.of_generation(0x1_2345));
        assert!(!event.of_generation(0x1_2346));
        let mut event = EventRef::new(&slot, seq, 0x1_2345);
        event.set_flags(0b01);
        assert_eq!(
            (event.flags(), event.slot_ptr()),
            (0b01, NonNull::from(&slot))
        );
        assert_eq!(
            std::mem::size_of::<Option<EventRef>>(),
            16,
            "two words, no tag"
        );
    }
}
