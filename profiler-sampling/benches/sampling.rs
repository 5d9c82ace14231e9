//! What sampling native stacks costs a busy program: two threads burning CPU through
//! 32 distinct functions, timed with a session sampling at 99 Hz (perf, and the timer
//! fallback), at 1 kHz with perf, and with sampling off; each case's work is the
//! same, and the session's start and stop are not timed. Then what the stop costs:
//! the collector's stop and the symbolisation, per 100k samples.
//!
//! Goals (docs/cost.md): ≤ 1% at 99 Hz, ≤ 2% at 1 kHz with perf, and nothing at all
//! when off: no signal handler, no thread, no perf event, no timer (checked here, with
//! a sampling session as the control that the checks see them). The goals are read
//! from interleaved rounds (each case one batch per round, in turn: the busy threads
//! of every case meet the same machine), which `benches/report.py` reads; criterion
//! times each case too.
//!
//! `cargo bench -p profiler-sampling --bench sampling` (`-- --quick` for a shorter run).
//! Built as the workspace builds benches, without frame pointers: perf's kernel walk
//! and the handler's stop after a frame or two, or follow what the frame-pointer
//! register happens to hold, so deeper stacks in a program built with them cost a
//! little more per sample.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::Criterion;
use prof_test_support::cpu::thread_cpu;
use profiler_core::options::HOST_SAMPLING_BACKEND;
use profiler_core::{session, ProfileOptions};
use profiler_export::pprof::StackSamples;

#[path = "../../profiler-core/benches/support/mod.rs"]
mod support;
use support::{interleaved, Case, Cmp};

/// The busy threads, as many as this VM has cores.
const THREADS: usize = 2;

/// One of the functions the busy threads spend their time in; each `K` is a
/// function of its own (distinct code, so the linker cannot fold them into one),
/// so samples land on many addresses, as in a real program, and symbolising them
/// costs what it would.
#[inline(never)]
fn kernel<const K: u64>(x: u64) -> u64 {
    let mut x = x;
    for _ in 0..64 {
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15 ^ K).rotate_left(17) ^ K;
    }
    black_box(x)
}

macro_rules! kernels {
    ($($k:literal)*) => { [$(kernel::<$k> as fn(u64) -> u64),*] };
}

const KERNELS: [fn(u64) -> u64; 32] = kernels!(
    1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
);

/// One unit of work: every kernel once (a few microseconds).
#[inline(never)]
fn unit(x: u64) -> u64 {
    KERNELS.iter().fold(x, |x, k| k(x))
}

/// What a busy thread is asked to do.
#[derive(Clone, Copy)]
enum Job {
    /// This many units of work.
    Units(u64),
    /// Units until the thread has used this much more CPU time.
    Cpu(Duration),
}

/// Threads that stay up between cases (so no case times a thread's start), each
/// running the work it is sent.
struct Workers {
    work: Vec<Sender<Job>>,
    done: Receiver<u64>,
    _threads: Vec<JoinHandle<()>>,
}

impl Workers {
    fn start() -> Workers {
        let (done_tx, done) = mpsc::channel();
        let mut work = Vec::new();
        let mut threads = Vec::new();
        for i in 0..THREADS {
            let (tx, rx) = mpsc::channel::<Job>();
            let done = done_tx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("busy-{i}"))
                    .spawn(move || {
                        let mut x = i as u64 + 1;
                        while let Ok(job) = rx.recv() {
                            match job {
                                Job::Units(units) => {
                                    for _ in 0..units {
                                        x = unit(x);
                                    }
                                }
                                Job::Cpu(cpu) => {
                                    let until = thread_cpu() + cpu;
                                    while thread_cpu() < until {
                                        for _ in 0..64 {
                                            x = unit(x);
                                        }
                                    }
                                }
                            }
                            if done.send(x).is_err() {
                                return;
                            }
                        }
                    })
                    .unwrap(),
            );
            work.push(tx);
        }
        Workers {
            work,
            done,
            _threads: threads,
        }
    }

    /// Runs `job` on every thread at once; the time until the last is done.
    fn job(&self, job: Job) -> Duration {
        let t0 = Instant::now();
        for w in &self.work {
            w.send(job).unwrap();
        }
        for _ in 0..THREADS {
            black_box(self.done.recv().unwrap());
        }
        t0.elapsed()
    }

    /// Runs `units` on every thread at once; the time until the last is done.
    fn run(&self, units: u64) -> Duration {
        self.job(Job::Units(units))
    }

    /// The units each thread runs in about `wall`, with every thread busy.
    fn units_for(&self, wall: Duration) -> u64 {
        let mut units = 64;
        loop {
            let took = self.run(units);
            if took >= Duration::from_millis(20) {
                return (units as f64 * wall.as_secs_f64() / took.as_secs_f64()).ceil() as u64;
            }
            units *= 4;
        }
    }
}

