//! Comparing two runs: what got slower, what got faster, and whether the difference is
//! real or noise.
//!
//! [`diff`] reads two sides, each one or more profiles ([`Side`]: `.xplane.pb` files,
//! run directories, logdirs, or profiles in memory), and returns a [`Diff`]:
//!
//! - **Steps**: count, median, p10 and p90 of the step time on each side, and whether
//!   the medians differ significantly;
//! - **Ops**: host annotations (by self time), device ops (`tf_op`) and kernels (by
//!   device time), each with its count, total and compared time a step, the change,
//!   and a verdict; ranked by the size of the change, significant ones first;
//! - **Memory**: the peak bytes in use per allocator, and per op where allocations
//!   name one, when both sides recorded them;
//! - **Coverage**: ops on one side only (a new op, a vanished kernel);
//! - **Functions**: where both sides sampled native stacks (`host_sampling_hz`), each
//!   function's share of the samples (it or its callees running), compared
//!   ([`FunctionDiff`]; a two-proportion z test, Holm-adjusted over the functions).
//!
//! ```
//! use profiler_core::{session, trace, ProfileOptions};
//! use profiler_analysis::diff::{self, Verdict};
//!
//! let run = |work_us: u64| -> profiler_core::Result<profiler_core::Profile> {
//!     session::start(ProfileOptions::default(), None)?;
//!     for step in 0..8 {
//!         let _s = trace!("Train", step_num = step);
//!         let _w = trace!("work");
//!         std::thread::sleep(std::time::Duration::from_micros(work_us));
//!     }
//!     session::stop()
//! };
//! // 0.2 ms against 20 ms a step: far apart, so a busy machine's late wake-ups cannot
//! // blur them into noise.
//! let (base, new) = (run(200)?, run(20_000)?);
//! let diff = diff::diff(&base, &new)?;
//! assert_eq!(diff.ops[0].name, "work");
//! assert_eq!(diff.ops[0].time.verdict, Verdict::Increase);
//! assert!(!diff.gate(10.0).passed);
//! println!("{diff}"); // the table prof-diff prints
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! # How a difference is called significant
//!
//! Each step is one sample: its duration, and for each op the time it spent in that
//! step (zero in steps it did not run in). Two single numbers are never compared. For
//! each row the two sides' samples are compared by the Mann–Whitney U test
//! (two-sided, normal approximation with tie and continuity corrections;
//! [`stats`](self::Test)), as Go's `benchstat` compares benchmark runs. With many ops,
//! some would pass a 5% level by chance alone, so the ops' p-values are adjusted
//! together (Holm–Bonferroni), and so are the memory rows'. A row is a
//! [`Verdict::Increase`] or [`Verdict::Decrease`] when its adjusted p-value is under
//! [`DiffOptions::alpha`], its statistic moved by at least [`DiffOptions::noise_pct`],
//! and the statistic and the test agree on the direction; otherwise it is
//! [`Verdict::Noise`]. Rows with fewer than [`DiffOptions::min_steps`] steps are not
//! tested.
//!
//! Profiles without steps are compared as whole sessions, one sample a side: the
//! changes are shown, none is tested, and a note says so.
//!
//! A step is XProf's: an event on `/host:CPU` with the `_r` stat and an int64
//! `step_num` (`trace!("Train", step_num = n)`, JAX's `StepTraceAnnotation`). Device
//! work joins the step that launched it (`host_step_num`, or the launch's
//! `correlation_id`). Events outside every step are not compared (a note counts
//! them).

mod compare;
mod functions;
mod gate;
mod memory;
mod options;
mod render;
mod samples;
mod side;
mod stats;
mod steps;
mod values;
mod verdict;

use profiler_core::Result;

pub use compare::{Comparison, Diff, MemoryDiff, OpDiff, SampleUnit, SideSummary, Statistic};
pub use functions::FunctionDiff;
pub use gate::{Gate, GateOptions};
pub use options::DiffOptions;
pub use render::RenderOptions;
pub use samples::OpKind;
pub use side::Side;
pub use stats::{Distribution, Method, Test};
pub use verdict::{Sides, Verdict};

/// Compares `new` with `base` with the default options; see the [module](self).
///
/// # Errors
/// As [`diff_with`].
pub fn diff(base: impl Into<Side>, new: impl Into<Side>) -> Result<Diff> {
    diff_with(base, new, &DiffOptions::default())
}

/// Compares `new` with `base`.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](profiler_core::ErrorKind::InvalidArgument) for
/// options out of range, a side with no profile (or none of the host asked for), a
/// file that is not an XSpace, or sides whose hosts differ when one has several (each
/// names the files); [`ErrorKind::Io`](profiler_core::ErrorKind::Io) naming a file or
/// directory that cannot be read.
pub fn diff_with(
    base: impl Into<Side>,
    new: impl Into<Side>,
    options: &DiffOptions,
) -> Result<Diff> {
    options.check()?;
    let mut notes = Vec::new();
    let host = options.host.as_deref();
    let base = side::load(base.into(), "base", host, options, &mut notes)?;
    let new = side::load(new.into(), "new", host, options, &mut notes)?;
    side::check_hosts(&base, &new, host, &mut notes)?;

    // One side without steps makes every sample a session: steps on one side and a
    // session on the other are not alike.
    let stepless: Vec<String> = base
        .iter()
        .map(|s| ("base", s))
        .chain(new.iter().map(|s| ("new", s)))
        .filter(|(_, s)| s.profile.steps().is_empty())
        .map(|(which, s)| format!("{which} {}", s.label))
        .collect();
    let unit = if stepless.is_empty() {
        SampleUnit::Step
    } else {
        notes.insert(
            0,
            format!(
                "no steps in {}: whole sessions are compared, one sample a side, so no \
                 difference can be tested (mark steps with a step_num annotation, as \
                 XProf needs them)",
                stepless.join(", ")
            ),
        );
        SampleUnit::Session
    };
    let whole = unit == SampleUnit::Session;
    let sample = |which: &str, sources: Vec<side::Source>, notes: &mut Vec<String>| {
        sources
            .into_iter()
            .map(|s| {
                for warning in s.profile.warnings().iter().take(3) {
                    notes.push(format!("{which} {}: the profile says: {warning}", s.label));
                }
                let samples = samples::of(&s.profile, whole);
                (s.label, s.host, samples)
            })
            .collect::<Vec<_>>()
    };
    let stacks = |side: &[side::Source], notes: &mut Vec<String>| {
        let profiles: Vec<&profiler_core::Profile> = side.iter().map(|s| &s.profile).collect();
        functions::side(&profiles, notes)
    };
    let stacks = (stacks(&base, &mut notes), stacks(&new, &mut notes));
    let base = compare::pool(sample("base", base, &mut notes));
    let new = compare::pool(sample("new", new, &mut notes));
    let mut function_notes = Vec::new();
    let (function_samples, functions) =
        functions::compare(stacks.0, stacks.1, options, &mut function_notes);
    let mut diff = compare::build(base, new, unit, options, notes);
    diff.notes.extend(function_notes);
    diff.function_samples = function_samples;
    diff.functions = functions;
    Ok(diff)
}
