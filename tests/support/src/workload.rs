//! A stand-in for a training job, for the tests that capture a running process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use profiler_core::trace;

/// A thread named "trainer" running annotated training steps (`Train` with its
/// `step_num`, around `work`, 2 ms each) until dropped, and for at most 60 s.
pub struct Workload {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Workload {
    /// Starts the thread.
    pub fn start() -> Workload {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("trainer".into())
            .spawn(move || {
                let until = Instant::now() + Duration::from_secs(60);
                let mut step = 0i64;
                while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                    let _s = trace!("Train", step_num = step);
                    let _w = trace!("work");
                    std::thread::sleep(Duration::from_millis(2));
                    step += 1;
                }
            })
            .expect("spawn the workload");
        Workload {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
