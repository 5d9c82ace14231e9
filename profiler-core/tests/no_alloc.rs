//! The recording hot path allocates nothing once the thread's buffer is warm.
//!
//! A counting global allocator is process-wide, so this check has a test binary of its
//! own; it counts only the allocations of the recording thread.
#![allow(unsafe_code)] // a global allocator cannot be written without it

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use profiler_core::{session, set_metadata, trace, ProfileOptions};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; the counter is a const-initialised
// thread-local without destructor, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn record(n: u64) {
    for step in 0..n {
        let t = trace!("Train", step_num = step, lr = 0.1, warm = true);
        let _inner = trace!("forward");
        set_metadata!(t, loss = 0.5f32);
    }
}

#[test]
fn recording_allocates_nothing_in_steady_state() {
    const N: u64 = 10_000;
    let before = ALLOCATIONS.with(Cell::get);
    drop(std::hint::black_box(vec![1u8]));
    assert_eq!(
        ALLOCATIONS.with(Cell::get) - before,
        1,
        "the counter sees allocations"
    );
    // First session: the thread registers and grows its buffer to what N steps need.
    session::start(ProfileOptions::default(), None).expect("start");
    record(N);
    session::stop().expect("stop");

    session::start(ProfileOptions::default(), None).expect("start");
    let before = ALLOCATIONS.with(Cell::get);
    record(N);
    let during = ALLOCATIONS.with(Cell::get) - before;
    let profile = session::stop().expect("stop");
    assert_eq!(profile.event_count(), 2 * N as usize, "everything recorded");
    assert_eq!(during, 0, "{during} allocations while recording {N} steps");

    // And with no session at all.
    let before = ALLOCATIONS.with(Cell::get);
    record(N);
    assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0);
}
