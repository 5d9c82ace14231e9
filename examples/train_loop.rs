//! A small CPU training loop on candle tensors, profiled into a TensorBoard/XProf logdir.
//!
//! ```text
//! cargo run --example train_loop -- [--logdir DIR] [--steps N] [--schedule W,U,A,R]
//! ```
//!
//! With `--schedule WAIT,WARMUP,ACTIVE,REPEAT` only the schedule's active steps are
//! recorded (as torch.profiler's schedule does), each window in a run of its own.
//!
//! Each step is a `Train` annotation with `step_num`, so XProf's overview page graphs
//! step times; inside it, data loading, forward, backward and the optimizer update are
//! nested annotations, and the step's loss is attached after it is known and recorded
//! on a `loss` counter track.
//!
//! The host heap is counted by `prof::TrackingAllocator`: XProf's Memory Profile shows
//! allocator `host` (a snapshot at each fold of a thread's tally, and each block of 128
//! KiB or more, named by the layer that allocated it), and the summary each step's peak.
#![allow(clippy::print_stdout)]

use std::error::Error;

use candle_core::{DType, Device, Tensor, Var};

mod common;

/// Host memory in use, for XProf's Memory Profile and `prof::memory`.
#[global_allocator]
static ALLOC: prof::TrackingAllocator<std::alloc::System> =
    prof::TrackingAllocator::new(std::alloc::System);

/// The loss after each step, as a counter track beside the timeline.
static LOSS: prof::Counter = prof::Counter::new("loss");
/// MXNet-style objects on a `training` line of their own: the epoch as a frame, and a
/// marker where a checkpoint would be written.
static TRAINING: prof::Domain = prof::Domain::new("training");
static EPOCH: prof::Frame = prof::Frame::new(&TRAINING, "epoch");
static CHECKPOINT: prof::Marker = prof::Marker::new(&TRAINING, "checkpoint");

/// A two-layer perceptron regressing random targets.
struct Mlp {
    w1: Var,
    w2: Var,
}

impl Mlp {
    fn new(inputs: usize, hidden: usize, device: &Device) -> candle_core::Result<Mlp> {
        Ok(Mlp {
            w1: Var::randn(0f32, 0.1, (inputs, hidden), device)?,
            w2: Var::randn(0f32, 0.1, (hidden, 1), device)?,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let _t = prof::trace!("forward", batch = x.dims()[0]);
        let h = {
            let _t = prof::trace!("dense_1/MatMul");
            x.matmul(self.w1.as_tensor())?.relu()?
        };
        let _t = prof::trace!("dense_2/MatMul");
        h.matmul(self.w2.as_tensor())
    }

    fn sgd(&self, grads: &candle_core::backprop::GradStore, lr: f64) -> candle_core::Result<()> {
        let _t = prof::trace!("optimizer", kind = "sgd", lr = lr);
        for w in [&self.w1, &self.w2] {
            if let Some(g) = grads.get(w.as_tensor()) {
                w.set(&(w.as_tensor() - (g * lr)?)?)?;
            }
        }
        Ok(())
    }
}

/// train_loop's own flags.
#[derive(clap::Args)]
struct Extra {
    /// Record on a step schedule, as torch.profiler's schedule(wait, warmup, active,
    /// repeat): one run per window
    #[arg(long, value_name = "WAIT,WARMUP,ACTIVE,REPEAT", value_parser = schedule)]
    schedule: Option<prof::schedule::Schedule>,
}

fn schedule(value: &str) -> Result<prof::schedule::Schedule, String> {
    let n: Vec<u64> = value
        .split(',')
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| format!("{value}: not numbers"))
        })
        .collect::<Result<_, _>>()?;
    let [wait, warmup, active, repeat] = n[..] else {
        return Err(format!("{value}: expected WAIT,WARMUP,ACTIVE,REPEAT"));
    };
    Ok(prof::schedule::Schedule::new(wait, warmup, active).repeat(repeat))
}

