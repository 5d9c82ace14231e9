//! The scope hook: how a device tracer learns which recorded annotation was open when
//! work was launched (CUPTI calls this external correlation).
//!
//! [`set_scope_hook`] installs an enter/exit pair that every recorded annotation calls
//! with its [`ScopeId`]. The cost while no hook is installed is one relaxed load, and
//! only on the already-taken recording branch: annotations that are not recorded never
//! reach it. It sits just above the buffer, which tells it where each annotation was
//! recorded; the tracer registry, far above, only re-exports it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

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
/// Whether a device tracer reads the threads' scope stacks ([`keep_scope_stack`]).
static STACK_WANTED: AtomicBool = AtomicBool::new(false);
/// Whether recorded annotations tell this module anything: a hook is installed, or
/// the scope stacks are kept. The one load every recorded annotation makes here.
static ACTIVE: AtomicBool = AtomicBool::new(false);

fn update_active() {
    let active = STACK_WANTED.load(Ordering::Relaxed) || !HOOK.load(Ordering::Relaxed).is_null();
    ACTIVE.store(active, Ordering::Release);
}

/// Installs `hook` (or removes it with `None`) for every thread.
pub fn set_scope_hook(hook: Option<&'static ScopeHook>) {
    let ptr = hook.map_or(std::ptr::null_mut(), |h| std::ptr::from_ref(h).cast_mut());
    HOOK.store(ptr, Ordering::Release);
    update_active();
}

/// Keeps (or stops keeping) each thread's stack of open recorded annotations, for
/// [`innermost_scope`]: what a device tracer reads at every launch to know which
/// annotation launched it (the CUPTI tracer's launch callback does), the way TSL's
/// tracer reads its annotation stack.
///
/// The stack is a fixed array of record numbers in a thread-local, pushed and popped
/// in the annotation's own out-of-line path: no hook call, no lock, no allocation.
pub fn keep_scope_stack(keep: bool) {
    STACK_WANTED.store(keep, Ordering::Release);
    update_active();
}

/// Annotations nested deeper than this are counted but not kept: a launch inside one
/// of them is attributed to the innermost kept, already this deep into the step.
pub const SCOPE_STACK_DEPTH: usize = 64;

struct Stack {
    /// Open annotations told of, including those beyond [`SCOPE_STACK_DEPTH`].
    depth: Cell<usize>,
    /// Their record numbers, outermost first.
    seqs: [Cell<u64>; SCOPE_STACK_DEPTH],
}

thread_local! {
    // `const` and without a destructor: an access is one address relative to the
    // thread pointer, with no first-use registration to check.
    static STACK: Stack = const {
        Stack {
            depth: Cell::new(0),
            seqs: [const { Cell::new(0) }; SCOPE_STACK_DEPTH],
        }
    };
}

fn push(seq: u64) {
    // `try_with`: a thread being torn down keeps nothing more.
    let _ = STACK.try_with(|s| {
        let depth = s.depth.get();
        if let Some(slot) = s.seqs.get(depth) {
            slot.set(seq);
        }
        s.depth.set(depth + 1);
    });
}

fn pop() {
    let _ = STACK.try_with(|s| s.depth.set(s.depth.get().saturating_sub(1)));
}

/// The innermost recorded annotation open on this thread (the innermost kept, when
/// they are nested deeper than [`SCOPE_STACK_DEPTH`]), while [`keep_scope_stack`] is
/// on; `None` outside any. The thread's host line is looked up here, not on every
/// annotation.
#[inline]
pub fn innermost_scope() -> Option<ScopeId> {
    let seq = STACK
        .try_with(|s| {
            let depth = s.depth.get().min(SCOPE_STACK_DEPTH);
            Some(s.seqs.get(depth.checked_sub(1)?)?.get())
        })
        .ok()
        .flatten()?;
    Some(ScopeId::on_this_thread(seq))
}

/// How many recorded annotations this thread has open, as the scope stack counts them.
pub fn scope_depth() -> usize {
    STACK.try_with(|s| s.depth.get()).unwrap_or(0)
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
    ACTIVE.load(Ordering::Relaxed) && tell_enter(event.seq())
}

/// The stack is kept whenever anything listens, so that every `enter` told has its
/// `exit`, and the stack stays balanced whatever is switched on or off between them.
#[cold]
#[inline(never)]
fn tell_enter(seq: u64) -> bool {
    push(seq);
    if let Some(h) = hook() {
        (h.enter)(seq);
    }
    true
}

/// Tells the stack and the hook installed now, if any, that the innermost annotation
/// they were told of on this thread closed.
#[cold]
#[inline(never)]
pub(crate) fn exit() {
    pop();
    if let Some(h) = hook() {
        (h.exit)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_keeps_the_innermost_open_annotation() {
        assert_eq!(innermost_scope(), None);
        push(1);
        push(2);
        assert_eq!(innermost_scope().map(|s| s.seq), Some(2));
        pop();
        assert_eq!(innermost_scope().map(|s| s.seq), Some(1));
        pop();
        assert_eq!((innermost_scope(), scope_depth()), (None, 0));
        // A pop without a push does not wrap the depth.
        pop();
        assert_eq!(scope_depth(), 0);
        // Deeper than the stack: the innermost kept.
        for seq in 0..SCOPE_STACK_DEPTH as u64 + 10 {
            push(seq);
        }
        assert_eq!(
            innermost_scope().map(|s| s.seq),
            Some(SCOPE_STACK_DEPTH as u64 - 1)
        );
        for _ in 0..SCOPE_STACK_DEPTH + 10 {
            pop();
        }
        assert_eq!(innermost_scope(), None);
        // Each thread has its own.
        push(5);
        assert_eq!(
            std::thread::spawn(innermost_scope).join().expect("thread"),
            None
        );
        pop();
    }

    #[test]
    fn scope_ids_round_trip_through_64_bits() {
        let id = ScopeId { line: 7, seq: 42 };
        assert_eq!(ScopeId::from_u64(id.to_u64()), id);
        assert_eq!(id.to_u64(), 7 << 32 | 42);
    }
}
