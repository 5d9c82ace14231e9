//! burn_train: a small MLP trained with burn, profiled by prof.
//!
//! Each step is `Train` (`profiler_burn::step`), holding `forward` (`fc1`, `relu`,
//! `fc2`), `loss`, `backward` and `optimizer`; the loss of each step is a `loss` counter
//! track. On wgpu (`--backend wgpu`, any Vulkan, Metal or DX12 device; lavapipe on a
//! machine without a GPU), every kernel burn launches is on the host under the layer
//! that issued it, and with `--kernel-timing` also on the GPU's plane, linked to its
//! launch. At the end it checks its own profile and the loss, and exits 1 when they are
//! wrong.
//!
//! ```text
//! cargo run --release --example burn_train --features flex,wgpu -- --backend wgpu --kernel-timing --steps 20 --logdir logs
//! ```
//!
//! `--bench` runs the steps outside any profile first and prints steps per second with
//! and without the profile (the cost table in docs/cost.md).
#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{AdamConfig, GradientsParams};
use burn::prelude::{Device, Tensor};
use burn::tensor::Distribution;
use clap::{Parser, ValueEnum};
use prof::prelude::*;

/// The loss after each step, as a counter track beside the timeline.
static LOSS: prof::Counter = prof::Counter::new("loss");

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// burn's pure-Rust CPU backend (no kernels: the host timeline only).
    Flex,
    /// wgpu: Vulkan, Metal, DX12 (lavapipe where there is no GPU).
    Wgpu,
}

#[derive(Parser)]
#[command(about = "Train a small MLP with burn under prof")]
struct Args {
    /// Where to write the profile (a TensorBoard/XProf logdir)
    #[arg(long, value_name = "DIR", default_value = "logs")]
    logdir: PathBuf,
    /// Training steps to run
    #[arg(long, value_name = "N", default_value_t = 20)]
    steps: u32,
    /// The backend to train on
    #[arg(long, value_enum, default_value = "flex")]
    backend: Backend,
    /// Time every kernel on the device (advanced_configuration cubecl_kernel_timing)
    #[arg(long)]
    kernel_timing: bool,
    /// Also write these beside the .xplane.pb: perfetto, chrome, chrome.gz
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    format: Vec<prof::ExportFormat>,
    /// Rows per batch
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Print steps per second without a profile, with one, and with kernel timing
    #[arg(long)]
    bench: bool,
    /// With --bench, rounds of each case (interleaved)
    #[arg(long, default_value_t = 5)]
    rounds: u32,
}

#[derive(Module, Debug)]
struct Mlp {
    fc1: Linear,
    relu: Relu,
    fc2: Linear,
}

const INPUTS: usize = 32;
const HIDDEN: usize = 64;
const OUTPUTS: usize = 8;

