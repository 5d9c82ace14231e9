//! candle on a GPU, profiled: a small pre-norm transformer (token embedding, two blocks
//! of layer norm → causal self-attention → layer norm → GELU MLP, a final norm and an
//! output head, all candle-nn) trained on `Device::new_cuda(0)` with AdamW, forward and
//! backward, while prof's CUPTI tracer records the kernels.
//!
//! ```text
//! examples/build_candle_cuda.sh       # nvcc from PyPI, candle's kernels for sm_90
//! target/release/examples/candle_cuda [--logdir DIR] [--steps N] [--min-annotated PCT]
//! ```
//!
//! Every kernel is launched inside a named annotation, so XProf files it under an op:
//! each step is `Train` (with `step_num`) holding `load_batch`, `forward`, `loss`,
//! `backward` and `optimizer`; inside `forward` the layers are `prof::candle::Traced`
//! (`embedding`, `block` with its `layer`, `layer-norm`, `attn`, `linear`, `mlp`,
//! `lm_head`), and the attention softmax is a `tracing` span (`attn-softmax`, as
//! candle-transformers names it) recorded through `prof::ProfilerLayer`. Backward and the
//! optimizer walk candle's graph, not the layers: their kernels are filed under
//! `backward` and `optimizer`. The example prints how many kernels the device lines hold
//! and which share of kernel time carries an op (`tf_op`), and fails below
//! `--min-annotated` percent (95).
//!
//! The fused candle-nn ops (`ops::softmax_last_dim`, `ops::layer_norm`, the `LayerNorm`
//! and `RmsNorm` modules on contiguous input) have no backward pass, so this model uses
//! the composed `ops::softmax` and `ops::layer_norm_slow`; a test checks that every
//! parameter gets a gradient. Weights are initialised on the CPU and moved: nothing
//! random runs on the device.
//!
//! Device memory: prof's `GPU_0` allocator (every `cuMemAllocAsync` / `cuMemFreeAsync`
//! CUPTI saw, XProf's Memory Profile) beside what the driver says (`cuMemGetInfo` before
//! the session, after each step's backward pass and after the session). The example
//! prints both and fails when the driver saw the device's memory grow while prof saw
//! no device memory allocated.
//!
//! Without a GPU (candle built without CUDA, no libcuda, libcublas or libcurand, or no
//! device) it says so and exits 0: CI builds and runs it that way with `--features
//! cuda,candle`.
#![allow(clippy::print_stdout)]
// Asking cudarc whether a library loads is an unsafe foreign call; the block says why it
// is sound.
#![allow(unsafe_code)]

use std::error::Error;

use candle_core::{Device, Module, Tensor};
use candle_nn::{AdamW, Optimizer as _, ParamsAdamW, VarMap};
use prof::{trace, ProfileOptions};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

#[path = "../common/mod.rs"]
mod common;
mod memory;
mod model;
mod summary;

use memory::DriverMemory;
use model::Model;
use summary::KernelSummary;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// candle_cuda's own flags.
#[derive(clap::Args)]
struct Extra {
    /// Fail when less than this percentage of kernel time carries an op (tf_op)
    #[arg(long, value_name = "PCT", default_value_t = 95.0)]
    min_annotated: f64,
}

/// The model's and the batch's sizes.
#[derive(Clone, Copy)]
struct Config {
    vocab: usize,
    dim: usize,
    heads: usize,
    layers: usize,
    batch: usize,
    seq: usize,
}

const CONFIG: Config = Config {
    vocab: 512,
    dim: 256,
    heads: 8,
    layers: 2,
    batch: 8,
    seq: 64,
};

