//! A comparison as text: an aligned table for people, Markdown for a pull request,
//! JSON for scripts. Each shows the sides, the step time, the ops that moved most
//! (significant ones first), memory, the notes, and the method.

use std::fmt;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ContentArrangement, Table};
use serde_json::{json, Value};

use super::compare::{Comparison, Diff, MemoryDiff, OpDiff, SampleUnit, SideSummary, Statistic};
use super::functions::FunctionDiff;
use super::stats::{Distribution, Method};
use super::verdict::Verdict;
use crate::units::{bytes, duration};

/// Which rows a rendering shows.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Op rows shown, the first in rank; `None` shows all.
    pub top: Option<usize>,
    /// Rows whose change is smaller than this, percent, are left out (rows on one side
    /// only are always shown).
    pub min_change_pct: f64,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            top: None,
            min_change_pct: 0.0,
        }
    }
}

impl RenderOptions {
    /// Shows the first `rows` op rows.
    #[must_use]
    pub fn top(mut self, rows: usize) -> Self {
        self.top = Some(rows);
        self
    }

    /// Leaves out rows that changed less than `pct` percent.
    #[must_use]
    pub fn min_change_pct(mut self, pct: f64) -> Self {
        self.min_change_pct = pct;
        self
    }

    fn shows(&self, c: &Comparison) -> bool {
        c.verdict.is_one_sided() || c.change_pct.is_none_or(|p| p.abs() >= self.min_change_pct)
    }
}

/// What a format needs of each part.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    Text,
    Markdown,
}

impl Diff {
    /// The ops shown under `options`, and how many more there were.
    fn shown_ops(&self, options: &RenderOptions) -> (Vec<&OpDiff>, usize) {
        let kept: Vec<&OpDiff> = self.ops.iter().filter(|o| options.shows(&o.time)).collect();
        let limit = options.top.unwrap_or(usize::MAX);
        let more = kept.len().saturating_sub(limit);
        (kept.into_iter().take(limit).collect(), more)
    }

    /// The functions shown under `options` (as many as ops), and how many more.
    fn shown_functions(&self, options: &RenderOptions) -> (Vec<&FunctionDiff>, usize) {
        let kept: Vec<&FunctionDiff> = self
            .functions
            .iter()
            .filter(|f| {
                f.verdict.is_one_sided()
                    || f.change_pct
                        .is_none_or(|p| p.abs() >= options.min_change_pct)
            })
            .collect();
        let limit = options.top.unwrap_or(usize::MAX);
        let more = kept.len().saturating_sub(limit);
        (kept.into_iter().take(limit).collect(), more)
    }

    fn shown_memory(&self, options: &RenderOptions) -> Vec<&MemoryDiff> {
        self.memory
            .iter()
            .filter(|m| m.op.is_none() || options.shows(&m.per_step))
            .collect()
    }

    /// The comparison as aligned text tables.
    pub fn table(&self, options: &RenderOptions) -> String {
        self.render(options, Style::Text)
    }

    /// The comparison as Markdown, to paste into a pull request.
    pub fn to_markdown(&self, options: &RenderOptions) -> String {
        self.render(options, Style::Markdown)
    }

    fn render(&self, options: &RenderOptions, style: Style) -> String {
        let mut out = String::new();
        let md = style == Style::Markdown;
        if md {
            out.push_str("### prof-diff\n\n");
        }
        for (which, side) in [("base", &self.sides.base), ("new", &self.sides.new)] {
            let line = format!("{which}: {}", describe(side, self.unit));
            out.push_str(&if md {
                format!("- {line}\n")
            } else {
                format!("{line}\n")
            });
        }
        if md {
            out.push('\n');
        }
        out.push_str(&self.step_line(style));
        out.push('\n');

        let (ops, more) = self.shown_ops(options);
        out.push('\n');
        if ops.is_empty() {
            out.push_str("No op to show.\n");
        } else {
            out.push_str(&op_table(&ops, style));
            if more > 0 {
                // A line right after a Markdown table would be read as one of its rows.
                if md {
                    out.push('\n');
                }
                out.push_str(&format!("({more} more rows not shown)\n"));
            }
        }
        let memory = self.shown_memory(options);
        if !memory.is_empty() {
            out.push('\n');
            out.push_str(&memory_table(&memory, self.unit, style));
        }
        let (functions, more) = self.shown_functions(options);
        if !functions.is_empty() {
            let s = &self.function_samples;
            out.push_str(&format!(
                "\nFunctions' share of the stack samples ({} base, {} new):\n{}",
                s.base,
                s.new,
                if md { "\n" } else { "" }
            ));
            out.push_str(&function_table(&functions, style));
            if more > 0 {
                if md {
                    out.push('\n');
                }
                out.push_str(&format!("({more} more functions not shown)\n"));
            }
        }
        if !self.notes.is_empty() {
            out.push_str(if md { "\n**Notes**\n\n" } else { "\nNotes:\n" });
            for note in &self.notes {
                out.push_str(&format!("- {note}\n"));
            }
        }
        out.push('\n');
        let mut method = self.method();
        if !functions.is_empty() {
            method.push_str(
                " Functions: each one's total share of its side's stack samples (it or \
                 its callees running), by a two-proportion z test, Holm-adjusted.",
            );
        }
        out.push_str(&if md {
            format!("<sub>{method}</sub>\n")
        } else {
            format!("{method}\n")
        });
        out
    }

