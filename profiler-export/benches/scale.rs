//! A long session at scale: how stop time and memory grow from 1M to 10M to 100M
//! events. For each size, records that many events on one thread (the `xplane` bench's
//! training loop, `workload/mod.rs`), then measures
//! `session::stop` (collection into an XSpace) and writing the `.xplane.pb`.
//!
//! Memory: the thread buffers and what the collected profile keeps are counted
//! exactly, by this binary's global allocator; the peak while stopping is resident
//! memory (Linux `VmHWM`, reset before the stop), since capacity reserved but never
//! written costs no memory.
//!
//! `cargo bench -p profiler-export --bench scale -- --events 1000000,10000000`
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout, unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use profiler_core::{session, ProfileOptions};
use profiler_export::xplane;

mod workload;

#[path = "../../profiler-core/benches/support/args.rs"]
mod args;

/// Counts live bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    LIVE.fetch_add(bytes, Ordering::Relaxed);
}

// SAFETY: forwards every call to `System` unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// `VmRSS` or `VmHWM` of this process, in bytes (Linux).
fn status_bytes(field: &str) -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    Some(line.split_whitespace().nth(1)?.parse::<usize>().ok()? * 1024)
}

/// Resets the peak resident set to the current one (writing 5 to clear_refs), and
/// returns the current one.
fn reset_rss_peak() -> Option<usize> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_bytes("VmRSS:")
}

fn per_event(bytes: usize, events: u64) -> f64 {
    bytes as f64 / events as f64
}

fn main() {
    let args = args::args();
    if !args::bench_mode(&args) {
        return;
    }
    let sizes = args::sizes(&args, "--events", "1000000,10000000");
    let dir = tempfile::tempdir().unwrap();
    println!(
        "{:>11} {:>8} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8} {:>6}",
        "events",
        "stop s",
        "ns/event",
        "write s",
        "ns/event",
        "buffers",
        "stop peak",
        "profile",
        "file"
    );
    for events in sizes {
        let base = live();
        session::start(
            ProfileOptions::default().max_events(2 * events + 1000),
            None,
        )
        .unwrap();
        workload::training_loop(events);
        let buffers = live() - base;
        let rss_before = reset_rss_peak();
        let t0 = Instant::now();
        let profile = session::stop().unwrap();
        let stop_s = t0.elapsed().as_secs_f64();
        // Resident, not allocated: capacity reserved but never written costs nothing.
        let stop_peak = rss_before
            .zip(status_bytes("VmHWM:"))
            .map_or(f64::NAN, |(b, p)| per_event(p.saturating_sub(b), events));
        assert_eq!(profile.event_count() as u64, events);
        let with_profile = live();

        let path = dir.path().join("scale.xplane.pb");
        let t0 = Instant::now();
        xplane::write(&path, profile.xspace()).unwrap();
        let write_s = t0.elapsed().as_secs_f64();
        let file = std::fs::metadata(&path).unwrap().len() as usize;
        std::fs::remove_file(&path).unwrap();
        drop(profile);
        let kept = with_profile - live();
        println!(
            "{events:>11} {stop_s:>8.3} {:>9.1} {write_s:>8.3} {:>9.1} {:>8.1} {:>9.1} {:>8.1} {:>6.1}",
            stop_s * 1e9 / events as f64,
            write_s * 1e9 / events as f64,
            per_event(buffers, events),
            stop_peak,
            per_event(kept, events),
            per_event(file, events),
        );
    }
    println!(
        "(memory in bytes per event: buffers = the thread buffers holding the records; \
         stop peak = the most resident memory stop adds; profile = what the collected profile keeps)"
    );
}
