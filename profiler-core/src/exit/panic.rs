//! The panic hook a session installs while it records.
//!
//! Every panic becomes a `panic` marker on the line of the thread that panicked, with
//! its `message` and `location`. A panic that ends the process (on the main thread,
//! or any panic in a `panic = "abort"` build) also stops the session and writes it
//! where `stop` would have, before the hook that was there before ours runs (the one
//! that prints the panic message) and before the unwinding or the abort.
//!
//! The hook is chained: ours calls the one it replaced, and at `stop` the replaced
//! hook is put back, the very box, unless another hook was installed on top of ours
//! meanwhile; then ours stays in that chain, inert, and the next session wakes it
//! rather than stack another. `std::panic::set_hook` panics on a panicking thread, so
//! a session stopped during unwinding (a `Session` guard dropped by the panic) leaves
//! its hook in place, inert, too.

use std::panic::PanicHookInfo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::ending::{self, Why, ARMED, WRITES};
use super::report;
use crate::buffer;
use crate::field::Value;
use crate::gate::{self, USER_LEVEL};
use crate::reentry;

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// The longest panic message kept in the marker, in bytes.
const MESSAGE_BYTES: usize = 1024;

/// The hook ours replaced, shared with our hook, which calls it.
type Previous = Arc<Hook>;

/// Our hook as installed: its id (which the hook compares with [`ACTIVE`]), the address
/// of its box (to recognise it at the top of the chain), and the hook it replaced.
struct Installed {
    id: u64,
    address: usize,
    previous: Previous,
}

static INSTALLED: Mutex<Option<Installed>> = Mutex::new(None);

/// The id of the installed hook that acts; hooks left in another chain compare
/// unequal and only pass the panic on. 0: none acts.
static ACTIVE: AtomicU64 = AtomicU64::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn installed() -> MutexGuard<'static, Option<Installed>> {
    INSTALLED.lock().unwrap_or_else(|e| e.into_inner())
}

fn address_of(hook: &Hook) -> usize {
    std::ptr::from_ref::<dyn Fn(&PanicHookInfo<'_>) + Sync + Send>(&**hook).cast::<()>() as usize
}

/// Puts our hook at the top of the chain (or wakes it if it is there already).
pub(super) fn install() {
    if std::thread::panicking() {
        return; // set_hook would panic; this session goes without the hook
    }
    let mut installed = installed();
    let top = std::panic::take_hook();
    if let Some(ours) = installed.as_ref().filter(|i| i.address == address_of(&top)) {
        ACTIVE.store(ours.id, Ordering::Release);
        std::panic::set_hook(top);
        return;
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let previous: Previous = Arc::new(top);
    let theirs = Arc::clone(&previous);
    // Capturing `id` gives the closure a size, hence a box of its own whose address
    // tells it apart.
    let hook: Hook = Box::new(move |info| on_panic(id, &theirs, info));
    let address = address_of(&hook);
    *installed = Some(Installed {
        id,
        address,
        previous,
    });
    ACTIVE.store(id, Ordering::Release);
    std::panic::set_hook(hook);
}

/// Takes our hook out of the chain and puts back the one it replaced, when ours is at
/// the top; otherwise leaves it there, inert.
pub(super) fn restore() {
    ACTIVE.store(0, Ordering::Release);
    if std::thread::panicking() {
        return;
    }
    let mut installed = installed();
    let Some(ours) = installed.as_ref() else {
        return;
    };
    let top = std::panic::take_hook();
    if ours.address != address_of(&top) {
        std::panic::set_hook(top); // someone chained on top of ours: keep theirs
        return;
    }
    let Some(ours) = installed.take() else {
        return;
    };
    drop(top); // our hook, which held the other reference to `previous`
    match Arc::try_unwrap(ours.previous) {
        Ok(previous) => std::panic::set_hook(previous),
        // Unreachable while our hook is gone; should it be, forward to the shared one.
        Err(previous) => std::panic::set_hook(Box::new(move |info| previous(info))),
    }
}

fn on_panic(id: u64, previous: &Hook, info: &PanicHookInfo<'_>) {
    if ACTIVE.load(Ordering::Acquire) == id && ARMED.load(Ordering::Acquire) && !ending::in_prof() {
        let message = message_of(info);
        let location = info
            .location()
            .map_or_else(|| "an unknown place".to_owned(), |l| l.to_string());
        mark(&message, &location);
        if WRITES.load(Ordering::Acquire) && ends_process() {
            let why = Why::Panic { message, location };
            let outcome = ending::end_session(&why, None);
            report::tell(&why, &outcome);
        }
    }
    previous(info);
}

/// The `panic` marker on this thread's line.
fn mark(message: &str, location: &str) {
    // Held samples mean this thread panicked inside the buffer's own writing (a chunk
    // being allocated, a thread being registered): recording now would re-enter it.
    if !gate::is_open(USER_LEVEL) || reentry::samples_held() {
        return;
    }
    buffer::instant_event_with(
        "panic",
        &[
            ("message", Value::Str(clip(message, MESSAGE_BYTES))),
            ("location", Value::Str(location)),
        ],
    );
}

fn message_of(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

fn clip(s: &str, bytes: usize) -> &str {
    if s.len() <= bytes {
        return s;
    }
    let mut end = bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether the panic being handled ends the process: every panic does in a
/// `panic = "abort"` build (as Cargo's profile setting or `-C panic=abort` compiles
/// this crate), and one on the main thread does, unless the program catches it there
/// (`catch_unwind` around its main work), which this hook cannot know.
fn ends_process() -> bool {
    cfg!(panic = "abort") || on_main_thread()
}

fn on_main_thread() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and getpid have no preconditions and cannot fail; the main
        // thread's id is the process id.
        #[allow(unsafe_code)]
        unsafe {
            libc::gettid() == libc::getpid()
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::thread::current().name() == Some("main")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_clipped_at_a_char_boundary() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("abc", 10), "abc");
    }
}