    fn step_line(&self, style: Style) -> String {
        let c = &self.step_time;
        let what = match self.unit {
            SampleUnit::Step => format!(
                "Step time (median of {} and {} steps)",
                c.dist.base.n, c.dist.new.n
            ),
            SampleUnit::Session => "Session time (no steps)".to_owned(),
        };
        let v = c.value();
        let p = match &c.test {
            Some(_) => format!(" (p = {})", p_value(c)),
            None => String::new(),
        };
        let mut line = format!(
            "{what}: {} -> {}, {}, {}{p}",
            duration(v.base.round() as u64),
            duration(v.new.round() as u64),
            pct(c.change_pct),
            verdict_words(c, "slower", "faster")
        );
        if self.unit == SampleUnit::Step {
            let (b, n) = (&c.dist.base, &c.dist.new);
            line.push_str(&format!(
                "; p10 {} -> {}, p90 {} -> {}",
                duration(b.p10.round() as u64),
                duration(n.p10.round() as u64),
                duration(b.p90.round() as u64),
                duration(n.p90.round() as u64)
            ));
        }
        if style == Style::Markdown {
            format!("**{what}**{}", &line[what.len()..])
        } else {
            line
        }
    }

    /// How significance was decided, in one line.
    fn method(&self) -> String {
        match self.unit {
            SampleUnit::Session => {
                "Whole sessions compared (one sample a side): no difference was tested.".to_owned()
            }
            SampleUnit::Step => {
                let test = match self.method {
                    Method::MannWhitneyU | Method::TwoProportionZ => {
                        "Each step is a sample: Mann-Whitney U test (two-sided, normal \
                         approximation, tie-corrected)"
                    }
                    Method::WelchT => {
                        "Each run is a sample: Welch's t test of the runs' medians \
                         (two-sided)"
                    }
                };
                format!(
                    "{test}; op and memory p-values Holm-adjusted; significant at p < {} \
                     and a change of at least {}%; ~ is noise. Host ops compare self time \
                     a step, device ops and kernels device time a step; medians, or means \
                     (marked *) for ops in fewer than half the steps.",
                    self.options.alpha, self.options.noise_pct
                )
            }
        }
    }

    /// The comparison as JSON: `{"unit", "sides", "step_time", "ops", "memory",
    /// "notes", "method"}`, times in ns, memory in bytes, every row.
    pub fn to_json(&self, options: &RenderOptions) -> String {
        let (ops, more) = self.shown_ops(options);
        let side = |s: &SideSummary| {
            json!({
                "sources": s.sources,
                "hosts": s.hosts,
                "samples": s.samples,
                "events": s.events,
                "device_events": s.device_events,
                "memory_events": s.memory_events,
                "outside_steps": s.outside_steps,
                "cut_steps": s.cut_steps,
            })
        };
        json!({
            "unit": match self.unit { SampleUnit::Step => "step", SampleUnit::Session => "session" },
            "sides": { "base": side(&self.sides.base), "new": side(&self.sides.new) },
            "step_time": comparison_json(&self.step_time),
            "ops": ops.iter().map(|o| json!({
                "kind": o.kind.as_str(),
                "name": o.name,
                "count_per_step": { "base": o.count_per_step.base, "new": o.count_per_step.new },
                "total_per_step_ns": { "base": o.total_per_step.base, "new": o.total_per_step.new },
                "steps_with_op": { "base": o.steps_with_op.base, "new": o.steps_with_op.new },
                "time_per_step_ns": comparison_json(&o.time),
            })).collect::<Vec<_>>(),
            "ops_not_shown": more,
            "memory": self.shown_memory(options).iter().map(|m| json!({
                "allocator": m.allocator,
                "op": m.op,
                "peak_bytes": { "base": m.peak.base, "new": m.peak.new },
                "per_step_peak_bytes": comparison_json(&m.per_step),
            })).collect::<Vec<_>>(),
            "functions": {
                "samples": { "base": self.function_samples.base, "new": self.function_samples.new },
                "rows": self.shown_functions(options).0.iter().map(|f| json!({
                    "name": f.name,
                    "total_samples": { "base": f.total_samples.base, "new": f.total_samples.new },
                    "self_share": { "base": f.self_share.base, "new": f.self_share.new },
                    "total_share": { "base": f.total_share.base, "new": f.total_share.new },
                    "delta_points": f.delta_points,
                    "change_pct": f.change_pct,
                    "test": f.test.as_ref().map(|t| json!({
                        "method": t.method.as_str(), "z": t.z, "p": t.p, "p_adjusted": t.p_adjusted,
                    })),
                    "verdict": f.verdict.as_str(),
                })).collect::<Vec<_>>(),
                "not_shown": self.shown_functions(options).1,
            },
            "notes": self.notes,
            "method": {
                "test": self.method.as_str(),
                "runs": { "base": self.sides.base.runs, "new": self.sides.new.runs },
                "adjustment": "holm",
                "alpha": self.options.alpha,
                "noise_pct": self.options.noise_pct,
                "min_steps": self.options.min_steps,
            },
        })
        .to_string()
    }
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table(&RenderOptions::default()))
    }
}