fn main() -> Result<()> {
    let (args, Extra { min_annotated }) = common::parse::<Extra>(
        "candle_cuda",
        "Trains a small candle-nn transformer on GPU 0 and profiles its kernels.",
        10,
    );
    tracing_subscriber::registry()
        .with(prof::ProfilerLayer::new())
        .init();
    let (device, name) = match open_gpu() {
        Ok(gpu) => gpu,
        Err(why) => {
            println!("candle_cuda: no GPU to profile here ({why}); nothing to do.");
            return Ok(());
        }
    };
    println!("candle_cuda: {name}");

    let config = CONFIG;
    let varmap = VarMap::new();
    let model = Model::on(&device, &varmap, config)?;
    let mut optimizer = AdamW::new(
        varmap.all_vars(),
        ParamsAdamW {
            lr: 1e-3,
            ..ParamsAdamW::default()
        },
    )?;
    let batch = Batch::new(config);
    // One step before the session: candle loads its kernel modules (the driver compiles
    // their PTX) on first use, and cuBLAS picks its kernels.
    let first_loss = train_step(&model, &mut optimizer, &batch, &device, 0, &mut || {})?;

    let mut driver = DriverMemory::before();
    prof::memory::reset_peak();
    prof::start(&args.logdir, args.options(ProfileOptions::default()))?;
    let mut loss = first_loss;
    for step in 1..=args.steps {
        loss = train_step(&model, &mut optimizer, &batch, &device, step, &mut || {
            driver.sample();
        })?;
    }
    let profile = prof::stop().inspect_err(|e| eprintln!("{e}"))?;
    driver.after();

    let kernels = KernelSummary::of(profile.xspace());
    let stats = format!(
        "{} steps, loss {first_loss:.3} -> {loss:.3}; {kernels}",
        profile.steps().len()
    );
    common::report(&profile, &args, &stats)?;
    if let Some(missing) = profile
        .warnings()
        .iter()
        .find(|w| w.contains("no GPU trace"))
    {
        // The GPU ran, but CUPTI did not load: the host profile is still there.
        println!("candle_cuda: the device was not traced: {missing}");
        return Ok(());
    }
    kernels.check(min_annotated)?;
    driver.compare(&profile)
}

/// candle's CUDA device 0 and the GPU's name, or why there is none.
fn open_gpu() -> std::result::Result<(Device, String), String> {
    if !candle_core::utils::cuda_is_available() {
        return Err(
            "candle was built without its CUDA backend: build this example with \
                    examples/build_candle_cuda.sh (feature candle-cuda)"
                .to_owned(),
        );
    }
    // A missing library is a panic inside candle, not an error: ask first. candle's
    // device creates a cuBLAS handle and a cuRAND generator up front.
    // SAFETY: these only try to load the libraries by name; no symbol is used.
    let present = unsafe {
        [
            ("libcuda", cudarc::driver::sys::is_culib_present()),
            ("libcublas", cudarc::cublas::sys::is_culib_present()),
            ("libcurand", cudarc::curand::sys::is_culib_present()),
        ]
    };
    let missing: Vec<&str> = present
        .iter()
        .filter(|(_, found)| !found)
        .map(|(lib, _)| *lib)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} not found on the library search path (LD_LIBRARY_PATH)",
            missing.join(", ")
        ));
    }
    let device = Device::new_cuda(0).map_err(|e| format!("no CUDA device 0: {e}"))?;
    let name = cudarc::driver::CudaContext::new(0)
        .and_then(|ctx| ctx.name())
        .unwrap_or_else(|e| format!("GPU 0 ({e})"));
    Ok((device, name))
}

/// A fixed batch, on the host: `batch` sequences counting up by a stride mod `vocab`,
/// each target the next token, so the loss can fall.
struct Batch {
    inputs: Vec<u32>,
    targets: Vec<u32>,
    config: Config,
}

impl Batch {
    fn new(config: Config) -> Batch {
        let Config {
            vocab, batch, seq, ..
        } = config;
        let token = |b: usize, t: usize| ((b * 31 + t * (2 * b + 1)) % vocab) as u32;
        let pairs = (0..batch).flat_map(|b| (0..seq).map(move |t| (token(b, t), token(b, t + 1))));
        let (inputs, targets) = pairs.unzip();
        Batch {
            inputs,
            targets,
            config,
        }
    }
}

