//! Summary tables checked against a hand-built profile whose numbers are known.

use profiler_analysis::summary::{GroupBy, SortBy, SummaryOptions};
use profiler_analysis::ProfileAnalysis;
use profiler_core::schema;
use profiler_core::xspace::{PlaneBuilder, Stats, XEvent, XLine, XSpace, XStatValue};
use profiler_core::Profile;

const US: i64 = 1_000_000; // ps

/// Thread "main", from 1000 ns:
///   Train#0 [0, 100) µs: forward [10, 50) { matmul [20, 30), matmul [35, 45) }, backward [60, 90)
///   Train#1 [100, 200) µs: forward [110, 150) { matmul [120, 140) }
/// Thread "loader": load [5, 105) — crosses the step boundary, starts in step 0.
/// Counters: host_bytes_in_use 10 @ 50 µs, 30 @ 90 µs, 20 @ 150 µs.
fn hand_built() -> Profile {
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let ev = |host: &mut PlaneBuilder, name: &str, from: i64, to: i64, step: Option<i64>| {
        let mut stats = Stats::new();
        if let Some(n) = step {
            stats.push(host.stat(schema::STEP_NUM, XStatValue::Int64(n)));
            stats.push(host.stat(schema::IS_ROOT, XStatValue::Int64(1)));
        }
        XEvent::new(host.event_metadata_id(name), from * US, (to - from) * US).with_stats(stats)
    };
    let main = vec![
        ev(&mut host, "Train", 0, 100, Some(0)),
        ev(&mut host, "forward", 10, 50, None),
        ev(&mut host, "matmul", 20, 30, None),
        ev(&mut host, "matmul", 35, 45, None),
        ev(&mut host, "backward", 60, 90, None),
        ev(&mut host, "Train", 100, 200, Some(1)),
        ev(&mut host, "forward", 110, 150, None),
        ev(&mut host, "matmul", 120, 140, None),
    ];
    let loader = vec![ev(&mut host, "load", 5, 105, None)];
    let value = host.stat_metadata_id(schema::COUNTER_VALUE);
    let bytes = host.event_metadata_id(schema::HOST_BYTES_IN_USE);
    let samples = [(50, 10.0), (90, 30.0), (150, 20.0)]
        .into_iter()
        .map(|(at, v)| {
            XEvent::new(bytes, at * US, 0).with_stats(Stats::from([profiler_core::xspace::XStat {
                metadata_id: value,
                value: Some(XStatValue::Double(v)),
            }]))
        })
        .collect();
    for (id, name, events) in [
        (1, "main", main),
        (2, "loader", loader),
        (
            i64::from(schema::COUNTERS_LINE_ID),
            schema::COUNTERS_LINE,
            samples,
        ),
    ] {
        host.add_line(XLine {
            id,
            name: name.to_owned(),
            timestamp_ns: 1000,
            events,
            ..XLine::default()
        });
    }
    Profile::new(XSpace {
        planes: vec![host.build()],
        ..XSpace::default()
    })
}

#[test]
fn totals_self_times_and_extremes_over_the_run() {
    let profile = hand_built();
    let summary = profile.summary(&SummaryOptions::default());
    let row = |name| summary.row(name).expect(name).clone();

    let train = row("Train");
    assert_eq!((train.count, train.total_ns), (2, 200_000));
    // Step 0: 100 - forward 40 - backward 30; step 1: 100 - forward 40.
    assert_eq!(train.self_ns, 30_000 + 60_000);
    assert_eq!((train.min_ns, train.max_ns), (100_000, 100_000));
    assert_eq!(train.share, 1.0);

    let forward = row("forward");
    assert_eq!((forward.count, forward.total_ns), (2, 80_000));
    assert_eq!(forward.self_ns, 20_000 + 20_000);

    let matmul = row("matmul");
    assert_eq!(
        (matmul.count, matmul.total_ns, matmul.self_ns),
        (3, 40_000, 40_000)
    );
    assert_eq!((matmul.min_ns, matmul.max_ns), (10_000, 20_000));
    assert!((matmul.mean_ns() - 40_000.0 / 3.0).abs() < 1e-9);
    assert_eq!(matmul.share, 0.2);

    // The loader's line does not nest into the main thread's events.
    assert_eq!(row("load").self_ns, 100_000);
    assert_eq!(summary.share_of(), "step");
    // Counter samples are not events.
    assert!(summary.row(schema::HOST_BYTES_IN_USE).is_none());
    // Sorted by total, descending, then by name.
    let names: Vec<_> = summary.rows().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["Train", "load", "forward", "matmul", "backward"]);
}

