//! One test at a time where the state is process-wide.

use std::sync::{Mutex, MutexGuard, PoisonError};

static SERIAL: Mutex<()> = Mutex::new(());

/// Held by every test of a binary that touches process-wide state: the profiling
/// session, the allocator's counts, a server's listening port, the temporary files
/// `remove_temporaries` clears. A session left running by a test that failed is
/// stopped, so it does not fail the next one.
pub fn serial() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = profiler_core::session::stop();
    guard
}