fn comparison_json(c: &Comparison) -> Value {
    let dist = |d: &Distribution| json!({ "n": d.n, "median": d.median, "p10": d.p10, "p90": d.p90, "mean": d.mean });
    json!({
        "base": dist(&c.dist.base),
        "new": dist(&c.dist.new),
        "statistic": match c.statistic { Statistic::Median => "median", Statistic::Mean => "mean" },
        "delta": c.delta,
        "change_pct": c.change_pct,
        "test": c.test.as_ref().map(|t| json!({
            "method": t.method.as_str(), "statistic": t.statistic, "z": t.z, "p": t.p,
            "p_adjusted": t.p_adjusted,
        })),
        "verdict": c.verdict.as_str(),
    })
}

/// `3 steps of host vm from logs/run/vm.xplane.pb`.
fn describe(side: &SideSummary, unit: SampleUnit) -> String {
    let samples = match unit {
        SampleUnit::Step => format!("{} steps", side.samples),
        SampleUnit::Session => format!("{} session(s)", side.samples),
    };
    let hosts = match side.hosts.as_slice() {
        [one] => format!("host {one}"),
        many => format!("{} hosts ({})", many.len(), many.join(", ")),
    };
    let sources = match side.sources.as_slice() {
        [one] => one.clone(),
        many => format!("{} profiles ({}, ...)", many.len(), many[0]),
    };
    // The counts `Profile::event_count` and `memory_event_count` give, which the
    // examples print too.
    let mut events = format!("{} events", side.events);
    if side.device_events > 0 {
        events.push_str(&format!(", {} device events", side.device_events));
    }
    if side.memory_events > 0 {
        events.push_str(&format!(" (and {} memory events)", side.memory_events));
    }
    format!("{samples} of {hosts}, {events}, from {sources}")
}

fn op_table(ops: &[&OpDiff], style: Style) -> String {
    let header = [
        "Kind",
        "Op",
        "Calls/step",
        "Base",
        "New",
        "Δ/step",
        "Change",
        "p",
        "Verdict",
    ];
    let rows: Vec<Vec<String>> = ops
        .iter()
        .map(|o| {
            let v = o.time.value();
            let value = |ns: f64, absent: bool| {
                if absent {
                    "-".to_owned()
                } else if o.time.statistic == Statistic::Mean {
                    format!("{}*", duration(ns.round().max(0.0) as u64))
                } else {
                    duration(ns.round().max(0.0) as u64)
                }
            };
            vec![
                o.kind.as_str().to_owned(),
                o.name.clone(),
                calls(o.count_per_step.base, o.count_per_step.new),
                value(v.base, o.time.verdict == Verdict::OnlyNew),
                value(v.new, o.time.verdict == Verdict::OnlyBase),
                signed(o.time.delta, duration),
                pct(o.time.change_pct),
                p_value(&o.time),
                verdict_words(&o.time, "slower", "faster"),
            ]
        })
        .collect();
    table(&header, &rows, style, &[2, 3, 4, 5, 6, 7])
}

