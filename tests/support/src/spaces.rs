//! Hand-built spaces whose contents are known: [`space`], every shape the exporters
//! handle (also a seed of the fuzzers, `fuzz/src/make_seeds.rs`), and two of a given
//! size for the memory and speed checks, [`large_space`] and [`staircase`].

use profiler_core::schema;
use profiler_core::xspace::{sort_events, PlaneBuilder, Stats, XEvent, XLine, XSpace, XStatValue};

/// Wall-clock start of the fixture: 2023-11-14T22:13:20Z.
pub const START_UNIX_NS: u64 = 1_700_000_000_000_000_000;

/// Slices and instants in [`space`] (not counting counter samples).
pub const SLICES: u64 = 12;
/// Sum of their durations, in nanoseconds.
pub const DURATION_NS: i64 = 1000 + 300 + 500 + 100 + 50 + 200 + 100 + 100 + 80 + 100;
/// Counter samples in [`space`].
pub const COUNTER_SAMPLES: u64 = 3;
/// Flows with both ends in [`space`]: one producer/consumer link, one launch → kernel.
pub const FLOWS: u64 = 2;

fn ev(b: &mut PlaneBuilder, name: &str, start_ns: i64, dur_ns: i64) -> XEvent {
    XEvent::new(b.event_metadata_id(name), start_ns * 1000, dur_ns * 1000)
}

fn line(id: i64, name: &str, timestamp_ns: i64, mut events: Vec<XEvent>) -> XLine {
    sort_events(&mut events);
    XLine {
        id,
        name: name.into(),
        timestamp_ns,
        events,
        ..XLine::default()
    }
}

/// A host plane (a step with children, a marker with a bytes field, a launch, a
/// cross-thread link, a partially overlapping pair, the host memory counter), a GPU
/// plane with the launched kernel, and the task environment with the wall-clock start.
pub fn space() -> XSpace {
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let mut step = ev(&mut host, "Train", 0, 1000);
    step.stats
        .push(host.stat(schema::STEP_NUM, XStatValue::Int64(3)));
    step.stats
        .push(host.stat(schema::IS_ROOT, XStatValue::Int64(1)));
    let mut fwd = ev(&mut host, "forward", 100, 300);
    fwd.stats.push(host.stat("batch", XStatValue::Int64(32)));
    fwd.stats.push(host.stat("lr", XStatValue::Double(0.5)));
    let mut bwd = ev(&mut host, "backward", 400, 500);
    bwd.stats
        .push(host.stat("phase", XStatValue::Str("grad \"all\"\n".into())));
    bwd.stats
        .push(host.stat("bytes", XStatValue::Uint64(u64::MAX)));
    let mut launch = ev(&mut host, "cuLaunchKernel", 450, 100);
    launch
        .stats
        .push(host.stat(schema::CORRELATION_ID, XStatValue::Uint64(7)));
    let mut send = ev(&mut host, "enqueue", 600, 50);
    send.stats
        .push(host.stat(schema::PRODUCER_TYPE, XStatValue::Int64(0)));
    send.stats
        .push(host.stat(schema::PRODUCER_ID, XStatValue::Uint64(42)));
    let mut marker = ev(&mut host, "checkpoint", 950, 0);
    marker
        .stats
        .push(host.stat("blob", XStatValue::Bytes(vec![0, 255])));
    let main = line(1, "main", 1000, vec![step, fwd, bwd, launch, send, marker]);

    let mut recv = ev(&mut host, "dequeue", 0, 200);
    recv.stats
        .push(host.stat(schema::CONSUMER_TYPE, XStatValue::Int64(0)));
    recv.stats
        .push(host.stat(schema::CONSUMER_ID, XStatValue::Uint64(42)));
    // A producer whose consumer is not in the profile: no flow.
    let mut orphan = ev(&mut host, "orphan", 300, 100);
    orphan
        .stats
        .push(host.stat(schema::PRODUCER_TYPE, XStatValue::Int64(0)));
    orphan
        .stats
        .push(host.stat(schema::PRODUCER_ID, XStatValue::Uint64(99)));
    let worker = line(2, "worker", 1700, vec![recv, orphan]);

    // Partially overlapping (as some producers write): 0..100 and 50..130.
    let a = ev(&mut host, "overlap_a", 0, 100);
    let b = ev(&mut host, "overlap_b", 50, 80);
    let overlap = line(3, "io", 2000, vec![a, b]);

    let counter = |b: &mut PlaneBuilder, at: i64, v: f64| {
        let mut e = ev(b, schema::HOST_BYTES_IN_USE, at, 0);
        e.stats
            .push(b.stat(schema::COUNTER_VALUE, XStatValue::Double(v)));
        e
    };
    let samples = vec![
        counter(&mut host, 0, 1.0),
        counter(&mut host, 500, 3.0),
        counter(&mut host, 900, 2.0),
    ];
    let counters = line(
        i64::from(schema::COUNTERS_LINE_ID),
        schema::COUNTERS_LINE,
        1000,
        samples,
    );
    host.add_line(main);
    host.add_line(worker);
    host.add_line(overlap);
    host.add_line(counters);

    let mut gpu = PlaneBuilder::new(1, "/device:GPU:0");
    let mut kernel = ev(&mut gpu, "gemm_kernel", 0, 100);
    kernel
        .stats
        .push(gpu.stat(schema::CORRELATION_ID, XStatValue::Uint64(7)));
    kernel.stats.push(gpu.stat(
        "kernel_details",
        XStatValue::Str("regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1".into()),
    ));
    let sync = ev(&mut gpu, "stream_sync", 150, 0);
    gpu.add_line(XLine {
        display_name: "Stream #7(Kernel)".into(),
        ..line(7, "7", 1500, vec![kernel, sync])
    });

    let mut env = PlaneBuilder::new(schema::TASK_ENV_PLANE_ID, schema::TASK_ENV_PLANE);
    env.add_plane_stat(
        schema::PROFILE_START_TIME,
        XStatValue::Uint64(START_UNIX_NS),
    );
    env.add_plane_stat(
        schema::PROFILE_STOP_TIME,
        XStatValue::Uint64(START_UNIX_NS + 3000),
    );
    XSpace {
        planes: vec![host.build(), gpu.build(), env.build()],
        hostnames: vec!["worker:0".into()],
        ..XSpace::default()
    }
}

