//! The scope hook: how a device tracer learns which recorded annotation was open when
//! work was launched (CUPTI calls this external correlation).
//!
//! [`set_scope_hook`] installs an enter/exit pair that every recorded annotation calls
//! with its [`ScopeId`]. The cost while no hook is installed is one relaxed load, and
//! only on the already-taken recording branch: annotations that are not recorded never
//! reach it. It sits just above the buffer, which tells it where each annotation was
//! recorded; the tracer registry, far above, only re-exports it.

use std::sync::atomic::{AtomicPtr, Ordering};

use crate::buffer::{self, EventRef};

/// The recorded annotation a scope hook is told about.
///
/// `line` is the id of the thread's line on the `/host:CPU` plane and `seq` the
/// record's position in that thread's buffer for this session: together they are
/// unique per recorded annotation, and `line` says on which host line to look for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeId {
    /// Host line id of the thread that opened the annotation.
    pub line: u32,
    /// Sequence number of the annotation's record in the thread's buffer.
    pub seq: u64,
}

impl ScopeId {
    const SEQ_BITS: u32 = 32;

    /// Packs the id into 64 bits (line in the high half, the low 32 bits of `seq` in the
    /// low half), as CUPTI's external correlation ids are.
    pub fn to_u64(self) -> u64 {
        u64::from(self.line) << Self::SEQ_BITS | (self.seq & u64::from(u32::MAX))
    }

    /// The inverse of [`ScopeId::to_u64`] (`seq` keeps its low 32 bits).
    pub fn from_u64(id: u64) -> ScopeId {
        ScopeId {
            line: (id >> Self::SEQ_BITS) as u32,
            seq: id & u64::from(u32::MAX),
        }
    }

    /// The annotation recorded as record `seq` on this thread (what a [`ScopeHook`]
    /// was told of), with the thread's host line.
    pub fn on_this_thread(seq: u64) -> ScopeId {
        ScopeId {
            line: buffer::this_line(),
            seq,
        }
    }
}

/// Called when a recorded annotation opens and closes on the current thread.
///
/// `enter` is given the annotation's record number on its thread
/// ([`ScopeId::on_this_thread`] makes its full id, line included, when the hook needs
/// one). `exit` is called for every `enter`, on the same thread, in nesting order, even
/// when the session stopped meanwhile, so a hook keeping a per-thread stack stays
/// balanced: it closes the innermost annotation the hook was told of. Neither is given
/// more, so that an annotation pays for no lookup the hook may not need.
#[derive(Debug)]
pub struct ScopeHook {
    /// The annotation recorded as record `seq` on this thread opened.
    pub enter: fn(seq: u64),
    /// The innermost annotation opened on this thread closed.
    pub exit: fn(),
}

static HOOK: AtomicPtr<ScopeHook> = AtomicPtr::new(std::ptr::null_mut());

/// Installs `hook` (or removes it with `None`) for every thread.
pub fn set_scope_hook(hook: Option<&'static ScopeHook>) {
    let ptr = hook.map_or(std::ptr::null_mut(), |h| std::ptr::from_ref(h).cast_mut());
    HOOK.store(ptr, Ordering::Release);
}

#[inline(always)]
fn hook() -> Option<&'static ScopeHook> {
    let ptr = HOOK.load(Ordering::Relaxed);
    if ptr.is_null() {
        return None;
    }
    // Acquire pairs with the store in `set_scope_hook`; only reached with a hook on.
    std::sync::atomic::fence(Ordering::Acquire);
    #[allow(unsafe_code)]
    // SAFETY: the pointer was made from a `&'static ScopeHook` in `set_scope_hook`.
    Some(unsafe { &*ptr })
}

/// Tells the hook, if any, that the annotation recorded as `event` opened. Returns
/// whether it was told, so that the annotation reports its close exactly when it
/// reported its open.
///
/// Only the null check is inlined into every recorded annotation; telling the hook
/// is out of line, so the annotation's inlined code stays small enough that what
/// follows it (`set_metadata`) is inlined too.
///
/// The out-of-line part takes the record number, not the event: a reference would
/// make every recorded annotation store its guard to the stack for a call that is
/// never made while no hook is installed.
#[inline(always)]
pub(crate) fn enter(event: &EventRef) -> bool {
    !HOOK.load(Ordering::Relaxed).is_null() && tell_enter(event.seq())
}

#[cold]
#[inline(never)]
fn tell_enter(seq: u64) -> bool {
    match hook() {
        Some(h) => {
            (h.enter)(seq);
            true
        }
        None => false,
    }
}

/// Tells the hook installed now, if any, that the innermost annotation it was told of
/// on this thread closed.
#[cold]
#[inline(never)]
pub(crate) fn exit() {
    if let Some(h) = hook() {
        (h.exit)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_ids_round_trip_through_64_bits() {
        let id = ScopeId { line: 7, seq: 42 };
        assert_eq!(ScopeId::from_u64(id.to_u64()), id);
        assert_eq!(id.to_u64(), 7 << 32 | 42);
    }
}
