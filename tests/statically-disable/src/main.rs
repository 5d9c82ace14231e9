//! The public API of prof in a build without its `enable` feature, as a library that
//! depends on prof with `default-features = false` is built when the application does
//! not turn recording on: everything compiles and runs, and nothing is recorded.
//!
//! Run alone, so that no other crate's features are unified into the build:
//! `cargo run -p prof-statically-disable`. With the feature on
//! (`--features prof-ml/enable`) it must fail: that is how it shows it can.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use prof::prelude::*;
use prof::{Counter, Domain, Frame, Marker, MarkerScope, Profile, ProfilerLayer, Task};
use tracing_subscriber::layer::SubscriberExt;

#[global_allocator]
static ALLOC: prof::TrackingAllocator<std::alloc::System> =
    prof::TrackingAllocator::new(std::alloc::System);

static LOSS: Counter = Counter::new("loss");
static PIPELINE: Domain = Domain::new("pipeline");
static PREFETCH: Task = Task::new(&PIPELINE, "prefetch");
static EPOCH: Frame = Frame::new(&PIPELINE, "epoch");
static CHECKPOINT: Marker = Marker::new(&PIPELINE, "checkpoint");

/// How many field expressions were evaluated: none may be, compiled out.
static EVALUATED: AtomicUsize = AtomicUsize::new(0);

fn field(value: u64) -> u64 {
    EVALUATED.fetch_add(1, Ordering::Relaxed);
    value
}

#[prof::instrument(fields(step_num = field(step)))]
fn train_step(step: u64, lr: f64) -> f64 {
    lr * step as f64
}

#[prof::instrument(fields(id = field(id)))]
async fn fetch(id: u64) -> u64 {
    id * 2
}

/// Polls `future` to its end on this thread (it never waits on anything).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("the future did not finish in 1000 polls");
}

/// What [`annotate`] computes over its 10 steps: the annotated functions still run.
const COMPUTED: f64 = 0.5 * 45.0 + 2.0 * 45.0 + 45.0;

/// Every kind of annotation prof has, each with field expressions that count their
/// evaluation; returns what the work computed, so it is not optimised away.
fn annotate() -> f64 {
    let mut sum = 0.0;
    for step in 0..10u64 {
        let t = prof::trace!("Train", step_num = field(step), model = "mlp");
        assert!(
            !t.is_recording(),
            "an annotation records in a compiled-out build"
        );
        prof::set_metadata!(t, loss = field(step));
        t.set_metadata("lr", 1e-3);
        sum += train_step(step, 0.5);
        sum += block_on(fetch(step)) as f64;
        LOSS.set(step as f64);
        let mut loss = &LOSS;
        loss += 1.0;
        EPOCH.start();
        PREFETCH.start();
        std::thread::spawn(|| PREFETCH.stop())
            .join()
            .expect("prefetch thread");
        CHECKPOINT.mark(MarkerScope::Process);
        EPOCH.stop();
        let weights = vec![step as f32; 1 << 16]; // 256 KiB: a large allocation
        sum += f64::from(weights[3]);
        tracing::info_span!("tracing_span", step).in_scope(|| {
            tracing::info!(step, "an event");
        });
    }
    sum
}

/// Every event of every plane: the annotations' lines, counters, memory.
fn events(profile: &Profile) -> usize {
    let space = profile.xspace();
    space
        .planes
        .iter()
        .flat_map(|p| &p.lines)
        .filter(|l| l.name != prof::schema::PROFILER_LINE)
        .map(|l| l.events.len())
        .sum()
}

fn says_compiled_out(profile: &Profile) -> bool {
    profile
        .warnings()
        .iter()
        .any(|w| w.contains("compiled out"))
}

fn main() -> Result<(), prof::Error> {
    assert_eq!(
        prof::gate::STATIC_MAX_LEVEL,
        0,
        "prof was built with `enable`: run this crate alone (cargo run -p prof-statically-disable)"
    );
    let options = || prof::ProfileOptions::default().host_tracer_level(3);
    let subscriber = tracing_subscriber::registry().with(ProfilerLayer::new());
    let _default = tracing::subscriber::set_default(subscriber);

    // In memory: the session runs, its gate stays shut, and it records nothing.
    prof::start_in_memory(options())?;
    assert_eq!(prof::gate::current(), 0, "the gate opened");
    let computed = annotate();
    prof::pause()?;
    prof::resume()?;
    let profile = prof::stop()?;
    assert_eq!(computed, COMPUTED, "the work itself changed");
    assert_eq!(
        EVALUATED.load(Ordering::Relaxed),
        0,
        "field expressions were evaluated"
    );
    assert_eq!(
        events(&profile),
        0,
        "events recorded: {:?}",
        profile.xspace()
    );
    assert!(profile.counter_samples("loss").is_empty());
    assert!(profile.steps().is_empty());
    assert!(says_compiled_out(&profile), "{:?}", profile.warnings());
    // The allocator still counts: `prof::memory` needs no recording.
    assert!(prof::memory::host().is_some_and(|u| u.peak >= 1 << 18));

    // Into a logdir: a valid, empty run is written, and read back.
    let dir = tempfile::tempdir().map_err(|e| prof::Error::io("no temporary directory", ".", e))?;
    let (computed, profile) = prof::profile(dir.path(), options(), annotate)?;
    assert_eq!(computed, COMPUTED);
    let written = prof::export::xplane::read(&profile.files()[0])?;
    assert_eq!(events(&Profile::new(written)), 0);
    assert!(says_compiled_out(&profile));

    // The scoped session and the summary of an empty profile.
    let session = prof::Session::start(dir.path(), options())?;
    annotate();
    let profile = session.stop()?;
    assert!(profile.summary(&Default::default()).rows().is_empty());

    // The scheduled profiler: its windows come and go, each empty.
    let windows = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&windows);
    let schedule = prof::schedule::Schedule::new(0, 1, 2).repeat(2);
    let mut profiler = prof::schedule::Profiler::new(options(), schedule)?.on_trace_ready(
        move |profile: Profile| {
            assert_eq!(events(&profile), 0);
            seen.fetch_add(1, Ordering::Relaxed);
            Ok(())
        },
    );
    profiler.start()?;
    for _ in 0..8 {
        annotate();
        profiler.step()?;
    }
    profiler.stop()?;
    assert_eq!(windows.load(Ordering::Relaxed), 2, "the schedule's windows");
    assert_eq!(EVALUATED.load(Ordering::Relaxed), 0);

    eprintln!("prof-statically-disable: the public API ran with annotations compiled out; nothing was recorded");
    Ok(())
}
