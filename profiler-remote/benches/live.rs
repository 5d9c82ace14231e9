//! What watching costs the watched process: `cargo bench -p profiler-remote --bench live`.
//!
//! 1. **Steps with four watchers.** A loop of `serve_training`'s steps (2 ms of input,
//!    then a forward and a backward pass over 4096 weights, each annotated) serves
//!    prof's server; rounds of 3 s alternate unwatched and watched by four `Watch`
//!    streams (each a child process, as `prof-top`s would be), six of each, so drift
//!    falls on both sides. The watched rounds must complete at least 97% of the steps
//!    of the unwatched ones.
//! 2. **A stopped watcher.** One watcher is stopped with SIGSTOP for 30 s while the loop
//!    runs; the process's resident set may grow by less than 8 MiB meanwhile (its
//!    frames are dropped, not queued).
//!
//! Each prints its figures and exits 1 when its floor is not met. `--quick` runs two
//! rounds of each and a 5 s stop, to check the bench itself works.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use profiler_remote::client::Connection;
use profiler_remote::live::{self, Source};

/// A child process that watches `address` until killed.
fn watch_forever(address: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let Ok(Source::Live(mut stream)) = live::watch(address, &Connection::default()).await
        else {
            std::process::exit(3);
        };
        while let Ok(Some(_)) = stream.message().await {}
    });
}

fn watcher(address: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--watch", address])
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

/// `serve_training`'s loop, counting steps, until `stop`.
fn train(steps: Arc<AtomicU64>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("trainer".into())
        .spawn(move || {
            let mut weights = vec![0.5f32; 4096];
            let mut step = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _step = profiler_core::trace!("Train", step_num = step);
                {
                    let _t = profiler_core::trace!("load_batch");
                    std::thread::sleep(Duration::from_millis(2));
                }
                {
                    let _t = profiler_core::trace!("forward");
                    for w in &mut weights {
                        *w = (*w * 1.0001).sin().abs();
                    }
                }
                {
                    let _t = profiler_core::trace!("backward");
                    for w in &mut weights {
                        *w -= 0.0001 * *w;
                    }
                }
                step += 1;
                steps.store(step, Ordering::Relaxed);
            }
        })
        .unwrap()
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--watch") {
        watch_forever(&args[i + 1]);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (rounds, round, stopped_for) = if quick {
        (2, Duration::from_secs(2), Duration::from_secs(5))
    } else {
        (6, Duration::from_secs(3), Duration::from_secs(30))
    };
    let server = profiler_remote::server::start(0).unwrap();
    let address = format!("127.0.0.1:{}", server.local_addr().port());
    let steps = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let trainer = train(Arc::clone(&steps), Arc::clone(&stop));

    let mut totals = [0u64; 2];
    for _ in 0..rounds {
        for (side, watched) in [(0, false), (1, true)] {
            let mut children: Vec<Child> = if watched {
                (0..4).map(|_| watcher(&address)).collect()
            } else {
                Vec::new()
            };
            // Let the watchers connect and the recorder start (or stop).
            std::thread::sleep(Duration::from_millis(1500));
            let before = steps.load(Ordering::Relaxed);
            std::thread::sleep(round);
            totals[side] += steps.load(Ordering::Relaxed) - before;
            for child in &mut children {
                let _ = (child.kill(), child.wait());
            }
        }
    }
    let ratio = totals[1] as f64 / totals[0] as f64;
    println!(
        "live/four_watchers: {} steps unwatched, {} watched by 4 over {rounds} interleaved rounds of {round:?}: {:.1}% (floor 97%)",
        totals[0],
        totals[1],
        ratio * 100.0
    );

    let mut stopped = watcher(&address);
    std::thread::sleep(Duration::from_secs(2));
    let before = rss_bytes();
    // SAFETY: kill sends a signal to our own child process, whose pid we hold.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(stopped.id() as libc::pid_t, libc::SIGSTOP);
    }
    let started = Instant::now();
    std::thread::sleep(stopped_for);
    let growth = rss_bytes().saturating_sub(before);
    // SAFETY: as above.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(stopped.id() as libc::pid_t, libc::SIGCONT);
    }
    let _ = (stopped.kill(), stopped.wait());
    println!(
        "live/stopped_watcher: RSS grew {:.2} MiB while a watcher was stopped for {:.0?} (limit 8 MiB)",
        growth as f64 / (1 << 20) as f64,
        started.elapsed()
    );
    stop.store(true, Ordering::Relaxed);
    let _ = trainer.join();
    server.stop();
    let mut failed = false;
    if ratio < 0.97 {
        println!("live/four_watchers: FAIL: under 97%");
        failed = true;
    }
    if growth >= 8 << 20 {
        println!("live/stopped_watcher: FAIL: 8 MiB or more");
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
}
