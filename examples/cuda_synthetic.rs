//! A GPU profile without a GPU: a real prof session on the host (steps of `forward`
//! holding `block` > `attn` and `block` > `mlp`, then `backward`), plus synthetic
//! CUPTI records (a kernel and a copy launched inside each `attn` and `mlp`, with the
//! driver calls around them that launch nothing, as frameworks make them; with
//! `--memory`, device memory from a stream-ordered pool, a 64 MiB activation under
//! each `attn` and a 16 MiB one under each `mlp`, each with a 4 MiB workspace; with
//! `--nvtx`, the NVTX ranges cuBLAS would push around each launch) put
//! through the same conversion the live tracer uses, written as a TensorBoard/XProf
//! logdir (and, with `--format`, as a Perfetto trace or Chrome JSON beside it). CI has
//! xprof's `kernel_stats`, `framework_op_stats`, `overview_page`, `memory_profile` and
//! trace viewer read it, and the Perfetto and Chrome checkers read the other formats.
//!
//! ```text
//! cargo run --features cuda --example cuda_synthetic -- [--logdir DIR] [--steps N] [--all-api-calls]
//!     [--nvtx] [--memory] [--format perfetto,chrome]
//! ```
#![allow(clippy::print_stdout)]

use std::error::Error;

use prof::cuda::synthetic::Launch;
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
    /// Add device memory allocated and released under the layers, from a
    /// stream-ordered pool (XProf's Memory Profile shows GPU_0). Each allocation is a
    /// host event carrying its op, which XProf's overview also counts as a framework
    /// op on the host
    #[arg(long)]
    memory: bool,
}

fn main() -> Result<(), Box<dyn Error>> {
    let (
        args,
        Extra {
            all_api_calls,
            nvtx,
            memory,
        },
    ) = common::parse::<Extra>(
        "cuda_synthetic",
        "A GPU profile without a GPU: a host session plus synthetic CUPTI records.",
        12,
    );
    // The core session directly: the device records are added before writing.
    let mut space = host_session(args.steps)?;
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
            let at = line.timestamp_ns * 1000 + e.offset_ps();
            let window = ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64);
            Some(Launch {
                window,
                kernel,
                copy_kind,
            })
        })
        .collect();
    let mut trace = prof::cuda::synthetic::trace(line.id as u32, &launches);
    trace.all_api_calls = all_api_calls;
    if memory {
        // Activations: attn's 64 MiB, mlp's 16 MiB.
        let activations: Vec<u64> = launches
            .iter()
            .map(|l| if l.copy_kind == 1 { 64 << 20 } else { 16 << 20 })
            .collect();
        trace
            .activities
            .extend(profiler_cuda::synthetic::allocations(
                line.id as u32,
                &launches,
                &activations,
            ));
    }
    if nvtx {
        trace
            .activities
            .extend(prof::cuda::synthetic::nvtx(&launches));
    }
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
    if let Some(gpu) = prof::memory::gpu(0) {
        println!(
            "GPU_0 as the trace saw it: {} MiB in use, peak {} MiB",
            gpu.in_use >> 20,
            gpu.peak >> 20
        );
    }
    let summary =
        prof::ProfileExport::summary(&profile, &prof::summary::SummaryOptions::default().limit(5));
    if let Some(path) = &args.summary_json {
        std::fs::write(path, summary.to_json())?;
    }
    Ok(())
}

/// Steps of `forward` (a `block` holding `attn` then `mlp`) and `backward`.
fn host_session(steps: u32) -> Result<prof::xspace::XSpace, Box<dyn Error>> {
    prof::start_in_memory(ProfileOptions::default().device_tracer_level(0))?;
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        {
            let _f = trace!("forward");
            let _b = trace!("block");
            for layer in ["attn", "mlp"] {
                let _l = prof::Trace::new(layer);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let _b = trace!("backward");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(prof::stop()?.into_xspace())
}
