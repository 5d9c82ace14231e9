//! A GPU profile without a GPU: a real prof session on the host, plus synthetic CUPTI
//! records (kernels, copies, launches with their external correlation) put through
//! the same conversion the live tracer uses, written as a TensorBoard/XProf logdir.
//! CI has xprof's `kernel_stats` and `trace_viewer` read it.
//!
//! ```text
//! cargo run --features cuda --example cuda_synthetic -- [--logdir DIR] [--steps N]
//! ```
#![allow(clippy::print_stdout)]

use std::error::Error;

use prof::{schema, trace, ProfileOptions};

mod common;

fn main() -> Result<(), Box<dyn Error>> {
    let (args, common::NoExtra {}) = common::parse(
        "cuda_synthetic",
        "A GPU profile without a GPU: a host session plus synthetic CUPTI records.",
        12,
    );
    // The core session directly: the device records are added before writing.
    profiler_core_session(args.steps)
        .and_then(|mut space| {
            let host = space.plane(schema::HOST_PLANE).ok_or("no host plane")?;
            let forward = host
                .event_metadata
                .values()
                .find(|m| m.name == "forward")
                .map(|m| m.id)
                .ok_or("no forward events")?;
            let line = host
                .lines
                .iter()
                .find(|l| l.events.iter().any(|e| e.metadata_id == forward))
                .ok_or("no line with forward")?;
            let windows: Vec<(u64, u64)> = line
                .events
                .iter()
                .filter(|e| e.metadata_id == forward)
                .map(|e| {
                    let at = line.timestamp_ns * 1000 + e.offset_ps();
                    ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64)
                })
                .collect();
            let trace = profiler_cuda::synthetic::launches(
                line.id as u32,
                &windows,
                &["volta_sgemm_128x64_nn", "softmax_warp_forward"],
            );
            profiler_cuda::convert::add_to_space(&trace, &mut space, &Some);
            Ok(space)
        })
        .and_then(|space| {
            let profile = prof::export::logdir::write_logdir_formats(
                &args.logdir,
                prof::Profile::new(space),
                &[],
            )?;
            println!("wrote {}", profile.files()[0].display());
            Ok(())
        })
}

fn profiler_core_session(steps: u32) -> Result<prof::xspace::XSpace, Box<dyn Error>> {
    profiler_core::session::start(ProfileOptions::default().device_tracer_level(0), None)?;
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        {
            let _f = trace!("forward");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let _b = trace!("backward");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(profiler_core::session::stop()?.into_xspace())
}