fn memory_table(rows: &[&MemoryDiff], unit: SampleUnit, style: Style) -> String {
    let step_col = match unit {
        SampleUnit::Step => "Step peak Δ",
        SampleUnit::Session => "Δ",
    };
    let header = [
        "Allocator",
        "Op",
        "Base peak",
        "New peak",
        step_col,
        "Change",
        "p",
        "Verdict",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|m| {
            let peak = |p: Option<f64>| p.map_or_else(|| "-".to_owned(), bytes);
            vec![
                m.allocator.clone(),
                m.op.clone().unwrap_or_else(|| "(all)".to_owned()),
                peak(m.peak.base),
                peak(m.peak.new),
                signed(m.per_step.delta, |b| bytes(b as f64)),
                pct(m.per_step.change_pct),
                p_value(&m.per_step),
                verdict_words(&m.per_step, "more", "less"),
            ]
        })
        .collect();
    table(&header, &cells, style, &[2, 3, 4, 5, 6])
}

fn function_table(rows: &[&FunctionDiff], style: Style) -> String {
    let header = [
        "Function",
        "Base total",
        "New total",
        "Δ points",
        "Base self",
        "New self",
        "p",
        "Verdict",
    ];
    let share = |v: f64| format!("{:.1}%", v * 100.0);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|f| {
            let p = match &f.test {
                None => "-".to_owned(),
                Some(t) if t.p_adjusted < 0.001 => format!("{:.0e}", t.p_adjusted),
                Some(t) => format!("{:.3}", t.p_adjusted),
            };
            let verdict = match f.verdict {
                Verdict::Increase => "▲ more".to_owned(),
                Verdict::Decrease => "▼ less".to_owned(),
                Verdict::OnlyBase => "gone".to_owned(),
                Verdict::OnlyNew => "new".to_owned(),
                _ => "~ noise".to_owned(),
            };
            vec![
                crate::functions::short_name(&f.name),
                share(f.total_share.base),
                share(f.total_share.new),
                format!("{:+.1}", f.delta_points),
                share(f.self_share.base),
                share(f.self_share.new),
                p,
                verdict,
            ]
        })
        .collect();
    table(&header, &cells, style, &[1, 2, 3, 4, 5, 6])
}

/// Rows under a header, aligned (`right`: the numeric columns).
fn table(header: &[&str], rows: &[Vec<String>], style: Style, right: &[usize]) -> String {
    match style {
        Style::Text => {
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Disabled)
                .set_header(header.to_vec());
            for row in rows {
                t.add_row(row.clone());
            }
            for &i in right {
                if let Some(c) = t.column_mut(i) {
                    c.set_cell_alignment(CellAlignment::Right);
                }
            }
            format!("{t}\n")
        }
        Style::Markdown => {
            let mut out = format!("| {} |\n|", header.join(" | "));
            for i in 0..header.len() {
                out.push_str(if right.contains(&i) {
                    " ---: |"
                } else {
                    " --- |"
                });
            }
            out.push('\n');
            for row in rows {
                let cells: Vec<String> = row.iter().map(|c| markdown_cell(c)).collect();
                out.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
            out
        }
    }
}

/// A cell's text with the characters Markdown tables give a meaning escaped.
fn markdown_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn verdict_words(c: &Comparison, more: &str, less: &str) -> String {
    match c.verdict {
        Verdict::Increase => format!("▲ {more}"),
        Verdict::Decrease => format!("▼ {less}"),
        Verdict::Noise => "~ noise".to_owned(),
        Verdict::TooFewSteps => "too few steps".to_owned(),
        Verdict::Untested => "untested".to_owned(),
        Verdict::OnlyBase => "gone".to_owned(),
        Verdict::OnlyNew => "new".to_owned(),
    }
}

fn calls(base: f64, new: f64) -> String {
    let one = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    if one(base) == one(new) {
        one(new)
    } else {
        format!("{} -> {}", one(base), one(new))
    }
}

/// `+1.234 ms`, `-512 B`.
fn signed(v: f64, unit: impl Fn(u64) -> String) -> String {
    let sign = if v < 0.0 {
        "-"
    } else if v > 0.0 {
        "+"
    } else {
        ""
    };
    format!("{sign}{}", unit(v.abs().round() as u64))
}

fn pct(change: Option<f64>) -> String {
    change.map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}%"))
}

fn p_value(c: &Comparison) -> String {
    match &c.test {
        None => "-".to_owned(),
        Some(t) if t.p_adjusted < 0.001 => format!("{:.0e}", t.p_adjusted),
        Some(t) => format!("{:.3}", t.p_adjusted),
    }
}