fn main() -> Result<(), Box<dyn Error>> {
    let (args, extra) = common::parse::<Extra>(
        "train_loop",
        "Profiles a small candle training loop into a TensorBoard/XProf logdir.",
        20,
    );
    if let Some(schedule) = extra.schedule {
        return scheduled(&args, schedule);
    }
    let device = Device::Cpu;
    let (batch, inputs, hidden) = (64, 128, 256);
    let model = Mlp::new(inputs, hidden, &device)?;
    let mut cache: Vec<(Tensor, Tensor)> = Vec::new();
    // The weights and their gradients are 128 KiB: events of their own.
    prof::memory::set_large_allocation_threshold(128 << 10);

    prof::memory::reset_peak();
    prof::start(&args.logdir, args.options(prof::ProfileOptions::default()))?;
    EPOCH.start();
    for step in 0..args.steps {
        train_step(&model, &mut cache, step, (batch, inputs), &device)?;
        if step % 4 == 3 {
            CHECKPOINT.mark(prof::MarkerScope::Process);
        }
    }
    EPOCH.stop();
    // The heap as the session's last memory snapshot records it. Read after `stop`, the
    // peak would also count what writing and summing up the profile allocated, and
    // disagree with the memory table's "Allocator's peak".
    let heap = prof::memory::host();
    let profile = prof::stop().inspect_err(|e| eprintln!("{e}"))?;
    common::report(&profile, &args, &stats(&profile))?;
    if let Some(host) = heap {
        println!(
            "host memory when the session stopped: {} KiB in use, peak {} KiB \
             (since reset_peak: the memory table's \"Allocator's peak\")",
            host.in_use >> 10,
            host.peak >> 10
        );
    }
    Ok(())
}

/// The same loop under a step schedule: each window is written as its own run.
fn scheduled(
    args: &common::Args,
    schedule: prof::schedule::Schedule,
) -> Result<(), Box<dyn Error>> {
    use prof::schedule::{tensorboard_trace_handler_formats, Profiler};

    let device = Device::Cpu;
    let model = Mlp::new(128, 256, &device)?;
    let mut cache = Vec::new();
    let handler = tensorboard_trace_handler_formats(&args.logdir, args.formats.clone(), |p| {
        println!(
            "window of steps {:?} written to {}",
            p.steps(),
            p.files()[0].display()
        );
    });
    let mut profiler =
        Profiler::new(prof::ProfileOptions::default(), schedule)?.on_trace_ready(handler);
    profiler.start()?;
    for step in 0..args.steps {
        train_step(&model, &mut cache, step, (64, 128), &device)?;
        profiler.step()?;
    }
    profiler.stop()?;
    println!("{} window(s) recorded", profiler.windows_saved());
    Ok(())
}

/// The counts `prof-diff` prints for the same run: events of work, and memory events
/// besides, on the lines of recorded work (the profiler's own lines left out).
fn stats(profile: &prof::Profile) -> String {
    let threads = profile
        .xspace()
        .plane(prof::schema::HOST_PLANE)
        .map_or(0, |p| {
            p.lines.iter().filter(|l| !l.is_bookkeeping()).count()
        });
    format!(
        "{} steps, {} events (and {} memory events) on {threads} line(s)",
        profile.steps().len(),
        profile.event_count(),
        profile.memory_event_count()
    )
}

/// One training step. A fixed pool of batches: a step whose batch was produced before
/// is a cache hit.
fn train_step(
    model: &Mlp,
    cache: &mut Vec<(Tensor, Tensor)>,
    step: u32,
    (batch, inputs): (usize, usize),
    device: &Device,
) -> Result<(), Box<dyn Error>> {
    let step_trace = prof::trace!("Train", step_num = step);
    let (x, y) = {
        let load = prof::trace!("load_batch");
        let slot = (step % 4) as usize;
        let hit = slot < cache.len();
        if !hit {
            let x = Tensor::randn(0f32, 1.0, (batch, inputs), device)?;
            let y = Tensor::randn(0f32, 1.0, (batch, 1), device)?;
            cache.push((x, y));
        }
        prof::set_metadata!(load, in_cache = hit);
        cache[slot].clone()
    };
    let pred = model.forward(&x)?;
    let loss = {
        let _t = prof::trace!("loss");
        (pred - y)?.sqr()?.mean_all()?
    };
    let grads = {
        let _t = prof::trace!("backward");
        loss.backward()?
    };
    model.sgd(&grads, 0.01)?;
    // Deferred field: the loss is known only at the end of the step.
    let loss = loss.to_dtype(DType::F32)?.to_scalar::<f32>()?;
    step_trace.set_metadata("loss", loss);
    LOSS.set(loss);
    Ok(())
}