impl Mlp {
    fn new(device: &Device) -> Mlp {
        Mlp {
            fc1: LinearConfig::new(INPUTS, HIDDEN).init(device),
            relu: Relu::new(),
            fc2: LinearConfig::new(HIDDEN, OUTPUTS).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let _forward = prof::trace!("forward");
        let h = {
            let _t = prof::trace!("fc1");
            self.fc1.forward(x)
        };
        let h = {
            let _t = prof::trace!("relu");
            self.relu.forward(h)
        };
        let _t = prof::trace!("fc2");
        self.fc2.forward(h)
    }
}

/// The task: a fixed random linear map of the inputs, which the MLP learns.
struct Task {
    map: Tensor<2>,
    batch: usize,
    device: Device,
}

impl Task {
    fn batch(&self) -> (Tensor<2>, Tensor<2>) {
        let x = Tensor::<2>::random([self.batch, INPUTS], Distribution::Default, &self.device);
        let y = x.clone().matmul(self.map.clone());
        (x, y)
    }
}

/// One training step; returns the model and the step's loss.
fn step(model: Mlp, optim: &mut burn::optim::ModuleOptimizer, task: &Task) -> (Mlp, f32) {
    let (x, y) = {
        let _t = prof::trace!("load_batch");
        task.batch()
    };
    let out = model.forward(x);
    let loss = {
        let _t = prof::trace!("loss");
        (out - y).powi_scalar(2).mean()
    };
    let grads = {
        let _t = prof::trace!("backward");
        GradientsParams::from_grads(loss.backward(), &model)
    };
    let model = {
        let _t = prof::trace!("optimizer");
        optim.step(1e-2, model, grads)
    };
    // Reading the loss waits for the step's kernels: the step's time is the device's.
    let loss = {
        let _t = prof::trace!("read_loss");
        loss.into_scalar::<f32>()
    };
    LOSS.set(loss);
    (model, loss)
}

fn device(backend: Backend) -> Device {
    match backend {
        Backend::Flex => Device::flex(),
        Backend::Wgpu => Device::wgpu(burn::prelude::DeviceKind::DefaultDevice),
    }
}

/// Runs `steps` steps, each marked (when a session records), and returns the losses.
fn train(
    model: &mut Option<Mlp>,
    optim: &mut burn::optim::ModuleOptimizer,
    task: &Task,
    steps: u32,
) -> Vec<f32> {
    let mut losses = Vec::with_capacity(steps as usize);
    for _ in 0..steps {
        let _step = profiler_burn::step();
        let (next, loss) = step(model.take().expect("a model"), optim, task);
        *model = Some(next);
        losses.push(loss);
    }
    losses
}

fn options(args: &Args, timing: bool) -> prof::ProfileOptions {
    let mut options =
        prof::ProfileOptions::default().advanced(profiler_burn::KERNEL_TIMING, timing);
    for &format in &args.format {
        options = options.export_format(format);
    }
    options
}

fn main() -> ExitCode {
    let args = Args::parse();
    let device = device(args.backend).autodiff();
    // Every later session records burn's kernels, on this device's plane.
    profiler_burn::install(&device);
    device.seed(7);
    let task = Task {
        map: Tensor::<2>::random([INPUTS, OUTPUTS], Distribution::Default, &device),
        batch: args.batch,
        device: device.clone(),
    };
    let mut model = Some(Mlp::new(&device));
    let mut optim = AdamConfig::new().init();
    // Warm-up, unprofiled: kernels compile (and wgpu autotunes) on first use.
    let warm = train(&mut model, &mut optim, &task, 3);

    if args.bench {
        return bench(&args, &mut model, &mut optim, &task);
    }

    if let Err(e) = prof::start(&args.logdir, options(&args, args.kernel_timing)) {
        eprintln!("burn_train: {e}");
        return ExitCode::FAILURE;
    }
    let losses = train(&mut model, &mut optim, &task, args.steps);
    let profile = match prof::stop() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("burn_train: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", profile.summary(&Default::default()));
    for warning in profile.warnings() {
        println!("warning: {warning}");
    }
    let first = warm.first().copied().unwrap_or(f32::NAN);
    let last = losses.last().copied().unwrap_or(f32::NAN);
    println!(
        "loss: {first:.4} (first warm-up step) -> {last:.4} (step {})",
        args.steps + 2
    );
    for file in profile.files() {
        println!("profile written to {}", file.display());
    }
    let mut failed = Vec::new();
    // NaN never fell.
    let fell = last < first * 0.5;
    if !fell {
        failed.push(format!("the loss did not fall by half: {first} -> {last}"));
    }
    failed.extend(check(&profile, &args));
    for f in &failed {
        eprintln!("burn_train: {f}");
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What the profile must hold: every step and layer on the host; with kernels (wgpu),
/// a launch under each layer, and with timing, the kernels on the GPU plane with at
/// least 95% of their time attributed to an annotation.
fn check(profile: &prof::Profile, args: &Args) -> Vec<String> {
    let mut failed = Vec::new();
    let space = profile.xspace();
    let Some(host) = space.plane("/host:CPU") else {
        return vec!["no host plane".into()];
    };
    let count = |name: &str| {
        host.lines
            .iter()
            .filter(|l| l.name != prof::schema::COUNTERS_LINE)
            .flat_map(|l| &l.events)
            .filter(|e| host.event_name(e.metadata_id) == Some(name))
            .count()
    };
    for name in ["fc1", "relu", "fc2", "loss", "backward", "optimizer"] {
        if count(name) != args.steps as usize {
            failed.push(format!(
                "{} `{name}` events, not {}",
                count(name),
                args.steps
            ));
        }
    }
    if count("Train") != args.steps as usize {
        failed.push(format!("{} steps, not {}", count("Train"), args.steps));
    }
    let gpu = space.plane("/device:GPU:0");
    match (args.backend, gpu) {
        (Backend::Flex, Some(_)) => failed.push("flex launched kernels on a GPU plane".into()),
        (Backend::Wgpu, None) if args.kernel_timing => failed.push("no /device:GPU:0 plane".into()),
        (Backend::Wgpu, Some(gpu)) => {
            let mut total = 0i64;
            let mut attributed = 0i64;
            let mut ops = std::collections::BTreeSet::new();
            for e in gpu.lines.iter().flat_map(|l| &l.events) {
                total += e.duration_ps;
                if let Some(op) = gpu.find_text(&e.stats, "tf_op") {
                    attributed += e.duration_ps;
                    ops.insert(op.to_owned());
                }
            }
            let share = attributed as f64 / total.max(1) as f64;
            println!(
                "kernel time attributed to annotations: {:.1}% of {:.3} ms; ops: {}",
                share * 100.0,
                total as f64 / 1e9,
                ops.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            if share < 0.95 {
                failed.push(format!(
                    "only {:.1}% of kernel time attributed",
                    share * 100.0
                ));
            }
            for layer in ["forward/fc1:fc1", "forward/relu:relu", "forward/fc2:fc2"] {
                if !ops.contains(layer) {
                    failed.push(format!("no kernel under {layer}"));
                }
            }
        }
        _ => {}
    }
    failed
}

/// Steps per second: no profile, a profile, a profile with kernel timing, in
/// interleaved rounds (each round runs `--steps` steps of each case in turn), so that a
/// machine whose speed drifts (a shared VM, a GPU warming) skews every case alike.
/// Prints each case's median over the rounds, with its quartiles, and its ratio to no
/// profile.
fn bench(
    args: &Args,
    model: &mut Option<Mlp>,
    optim: &mut burn::optim::ModuleOptimizer,
    task: &Task,
) -> ExitCode {
    let mut rate = |session: Option<bool>| -> Result<f64, prof::Error> {
        if let Some(timing) = session {
            prof::start_in_memory(options(args, timing))?;
        }
        let start = Instant::now();
        train(model, optim, task, args.steps);
        // The kernels issued must have run: burn is asynchronous, and a step's host
        // time is its enqueue time. Reading the model's loss each step (in `step`)
        // already waits for the device.
        let seconds = start.elapsed().as_secs_f64();
        if session.is_some() {
            prof::stop()?;
        }
        Ok(f64::from(args.steps) / seconds)
    };
    let cases = [
        ("no profile", None),
        ("profile", Some(false)),
        ("profile, kernel timing", Some(true)),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for _ in 0..args.rounds.max(1) {
        for (i, (_, session)) in cases.iter().enumerate() {
            match rate(*session) {
                Ok(r) => rates[i].push(r),
                Err(e) => {
                    eprintln!("burn_train: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let quartiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        (at(0.25), at(0.5), at(0.75))
    };
    let base = quartiles(&mut rates[0].clone()).1;
    println!(
        "| {:?}, {} rounds of {} steps | steps/s, median [quartiles] | of no profile |",
        args.backend, args.rounds, args.steps
    );
    println!("|---|---:|---:|");
    for ((name, _), v) in cases.iter().zip(&mut rates) {
        let (q1, median, q3) = quartiles(v);
        println!(
            "| {name} | {median:.1} [{q1:.1}, {q3:.1}] | {:.2} |",
            median / base
        );
    }
    ExitCode::SUCCESS
}
