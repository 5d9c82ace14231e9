//! `diff`: two profiles compared. Synthetic training loops with seeded per-step jitter
//! (one op made slower, or nothing changed), a real GPU profile against itself, device
//! work grouped into steps, memory, and every bad input.

use std::path::{Path, PathBuf};

use profiler_analysis::diff::{
    self, DiffOptions, GateOptions, Method, OpKind, RenderOptions, SampleUnit, Side, Verdict,
};
use profiler_core::schema;
use profiler_core::xspace::{
    sort_events, Interner, PlaneBuilder, Stats, XEvent, XLine, XSpace, XStatValue,
};
use profiler_core::{ErrorKind, Profile};
use profiler_export::xplane;

const US: i64 = 1_000_000; // ps

/// splitmix64: a seeded, portable source of jitter.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `mean_us` with a multiplicative jitter of about `sd` (5% for 0.05).
    fn jitter(&mut self, mean_us: f64, sd: f64) -> i64 {
        (mean_us * (sd * self.normal()).exp()).round() as i64
    }
}

/// A host line being written: events placed one after another.
struct Loop {
    host: PlaneBuilder,
    events: Vec<XEvent>,
    rng: Rng,
    /// The op made slower, and by how much.
    slower: Option<(&'static str, f64)>,
}

impl Loop {
    fn new(seed: u64, slower: Option<(&'static str, f64)>) -> Loop {
        Loop {
            host: PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE),
            events: Vec::new(),
            rng: Rng(seed),
            slower,
        }
    }

    fn event(&mut self, name: &str, from_us: i64, to_us: i64, stats: Stats) -> &mut XEvent {
        let id = self.host.event_metadata_id(name);
        self.events
            .push(XEvent::new(id, from_us * US, (to_us - from_us) * US).with_stats(stats));
        self.events.last_mut().expect("pushed")
    }

    /// An op of about `mean_us` at `at`, jittered (and slowed if it is the one);
    /// returns where it ends.
    fn op(&mut self, name: &'static str, at: i64, mean_us: f64) -> i64 {
        let factor = match self.slower {
            Some((slow, by)) if slow == name => by,
            _ => 1.0,
        };
        let end = at + self.rng.jitter(mean_us * factor, 0.05);
        self.event(name, at, end, Stats::new());
        end
    }

    fn step_stats(&mut self, step: i64) -> Stats {
        Stats::from([
            self.host.stat(schema::STEP_NUM, XStatValue::Int64(step)),
            self.host.stat(schema::IS_ROOT, XStatValue::Int64(1)),
        ])
    }

