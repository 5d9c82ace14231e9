//! A summary as text: an aligned table for people, JSON and CSV for scripts.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ContentArrangement, Table};

use profiler_core::schema;

use super::{GroupBy, Summary, SummaryRow};
use crate::functions::{short_name, FunctionRow, FunctionTable, Functions};
use crate::units::{bytes, duration};

impl Summary {
    /// The rows as an aligned table; after them the steps, with each allocator's peak
    /// memory in each when it was tracked, then each allocator's peak and its ops, then
    /// the hot functions of the stack samples, then the [notes](Summary::notes), one a
    /// line.
    pub fn table(&self) -> String {
        let by_step = self.options_group == GroupBy::Step;
        let mut table = Table::new();
        table
            .load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut header = Vec::new();
        if by_step {
            header.push("Step".to_owned());
        }
        header.extend(
            ["Name", "Count", "Total", "Self", "Min", "Max", "Mean"]
                .iter()
                .map(|s| s.to_string()),
        );
        header.push(format!("% {}", self.share_of()));
        table.set_header(header);
        for row in &self.rows {
            let mut cells = Vec::new();
            if by_step {
                cells.push(row.step.map_or_else(|| "-".to_owned(), |s| s.to_string()));
            }
            cells.push(row.name.clone());
            let whole = row.count > row.cut;
            if row.cut == 0 {
                cells.push(row.count.to_string());
            } else {
                cells.push(format!("{} ({} cut)", row.count, row.cut));
            }
            cells.extend([row.total_ns, row.self_ns].into_iter().map(duration));
            for ns in [row.min_ns, row.max_ns, row.mean_ns().round() as u64] {
                cells.push(if whole { duration(ns) } else { "-".to_owned() });
            }
            cells.push(format!("{:.1}%", row.share * 100.0));
            table.add_row(cells);
        }
        let first_number = usize::from(by_step) + 1;
        for i in first_number..first_number + 7 {
            if let Some(column) = table.column_mut(i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = table.to_string();
        if self.rows.iter().any(|r| r.cut > 0) {
            out.push_str(
                "\ncut: calls the session's start or stop cut short (still running when it \
                 stopped); their recorded part counts in the total and self times, not in Min, \
                 Max or Mean.",
            );
        }
        if let Some(steps) = self.steps_table() {
            out.push('\n');
            out.push_str(&steps);
        }
        if let Some(memory) = self.memory_table() {
            out.push('\n');
            out.push_str(&memory);
        }
        if let Some(functions) = &self.functions {
            out.push('\n');
            out.push_str(&functions_tables(functions));
        }
        for note in &self.notes {
            out.push_str("\nnote: ");
            out.push_str(note);
        }
        out
    }

    /// The steps with their peak memory per allocator, when any was tracked.
    fn steps_table(&self) -> Option<String> {
        let mut allocators: Vec<&str> = Vec::new();
        for s in &self.steps {
            for name in s.peak_memory.keys() {
                if !allocators.contains(&name.as_str()) {
                    allocators.push(name);
                }
            }
        }
        allocators.sort_by_key(|a| (*a != schema::HOST_ALLOCATOR, *a));
        // A profile with only the host's counter track (no memory events).
        let counter_only = allocators.is_empty();
        if counter_only && self.steps.iter().all(|s| s.peak_host_bytes.is_none()) {
            return None;
        }
        let mut table = Table::new();
        let mut header = vec!["Step".to_owned(), "Duration".to_owned()];
        if counter_only {
            header.push("Peak host memory".to_owned());
        }
        header.extend(allocators.iter().map(|a| format!("Peak {a} memory")));
        table.load_preset(UTF8_FULL_CONDENSED).set_header(header);
        for s in &self.steps {
            let mut row = vec![s.step.to_string(), duration(s.duration_ns)];
            if counter_only {
                row.push(s.peak_host_bytes.map_or_else(|| "-".to_owned(), bytes));
            }
            for a in &allocators {
                row.push(
                    s.peak_memory
                        .get(*a)
                        .map_or_else(|| "-".to_owned(), |&b| bytes(b as f64)),
                );
            }
            table.add_row(row);
        }
        Some(table.to_string())
    }

    /// Each allocator's peak, then its ops by what they held at that peak (the first
    /// `limit` of each allocator).
    fn memory_table(&self) -> Option<String> {
        if self.memory.is_empty() {
            return None;
        }
        let mut peaks = Table::new();
        peaks.load_preset(UTF8_FULL_CONDENSED).set_header([
            "Allocator",
            "Peak memory",
            "Step",
            "Op at peak",
            "Allocator's peak",
        ]);
        for p in &self.memory {
            peaks.add_row([
                p.allocator.clone(),
                bytes(p.peak_bytes as f64),
                p.step.map_or_else(|| "-".to_owned(), |s| s.to_string()),
                p.op.clone(),
                if p.allocator_peak_bytes == 0 {
                    "-".to_owned()
                } else {
                    bytes(p.allocator_peak_bytes as f64)
                },
            ]);
        }
        let mut ops = Table::new();
        ops.load_preset(UTF8_FULL_CONDENSED).set_header([
            "Allocator",
            "Peak memory by op",
            "Held at peak",
            "Peak in use",
            "Blocks",
            "Allocated",
        ]);
        let mut shown: Option<(&str, usize)> = None;
        for row in &self.memory_by_op {
            let n = match shown {
                Some((a, n)) if a == row.allocator => n + 1,
                _ => 1,
            };
            shown = Some((&row.allocator, n));
            if self.limit.is_some_and(|limit| n > limit) {
                continue;
            }
            ops.add_row([
                row.allocator.clone(),
                row.op.clone(),
                bytes(row.held_at_peak as f64),
                bytes(row.peak_bytes as f64),
                row.blocks.to_string(),
                bytes(row.allocated_bytes as f64),
            ]);
        }
        for table in [&mut peaks, &mut ops] {
            for i in 1..table.column_count() {
                if let Some(column) = table.column_mut(i) {
                    column.set_cell_alignment(CellAlignment::Right);
                }
            }
        }
        if let Some(column) = ops.column_mut(1) {
            column.set_cell_alignment(CellAlignment::Left);
        }
        if let Some(column) = peaks.column_mut(3) {
            column.set_cell_alignment(CellAlignment::Left);
        }
        // Two peaks that may differ, each with its reason, under the table that shows
        // both.
        let why = if self.memory.iter().any(|p| p.allocator_peak_bytes > 0) {
            "\nPeak memory: the highest in use at a recorded memory event (XProf's \
             timeline). Allocator's peak: the allocator's own, as prof::memory::host() \
             reported it when the session stopped; it counts from the last \
             memory::reset_peak() and sees what came and went between two events.\n"
        } else {
            "\n"
        };
        Some(format!("{peaks}{why}{ops}"))
    }

    /// The rows, steps, memory and hot functions as JSON: `{"share_of": .., "rows":
    /// [..], "steps": [..], "memory": [..], "memory_by_op": [..], "functions": {..} or
    /// null, "notes": [..]}`, times in nanoseconds, memory in bytes, functions in
    /// samples.
    pub fn to_json(&self) -> String {
        let rows: Vec<_> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "step": r.step,
                    "name": r.name,
                    "count": r.count,
                    "cut": r.cut,
                    "total_ns": r.total_ns,
                    "self_ns": r.self_ns,
                    "min_ns": r.min_ns,
                    "max_ns": r.max_ns,
                    "mean_ns": r.mean_ns(),
                    "share": r.share,
                })
            })
            .collect();
        let steps: Vec<_> = self
            .steps
            .iter()
            .map(|s| {
                serde_json::json!({
                    "step": s.step,
                    "duration_ns": s.duration_ns,
                    "peak_host_bytes": s.peak_host_bytes,
                    "peak_memory": s.peak_memory,
                })
            })
            .collect();
        let memory: Vec<_> = self
            .memory
            .iter()
            .map(|p| {
                serde_json::json!({
                    "allocator": p.allocator,
                    "peak_bytes": p.peak_bytes,
                    "allocator_peak_bytes": p.allocator_peak_bytes,
                    "step": p.step,
                    "op": p.op,
                })
            })
            .collect();
        let by_op: Vec<_> = self
            .memory_by_op
            .iter()
            .map(|r| {
                serde_json::json!({
                    "allocator": r.allocator,
                    "op": r.op,
                    "held_at_peak": r.held_at_peak,
                    "peak_bytes": r.peak_bytes,
                    "blocks": r.blocks,
                    "allocated_bytes": r.allocated_bytes,
                })
            })
            .collect();
        serde_json::json!({
            "share_of": self.share_of(),
            "rows": rows,
            "steps": steps,
            "memory": memory,
            "memory_by_op": by_op,
            "functions": self.functions.as_ref().map(functions_json),
            "notes": self.notes,
        })
        .to_string()
    }

    /// The rows as CSV with a header line, times in nanoseconds.
    pub fn to_csv(&self) -> String {
        let mut out =
            String::from("step,name,count,cut,total_ns,self_ns,min_ns,max_ns,mean_ns,share\n");
        for r in &self.rows {
            out.push_str(&csv_row(r));
        }
        out
    }
}