/// One training step, `Train` with `step_num`; returns the loss. `after_backward` runs
/// between the backward pass and the optimizer, when the gradients are all held.
fn train_step(
    model: &Model,
    optimizer: &mut AdamW,
    batch: &Batch,
    device: &Device,
    step: u32,
    after_backward: &mut dyn FnMut(),
) -> Result<f32> {
    let step_trace = trace!("Train", step_num = step);
    let Config {
        batch: b,
        seq: t,
        vocab,
        ..
    } = batch.config;
    let (inputs, targets) = {
        let _t = trace!("load_batch");
        (
            Tensor::from_slice(&batch.inputs, (b, t), device)?,
            Tensor::from_slice(&batch.targets, b * t, device)?,
        )
    };
    let logits = {
        let _t = trace!("forward");
        model.forward(&inputs)?
    };
    let loss = {
        let _t = trace!("loss");
        candle_nn::loss::cross_entropy(&logits.reshape((b * t, vocab))?, &targets)?
    };
    let grads = {
        let _t = trace!("backward");
        loss.backward()?
    };
    after_backward();
    {
        let _t = trace!("optimizer", kind = "adamw");
        optimizer.step(&grads)?;
    }
    let loss = {
        let _t = trace!("loss_to_host");
        loss.to_scalar::<f32>()?
    };
    step_trace.set_metadata("loss", loss);
    Ok(loss)
}