    fn space(mut self, host: &str) -> XSpace {
        sort_events(&mut self.events);
        self.host.add_line(XLine {
            id: 1,
            name: "main".into(),
            timestamp_ns: 1000,
            events: self.events,
            ..XLine::default()
        });
        XSpace {
            planes: vec![self.host.build()],
            hostnames: vec![host.to_owned()],
            ..XSpace::default()
        }
    }
}

/// `steps` steps of a train_loop-shaped workload (load, forward with two matmuls,
/// loss, backward, optimizer; every eighth batch a cache miss), each op jittered by
/// about 5%, as `Train` steps with `step_num` (or without, when `marked` is false).
fn train_loop(seed: u64, steps: i64, slower: Option<(&'static str, f64)>, marked: bool) -> XSpace {
    let mut l = Loop::new(seed, slower);
    let mut t = 0;
    for step in 0..steps {
        let start = t;
        let miss = if step % 8 == 0 { 3.0 } else { 1.0 };
        let mut at = l.op("load_batch", start + 20, 2000.0 * miss);
        let forward = at;
        at = l.op("dense_1/MatMul", at + 50, 5000.0);
        at = l.op("dense_2/MatMul", at, 800.0);
        l.event("forward", forward, at, Stats::new());
        at = l.op("loss", at, 300.0);
        at = l.op("backward", at, 7000.0);
        at = l.op("optimizer", at, 1500.0);
        let end = at + 100;
        let stats = if marked {
            l.step_stats(step)
        } else {
            Stats::new()
        };
        l.event("Train", start, end, stats);
        t = end + 10;
    }
    l.space("trainer")
}

/// `steps` whole steps of [`train_loop`], then one more that the session's stop cut in
/// its forward pass: its `Train` root ends at the stop, marked `cut_by_session`, as the
/// recorder marks a step still open at the stop.
fn train_loop_cut_at_stop(seed: u64, steps: i64) -> XSpace {
    let mut l = Loop::new(seed, None);
    let mut t = 0;
    for step in 0..=steps {
        let start = t;
        let mut at = l.op("load_batch", start + 20, 2000.0);
        let forward = at;
        at = l.op("dense_1/MatMul", at + 50, 5000.0);
        let mut stats = l.step_stats(step);
        if step == steps {
            // The stop came here: forward and the step end with it.
            l.event("forward", forward, at, Stats::new());
            stats.push(l.host.stat(
                schema::CUT_BY_SESSION,
                XStatValue::Str(schema::CUT_AT_STOP.into()),
            ));
            l.event("Train", start, at, stats);
            break;
        }
        at = l.op("dense_2/MatMul", at, 800.0);
        l.event("forward", forward, at, Stats::new());
        at = l.op("loss", at, 300.0);
        at = l.op("backward", at, 7000.0);
        at = l.op("optimizer", at, 1500.0);
        let end = at + 100;
        l.event("Train", start, end, stats);
        t = end + 10;
    }
    l.space("trainer")
}

fn profile(space: XSpace) -> Side {
    Side::from(Profile::new(space))
}

fn host_ops(d: &diff::Diff) -> Vec<&diff::OpDiff> {
    d.ops.iter().filter(|o| o.kind == OpKind::Host).collect()
}

#[test]
fn a_slower_annotation_is_ranked_first_and_fails_the_gate() {
    let base = train_loop(1, 30, None, true);
    let new = train_loop(2, 30, Some(("dense_1/MatMul", 1.3)), true);
    let d = diff::diff(profile(base), profile(new)).expect("compared");

    assert_eq!(d.unit, SampleUnit::Step);
    assert_eq!(d.method, Method::MannWhitneyU);
    let first = &d.ops[0];
    assert_eq!(
        (first.kind, first.name.as_str()),
        (OpKind::Host, "dense_1/MatMul")
    );
    assert_eq!(first.time.verdict, Verdict::Increase, "{first:?}");
    let pct = first.time.change_pct.expect("a base time");
    assert!((25.0..35.0).contains(&pct), "{pct}");
    assert!(first.time.test.as_ref().expect("tested").p_adjusted < 1e-6);
    // Nothing else moved: self times keep the parent (forward) out of it.
    for op in &d.ops[1..] {
        assert!(!op.time.verdict.is_significant(), "{op:?}");
    }
    assert_eq!(d.step_time.verdict, Verdict::Increase, "{:?}", d.step_time);

    let gate = d.gate(10.0);
    assert!(!gate.passed);
    assert!(
        gate.failures.iter().any(|f| f.contains("dense_1/MatMul")),
        "{gate}"
    );
    // The step grew by about 8%: not over 10%, so only the op fails the gate.
    assert!(
        !gate.failures.iter().any(|f| f.contains("step time")),
        "{gate}"
    );
    assert!(d.gate(5.0).failures.iter().any(|f| f.contains("step time")));
    // 30% is within a 40% gate.
    assert!(d.gate(40.0).passed, "{}", d.gate(40.0));

    let text = d.table(&RenderOptions::default());
    let row = text
        .lines()
        .find(|l| l.contains("dense_1/MatMul"))
        .expect("a row");
    assert!(row.contains("▲ slower"), "{text}");
    assert!(
        text.find("dense_1/MatMul") < text.find("backward"),
        "{text}"
    );
}

#[test]
fn unchanged_work_shows_nothing_significant_and_passes_the_gate() {
    let d = diff::diff(
        profile(train_loop(3, 30, None, true)),
        profile(train_loop(4, 30, None, true)),
    )
    .expect("compared");
    assert!(!d.has_changes(), "{d}");
    assert_eq!(d.step_time.verdict, Verdict::Noise);
    assert_eq!(host_ops(&d).len(), 8);
    for op in &d.ops {
        assert_eq!(op.time.verdict, Verdict::Noise, "{op:?}");
    }
    assert!(d.gate(10.0).passed);

    // Over many pairs of unchanged runs, false alarms stay rare (Holm keeps the ops'
    // family at 5%, the step time is tested alone at 5%: 2 of these 60 pairs alarm,
    // and 11 when each op is tested alone), and the gate never fails.
    let mut alarms = 0;
    for seed in 0..60u64 {
        let d = diff::diff(
            profile(train_loop(100 + 2 * seed, 30, None, true)),
            profile(train_loop(101 + 2 * seed, 30, None, true)),
        )
        .expect("compared");
        alarms += usize::from(d.has_changes());
        assert!(d.gate(10.0).passed, "seed {seed}: {}", d.gate(10.0));
    }
    assert!(
        alarms <= 6,
        "{alarms} of 60 unchanged pairs showed a change"
    );
}

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

/// Steps that each allocate `mib` MiB for op "dense" from GPU_0_bfc and free it, as
/// TSL's MemoryAllocation/MemoryDeallocation events (allocator named by reference).
fn memory_loop(seed: u64, mib: f64, counter: bool) -> XSpace {
    let mut l = Loop::new(seed, None);
    let mut t = 0;
    let mut samples = Vec::new();
    for step in 0..12 {
        let bytes = mib * (1 << 20) as f64;
        let allocator = l.host.stat_metadata_id("GPU_0_bfc") as u64;
        let stats = |l: &mut Loop, in_use: f64| {
            Stats::from([
                l.host.stat("allocator_name", XStatValue::Ref(allocator)),
                l.host
                    .stat("bytes_allocated", XStatValue::Int64(in_use as i64)),
                l.host.stat("bytes_reserved", XStatValue::Int64(0)),
                l.host
                    .stat("allocation_bytes", XStatValue::Int64(bytes as i64)),
                l.host.stat("addr", XStatValue::Int64(0x7000_0000 + step)),
                l.host.stat("tf_op", XStatValue::Str("dense".into())),
            ])
        };
        let alloc = stats(&mut l, 4096.0 + bytes);
        l.event("MemoryAllocation", t + 10, t + 10, alloc);
        let free = stats(&mut l, 4096.0);
        l.event("MemoryDeallocation", t + 200, t + 200, free);
        let end = l.op("work", t + 20, 150.0).max(t + 300);
        let stats = l.step_stats(step);
        l.event("Train", t, end, stats);
        if counter {
            samples.push((t + 100, 1e6));
        }
        t = end + 10;
    }
    let mut space = l.space("memhost");
    if counter {
        let plane = &mut space.planes[0];
        let mut names = Interner::new(plane);
        let name = names.event(plane, schema::HOST_BYTES_IN_USE);
        let events = samples
            .into_iter()
            .map(|(at, v)| {
                let value = names.stat(plane, schema::COUNTER_VALUE, XStatValue::Double(v));
                XEvent::new(name, at * US, 0).with_stats(Stats::from([value]))
            })
            .collect();
        plane.lines.push(XLine {
            id: i64::from(schema::COUNTERS_LINE_ID),
            name: schema::COUNTERS_LINE.into(),
            timestamp_ns: 1000,
            events,
            ..XLine::default()
        });
    }
    space
}

#[test]
fn memory_peaks_are_compared_per_allocator_and_op() {
    let d = diff::diff(
        profile(memory_loop(7, 1.0, false)),
        profile(memory_loop(8, 2.0, true)),
    )
    .expect("compared");
    assert_eq!(d.memory.len(), 2, "{:?}", d.memory);
    let all = &d.memory[0];
    assert_eq!(
        (all.allocator.as_str(), all.op.as_deref()),
        ("GPU_0_bfc", None)
    );
    assert_eq!(all.peak.base, Some(4096.0 + 1048576.0));
    assert_eq!(all.peak.new, Some(4096.0 + 2097152.0));
    assert_eq!(all.per_step.verdict, Verdict::Increase);
    let dense = &d.memory[1];
    assert_eq!(dense.op.as_deref(), Some("dense"));
    assert_eq!(
        (dense.peak.base, dense.peak.new),
        (Some(1048576.0), Some(2097152.0))
    );
    assert_eq!(dense.per_step.delta, 1048576.0);
    assert_eq!(dense.per_step.verdict, Verdict::Increase);
    // Memory events are memory, not ops.
    assert!(d.op("MemoryAllocation").is_none());
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("host_bytes_in_use") && n.contains("new profile only")),
        "{:?}",
        d.notes
    );
    let text = d.table(&RenderOptions::default());
    assert!(
        text.contains("GPU_0_bfc") && text.contains("▲ more"),
        "{text}"
    );
}

