//! Reading the GPU planes of a profile: the kernels, and how much of their time carries
//! an op.

use prof::xspace::{XPlane, XSpace};
use std::collections::BTreeMap;

use crate::Result;

/// The kernels on the GPU planes of a profile, and how much of their time carries an op.
#[derive(Debug, Default)]
pub(crate) struct KernelSummary {
    pub(crate) planes: usize,
    /// Device lines (streams) holding at least one kernel.
    pub(crate) lines: usize,
    pub(crate) kernels: usize,
    pub(crate) kernel_ps: i64,
    /// Kernel time whose kernels carry a non-empty `tf_op`.
    pub(crate) annotated_ps: i64,
    /// Kernel count and time by op (the `tf_op` before its `:`; `-` for none).
    pub(crate) by_op: BTreeMap<String, (usize, i64)>,
}

impl KernelSummary {
    pub(crate) fn of(space: &XSpace) -> KernelSummary {
        let mut summary = KernelSummary::default();
        for plane in space
            .planes
            .iter()
            .filter(|p| p.name.starts_with("/device:GPU:"))
        {
            summary.planes += 1;
            for line in &plane.lines {
                let mut on_line = 0;
                for e in &line.events {
                    if plane.find_stat(&e.stats, "kernel_details").is_none() {
                        continue;
                    }
                    on_line += 1;
                    summary.kernel_ps += e.duration_ps;
                    let op = text_stat(plane, &e.stats, "tf_op").filter(|op| !op.is_empty());
                    if op.is_some() {
                        summary.annotated_ps += e.duration_ps;
                    }
                    let op = op.map_or("-".to_owned(), |op| {
                        op.split(':').next().unwrap_or_default().to_owned()
                    });
                    let entry = summary.by_op.entry(op).or_default();
                    entry.0 += 1;
                    entry.1 += e.duration_ps;
                }
                summary.kernels += on_line;
                summary.lines += usize::from(on_line > 0);
            }
        }
        summary
    }

    /// Percentage of kernel time under an annotation (0 without kernels).
    pub(crate) fn annotated_pct(&self) -> f64 {
        if self.kernel_ps == 0 {
            return 0.0;
        }
        100.0 * self.annotated_ps as f64 / self.kernel_ps as f64
    }

    /// Errors unless there are kernels and at least `min_pct` of their time carries an op.
    pub(crate) fn check(&self, min_pct: f64) -> Result<()> {
        if self.planes == 0 {
            return Err("the profile has no /device:GPU plane".into());
        }
        if self.kernels == 0 {
            return Err("the GPU planes hold no kernel".into());
        }
        if self.annotated_pct() < min_pct {
            return Err(format!(
                "{:.1}% of kernel time carries an op, below {min_pct}%: {self}",
                self.annotated_pct()
            )
            .into());
        }
        Ok(())
    }
}

impl std::fmt::Display for KernelSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} kernels on {} device line(s) of {} GPU plane(s), {:.3} ms; \
             {:.1}% of kernel time under an annotation",
            self.kernels,
            self.lines,
            self.planes,
            self.kernel_ps as f64 / 1e9,
            self.annotated_pct()
        )?;
        let mut ops: Vec<(&String, &(usize, i64))> = self.by_op.iter().collect();
        ops.sort_by_key(|(_, (_, ps))| std::cmp::Reverse(*ps));
        for (i, (op, (count, ps))) in ops.iter().take(8).enumerate() {
            let pct = 100.0 * *ps as f64 / self.kernel_ps.max(1) as f64;
            let sep = if i == 0 { "; by op: " } else { ", " };
            write!(f, "{sep}{op} {pct:.1}% ({count})")?;
        }
        Ok(())
    }
}

/// A string stat of an event, inline or interned.
pub(crate) fn text_stat(
    plane: &XPlane,
    stats: &[prof::xspace::XStat],
    name: &str,
) -> Option<String> {
    plane.find_text(stats, name).map(str::to_owned)
}