/// A case: the options of its session (`None`: sampling off).
#[derive(Clone, Copy)]
struct Sampling {
    name: &'static str,
    hz: u32,
    backend: &'static str,
    /// What the profile must name as the backend that ran.
    expect: &'static str,
}

const CASES: [Sampling; 4] = [
    Sampling {
        name: "off",
        hz: 0,
        backend: "auto",
        expect: "",
    },
    Sampling {
        name: "perf_99hz",
        hz: 99,
        backend: "perf",
        expect: "perf_event",
    },
    Sampling {
        name: "timer_99hz",
        hz: 99,
        backend: "timer",
        expect: "timer",
    },
    Sampling {
        name: "perf_1khz",
        hz: 1000,
        backend: "perf",
        expect: "perf_event",
    },
];

fn options(case: Sampling) -> ProfileOptions {
    ProfileOptions::default()
        .host_sampling_hz(case.hz)
        .advanced(HOST_SAMPLING_BACKEND, case.backend)
}

/// `units` on every worker inside a session with `case`'s options; only the work is
/// timed.
fn sampled(workers: &Workers, case: Sampling, units: u64) -> Duration {
    session::start(options(case), None).expect("start");
    let took = workers.run(units);
    session::stop().expect("stop");
    took
}

/// Whether `case` samples by the backend it names here: a case whose backend is
/// refused on this machine is left out, and said so.
fn runs_here(workers: &Workers, case: Sampling) -> bool {
    if case.hz == 0 {
        return true;
    }
    session::start(options(case), None).expect("start");
    workers.run(workers.units_for(Duration::from_millis(50)));
    let profile = session::stop().expect("stop");
    let backend = StackSamples::from_space(profile.xspace())
        .and_then(Result::ok)
        .map(|s| s.backend);
    let ok = backend
        .as_deref()
        .is_some_and(|b| b.split(' ').next() == Some(case.expect));
    if !ok {
        println!(
            "sampling: {} left out: the {} backend does not run here ({:?}; warnings {:?})",
            case.name,
            case.backend,
            backend,
            profile.xspace().warnings
        );
    }
    ok
}

/// What sampling leaves in the process that can be seen from outside it.
#[derive(Debug, PartialEq, Eq)]
struct Traces {
    sampler_threads: usize,
    sigprof_caught: bool,
    perf_events: usize,
    posix_timers: usize,
}

fn traces() -> Traces {
    let sampler_threads = std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "prof-sampler")
                })
                .count()
        })
        .unwrap_or(0);
    // SigCgt: the signals with a handler, a hex mask; SIGPROF is 27, bit 26.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or(0);
    let perf_events = std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|f| {
                    std::fs::read_link(f.path())
                        .is_ok_and(|l| l.to_string_lossy().contains("perf_event"))
                })
                .count()
        })
        .unwrap_or(0);
    let posix_timers = std::fs::read_to_string("/proc/self/timers")
        .map(|t| t.lines().filter(|l| l.starts_with("ID:")).count())
        .unwrap_or(0);
    Traces {
        sampler_threads,
        sigprof_caught: caught & (1 << (libc_sigprof() - 1)) != 0,
        perf_events,
        posix_timers,
    }
}