#[test]
fn profiles_without_steps_are_compared_as_whole_sessions() {
    let d = diff::diff(
        profile(train_loop(9, 10, None, false)),
        profile(train_loop(10, 10, Some(("backward", 2.0)), false)),
    )
    .expect("compared");
    assert_eq!(d.unit, SampleUnit::Session);
    assert!(d.notes[0].contains("no steps in base"), "{:?}", d.notes);
    assert_eq!(d.ops[0].name, "backward");
    assert!(d.ops[0].time.change_pct.expect("pct") > 90.0);
    assert!(d.ops.iter().all(|o| o.time.verdict == Verdict::Untested));
    let gate = d.gate(10.0);
    assert!(!gate.passed);
    assert!(gate.failures[0].contains("cannot decide"), "{gate}");
    assert!(d.table(&RenderOptions::default()).contains("Session time"));
}

#[test]
fn a_step_cut_at_the_stop_is_left_out_and_said_so() {
    // The cut step (a third of a step, recorded) would be the shortest step by far.
    let d = diff::diff(
        profile(train_loop_cut_at_stop(21, 12)),
        profile(train_loop(22, 12, None, true)),
    )
    .expect("compared");
    assert_eq!(d.unit, SampleUnit::Step);
    assert_eq!((d.sides.base.cut_steps, d.sides.new.cut_steps), (1, 0));
    assert_eq!(
        (d.sides.base.samples, d.sides.new.samples),
        (12, 12),
        "{:?}",
        d.notes
    );
    // Its four events (Train, load_batch, forward, the matmul) are outside.
    assert_eq!(d.sides.base.outside_steps, 4, "{:?}", d.notes);
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("1 base and 0 new steps were cut")),
        "{:?}",
        d.notes
    );
    // Twelve whole steps of ~17 ms on each side: the 10th percentile is a whole step's.
    assert_eq!(d.step_time.dist.base.n, 12);
    assert!(
        d.step_time.dist.base.p10 > 12e6,
        "{:?}",
        d.step_time.dist.base
    );
    let json: serde_json::Value =
        serde_json::from_str(&d.to_json(&RenderOptions::default())).expect("JSON");
    assert_eq!(json["sides"]["base"]["cut_steps"], 1);
}

