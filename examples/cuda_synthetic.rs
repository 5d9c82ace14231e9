//! A GPU profile without a GPU: a real prof session on the host (steps of `forward`
//! holding `block` > `attn` and `block` > `mlp`, then `backward`), plus synthetic
//! CUPTI records (a kernel and a copy launched inside each `attn` and `mlp`, with the
//! driver calls around them that launch nothing, as frameworks make them) put through
//! the same conversion the live tracer uses, written as a TensorBoard/XProf logdir
//! (and, with `--format`, as a Perfetto trace or Chrome JSON beside it). CI has
//! xprof's `kernel_stats`, `framework_op_stats`, `overview_page`, `memory_profile` and
//! trace viewer read it, and the Perfetto and Chrome checkers read the other formats.
//!
//! ```text
//! cargo run --features cuda --example cuda_synthetic -- [--logdir DIR] [--steps N]
//!     [--graph] [--devices N] [--all-api-calls] [--nvtx] [--memory] [--option KEY=VALUE]...
//!     [--format perfetto,chrome] [--summary-json FILE]
//! ```
//!
//! - `--graph`: a CUDA graph is captured once before the steps (`graph_capture` >
//!   `embed` and `decode`, a kernel node each) and replayed in every step (`replay`):
//!   its kernels carry the capture's ops.
//! - `--devices N`: the launches go to GPUs 0..N in turn.
//! - `--memory`: device memory from a stream-ordered pool on GPU 0, a 64 MiB
//!   activation under each `attn` and a 16 MiB one under each `mlp`, each with a 4 MiB
//!   workspace (XProf's Memory Profile shows `GPU_0`, its largest blocks named by the
//!   layers). Each allocation is a host event carrying its op, which XProf's overview
//!   also counts as a framework op on the host.
//! - `--option`: the GPU tracer's `advanced_configuration` keys, checked as
//!   `prof::start` checks them, and applied as the live tracer applies them:
//!   `gpu_trace_all_api_calls`, `gpu_enable_nvtx_tracking`, `gpu_max_annotation_strings`,
//!   `gpu_enable_cupti_activity_graph_trace` (one event per replay),
//!   `gpu_dump_graph_node_mapping`, `gpu_pm_sample_counters` (synthetic samples every
//!   `gpu_pm_sample_interval_us`) and `gpu_num_chips_to_profile_per_task`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::error::Error;
use std::time::Duration;

use prof::cuda::activity::DeviceTrace;
use prof::cuda::synthetic::{self, CapturedNode, Launch};
use prof::{schema, trace, ProfileOptions};

mod common;

/// cuda_synthetic's own flags.
#[derive(clap::Args)]
struct Extra {
    /// Keep every CUDA API call on the host lines, as the gpu_trace_all_api_calls
    /// option does
    #[arg(long)]
    all_api_calls: bool,
    /// Add NVTX ranges around each launch, as cuBLAS pushes them and the
    /// gpu_enable_nvtx_tracking option records them
    #[arg(long)]
    nvtx: bool,
    /// Capture a CUDA graph before the steps and replay it in each
    #[arg(long)]
    graph: bool,
    /// Spread the launches over this many GPUs
    #[arg(long, value_name = "N", default_value_t = 1)]
    devices: u32,
    /// Add device memory allocated and released under the layers, from a
    /// stream-ordered pool on GPU 0
    #[arg(long)]
    memory: bool,
}