/// SIGPROF's number on Linux (x86-64 and aarch64 alike).
fn libc_sigprof() -> u32 {
    27
}

/// Off costs nothing: a session with sampling off leaves no thread, handler, perf
/// event or timer of the sampler's; a sampling session, the control, shows the
/// checks see them. Runs before any timer session (whose handler stays installed).
fn off_leaves_nothing(workers: &Workers) {
    let before = traces();
    session::start(options(CASES[0]), None).expect("start");
    workers.run(workers.units_for(Duration::from_millis(30)));
    let off = traces();
    session::stop().expect("stop");
    assert_eq!(off, before, "sampling off left something in the process");
    assert!(
        !before.sigprof_caught && before.sampler_threads == 0,
        "{before:?}"
    );
    session::start(
        options(CASES[1]).advanced(HOST_SAMPLING_BACKEND, "auto"),
        None,
    )
    .expect("start");
    workers.run(workers.units_for(Duration::from_millis(30)));
    let on = traces();
    session::stop().expect("stop");
    assert_eq!(on.sampler_threads, 1, "the control sees no sampler: {on:?}");
    assert!(
        on.perf_events >= THREADS || on.posix_timers >= THREADS,
        "the control sees no trigger: {on:?}"
    );
    println!(
        "sampling-off sampler_threads {} sigprof_handler {} perf_events {} posix_timers {} \
         (control, sampling on: {} thread, {} perf events, {} timers)",
        off.sampler_threads,
        u8::from(off.sigprof_caught),
        off.perf_events - before.perf_events,
        off.posix_timers - before.posix_timers,
        on.sampler_threads,
        on.perf_events,
        on.posix_timers
    );
}

fn criterion_cases(c: &mut Criterion, workers: &Workers, cases: &[Sampling]) {
    let mut g = c.benchmark_group("sampling");
    g.sample_size(10);
    g.sampling_mode(criterion::SamplingMode::Flat);
    for &case in cases {
        g.bench_function(case.name, |b| {
            b.iter_custom(|iters| sampled(workers, case, iters))
        });
    }
    g.finish();
}

/// The cases in turn, round after round: ns per unit of work, and each sampling
/// case's ratio to off.
fn rounds(workers: &Workers, cases: &[Sampling], rounds: usize, units: u64) {
    let mut runs: Vec<Box<dyn FnMut(u64) -> Duration + '_>> = cases
        .iter()
        .map(|&case| Box::new(move |n| sampled(workers, case, n)) as Box<dyn FnMut(u64) -> _>)
        .collect();
    let mut named: Vec<Case<'_>> = cases
        .iter()
        .zip(runs.iter_mut())
        .map(|(case, run)| (case.name, &mut **run as &mut dyn FnMut(u64) -> Duration))
        .collect();
    let result = interleaved(rounds, units, &mut named);
    let ratios: Vec<(&str, &str, Cmp)> = cases
        .iter()
        .filter(|c| c.hz > 0)
        .map(|c| (c.name, "off", Cmp::Ratio))
        .collect();
    result.print("sampling", &ratios);
}