#[test]
fn too_few_steps_are_shown_but_not_tested() {
    let d = diff::diff(
        profile(train_loop(11, 3, None, true)),
        profile(train_loop(12, 3, Some(("loss", 3.0)), true)),
    )
    .expect("compared");
    assert_eq!(d.step_time.verdict, Verdict::TooFewSteps);
    assert_eq!(
        d.op("loss").expect("loss").time.verdict,
        Verdict::TooFewSteps
    );
    assert!(d.gate(10.0).failures[0].contains("at least 5 a side"));
}

fn write(space: &XSpace, path: &Path) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
    xplane::write(path, space).expect("written");
}

#[test]
fn different_hosts_are_refused_naming_the_files_unless_one_is_chosen() {
    let dir = tempfile::tempdir().expect("tmp");
    let run = |side: &str, host: &str| dir.path().join(side).join(format!("{host}.xplane.pb"));
    for (side, host, seed) in [
        ("base", "a", 1),
        ("base", "b", 2),
        ("new", "a", 3),
        ("new", "c", 4),
    ] {
        write(&train_loop(seed, 8, None, true), &run(side, host));
    }
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    let e = diff::diff(&base, &new).expect_err("hosts differ");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let msg = e.to_string();
    assert!(msg.contains("different hosts"), "{msg}");
    assert!(msg.contains("a, b") && msg.contains("a, c"), "{msg}");
    assert!(
        msg.contains(&run("base", "b").display().to_string()),
        "{msg}"
    );

    let one = diff::diff_with(&base, &new, &DiffOptions::default().host("a")).expect("host a");
    assert_eq!(one.sides.base.hosts, ["a"]);
    assert_eq!(
        one.sides.new.sources,
        [run("new", "a").display().to_string()]
    );
    let e = diff::diff_with(&base, &new, &DiffOptions::default().host("z")).expect_err("no z");
    assert!(
        e.to_string()
            .contains("no profile of host \"z\" (its hosts: a, b)"),
        "{e}"
    );

    // One host a side, named differently: compared, and said.
    let d = diff::diff(run("base", "b"), run("new", "c")).expect("one host each");
    assert!(
        d.notes.iter().any(|n| n.contains("compared as one host")),
        "{:?}",
        d.notes
    );
}

