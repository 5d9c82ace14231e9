//! The annotations open on each thread, kept where the launch callback can read them.
//!
//! While the GPU tracer runs, prof's scope hook ([`HOOK`]) is told of every recorded
//! annotation that opens and closes (`trace!`, `#[prof::instrument]`, `ProfilerLayer`
//! spans), on the thread that opened it. It keeps them in a fixed thread-local stack: a
//! push or a pop is a few stores into the thread's own memory, with no call into CUPTI
//! (TSL's tracer reads its annotation stack the same way). When a CUDA call is made,
//! the launch callback ([`crate::calls`]) reads the top of that stack: the innermost
//! annotation open on the launching thread, which the conversion turns into the
//! kernel's `tf_op`.
//!
//! What would make it slower: a lock, a heap-allocated stack that grows, or a
//! thread-local with a destructor (its first use registers the destructor, and every
//! access checks whether it has been). The stack is `const`-initialised and holds plain
//! cells, so an access is one thread-pointer-relative address.

use std::cell::Cell;

use profiler_core::tracer::{ScopeHook, ScopeId};

/// Annotations deeper than this are counted but not kept: a launch inside one of them is
/// attributed to the innermost kept, which is already `DEPTH` levels into the step.
pub const DEPTH: usize = 64;

struct Stack {
    /// Open annotations, including those beyond [`DEPTH`].
    depth: Cell<usize>,
    /// Record numbers of the open annotations, outermost first.
    seqs: [Cell<u64>; DEPTH],
}

thread_local! {
    static STACK: Stack = const {
        Stack {
            depth: Cell::new(0),
            seqs: [const { Cell::new(0) }; DEPTH],
        }
    };
}

/// The hook the GPU tracer installs with `profiler_core::tracer::set_scope_hook`.
pub static HOOK: ScopeHook = ScopeHook { enter, exit };

/// An annotation opened: its record number on this thread goes on the stack.
pub fn enter(seq: u64) {
    // `try_with`: a thread being torn down records nothing more.
    let _ = STACK.try_with(|s| {
        let depth = s.depth.get();
        if let Some(slot) = s.seqs.get(depth) {
            slot.set(seq);
        }
        s.depth.set(depth + 1);
    });
}

/// The innermost annotation closed. The core calls it for every [`enter`], on the same
/// thread, in nesting order.
pub fn exit() {
    let _ = STACK.try_with(|s| s.depth.set(s.depth.get().saturating_sub(1)));
}

/// The innermost annotation open on this thread (the innermost kept, when they are
/// nested deeper than [`DEPTH`]), or `None` outside any. The thread's host line is
/// looked up here, once per launch, not on every annotation.
#[inline]
pub fn innermost() -> Option<ScopeId> {
    let seq = STACK
        .try_with(|s| {
            let depth = s.depth.get().min(DEPTH);
            Some(s.seqs.get(depth.checked_sub(1)?)?.get())
        })
        .ok()
        .flatten()?;
    Some(ScopeId::on_this_thread(seq))
}

/// How many annotations are open on this thread.
pub fn depth() -> usize {
    STACK.try_with(|s| s.depth.get()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(seq: u64) -> ScopeId {
        ScopeId::on_this_thread(seq)
    }

    #[test]
    fn the_innermost_open_annotation_is_on_top() {
        assert_eq!(innermost(), None);
        enter(1);
        enter(2);
        assert_eq!(innermost(), Some(id(2)));
        exit();
        assert_eq!(innermost(), Some(id(1)));
        enter(3);
        assert_eq!(innermost(), Some(id(3)));
        exit();
        exit();
        assert_eq!((innermost(), depth()), (None, 0));
        // An exit without an enter (a hook installed while annotations were open) does
        // not wrap the depth.
        exit();
        assert_eq!(depth(), 0);
    }

    #[test]
    fn deeper_than_the_stack_keeps_the_innermost_kept() {
        for seq in 0..DEPTH as u64 + 10 {
            enter(seq);
        }
        assert_eq!(innermost(), Some(id(DEPTH as u64 - 1)));
        for _ in 0..DEPTH + 10 {
            exit();
        }
        assert_eq!(innermost(), None);
    }

    #[test]
    fn each_thread_has_its_own_stack() {
        enter(5);
        let other = std::thread::spawn(innermost).join().expect("thread");
        assert_eq!(other, None);
        assert_eq!(innermost(), Some(id(5)));
        exit();
    }
}
