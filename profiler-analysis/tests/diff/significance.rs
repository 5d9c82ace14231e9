//! What is significant and what the gate does: an op made slower, unchanged work over
//! many pairs, sessions without steps, a step cut at the stop, too few steps, and the
//! gate's floor.

use profiler_analysis::diff::{
    self, GateOptions, Method, OpKind, RenderOptions, SampleUnit, Verdict,
};

use crate::workloads::{host_ops, profile, train_loop, train_loop_cut_at_stop};

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