/// A space of `n` events on `threads` threads: steps of 10 nested events with stats.
pub fn large_space(n: usize, threads: usize) -> XSpace {
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let names: Vec<i64> = ["Train", "forward", "matmul", "backward", "optimizer"]
        .iter()
        .map(|n| host.event_metadata_id(n))
        .collect();
    let step_num = host.stat_metadata_id(schema::STEP_NUM);
    let batch = host.stat_metadata_id("batch");
    let per_thread = n / threads;
    for t in 0..threads {
        let mut events = Vec::with_capacity(per_thread);
        for i in 0..per_thread {
            let step = (i / 10) as i64;
            let k = i % 10;
            let (name, start, dur, stat) = match k {
                0 => (0, 0, 10_000, Some((step_num, step))),
                1..=4 => (1 + (k % 2), 1000 * k as i64, 900, Some((batch, 32))),
                _ => (3 + (k % 2), 1000 * k as i64, 900, None),
            };
            events.push(
                XEvent::new(names[name], (step * 10_000 + start) * 1000, dur * 1000).with_stats(
                    stat.map(|(id, v)| {
                        Stats::from([profiler_core::xspace::XStat {
                            metadata_id: id,
                            value: Some(XStatValue::Int64(v)),
                        }])
                    })
                    .unwrap_or_default(),
                ),
            );
        }
        host.add_line(XLine {
            id: t as i64 + 1,
            name: format!("thread {t}"),
            events,
            ..XLine::default()
        });
    }
    let mut env = PlaneBuilder::new(schema::TASK_ENV_PLANE_ID, schema::TASK_ENV_PLANE);
    env.add_plane_stat(
        schema::PROFILE_START_TIME,
        XStatValue::Uint64(START_UNIX_NS),
    );
    XSpace {
        planes: vec![host.build(), env.build()],
        hostnames: vec!["bench".into()],
        ..XSpace::default()
    }
}

/// `n` slices on one line that overlap without nesting: slice `i` covers
/// `[i µs, (i + n) µs)`, so each starts before the previous one ends and ends after
/// it, and needs a lane of its own (the worst case for the walk's lanes).
pub fn staircase(n: i64) -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let name = plane.event_metadata_id("step");
    let events = (0..n)
        .map(|i| XEvent::new(name, i * 1_000_000, n * 1_000_000))
        .collect();
    plane.add_line(XLine {
        id: 1,
        name: "overlapping".into(),
        events,
        ..XLine::default()
    });
    XSpace {
        planes: vec![plane.build()],
        hostnames: vec!["staircase".into()],
        ..XSpace::default()
    }
}
