//! Instrumented futures: each poll of an `async fn` under `#[prof::instrument]` is an
//! event on the line of the thread that ran it, and the future as a whole is a task:
//! its lifetime (with busy and idle time) on the profile's `Tasks` line, and flows
//! between polls that ran on different threads.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::atomic::{AtomicU64, Ordering};

use crate::annotation::Trace;
use crate::gate::{self, USER_LEVEL};
use crate::tags::PROF_TASK;

pin_project_lite::pin_project! {
    /// A future whose every poll is recorded as an event named `name`.
    #[derive(Debug)]
    pub struct Instrumented<F> {
        #[pin]
        inner: F,
        name: &'static str,
        // Given at the first recorded poll: a future that never runs while a session
        // records costs no id.
        task: u64,
    }
}

impl<F> Instrumented<F> {
    /// Wraps `inner`; its polls are recorded while a session records annotations.
    pub fn new(inner: F, name: &'static str) -> Self {
        Instrumented {
            inner,
            name,
            task: 0,
        }
    }
}

thread_local! {
    /// The event of the poll running on this thread, while `Instrumented::poll` runs.
    static CURRENT_POLL: Cell<*const Trace> = const { Cell::new(std::ptr::null()) };
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !gate::is_open(USER_LEVEL) {
            return this.inner.poll(cx);
        }
        if *this.task == 0 {
            *this.task = next_task_id();
        }
        let trace = Trace::begin_poll(this.name, *this.task);
        let outer = CURRENT_POLL.with(|c| c.replace(&trace));
        // Restores the outer poll even if the inner future panics.
        struct Restore(*const Trace);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT_POLL.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(outer);
        this.inner.poll(cx)
    }
}

/// A new id for a future instrumented by prof.
fn next_task_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed) | PROF_TASK
}

/// Runs `f` on the event of the poll now running on this thread, if it is recorded.
///
/// `#[prof::instrument]` calls it at the start of an `async fn`'s body, which runs
/// inside its first poll, to put the function's fields on that poll's event.
pub fn with_current_poll(f: impl FnOnce(&Trace)) {
    let current = CURRENT_POLL.with(Cell::get);
    #[allow(unsafe_code)]
    // SAFETY: the pointer is set only for the duration of `Instrumented::poll`, to a
    // `Trace` on that call's stack, and restored before it returns; we are inside that
    // call on this same thread whenever it is non-null.
    if let Some(trace) = unsafe { current.as_ref() } {
        f(trace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{RawWaker, RawWakerVTable, Waker};

    fn noop_waker() -> Waker {
        const VTABLE: RawWakerVTable =
            RawWakerVTable::new(|p| RawWaker::new(p, &VTABLE), |_| {}, |_| {}, |_| {});
        #[allow(unsafe_code)]
        // SAFETY: every vtable function ignores the data pointer.
        unsafe {
            Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE))
        }
    }

    #[test]
    fn no_current_poll_outside_instrumented_futures() {
        let mut called = false;
        with_current_poll(|_| called = true);
        assert!(!called);
        let fut = Instrumented::new(async { 5 }, "f");
        let mut fut = std::pin::pin!(fut);
        let waker = noop_waker();
        assert_eq!(
            fut.as_mut().poll(&mut Context::from_waker(&waker)),
            Poll::Ready(5)
        );
    }
}