#[test]
fn unreadable_inputs_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let good = dir.path().join("good.xplane.pb");
    write(&train_loop(1, 6, None, true), &good);

    let missing = dir.path().join("missing.xplane.pb");
    let e = diff::diff(&missing, &good).expect_err("missing");
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(e.path(), Some(missing.as_path()));

    let garbage = dir.path().join("garbage.xplane.pb");
    std::fs::write(&garbage, b"\x0a\xff\xff\xff\xff\x0f not a profile").expect("write");
    let e = diff::diff(&good, &garbage).expect_err("garbage");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string().contains("garbage.xplane.pb is not an XSpace"),
        "{e}"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    let e = diff::diff(&good, &empty).expect_err("nothing there");
    assert!(e.to_string().contains("no .xplane.pb file under"), "{e}");

    let e = diff::diff_with(&good, &good, &DiffOptions::default().alpha(2.0)).expect_err("alpha");
    assert!(e.to_string().contains("alpha 2"), "{e}");
}

#[test]
fn a_logdir_gives_its_newest_run_or_pools_them_all() {
    let dir = tempfile::tempdir().expect("tmp");
    let side = |name: &str, slower| {
        let logdir = dir.path().join(name);
        for (i, run) in [
            "2026_01_01_00_00_00",
            "2026_01_01_00_00_01",
            "2026_01_01_00_00_02",
        ]
        .iter()
        .enumerate()
        {
            let path = logdir
                .join("plugins/profile")
                .join(run)
                .join("trainer.xplane.pb");
            let seed = if name == "base" { 20 + i } else { 30 + i } as u64;
            write(&train_loop(seed, 12, slower, true), &path);
        }
        logdir
    };
    let base = side("base", None);
    let new = side("new", Some(("backward", 1.3)));

    let newest = diff::diff(&base, &new).expect("compared");
    assert!(newest.sides.base.sources[0].contains("2026_01_01_00_00_02"));
    assert!(
        newest.notes.iter().any(|n| n.contains("holds 3 runs")),
        "{:?}",
        newest.notes
    );
    assert_eq!(newest.method, Method::MannWhitneyU);

    // Three runs a side: the runs are the samples, and a real change still shows.
    let pooled = diff::diff_with(&base, &new, &DiffOptions::default().all_runs(true)).expect("ok");
    assert_eq!((pooled.sides.base.runs, pooled.sides.new.runs), (3, 3));
    assert_eq!(pooled.sides.base.samples, 36);
    assert_eq!(pooled.method, Method::WelchT);
    let backward = pooled.op("backward").expect("backward");
    assert_eq!(backward.time.verdict, Verdict::Increase, "{backward:?}");
    assert_eq!(
        backward.time.test.as_ref().expect("tested").method,
        Method::WelchT
    );
    assert!(!pooled.gate(10.0).passed);
}