/// One table a scope (every sample, then each top annotation): the functions by self
/// samples beside those by total samples, rank by rank.
fn functions_tables(f: &Functions) -> String {
    let mut out = format!(
        "Hot functions: {} stack samples ({}, {} Hz of CPU time asked)\n",
        f.overall.samples, f.backend, f.hz
    );
    out.push_str(&function_table(&f.overall));
    for t in &f.by_op {
        out.push_str(&format!(
            "\nUnder {}: {} samples ({:.1}% of all)\n",
            t.op.as_deref().unwrap_or("-"),
            t.samples,
            f.overall.share(t.samples) * 100.0
        ));
        out.push_str(&function_table(t));
    }
    out
}

fn function_table(t: &FunctionTable) -> String {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(["By self", "Self", "Self %", "By total", "Total", "Total %"]);
    let cell = |row: Option<&FunctionRow>, count: fn(&FunctionRow) -> u64| match row {
        Some(r) => [
            short_name(&r.name),
            count(r).to_string(),
            format!("{:.1}%", t.share(count(r)) * 100.0),
        ],
        None => [String::new(), String::new(), String::new()],
    };
    for i in 0..t.by_self.len().max(t.by_total.len()) {
        let mut row = cell(t.by_self.get(i), |r| r.self_samples).to_vec();
        row.extend(cell(t.by_total.get(i), |r| r.total_samples));
        table.add_row(row);
    }
    for i in [1, 2, 4, 5] {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.to_string()
}

fn functions_json(f: &Functions) -> serde_json::Value {
    let rows = |rows: &[FunctionRow]| -> Vec<serde_json::Value> {
        rows.iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name,
                    "self_samples": r.self_samples,
                    "total_samples": r.total_samples,
                })
            })
            .collect()
    };
    let table = |t: &FunctionTable| {
        serde_json::json!({
            "op": t.op,
            "samples": t.samples,
            "by_self": rows(&t.by_self),
            "by_total": rows(&t.by_total),
        })
    };
    serde_json::json!({
        "backend": f.backend,
        "hz": f.hz,
        "overall": table(&f.overall),
        "by_op": f.by_op.iter().map(table).collect::<Vec<_>>(),
    })
}

fn csv_row(r: &SummaryRow) -> String {
    let step = r.step.map_or_else(String::new, |s| s.to_string());
    format!(
        "{step},{},{},{},{},{},{},{},{},{}\n",
        csv_field(&r.name),
        r.count,
        r.cut,
        r.total_ns,
        r.self_ns,
        r.min_ns,
        r.max_ns,
        r.mean_ns(),
        r.share
    )
}

/// Quotes a field that holds a separator, a quote or a line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
