//! Writes the committed seed corpus: small `.xplane.pb` files prof itself records
//! (a session with nested annotations, fields, a counter, threads, domains and a
//! pause) and one hand-built space with what a session on a CPU cannot record (a GPU
//! plane with a launched kernel, cross-thread flows, the task environment): the
//! exporters' test space, `prof_test_support::spaces::space`.
//!
//! `cargo run --bin make_seeds -- [--jax <capture.xplane.pb>] <dir>...` (no fuzzing
//! flags needed); each file goes into every directory given. With `--jax`, a JAX
//! capture (`jax.profiler.trace`) is added too, its long values (HLO protos) cut to
//! 128 bytes so that the seed stays small.

use std::path::{Path, PathBuf};

use profiler_core::domain::{Domain, Frame, Marker, MarkerScope, Task};
use prof_test_support::spaces;
use profiler_core::xspace::{XSpace, XStat, XStatValue};
use profiler_core::{session, set_metadata, trace, Counter, ProfileOptions, Trace};
use profiler_export::xplane;

static QUEUE_DEPTH: Counter = Counter::new("queue_depth");
static PIPELINE: Domain = Domain::new("pipeline");
static PREFETCH: Task = Task::new(&PIPELINE, "prefetch");
static EPOCH: Frame = Frame::new(&PIPELINE, "epoch");
static CHECKPOINT: Marker = Marker::new(&PIPELINE, "checkpoint");

type Error = Box<dyn std::error::Error>;

/// Three training steps with nested annotations and fields of every kind, a counter,
/// a worker thread and an instant.
fn session_steps() -> Result<XSpace, Error> {
    session::start(ProfileOptions::default(), None)?;
    for step in 0..3i64 {
        let _step = trace!("Train", step_num = step);
        QUEUE_DEPTH.set(step as f64);
        {
            let fwd = trace!("forward", batch = 32u32, lr = 0.5f64, model = "mlp");
            set_metadata!(fwd, cached = step % 2 == 0, bytes = u64::MAX);
            let _mm = trace!("matmul", m = -7i64);
            std::hint::black_box((0..200).sum::<u64>());
        }
        let _bwd = trace!("backward", phase = "grad \"all\"\n");
        QUEUE_DEPTH.increment(1.5);
    }
    std::thread::Builder::new()
        .name("loader".into())
        .spawn(|| {
            let _t = trace!("load_batch", shard = 3u8);
            drop(Trace::instant("cache_miss"));
        })?
        .join()
        .map_err(|_| "the loader thread panicked")?;
    Ok(session::stop()?.into_xspace())
}

/// MXNet-style domain objects, a marker and a pause.
fn session_domains() -> Result<XSpace, Error> {
    session::start(ProfileOptions::default(), None)?;
    EPOCH.start();
    PREFETCH.start();
    std::thread::spawn(|| PREFETCH.stop())
        .join()
        .map_err(|_| "the prefetch thread panicked")?;
    CHECKPOINT.mark(MarkerScope::Process);
    CHECKPOINT.mark(MarkerScope::Thread);
    session::pause()?;
    drop(trace!("unseen"));
    session::resume()?;
    drop(trace!("after_pause", step_num = 9i64));
    EPOCH.stop();
    Ok(session::stop()?.into_xspace())
}

/// Keeps at most this many bytes of any string or bytes value of a JAX capture (its
/// HLO protos run to tens of KB); the structure stays whole.
const TRIM: usize = 128;

fn trim_stats(stats: &mut [XStat]) {
    for stat in stats {
        match &mut stat.value {
            Some(XStatValue::Bytes(b)) => b.truncate(TRIM),
            Some(XStatValue::Str(s)) if s.len() > TRIM => {
                let mut end = TRIM;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s.truncate(end);
            }
            _ => {}
        }
    }
}

/// A JAX capture made small: long values cut to [`TRIM`] bytes.
fn trimmed(path: &Path) -> Result<XSpace, Error> {
    let mut space = xplane::read(path)?;
    for plane in &mut space.planes {
        trim_stats(&mut plane.stats);
        for meta in plane.event_metadata.values_mut() {
            meta.metadata.truncate(TRIM);
            trim_stats(&mut meta.stats);
        }
        for event in plane.lines.iter_mut().flat_map(|l| &mut l.events) {
            trim_stats(&mut event.stats);
        }
    }
    Ok(space)
}

fn main() -> Result<(), Error> {
    let mut args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let mut jax = None;
    if args.first().is_some_and(|a| a.as_os_str() == "--jax") && args.len() > 1 {
        jax = Some(args.remove(1));
        args.remove(0);
    }
    let dirs = args;
    if dirs.is_empty() {
        return Err("usage: make_seeds [--jax <capture.xplane.pb>] <corpus dir>...".into());
    }
    let mut seeds = vec![
        ("prof_session_steps.xplane.pb", session_steps()?),
        ("prof_session_domains.xplane.pb", session_domains()?),
        ("prof_hand_built.xplane.pb", spaces::space()),
    ];
    if let Some(jax) = jax {
        seeds.push(("jax_capture_trimmed.xplane.pb", trimmed(&jax)?));
    }
    for dir in &dirs {
        std::fs::create_dir_all(dir)?;
        for (name, space) in &seeds {
            let bytes = xplane::encode(space);
            std::fs::write(dir.join(name), &bytes)?;
            eprintln!("{}: {} bytes", dir.join(name).display(), bytes.len());
        }
    }
    Ok(())
}
