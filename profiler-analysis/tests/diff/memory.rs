//! Memory: peaks per allocator and per op, from TSL's memory events.

use profiler_analysis::diff::{self, RenderOptions, Verdict};
use profiler_core::schema;
use profiler_core::xspace::{Interner, Stats, XEvent, XLine, XSpace, XStatValue};

use crate::workloads::{profile, Loop, US};

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
