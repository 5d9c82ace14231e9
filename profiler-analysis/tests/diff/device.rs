//! Device work: kernels and copies joined to the step that launched them, and real GPU
//! profiles (prof's of candle, JAX's own) compared with themselves.

use std::path::{Path, PathBuf};

use profiler_analysis::diff::{self, OpKind, SampleUnit, Verdict};
use profiler_core::schema;
use profiler_core::xspace::{sort_events, PlaneBuilder, Stats, XEvent, XLine, XSpace, XStatValue};

use crate::workloads::{host_ops, profile, Loop, US};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/gpu-h200")
        .join(name)
}

/// prof's profile of candle on an H200 (10 steps, 10,070 kernels): every row equal.
#[test]
fn a_real_gpu_profile_against_itself_shows_no_change() {
    let path = fixture("prof_candle_cuda_10steps.xplane.pb");
    let d = diff::diff(&path, &path).expect("compared");
    assert_eq!((d.unit, d.step_time.dist.base.n), (SampleUnit::Step, 10));
    assert_eq!(d.step_time.delta, 0.0);
    assert_eq!(d.step_time.verdict, Verdict::Noise);
    assert!(!d.has_changes());
    for op in &d.ops {
        assert_eq!(op.time.delta, 0.0, "{op:?}");
        assert_eq!(op.time.verdict, Verdict::Noise, "{op:?}");
    }
    let kinds = |k| d.ops.iter().filter(|o| o.kind == k).count();
    assert_eq!(
        (
            kinds(OpKind::Host),
            kinds(OpKind::DeviceOp),
            kinds(OpKind::Kernel)
        ),
        (23, 15, 42)
    );
    // Every device activity joined its step (prof's host_step_num).
    let on_device: f64 = d
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Kernel)
        .map(|o| o.count_per_step.base * 10.0)
        .sum();
    assert_eq!(on_device.round(), 14930.0);
    assert_eq!(d.sides.base.outside_steps, 0);
    let backward = d
        .op_of(OpKind::DeviceOp, "backward:backward")
        .expect("candle's backward launches kernels");
    assert!(backward.time.value().base > 1e6, "{backward:?}");
    assert_eq!(d.memory.len(), 1);
    assert_eq!(d.memory[0].peak.base, d.memory[0].peak.new);
    assert!(d.gate(10.0).passed);
}

/// JAX 0.11.2's own profile of a jitted MLP on the H200: its steps (`train`, `_r`),
/// its kernels joined to them through the launches' correlation ids, and TSL's memory
/// events of its two allocators, read as they are written.
#[test]
fn a_jax_profile_is_read_as_jax_wrote_it() {
    let path = fixture("jax_0.11.2_mlp_20steps.xplane.pb");
    let d = diff::diff(&path, &path).expect("compared");
    assert_eq!((d.unit, d.step_time.dist.base.n), (SampleUnit::Step, 20));
    assert!(!d.has_changes());
    let kernels: Vec<_> = d.ops.iter().filter(|o| o.kind == OpKind::Kernel).collect();
    assert_eq!(kernels.len(), 13);
    // 12 launches a step (240 kernels) and 2 copies a step, every one in its step.
    let per_step: f64 = kernels.iter().map(|o| o.count_per_step.base).sum();
    assert_eq!(per_step, 14.0);
    let gemm = d
        .op_of(OpKind::Kernel, "gemm_fusion_dot")
        .expect("a matmul");
    assert_eq!(gemm.steps_with_op.base, 20);
    let allocators: Vec<(&str, Option<f64>)> = d
        .memory
        .iter()
        .map(|m| (m.allocator.as_str(), m.peak.base))
        .collect();
    assert_eq!(
        allocators,
        [
            ("GPU_0_bfc", Some(20_972_544.0)),
            ("xla_gpu_host_bfc", Some(256.0))
        ]
    );
    assert!(d.gate(10.0).passed);
}

/// Host steps launching one kernel and one copy each, which run after the step ended
/// (asynchronously): the kernel found by its launch's correlation id, the copy by its
/// host_step_num.
fn gpu_loop(seed: u64, gemm_us: f64) -> XSpace {
    let mut l = Loop::new(seed, None);
    let mut gpu = PlaneBuilder::new(1, "/device:GPU:0");
    let mut kernels = Vec::new();
    let mut t = 0;
    for step in 0..12 {
        let start = t;
        let launch = start + 100;
        let corr = l
            .host
            .stat(schema::CORRELATION_ID, XStatValue::Uint64(step as u64 + 1));
        l.event("cuLaunchKernel", launch, launch + 5, Stats::from([corr]));
        let end = start + 400;
        let stats = l.step_stats(step);
        l.event("Train", start, end, stats);
        l.event("forward", start + 50, start + 300, Stats::new());
        // The kernel runs after its step ended: by time it would join the next one.
        let at = end + 50;
        let dur = l.rng.jitter(gemm_us, 0.03);
        let id = gpu.event_metadata_id("gemm");
        let stats = Stats::from([
            gpu.stat(schema::CORRELATION_ID, XStatValue::Uint64(step as u64 + 1)),
            gpu.stat("tf_op", XStatValue::Str("forward:forward".into())),
        ]);
        kernels.push(XEvent::new(id, at * US, dur * US).with_stats(stats));
        let id = gpu.event_metadata_id("MemcpyHToD");
        let stats = Stats::from([gpu.stat("host_step_num", XStatValue::Int64(step))]);
        kernels.push(XEvent::new(id, (at + dur + 10) * US, 20 * US).with_stats(stats));
        t = at + dur + 100;
    }
    sort_events(&mut kernels);
    gpu.add_line(XLine {
        id: 7,
        name: "Stream #7(Kernel)".into(),
        timestamp_ns: 1000,
        events: kernels,
        ..XLine::default()
    });
    let mut space = l.space("gpuhost");
    space.planes.push(gpu.build());
    space
}

#[test]
fn device_work_joins_the_step_that_launched_it() {
    let d = diff::diff(profile(gpu_loop(5, 300.0)), profile(gpu_loop(6, 450.0))).expect("ok");
    assert_eq!(d.sides.base.outside_steps, 0, "{:?}", d.notes);
    assert_eq!(d.sides.new.outside_steps, 0, "{:?}", d.notes);
    let gemm = d.op_of(OpKind::Kernel, "gemm").expect("the kernel");
    assert_eq!(gemm.count_per_step.base, 1.0);
    assert_eq!(gemm.steps_with_op.new, 12);
    assert_eq!(gemm.time.verdict, Verdict::Increase, "{gemm:?}");
    let op = d
        .op_of(OpKind::DeviceOp, "forward:forward")
        .expect("its op");
    assert_eq!(op.time.verdict, Verdict::Increase, "{op:?}");
    let copy = d.op_of(OpKind::Kernel, "MemcpyHToD").expect("the copy");
    assert_eq!(
        (copy.count_per_step.base, copy.time.verdict),
        (1.0, Verdict::Noise)
    );
    // The host annotations did not change.
    assert!(host_ops(&d)
        .iter()
        .all(|o| !o.time.verdict.is_significant()));
}