#[test]
fn sorting_and_limits() {
    let profile = hand_built();
    let by = |column| {
        profile
            .summary(&SummaryOptions::default().sort_by(column).limit(2))
            .rows()
            .iter()
            .map(|r| r.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(by(SortBy::Count), ["matmul", "Train"]);
    assert_eq!(by(SortBy::Name), ["Train", "backward"]);
    assert_eq!(by(SortBy::SelfTime), ["load", "Train"]);
    assert_eq!(by(SortBy::Min), ["Train", "load"]);
    assert_eq!(by(SortBy::Mean), ["Train", "load"]);
    assert_eq!("self".parse::<SortBy>().expect("column"), SortBy::SelfTime);
    let err = "wall".parse::<SortBy>().expect_err("no such column");
    assert!(err.to_string().contains("\"wall\""), "{err}");
}

#[test]
fn grouped_per_step_with_peak_memory() {
    let profile = hand_built();
    let summary = profile.summary(&SummaryOptions::default().group_by(GroupBy::Step));
    let find = |step, name: &str| {
        summary
            .rows()
            .iter()
            .find(|r| r.step == step && r.name == name)
            .unwrap_or_else(|| panic!("{step:?} {name}"))
    };
    assert_eq!(find(Some(0), "matmul").count, 2);
    assert_eq!(find(Some(1), "matmul").count, 1);
    assert_eq!(find(Some(1), "matmul").share, 0.2);
    assert_eq!(find(Some(0), "load").total_ns, 100_000);
    assert_eq!(find(Some(0), "backward").share, 0.3);
    // Groups come in step order.
    let steps: Vec<_> = summary.rows().iter().map(|r| r.step).collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");

    let peaks: Vec<_> = summary
        .steps()
        .iter()
        .map(|s| (s.step, s.duration_ns, s.peak_host_bytes))
        .collect();
    assert_eq!(peaks, [(0, 100_000, Some(30.0)), (1, 100_000, Some(20.0))]);
    let table = summary.table();
    assert!(table.contains("Peak host memory"), "{table}");
    assert!(table.contains("% step"), "{table}");

    let limited = profile.summary(&SummaryOptions::default().group_by(GroupBy::Step).limit(1));
    let firsts: Vec<_> = limited
        .rows()
        .iter()
        .map(|r| (r.step, r.name.as_str()))
        .collect();
    assert_eq!(firsts, [(Some(0), "Train"), (Some(1), "Train")]);
}

#[test]
fn table_json_and_csv_carry_the_same_numbers() {
    let profile = hand_built();
    let summary = profile.summary(&SummaryOptions::default().sort_by(SortBy::Name));
    let table = summary.to_string();
    let matmul_line = table
        .lines()
        .find(|l| l.contains("matmul"))
        .expect("matmul row");
    for cell in [
        "3",
        "40.000 µs",
        "10.000 µs",
        "20.000 µs",
        "13.333 µs",
        "20.0%",
    ] {
        assert!(matmul_line.contains(cell), "{cell} in {matmul_line}");
    }
    // Aligned: every row of the event table (before the steps' table) has one width.
    let events_table = table
        .split_inclusive('\n')
        .take_while(|l| !l.starts_with('└'));
    let widths: Vec<_> = events_table.map(|l| l.trim_end().chars().count()).collect();
    assert!(widths.len() >= 8, "{table}");
    assert!(widths.windows(2).all(|w| w[0] == w[1]), "{table}");

    let json: serde_json::Value = serde_json::from_str(&summary.to_json()).expect("json");
    let rows = json["rows"].as_array().expect("rows");
    let matmul = rows.iter().find(|r| r["name"] == "matmul").expect("matmul");
    assert_eq!(matmul["count"], 3);
    assert_eq!(matmul["self_ns"], 40_000);
    assert_eq!(json["share_of"], "step");

    let csv = summary.to_csv();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("step,name,count,cut,total_ns,self_ns,min_ns,max_ns,mean_ns,share")
    );
    assert!(csv
        .lines()
        .any(|l| l.starts_with(",matmul,3,0,40000,40000,10000,20000,")));
    assert_eq!(csv.lines().count(), 1 + summary.rows().len());
}

#[test]
fn without_steps_shares_are_of_the_run() {
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let a = host.event_metadata_id("a");
    let events = [(0, 10), (30, 40)]
        .into_iter()
        .map(|(from, to)| XEvent::new(a, from * US, (to - from) * US))
        .collect();
    host.add_line(XLine {
        id: 1,
        name: "t".into(),
        events,
        ..XLine::default()
    });
    let profile = Profile::new(XSpace {
        planes: vec![host.build()],
        ..XSpace::default()
    });
    let summary = profile.summary(&SummaryOptions::default());
    assert_eq!(summary.share_of(), "run");
    assert_eq!(summary.row("a").expect("a").share, 0.5);
    assert!(summary.steps().is_empty());
}

/// Memory events on two threads of the host plane, as a tracking allocator and the GPU
/// tracer write them (times in µs from 1000 ns; steps Train#0 [0, 100), Train#1
/// [100, 200) on "main"):
///   host  @ 20: snapshot, 1000 in use                 (forward)
///   GPU_0 @ 30: +600 at 0xa (forward/attn), 600 in use, 100 reserved
///   GPU_0 @ 40: +300 at 0xb (forward/mlp),  900 in use, 100 reserved → peak 1000
///   GPU_0 @ 60: -600 at 0xa,                 300 in use,   0 reserved
///   host  @ 120: +5000 at 0xc (forward), 6000 in use  → host peak, step 1
///   GPU_0 @ 130: +200 at 0xd (forward/attn), 500 in use,   0 reserved
fn with_memory() -> Profile {
    let mut profile = hand_built().into_xspace();
    let host = &mut profile.planes[0];
    let mut names = profiler_core::xspace::Interner::new(host);
    let mut event = |name: &str, at: i64, stats: &[(&str, XStatValue)]| {
        let stats = stats
            .iter()
            .map(|(k, v)| names.stat(host, k, v.clone()))
            .collect();
        XEvent::new(names.event(host, name), at * US, 0).with_stats(stats)
    };
    let s = |v: &str| XStatValue::Str(v.to_owned());
    let i = XStatValue::Int64;
    let mem = |allocator: &str, reserved: i64, in_use: i64, bytes: i64, addr: i64, op: &str| {
        vec![
            (schema::ALLOCATOR_NAME, s(allocator)),
            (schema::BYTES_RESERVED, i(reserved)),
            (schema::BYTES_ALLOCATED, i(in_use)),
            (schema::ALLOCATION_BYTES, i(bytes)),
            (schema::ADDRESS, i(addr)),
            (schema::TF_OP, s(op)),
        ]
    };
    let alloc = schema::MEMORY_ALLOCATION;
    let free = schema::MEMORY_DEALLOCATION;
    let events = vec![
        event(alloc, 20, &mem("host", 0, 1000, 0, 0, "forward:forward")),
        event(
            alloc,
            30,
            &mem("GPU_0", 100, 600, 600, 0xa, "forward/attn:attn"),
        ),
        event(
            alloc,
            40,
            &mem("GPU_0", 100, 900, 300, 0xb, "forward/mlp:mlp"),
        ),
        event(
            free,
            60,
            &mem("GPU_0", 0, 300, 600, 0xa, "backward:backward"),
        ),
        event(
            alloc,
            120,
            &mem("host", 0, 6000, 5000, 0xc, "forward:forward"),
        ),
        event(
            alloc,
            130,
            &mem("GPU_0", 0, 500, 200, 0xd, "forward/attn:attn"),
        ),
    ];
    profiler_core::xspace::merge_into_line(host, 3, "worker", events);
    host.lines.iter_mut().for_each(|l| {
        if l.id == 3 {
            // merge_into_line takes profile-relative offsets: put it on main's base.
            l.timestamp_ns += 1000;
        }
    });
    Profile::new(profile)
}

#[test]
fn memory_peaks_per_allocator_step_and_op() {
    let profile = with_memory();
    let summary = profile.summary(&SummaryOptions::default());
    // Memory events are not timed rows.
    assert!(summary.row(schema::MEMORY_ALLOCATION).is_none());
    assert!(summary.row(schema::MEMORY_DEALLOCATION).is_none());

    let peaks: Vec<_> = summary
        .memory()
        .iter()
        .map(|p| (p.allocator.as_str(), p.peak_bytes, p.step, p.op.as_str()))
        .collect();
    assert_eq!(
        peaks,
        [
            ("GPU_0", 1000, Some(0), "forward/mlp:mlp"),
            ("host", 6000, Some(1), "forward:forward"),
        ]
    );
    let steps = summary.steps();
    assert_eq!(steps[0].peak_memory["GPU_0"], 1000);
    assert_eq!(steps[0].peak_memory["host"], 1000);
    assert_eq!(steps[1].peak_memory["GPU_0"], 500);
    assert_eq!(steps[1].peak_host_bytes, Some(6000.0));

    let by_op: Vec<_> = summary
        .memory_by_op()
        .iter()
        .map(|r| {
            (
                r.allocator.as_str(),
                r.op.as_str(),
                r.held_at_peak,
                r.peak_bytes,
                r.blocks,
                r.allocated_bytes,
            )
        })
        .collect();
    // At GPU_0's peak (1000 with what the pool reserved, at 40 µs) attn held 600 and
    // mlp 300; attn's second block came later.
    assert_eq!(
        by_op,
        [
            ("GPU_0", "forward/attn:attn", 600, 700, 2, 800),
            ("GPU_0", "forward/mlp:mlp", 300, 1000, 1, 300),
            ("GPU_0", "backward:backward", 0, 300, 0, 0),
            ("host", "forward:forward", 5000, 6000, 1, 5000),
        ]
    );
    let table = summary.table();
    for text in [
        "Peak GPU_0",
        "Peak host",
        "Peak memory by op",
        "forward/attn:attn",
        "1000 B",
        "5.9 KiB",
    ] {
        assert!(table.contains(text), "{text} missing from\n{table}");
    }
    let json: serde_json::Value = serde_json::from_str(&summary.to_json()).expect("json");
    assert_eq!(json["memory"][1]["peak_bytes"], 6000);
    assert_eq!(json["memory_by_op"][0]["held_at_peak"], 600);
    assert_eq!(json["steps"][0]["peak_memory"]["GPU_0"], 1000);
}