fn main() -> Result<(), Box<dyn Error>> {
    let (args, extra) = common::parse::<Extra>(
        "cuda_synthetic",
        "A GPU profile without a GPU: a host session plus synthetic CUPTI records.",
        12,
    );
    let options = args.options(ProfileOptions::default());
    // As prof::start checks them: a misspelt key or a wrong value is a usage error.
    if let Err(e) = options.validate() {
        eprintln!("cuda_synthetic: {e}");
        std::process::exit(2);
    }
    let mut space = host_session(args.steps, extra.graph)?;
    let host = space.plane(schema::HOST_PLANE).ok_or("no host plane")?;
    let id_of = |name: &str| {
        host.event_metadata
            .values()
            .find(|m| m.name == name)
            .map(|m| m.id)
            .ok_or(format!("no {name} events"))
    };
    let (attn, mlp) = (id_of("attn")?, id_of("mlp")?);
    let line = host
        .lines
        .iter()
        .find(|l| l.events.iter().any(|e| e.metadata_id == attn))
        .ok_or("no line with attn")?;
    let window = |e: &prof::xspace::XEvent| {
        let at = line.timestamp_ns * 1000 + e.offset_ps();
        ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64)
    };
    // attn launches a GEMM and copies its input in; mlp a softmax, copying out.
    let launches: Vec<Launch> = line
        .events
        .iter()
        .filter_map(|e| {
            let (kernel, copy_kind) = if e.metadata_id == attn {
                ("volta_sgemm_128x64_nn", 1)
            } else if e.metadata_id == mlp {
                ("softmax_warp_forward", 2)
            } else {
                return None;
            };
            Some(Launch {
                window: window(e),
                kernel,
                copy_kind,
            })
        })
        .collect();
    let mut trace = synthetic::trace(line.id as u32, &launches);
    trace.all_api_calls = extra.all_api_calls;
    spread_over_devices(&mut trace, extra.devices);
    if extra.nvtx || options.advanced_bool("gpu_enable_nvtx_tracking") == Some(true) {
        trace.activities.extend(synthetic::nvtx(&launches));
    }
    if extra.memory {
        // Activations: attn's 64 MiB, mlp's 16 MiB.
        let activations: Vec<u64> = launches
            .iter()
            .map(|l| if l.copy_kind == 1 { 64 << 20 } else { 16 << 20 })
            .collect();
        trace.activities.extend(synthetic::allocations(
            line.id as u32,
            &launches,
            &activations,
        ));
    }
    if extra.graph {
        let named = |name: &str| {
            let id = id_of(name).ok()?;
            Some(
                line.events
                    .iter()
                    .filter(move |e| e.metadata_id == id)
                    .map(window),
            )
        };
        let nodes: Vec<CapturedNode> = [
            ("embed", "graph_embed_kernel"),
            ("decode", "graph_decode_kernel"),
        ]
        .into_iter()
        .filter_map(|(layer, kernel)| {
            let (start, end) = named(layer)?.next()?;
            Some(CapturedNode {
                at: (start + end) / 2,
                seq: 0,
                kernel,
            })
        })
        .collect();
        let replays: Vec<(u64, u64)> = named("replay").ok_or("no replay events")?.collect();
        let whole = options.advanced_bool("gpu_enable_cupti_activity_graph_trace") == Some(true);
        let graph = synthetic::graph(line.id as u32, &nodes, &replays, 1 << 20, whole);
        trace.activities.extend(graph.activities);
        trace.graph_notes = graph.graph_notes;
        trace.graph_launches = graph.graph_launches;
    }
    apply_options(&mut trace, &options, &space);
    let calls = prof::cuda::convert::add_to_space(&trace, &mut space, &Some);
    println!(
        "CUDA API calls: {} on the host lines, {} left out {:?}",
        calls.kept,
        calls.left_out_total(),
        calls.left_out
    );
    let profile = prof::export::logdir::write_logdir_formats(
        &args.logdir,
        prof::Profile::new(space),
        &args.formats,
    )?;
    for file in profile.files() {
        println!("wrote {}", file.display());
    }
    for warning in profile.warnings() {
        println!("warning: {warning}");
    }
    if let Some(gpu) = prof::memory::gpu(0) {
        println!(
            "GPU_0 as the trace saw it: {} MiB in use, peak {} MiB",
            gpu.in_use >> 20,
            gpu.peak >> 20
        );
    }
    if let Some(path) = &args.summary_json {
        let summary = prof::ProfileAnalysis::summary(
            &profile,
            &prof::summary::SummaryOptions::default().limit(5),
        );
        std::fs::write(path, summary.to_json())?;
    }
    Ok(())
}

/// Launch `i`'s device work goes to GPU `i % devices`, and every GPU is described.
fn spread_over_devices(trace: &mut DeviceTrace, devices: u32) {
    use prof::cuda::activity::Activity;
    let devices = devices.max(1);
    let mut launch = std::collections::HashMap::new();
    for a in &mut trace.activities {
        if let Activity::Kernel { at, .. } | Activity::Memcpy { at, .. } = a {
            let next = launch.len() as u32;
            let n = *launch.entry(at.correlation_id).or_insert(next);
            at.device_id = n % devices;
        }
    }
    let first = trace.devices[0].clone();
    trace.devices = (0..devices)
        .map(|ordinal| prof::cuda::activity::DeviceInfo {
            ordinal,
            ..first.clone()
        })
        .collect();
}

/// What the live tracer takes from the session's options, applied to the synthetic
/// trace: the conversion's settings, and PM samples of the metrics asked for.
fn apply_options(trace: &mut DeviceTrace, options: &ProfileOptions, space: &prof::xspace::XSpace) {
    trace.all_api_calls |= options.advanced_bool("gpu_trace_all_api_calls") == Some(true);
    trace.max_annotation_strings = options
        .advanced_int("gpu_max_annotation_strings")
        .and_then(|n| u64::try_from(n).ok());
    trace.dump_graph_node_mapping =
        options.advanced_bool("gpu_dump_graph_node_mapping") == Some(true);
    trace.max_devices = options
        .advanced_int("gpu_num_chips_to_profile_per_task")
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0);
    if let Some(metrics) = options.advanced_str("gpu_pm_sample_counters") {
        let metrics: Vec<&str> = metrics.split(',').map(str::trim).collect();
        let interval_us = options
            .advanced_int("gpu_pm_sample_interval_us")
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(500);
        let end = space
            .planes
            .iter()
            .flat_map(|p| &p.lines)
            .map(|l| u64::try_from(l.timestamp_ns * 1000 + l.duration_ps).unwrap_or(0) / 1000)
            .max()
            .unwrap_or(0);
        let devices: Vec<u32> = trace.devices.iter().map(|d| d.ordinal).collect();
        let (names, samples) =
            synthetic::pm_samples(&metrics, &devices, (0, end), interval_us * 1000);
        trace.pm_metrics = names;
        trace.pm_samples = samples;
    }
}

/// Steps of `forward` (a `block` holding `attn` then `mlp`) and `backward`; with
/// `graph`, a graph capture first (`graph_capture` > `embed`, `decode`) and a `replay`
/// in each step.
fn host_session(steps: u32, graph: bool) -> Result<prof::xspace::XSpace, Box<dyn Error>> {
    prof::start_in_memory(ProfileOptions::default().device_tracer_level(0))?;
    if graph {
        let _c = trace!("graph_capture");
        for layer in ["embed", "decode"] {
            let _l = prof::Trace::new(layer);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        {
            let _f = trace!("forward");
            let _b = trace!("block");
            for layer in ["attn", "mlp"] {
                let _l = prof::Trace::new(layer);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        {
            let _b = trace!("backward");
            std::thread::sleep(Duration::from_millis(1));
        }
        if graph {
            let _r = trace!("replay");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(prof::stop()?.into_xspace())
}