/// The model on the CPU (its gradients), and the summary's reading of a GPU plane made
/// of synthetic CUPTI records: the parts of this example that run without a GPU.
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use prof::schema;
    use prof::xspace::XSpace;

    /// Sessions are process-wide, and `train_step` records into any that is running:
    /// one test at a time.
    static SESSION: std::sync::Mutex<()> = std::sync::Mutex::new(());

    const SMALL: Config = Config {
        vocab: 32,
        dim: 16,
        heads: 2,
        layers: 2,
        batch: 2,
        seq: 8,
    };

    #[test]
    fn every_parameter_gets_a_gradient_and_the_loss_falls() {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        let device = Device::Cpu;
        let varmap = VarMap::new();
        let model = Model::on(&device, &varmap, SMALL).expect("model");
        let vars = varmap.all_vars();
        // 2 × (2 norms × 2, qkv and out × 2, up and down × 2) + embedding + norm × 2 + head.
        assert_eq!(vars.len(), 2 * (4 + 4 + 4) + 4);
        let mut optimizer = AdamW::new(
            vars.clone(),
            ParamsAdamW {
                lr: 1e-2,
                ..ParamsAdamW::default()
            },
        )
        .expect("optimizer");
        let batch = Batch::new(SMALL);
        let inputs =
            Tensor::from_slice(&batch.inputs, (SMALL.batch, SMALL.seq), &device).expect("inputs");
        let logits = model.forward(&inputs).expect("forward");
        assert_eq!(logits.dims(), [SMALL.batch, SMALL.seq, SMALL.vocab]);
        let targets =
            Tensor::from_slice(&batch.targets, SMALL.batch * SMALL.seq, &device).expect("targets");
        let loss = candle_nn::loss::cross_entropy(
            &logits
                .reshape((SMALL.batch * SMALL.seq, SMALL.vocab))
                .expect("reshape"),
            &targets,
        )
        .expect("loss");
        let grads = loss.backward().expect("backward");
        let without: Vec<String> = {
            let data = varmap.data().lock().unwrap_or_else(|e| e.into_inner());
            data.iter()
                .filter(|(_, var)| grads.get(var.as_tensor()).is_none())
                .map(|(name, _)| name.clone())
                .collect()
        };
        assert!(without.is_empty(), "no gradient for {without:?}");

        let mut probes = 0;
        let first = train_step(&model, &mut optimizer, &batch, &device, 0, &mut || {
            probes += 1
        })
        .expect("step");
        let mut last = first;
        for step in 1..20 {
            last = train_step(&model, &mut optimizer, &batch, &device, step, &mut || {})
                .expect("step");
        }
        assert_eq!(probes, 1, "the probe runs once a step");
        assert!(last < first * 0.8, "loss {first} -> {last}");
    }

    /// A host session with a step holding `forward` > `attn` and a stretch under the
    /// step alone, plus one synthetic kernel launched in each (40 µs each).
    fn two_launches() -> XSpace {
        launches_allocating(&[])
    }

    /// [`two_launches`], each launch also allocating device memory: an activation of
    /// `activations[i]` bytes and a 4 MiB workspace (none when empty).
    fn launches_allocating(activations: &[u64]) -> XSpace {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        prof::start_in_memory(ProfileOptions::default().device_tracer_level(0)).expect("start");
        {
            let _step = trace!("Train", step_num = 0);
            std::thread::sleep(Duration::from_micros(400));
            let _forward = trace!("forward");
            let _attn = trace!("attn");
            std::thread::sleep(Duration::from_micros(400));
        }
        let mut space = prof::stop().expect("stop").into_xspace();
        let host = space.plane(schema::HOST_PLANE).expect("host plane");
        let span_of = |name: &str| {
            host.lines.iter().find_map(|line| {
                line.events
                    .iter()
                    .find(|e| host.event_name(e.metadata_id) == Some(name))
                    .map(|e| {
                        let at = line.timestamp_ns * 1000 + e.offset_ps();
                        (
                            line.id as u32,
                            (at / 1000) as u64,
                            ((at + e.duration_ps) / 1000) as u64,
                        )
                    })
            })
        };
        let (line, step_start, _) = span_of("Train").expect("Train");
        let (_, attn_start, attn_end) = span_of("attn").expect("attn");
        let windows = [(step_start, attn_start), (attn_start, attn_end)];
        let mut trace = prof::cuda::synthetic::launches(
            line,
            &windows,
            &["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "softmax_kernel"],
        );
        if !activations.is_empty() {
            let launches: Vec<_> = windows
                .iter()
                .map(|&window| prof::cuda::synthetic::Launch {
                    window,
                    kernel: "k",
                    copy_kind: 1,
                })
                .collect();
            trace.activities.extend(prof::cuda::synthetic::allocations(
                line,
                &launches,
                activations,
            ));
        }
        prof::cuda::convert::add_to_space(&trace, &mut space, &Some);
        space
    }

    #[test]
    fn the_driver_check_fails_only_when_prof_saw_no_device_memory() {
        let driver = DriverMemory {
            before: Some(100 << 20),
            highest: Some(180 << 20),
            samples: 3,
            after: Some(110 << 20),
            failed: None,
        };
        let without = prof::Profile::new(two_launches());
        let err = driver.compare(&without).expect_err("no GPU_0 event");
        assert!(
            err.to_string().contains("holds no GPU_0 memory event"),
            "{err}"
        );
        let with = prof::Profile::new(launches_allocating(&[64 << 20, 8 << 20]));
        driver.compare(&with).expect("prof saw the allocations");
        // A driver that could not be asked is reported, not a failure.
        let unasked = DriverMemory {
            failed: Some("no CUDA context is current".into()),
            ..DriverMemory::default()
        };
        unasked.compare(&without).expect("nothing to compare");
    }

    #[test]
    fn counts_kernels_and_the_share_under_an_annotation() {
        let summary = KernelSummary::of(&two_launches());
        assert_eq!(
            (summary.planes, summary.lines, summary.kernels),
            (1, 1, 2),
            "{summary}"
        );
        // The first kernel ran under the step alone: no op.
        assert_eq!(summary.kernel_ps, 2 * summary.annotated_ps, "{summary}");
        assert!((summary.annotated_pct() - 50.0).abs() < 1e-9);
        assert_eq!(
            summary.by_op.keys().collect::<Vec<_>>(),
            ["-", "forward/attn"],
            "{summary}"
        );
        summary.check(50.0).expect("half is enough for 50%");
        let err = summary.check(95.0).expect_err("half is not 95%");
        assert!(err.to_string().contains("50.0% of kernel time"), "{err}");
        assert!(
            summary
                .to_string()
                .contains("2 kernels on 1 device line(s)"),
            "{summary}"
        );
    }

    #[test]
    fn a_host_only_profile_fails_the_check() {
        let summary = KernelSummary::default();
        let err = summary.check(95.0).expect_err("no GPU plane");
        assert!(err.to_string().contains("no /device:GPU plane"), "{err}");
    }
}
