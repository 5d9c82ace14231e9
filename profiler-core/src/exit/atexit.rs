//! The process's exit while a session records: `main` returned, or
//! `std::process::exit` was called, without `stop`.
//!
//! Rust runs no destructor of a `static` and has no `atexit` of its own, but both
//! ways out of a Rust program end in the C library's `exit`, which runs the functions
//! registered with `atexit(3)`: one is registered the first time a session starts
//! (it cannot be unregistered, so it does nothing while no session records). It ends
//! the session and writes it where `stop` would have, with one warning, in the profile
//! and on stderr, that `stop` was never called. The main thread's thread-locals are
//! gone by then, so the writing runs on a thread of its own
//! ([`ending::end_session`]).
//!
//! A process ended by a signal's default action, by `abort` or by `_exit` runs no
//! `atexit` function: those are the panic hook's and the signal thread's to handle, or
//! cannot be handled at all.

#![allow(unsafe_code)]

use std::sync::atomic::Ordering;
use std::sync::Once;

use super::ending::{self, Outcome, Why, ARMED, WRITES};
use super::report;

static REGISTERED: Once = Once::new();

/// Registers the exit function, once per process.
pub(super) fn register() {
    REGISTERED.call_once(|| {
        // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds (it catches
        // panics), as atexit requires. Registration fails only when the C library's
        // table is full, and then the process simply exits without it.
        unsafe { libc::atexit(at_exit) };
    });
}

extern "C" fn at_exit() {
    // Unwinding out of an `extern "C"` function aborts: nothing may escape.
    let _ = std::panic::catch_unwind(|| {
        if !(ARMED.load(Ordering::Acquire) && WRITES.load(Ordering::Acquire)) {
            return;
        }
        let why = Why::Exit;
        match ending::end_session(&why, None) {
            // A signal or a panic is writing the session: the process must not end
            // under it (a signal's own budget still bounds it).
            Outcome::AlreadyEnding => {
                ending::wait_until_ended(None);
            }
            outcome => report::tell(&why, &outcome),
        }
    });
}
