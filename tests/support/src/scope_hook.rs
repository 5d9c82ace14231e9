//! A scope hook that remembers every annotation it was told of, as a device tracer's
//! would, for tests of what reaches the hook ([`profiler_core::tracer::set_scope_hook`]).
//! The hook is process-wide: a test binary that installs it holds it alone.

use std::sync::{Mutex, PoisonError};

use profiler_core::tracer::{ScopeHook, ScopeId};

/// What the hook was told, in order: `(true, id)` for an annotation that opened,
/// `(false, id)` for one that closed.
static HEARD: Mutex<Vec<(bool, ScopeId)>> = Mutex::new(Vec::new());

/// The annotations the hook was told are open (the hook is told the record number;
/// the id with its line is the hook's to make, as a tracer's is).
static OPEN: Mutex<Vec<ScopeId>> = Mutex::new(Vec::new());

fn enter(seq: u64) {
    let s = ScopeId::on_this_thread(seq);
    OPEN.lock().unwrap_or_else(PoisonError::into_inner).push(s);
    HEARD
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((true, s));
}

fn exit() {
    let s = OPEN
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop()
        .expect("an exit for every enter");
    HEARD
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((false, s));
}

/// The hook to install.
pub static HOOK: ScopeHook = ScopeHook { enter, exit };

/// What the hook heard since the last call, oldest first.
pub fn take() -> Vec<(bool, ScopeId)> {
    std::mem::take(&mut *HEARD.lock().unwrap_or_else(PoisonError::into_inner))
}
