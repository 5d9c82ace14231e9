//! A tokio input pipeline feeding a training loop, profiled into a TensorBoard/XProf
//! logdir.
//!
//! ```text
//! cargo run --example async_pipeline -- [--logdir DIR] [--steps N] [--loaders N] [--host-tracer-level L]
//! ```
//!
//! Data-loader tasks on a multi-thread runtime read, decode and augment batches and
//! send them through a bounded channel; the training loop takes one batch per step.
//! The loaders are annotated both ways: `#[prof::instrument]` on `load_batch` and
//! `decode`, and `tracing` spans (`read_file`, `augment`, the training step's
//! `forward` and `backward`) recorded by `prof::ProfilerLayer`. In the profile, each
//! poll of a loader is a slice on the worker thread that ran it, each loader's
//! lifetime (busy and idle time) is on a `Tasks` line, polls that moved between
//! workers are linked by flows, and every `Train` step is on the overview page.
#![allow(clippy::print_stdout)]

use std::error::Error;
use std::time::Duration;

use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

mod common;

/// A decoded batch: what the training step consumes.
struct Batch {
    index: u32,
    samples: Vec<f32>,
}

const BATCH_SAMPLES: usize = 64 * 1024;

/// Produces batch `index`: an I/O wait, then CPU work on a blocking-free worker.
#[prof::instrument(fields(batch = index))]
async fn load_batch(loader: u32, index: u32) -> Batch {
    let bytes = async {
        // Storage latency: the task is idle here, and may wake on another worker.
        tokio::time::sleep(Duration::from_millis(2 + u64::from(loader % 3))).await;
        vec![index as u8; BATCH_SAMPLES]
    }
    .instrument(tracing::info_span!("read_file", loader))
    .await;
    let mut samples = decode(&bytes);
    tokio::task::yield_now().await;
    tracing::info_span!("augment", flip = index.is_multiple_of(2)).in_scope(|| {
        if index.is_multiple_of(2) {
            samples.reverse();
        }
        for s in &mut samples {
            *s = (*s * 0.5 + 0.25).sqrt();
        }
    });
    Batch { index, samples }
}

#[prof::instrument]
fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes.iter().map(|&b| f32::from(b) / 255.0).collect()
}

/// A loader: produces every `loaders`-th batch, until the trainer hangs up.
#[prof::instrument(name = "loader", fields(loader = loader))]
async fn loader(loader: u32, loaders: u32, steps: u32, tx: tokio::sync::mpsc::Sender<Batch>) {
    let mut index = loader;
    while index < steps {
        let batch = load_batch(loader, index).await;
        if tx.send(batch).await.is_err() {
            return;
        }
        index += loaders;
    }
}

/// One optimisation step on a batch: plain CPU arithmetic standing in for a model.
fn train_step(weights: &mut [f32], batch: &Batch) -> f32 {
    let loss = tracing::info_span!("forward").in_scope(|| {
        let mut loss = 0.0f32;
        for (i, x) in batch.samples.iter().enumerate() {
            let pred = weights[i % weights.len()] * x;
            loss += (pred - 0.5) * (pred - 0.5);
        }
        loss / batch.samples.len() as f32
    });
    let span = tracing::info_span!("backward", grad_norm = tracing::field::Empty);
    let _entered = span.enter();
    let mut norm = 0.0f32;
    for (i, x) in batch.samples.iter().enumerate() {
        let w = &mut weights[i % 256];
        let grad = 2.0 * (*w * x - 0.5) * x / batch.samples.len() as f32;
        *w -= 0.1 * grad;
        norm += grad * grad;
    }
    // Recorded once known: lands on the open `backward` event.
    span.record("grad_norm", f64::from(norm.sqrt()));
    loss
}

/// async_pipeline's own flags.
#[derive(clap::Args)]
struct Extra {
    /// Loader tasks feeding the training loop
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..))]
    loaders: u32,
    /// 2 records spans; 3 also tracing events and flows between polls
    #[arg(long, value_name = "L", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=3))]
    host_tracer_level: u32,
}

fn main() -> Result<(), Box<dyn Error>> {
    let (
        args,
        Extra {
            loaders,
            host_tracer_level,
        },
    ) = common::parse::<Extra>(
        "async_pipeline",
        "Profiles a tokio input pipeline feeding a training loop: tasks, spans, flows.",
        20,
    );
    tracing_subscriber::registry()
        .with(prof::ProfilerLayer::new())
        .init();
    let worker = std::sync::atomic::AtomicUsize::new(0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        // One line per worker in the profile, each with its own name.
        .thread_name_fn(move || {
            let n = worker.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("worker-{n}")
        })
        .enable_time()
        .build()?;

    let options = prof::ProfileOptions::default().host_tracer_level(host_tracer_level);
    prof::start(&args.logdir, args.options(options))?;

    // Batches arrive in whatever order the loaders finish them; two may wait.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(2);
    for l in 0..loaders {
        runtime.spawn(loader(l, loaders, args.steps, tx.clone()));
    }
    drop(tx);

    let mut weights = vec![0.1f32; 256];
    for step in 0..args.steps {
        let step_trace = prof::trace!("Train", step_num = step);
        let batch = {
            let _wait = prof::trace!("wait_for_batch");
            rx.blocking_recv().ok_or("the loaders stopped early")?
        };
        let loss = train_step(&mut weights, &batch);
        prof::set_metadata!(step_trace, loss = loss, batch = batch.index);
    }
    drop(rx);
    runtime.shutdown_timeout(Duration::from_secs(5));

    let profile = prof::stop().inspect_err(|e| eprintln!("{e}"))?;
    let host = profile
        .xspace()
        .plane(prof::schema::HOST_PLANE)
        .ok_or("no host plane")?;
    let tasks: usize = host
        .lines
        .iter()
        .filter(|l| l.name.starts_with("Tasks"))
        .map(|l| l.events.len())
        .sum();
    let stats = format!(
        "{} steps, {} events on {} lines, {tasks} async tasks",
        profile.steps().len(),
        profile.event_count(),
        host.lines.len()
    );
    common::report(&profile, &args, &stats)?;
    Ok(())
}
