//! A summary as text: an aligned table for people, JSON and CSV for scripts.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ContentArrangement, Table};

use super::{GroupBy, Summary, SummaryRow};

impl Summary {
    /// The rows as an aligned table (and the steps after them, with their peak host
    /// memory when it was tracked; then the [notes](Summary::notes), one a line).
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
            cells.push(row.count.to_string());
            cells.extend(
                [row.total_ns, row.self_ns, row.min_ns, row.max_ns]
                    .into_iter()
                    .map(duration),
            );
            cells.push(duration(row.mean_ns().round() as u64));
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
        if self.steps.iter().any(|s| s.peak_host_bytes.is_some()) {
            let mut steps = Table::new();
            steps.load_preset(UTF8_FULL_CONDENSED).set_header([
                "Step",
                "Duration",
                "Peak host memory",
            ]);
            for s in &self.steps {
                steps.add_row([
                    s.step.to_string(),
                    duration(s.duration_ns),
                    s.peak_host_bytes.map_or_else(|| "-".to_owned(), bytes),
                ]);
            }
            out.push('\n');
            out.push_str(&steps.to_string());
        }
        for note in &self.notes {
            out.push_str("\nnote: ");
            out.push_str(note);
        }
        out
    }

    /// The rows and steps as JSON: `{"share_of": .., "rows": [..], "steps": [..],
    /// "notes": [..]}`, times in nanoseconds.
    pub fn to_json(&self) -> String {
        let rows: Vec<_> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "step": r.step,
                    "name": r.name,
                    "count": r.count,
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
                })
            })
            .collect();
        serde_json::json!({
            "share_of": self.share_of(),
            "rows": rows,
            "steps": steps,
            "notes": self.notes,
        })
        .to_string()
    }

    /// The rows as CSV with a header line, times in nanoseconds.
    pub fn to_csv(&self) -> String {
        let mut out =
            String::from("step,name,count,total_ns,self_ns,min_ns,max_ns,mean_ns,share\n");
        for r in &self.rows {
            out.push_str(&csv_row(r));
        }
        out
    }
}

fn csv_row(r: &SummaryRow) -> String {
    let step = r.step.map_or_else(String::new, |s| s.to_string());
    format!(
        "{step},{},{},{},{},{},{},{},{}\n",
        csv_field(&r.name),
        r.count,
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

/// A duration in the largest unit that keeps it at 1 or more, to the nanosecond.
fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.3} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_their_digits() {
        assert_eq!(duration(950), "950 ns");
        assert_eq!(duration(12_345), "12.345 µs");
        assert_eq!(duration(12_345_678), "12.346 ms");
        assert_eq!(duration(12_345_678_901), "12.346 s");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(3.5 * 1024.0 * 1024.0), "3.5 MiB");
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
