//! The renderings: JSON, the table and Markdown, with the rows asked for.

use profiler_analysis::diff::{self, RenderOptions};
use profiler_core::xspace::Stats;

use crate::workloads::{profile, train_loop, Loop};

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