#[test]
fn the_renderings_hold_the_rows_asked_for() {
    let d = diff::diff(
        profile(train_loop(13, 20, None, true)),
        profile(train_loop(14, 20, Some(("optimizer", 1.5)), true)),
    )
    .expect("compared");
    let json: serde_json::Value =
        serde_json::from_str(&d.to_json(&RenderOptions::default())).expect("JSON");
    assert_eq!(json["unit"], "step");
    assert_eq!(json["ops"][0]["name"], "optimizer");
    assert_eq!(json["ops"][0]["time_per_step_ns"]["verdict"], "increase");
    assert_eq!(json["ops"].as_array().expect("rows").len(), 8);
    assert_eq!(json["method"]["test"], "mann-whitney-u");

    let top = RenderOptions::default().top(2);
    let json: serde_json::Value = serde_json::from_str(&d.to_json(&top)).expect("JSON");
    assert_eq!(
        (
            json["ops"].as_array().expect("rows").len(),
            json["ops_not_shown"].as_u64()
        ),
        (2, Some(6))
    );
    assert!(d.table(&top).contains("(6 more rows not shown)"));

    // Changes under 20%: only the optimizer is left.
    let big = RenderOptions::default().min_change_pct(20.0);
    let md = d.to_markdown(&big);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| host")).collect();
    assert_eq!(rows.len(), 1, "{md}");
    assert!(
        rows[0].contains("| optimizer |") && rows[0].contains("▲ slower"),
        "{md}"
    );
    assert!(md.contains("| Kind | Op |"), "{md}");
    // The count of rows left out is not read as a row of the table.
    let md = d.to_markdown(&top);
    assert!(md.contains("|\n\n(6 more rows not shown)"), "{md}");
}

#[test]
fn markdown_cells_cannot_break_the_table() {
    let mut l = Loop::new(1, None);
    for step in 0..6 {
        let stats = l.step_stats(step);
        l.event("Train", step * 100, step * 100 + 90, stats);
        l.event("a|b *c*", step * 100 + 10, step * 100 + 20, Stats::new());
    }
    let space = l.space("h");
    let d = diff::diff(profile(space.clone()), profile(space)).expect("compared");
    let md = d.to_markdown(&RenderOptions::default());
    let row = md.lines().find(|l| l.contains("a\\|b")).expect("the row");
    assert!(row.contains("a\\|b \\*c\\*"), "{row}");
    assert_eq!(row.matches(" | ").count(), 8, "{row}");
}

#[test]
fn the_gate_floor_leaves_out_ops_too_small_to_matter() {
    // loss, 300 µs of a step of about 17 ms, made 40% slower.
    let base = train_loop(15, 30, None, true);
    let new = train_loop(16, 30, Some(("loss", 1.4)), true);
    let d = diff::diff(profile(base), profile(new)).expect("compared");
    let loss = d.op("loss").expect("loss");
    assert_eq!(loss.time.verdict, Verdict::Increase);
    // 120 µs more a step: under 1% of the step, so the default gate passes...
    assert!(d.gate(10.0).passed, "{}", d.gate(10.0));
    // ... and with no floor it fails on loss.
    let strict = d.gate_with(&GateOptions::new(10.0).min_step_share_pct(0.0));
    assert!(
        !strict.passed && strict.failures[0].contains("\"loss\""),
        "{strict}"
    );
}
