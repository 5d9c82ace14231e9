//! The CPU side of a GPU session's `stop`, without a GPU: N launches, each under an
//! annotation inside a step, go through prof's CUPTI callback (synthetic
//! `CUpti_CallbackData`, as the `callback` bench feeds it); a tracer registered with
//! the session then does at collection what the live tracer does (the calls read back,
//! made into API records, a kernel record for each launch, all put on the XSpace), and
//! times each phase. What it leaves out is CUPTI's: the flush, and the parsing of its
//! activity buffers.
//!
//! Issue 31 asks that stop stay as fast as before the calls came through callbacks
//! (27 ms for 10k launches and 271 ms for 100k on an H200, CUPTI's part included).
//!
//! `cargo bench -p profiler-cuda --bench stop -- --launches 10000,100000`
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use profiler_core::tracer::{self, keep_scope_stack, SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::activity::DeviceTrace;
use profiler_cuda::synthetic::{self, DriverLaunch};
use profiler_cuda::{calls, convert};

#[path = "../../profiler-core/benches/support/args.rs"]
mod args;

/// Launches a step holds.
const PER_STEP: u64 = 100;

/// The phases of the last collection.
static PHASES: Mutex<Vec<(&str, Duration)>> = Mutex::new(Vec::new());

/// What the live tracer does at collection, timed.
struct Bench {
    generation: u64,
}

impl Tracer for Bench {
    fn start(&mut self) -> Result<(), profiler_core::Error> {
        self.generation = calls::begin_session(u64::MAX);
        keep_scope_stack(true);
        Ok(())
    }

    fn stop(&mut self) -> Result<(), profiler_core::Error> {
        keep_scope_stack(false);
        calls::end_session();
        Ok(())
    }

    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        let mut phases = Vec::new();
        let t = Instant::now();
        let threads = calls::collect(self.generation);
        phases.push(("calls read back", t.elapsed()));

        let t = Instant::now();
        let (mut activities, _graphs) = calls::into_activities(
            threads,
            |_, _| "cuLaunchKernel".to_owned(),
            |ticks| session.ticks_to_clock_ns(ticks),
        );
        phases.push(("API records made", t.elapsed()));

        // A kernel for each launch, running while its call returns (so the last ones
        // still end inside the session), as CUPTI's buffers would give them (their
        // parsing is CUPTI's side, left out).
        let kernels = synthetic::kernels_for_calls(&activities, |_, start, end| {
            ("volta_sgemm_128x64_nn".to_owned(), start, end)
        });
        activities.extend(kernels);
        let trace = DeviceTrace {
            activities,
            ..DeviceTrace::default()
        };
        let t = Instant::now();
        convert::add_to_space(&trace, space, &|ns| session.to_session_ns(ns));
        phases.push(("put on the XSpace", t.elapsed()));
        *PHASES.lock().unwrap() = phases;
    }
}

fn factory(_: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    Some(Box::new(Bench { generation: 0 }))
}

fn run(launches: u64) {
    let mut launch = DriverLaunch::new();
    session::start(
        ProfileOptions::default()
            .device_tracer_level(0)
            .max_events(4 * launches + 1000),
        None,
    )
    .unwrap();
    let mut correlation = 0u32;
    for step in 0..launches.div_ceil(PER_STEP) {
        let _step = trace!("Train", step_num = step as i64);
        for _ in 0..PER_STEP.min(launches - step * PER_STEP) {
            let _op = trace!("op");
            correlation += 1;
            launch.report(correlation);
        }
    }
    let t = Instant::now();
    let profile = session::stop().unwrap();
    let stop = t.elapsed();
    let phases = std::mem::take(&mut *PHASES.lock().unwrap());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut line = format!(
        "{launches:>8} launches: stop {:7.1} ms ({:5.0} ns a launch)",
        ms(stop),
        stop.as_nanos() as f64 / launches as f64
    );
    let mut traced = Duration::ZERO;
    for (name, d) in &phases {
        line += &format!("  {name} {:.1} ms", ms(*d));
        traced += *d;
    }
    line += &format!("  the rest (host plane) {:.1} ms", ms(stop - traced));
    println!("{line}");
    let gpu = profile
        .xspace()
        .planes
        .iter()
        .find(|p| p.name.starts_with("/device:GPU"))
        .map_or(0, |p| p.lines.iter().map(|l| l.events.len()).sum::<usize>());
    assert!(
        gpu >= launches as usize,
        "{gpu} GPU events for {launches} launches"
    );
}

fn main() {
    let args = args::args();
    if !args::bench_mode(&args) {
        return;
    }
    let sizes = args::sizes(&args, "--launches", "10000,100000");
    tracer::register(factory);
    for launches in sizes {
        // The first run of a size warms the allocator and the page cache.
        for _ in 0..3 {
            run(launches);
        }
    }
}
