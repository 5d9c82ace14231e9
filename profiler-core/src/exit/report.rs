//! The one place prof writes to stderr.
//!
//! prof's diagnostics are `tracing` events (see [`crate::log`]), but an exit path runs
//! while the process dies: after a panic, a signal or the end of `main`, a subscriber
//! may be gone, unflushed (a non-blocking writer's guard dropped with `main`'s frame)
//! or never set up, and the message saying where the profile went would be lost
//! with the process. So the exit paths say it in one line on stderr, beside the
//! panic message or the shell's report of the signal, where a person or a
//! scheduler's log looks. The profile itself carries the same warning.

use std::io::Write;

use super::ending::{Outcome, Why};

/// Says on stderr what ending the session for `why` came to, in one line, when there
/// is something to say. A closed or full stderr is ignored: nothing here may panic.
pub(super) fn tell(why: &Why, outcome: &Outcome) {
    if !outcome.worth_saying() {
        return;
    }
    let line = format!("prof: {}; {outcome}\n", why.short());
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
