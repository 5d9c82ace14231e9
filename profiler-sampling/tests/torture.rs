//! The timer backend's signal handler under torture, for 10 s: threads allocating and
//! freeing, panicking and catching it, loading and unloading a library, and starting
//! and ending threads by the hundred, all interrupted by SIGPROF at the kernel's tick.
//! The process must neither hang nor crash, and a counting allocator must see no
//! allocation made while the handler runs on its thread.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use profiler_core::options::HOST_SAMPLING_BACKEND;
use profiler_core::ProfileOptions;

/// Counts allocations made on a thread while the handler runs there.
struct Counting;

static INSIDE_HANDLER: AtomicU64 = AtomicU64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn check() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: gettid has no preconditions.
    #[allow(unsafe_code)]
    let tid = unsafe { libc::gettid() };
    if profiler_sampling::handler_running_on(tid) {
        INSIDE_HANDLER.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator, only counting.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check();
        // SAFETY: the caller's layout, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        check();
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TORTURE: Duration = Duration::from_secs(10);

#[test]
fn ten_seconds_of_malloc_panics_dlopen_and_thread_churn_under_the_timer_backend() {
    // A hang fails the test rather than CI's clock.
    std::thread::spawn(|| {
        std::thread::sleep(TORTURE + Duration::from_secs(60));
        eprintln!("the torture test hung");
        std::process::abort();
    });
    std::panic::set_hook(Box::new(|_| {})); // the caught panics say nothing
    let dir = tempfile::tempdir().expect("tmp");
    let options = ProfileOptions::default()
        .host_sampling_hz(1000)
        .advanced(HOST_SAMPLING_BACKEND, "timer");
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let profile = support::session(dir.path(), options, || {
        std::thread::scope(|s| {
            // malloc/free of every size.
            s.spawn(|| {
                let mut held: Vec<Vec<u8>> = Vec::new();
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    held.push(vec![i as u8; 1 + (i * 7919) % 65_536]);
                    if held.len() > 64 {
                        held.swap_remove(i % held.len());
                    }
                    i += 1;
                }
                done.fetch_add(i as u64, Ordering::Relaxed);
            });
            // Panics, unwound and caught.
            s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let caught = std::panic::catch_unwind(|| {
                        let v: Vec<u64> = (0..100).collect();
                        if v.len() == 100 {
                            panic!("torture {n}");
                        }
                    });
                    assert!(caught.is_err());
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            });
            // dlopen/dlclose: the loader's lock, the one a libgcc unwinder in a
            // handler would deadlock on.
            s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: a system library opened and closed; no symbol used.
                    #[allow(unsafe_code)]
                    unsafe {
                        let lib =
                            libc::dlopen(c"libm.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
                        assert!(!lib.is_null(), "dlopen libm");
                        libc::dlclose(lib);
                    }
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            });
            // Threads started and ended, each burning a little CPU.
            s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t = std::thread::spawn(|| {
                        support::burn_for(Duration::from_millis(2), |x| x.wrapping_mul(31))
                    });
                    t.join().expect("churned thread");
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            });
            let start = Instant::now();
            while start.elapsed() < TORTURE {
                std::thread::sleep(Duration::from_millis(50));
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    let _ = std::panic::take_hook();
    let samples = support::samples(&profile);
    assert!(samples.backend.starts_with("timer"), "{}", samples.backend);
    assert!(
        samples.times.len() > 100,
        "{} samples in 10 s of four busy threads",
        samples.times.len()
    );
    assert!(done.load(Ordering::Relaxed) > 1000);
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > 100_000);
    assert_eq!(
        INSIDE_HANDLER.load(Ordering::Relaxed),
        0,
        "allocations made inside the signal handler"
    );
}