/// A session sampling two busy threads at 10 kHz with perf (the most samples a
/// second the options allow) until about `samples` were taken, then its stop, in
/// parts: printed as `sampling-stop ...` per 100k samples.
fn stop_cost(workers: &Workers, samples: u64, perf: bool) {
    let hz = 10_000u32;
    let backend = if perf { "perf" } else { "auto" };
    // perf reaches about 97% of the rate asked, per second of each thread's CPU time
    // (the timers, the kernel's tick).
    let per_thread =
        Duration::from_secs_f64(samples as f64 / (THREADS as f64 * f64::from(hz) * 0.97));
    let options = ProfileOptions::default()
        .host_sampling_hz(hz)
        .advanced(HOST_SAMPLING_BACKEND, backend);
    session::start(options, None).expect("start");
    workers.job(Job::Cpu(per_thread));
    let t0 = Instant::now();
    let profile = session::stop().expect("stop");
    let whole_stop = t0.elapsed();
    let Some(cost) = profiler_sampling::last_stop_cost() else {
        println!("sampling-stop: the session took no samples here");
        return;
    };
    let per_100k = |d: Duration| d.as_secs_f64() * 1e3 * 1e5 / cost.samples.max(1) as f64;
    let backend = StackSamples::from_space(profile.xspace())
        .and_then(Result::ok)
        .map_or_else(|| "?".into(), |s| s.backend);
    println!(
        "sampling-stop samples {} addresses {} stop_ms {:.1} symbolize_ms {:.1} collect_ms {:.1} \
         session_stop_ms {:.1}",
        cost.samples,
        cost.addresses,
        cost.stop.as_secs_f64() * 1e3,
        cost.symbolize.as_secs_f64() * 1e3,
        cost.collect.as_secs_f64() * 1e3,
        whole_stop.as_secs_f64() * 1e3,
    );
    println!(
        "sampling-stop-per-100k stop_ms {:.1} symbolize_ms {:.1} collect_ms {:.1} \
         session_stop_ms {:.1} ({} samples by {backend}, {} distinct addresses)",
        per_100k(cost.stop),
        per_100k(cost.symbolize),
        per_100k(cost.collect),
        per_100k(whole_stop),
        cost.samples,
        cost.addresses,
    );
}

/// The collector thread's share of one core, and its wake-ups a second, while `case`
/// samples the busy threads for about `wall`: the part of the cost that is prof's own
/// code, apart from the kernel's work on each sample (which lands on the sampled
/// threads). Printed as `sampling-collector ...`.
fn collector_cost(workers: &Workers, case: Sampling, wall: Duration) {
    session::start(options(case), None).expect("start");
    let units = workers.units_for(Duration::from_millis(30));
    let (cpu0, wakes0) = collector_stats();
    let t0 = Instant::now();
    while t0.elapsed() < wall {
        workers.run(units);
    }
    let (cpu1, wakes1) = collector_stats();
    let secs = t0.elapsed().as_secs_f64();
    session::stop().expect("stop");
    println!(
        "sampling-collector {} core_pct {:.3} wakes_per_s {:.1}",
        case.name,
        (cpu1 - cpu0) as f64 / 1e9 / secs * 100.0,
        (wakes1 - wakes0) as f64 / secs,
    );
}

/// The `prof-sampler` thread's CPU time (ns, from `schedstat`) and its voluntary
/// context switches (its sleeps, so its wake-ups).
fn collector_stats() -> (u64, u64) {
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let path = task.path();
        if std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim() == "prof-sampler") {
            let cpu = std::fs::read_to_string(path.join("schedstat")).unwrap_or_default();
            let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
            let wakes = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            let cpu = cpu.split_whitespace().next().and_then(|n| n.parse().ok());
            return (cpu.unwrap_or(0), wakes);
        }
    }
    (0, 0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes --bench; `cargo test --benches` does not, and then every
    // part runs once, small, to show it works.
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick");
    profiler_sampling::register();
    let workers = Workers::start();
    off_leaves_nothing(&workers);
    let cases: Vec<Sampling> = CASES
        .into_iter()
        .filter(|&c| runs_here(&workers, c))
        .collect();
    let mut c = Criterion::default().configure_from_args();
    criterion_cases(&mut c, &workers, &cases);
    // Each case's batch keeps both threads busy for about 300 ms: thousands of
    // samples at 1 kHz, about 30 at 99 Hz.
    let (n, wall, samples) = match (bench, quick) {
        (false, _) => (1, Duration::from_millis(20), 2_000),
        (true, true) => (10, Duration::from_millis(300), 20_000),
        (true, false) => (30, Duration::from_millis(300), 100_000),
    };
    rounds(&workers, &cases, n, workers.units_for(wall));
    for &case in cases.iter().filter(|c| c.hz > 0) {
        collector_cost(&workers, case, wall * 5);
    }
    stop_cost(
        &workers,
        samples,
        cases.iter().any(|c| c.name == "perf_1khz"),
    );
    c.final_summary();
}
