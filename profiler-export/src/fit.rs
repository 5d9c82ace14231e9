//! Every `.xplane.pb` prof writes opens in XProf.
//!
//! XProf and TensorBoard read a host's file as one protobuf message, and protobuf caps
//! a message at 2 GiB ([`XPROF_MAX_BYTES`]): past it they log `Can't parse … as binary
//! proto` and show nothing (JAX's guide: "XSpace exceeded maximum protobuf size of
//! 2GB"). prof's default cap on records keeps ordinary sessions far below that; a
//! session whose cap was raised crosses it at some 150M events.
//!
//! When a profile would encode past its limit (`ProfileOptions::max_xplane_bytes`,
//! [`DEFAULT_MAX_XPLANE_BYTES`]), [`write_xplane`] writes one that fits and loses
//! nothing:
//!
//! - **the most recent whole steps that fit**: the file keeps the events that start at
//!   or after the start of the earliest step it can hold whole, and every later one;
//!   without steps (or when not even the last step fits), the most recent events that
//!   fit. Aggregated events, metadata and plane stats are all kept.
//! - **the whole session beside it**, as a Perfetto trace (`<host>.pftrace`), which has
//!   no such limit; it streams, as every exporter does, in bounded extra memory.
//! - **what was left out, said three times**: a warning in the profile and in the file
//!   (XProf's overview page lists a file's warnings under its diagnostics), stats on
//!   the `Task Environment` plane ([`EVENTS_LEFT_OUT`], [`STEPS_LEFT_OUT`],
//!   [`FULL_TRACE`]) for tools, and a note under prof's summary tables
//!   ([`note_of`]); each names the file that has everything. The warning is also a
//!   `tracing` event (target `prof`).
//!
//! Finding the cut takes a few passes over the events' start times and sizes (a
//! histogram of bytes over time, narrowed until one timestamp decides), holding
//! nothing per event; it runs only for a profile over its limit, whose `.xplane.pb`
//! then costs about two encodings' time.
//!
//! [`retain_within`] cuts a space in place the same way, for a gRPC response, which
//! has a limit of its own and no room for a file beside it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use profiler_core::options::{DEFAULT_MAX_XPLANE_BYTES, XPROF_MAX_BYTES};
use profiler_core::schema;
use profiler_core::xspace::{Interner, XEvent, XEventData, XPlane, XSpace, XStatValue};
use profiler_core::{Error, ErrorKind, Profile, Result};

use crate::perfetto;
use crate::xplane::encode::{framed_len, start_ps, Keep, Layout};
use crate::xplane::write_layout;

/// `Task Environment` stat of a cut file: events the `.xplane.pb` left out (uint64).
pub const EVENTS_LEFT_OUT: &str = "xplane_events_left_out";
/// `Task Environment` stat of a cut file: whole steps it left out (uint64).
pub const STEPS_LEFT_OUT: &str = "xplane_steps_left_out";
/// `Task Environment` stat of a cut file: the file beside it holding every event
/// (string, a file name in the same directory).
pub const FULL_TRACE: &str = "xplane_full_trace";

/// Bytes kept free below the limit for the notes added to a cut space (a warning and
/// three stats).
const NOTES_BYTES: u64 = 4 << 10;

/// Buckets of the histogram that narrows down the cut.
const BUCKETS: u128 = 1 << 16;

/// Where a space too large for its limit was cut, and what that left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Events starting before this, in picoseconds on the lines' time axis
    /// (`XLine::timestamp_ns` × 1000 + `offset_ps`), are left out.
    pub from_ps: i64,
    /// Timed events in the space (aggregated ones are always kept).
    pub events: u64,
    /// Of them, those kept.
    pub events_kept: u64,
    /// Steps in the space (distinct `step_num`s of step roots on the host plane).
    pub steps: u64,
    /// Of them, those kept whole.
    pub steps_kept: u64,
    /// Whether the cut is at a step's start; false when the space has no steps, or
    /// not even its last step fits.
    pub at_step: bool,
    /// Bytes the whole space encodes to.
    pub whole_bytes: u64,
    /// The limit it was cut to fit.
    pub max_bytes: u64,
}

impl Cut {
    /// Events left out.
    pub fn events_left_out(&self) -> u64 {
        self.events - self.events_kept
    }

    /// Steps left out.
    pub fn steps_left_out(&self) -> u64 {
        self.steps - self.steps_kept
    }

    /// "the last 12 of 20 steps (1,234 of 5,678 events)", or "the latest 1,234 of 5,678
    /// events".
    fn kept(&self) -> String {
        if self.at_step {
            format!(
                "the last {} of {} steps ({} of {} events)",
                self.steps_kept,
                self.steps,
                thousands(self.events_kept),
                thousands(self.events)
            )
        } else {
            format!(
                "the latest {} of {} events",
                thousands(self.events_kept),
                thousands(self.events)
            )
        }
    }
}

/// What [`write_xplane`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Where the file was cut, if it had to be.
    pub cut: Option<Cut>,
    /// The Perfetto trace written beside a cut file, holding every event.
    pub full_trace: Option<PathBuf>,
}

/// Writes `profile`'s `.xplane.pb` at `path`, atomically, within `max_bytes`
/// ([`DEFAULT_MAX_XPLANE_BYTES`] unless a session asked for less): whole when it fits;
/// otherwise the cut is noted in the profile (see the module documentation), the file
/// holds the most recent whole steps that fit, and then the whole session is written
/// as Perfetto beside it (`path` with `.pftrace` for `.xplane.pb`). The `.xplane.pb`
/// comes first so that a process cut short while writing (a signal's budget) keeps
/// the file XProf opens.
///
/// # Errors
/// [`ErrorKind::Io`] naming the file that could not be written;
/// [`ErrorKind::InvalidArgument`] when `max_bytes` is over [`XPROF_MAX_BYTES`], or
/// cannot hold even the profile's metadata.
pub fn write_xplane(path: &Path, profile: &mut Profile, max_bytes: u64) -> Result<Written> {
    check_limit(max_bytes)?;
    let layout = Layout::of(profile.xspace(), Keep::All);
    if layout.total() <= max_bytes {
        write_layout(path, profile.xspace(), &layout)?;
        return Ok(Written::default());
    }
    let whole = layout.total();
    drop(layout);
    let cut = find(profile.xspace(), whole, max_bytes)?;
    let full = full_trace_path(path);
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let warning = format!(
        "{} holds {}: the whole profile is {} bytes, over the {} allowed (XProf opens no \
         file over 2 GiB); {} beside it holds every event, the {} left out included",
        name(path),
        cut.kept(),
        thousands(cut.whole_bytes),
        thousands(cut.max_bytes),
        name(&full),
        thousands(cut.events_left_out()),
    );
    note(profile.xspace_mut(), &cut, &warning, Some(&name(&full)));
    tracing::warn!(target: profiler_core::log::TARGET, "{warning}");
    let layout = Layout::of(profile.xspace(), Keep::From(cut.from_ps));
    if layout.total() > max_bytes {
        // The notes have room kept for them: only a limit a few kilobytes above the
        // profile's metadata gets here.
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} not written: cut to {} bytes, still over the limit of {max_bytes} \
                 (raise max_xplane_bytes)",
                path.display(),
                layout.total()
            ),
        ));
    }
    write_layout(path, profile.xspace(), &layout)?;
    // The file XProf opens first, the whole session after: a process given a grace
    // period to end (a scheduler's SIGTERM) keeps the one that matters most.
    perfetto::write(profile.xspace(), &full)?;
    Ok(Written {
        cut: Some(cut),
        full_trace: Some(full),
    })
}

/// Cuts `space` in place so that it encodes within `max_bytes`, as [`write_xplane`]
/// cuts a file (the most recent whole steps that fit), noting in it what was left out;
/// `what` names where the space is going ("the response"). `None` when it fits whole.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `max_bytes` cannot hold even the space's
/// metadata.
pub fn retain_within(space: &mut XSpace, max_bytes: u64, what: &str) -> Result<Option<Cut>> {
    let whole = Layout::of(space, Keep::All).total();
    if whole <= max_bytes {
        return Ok(None);
    }
    let cut = find(space, whole, max_bytes)?;
    for line in space.planes.iter_mut().flat_map(|p| &mut p.lines) {
        let timestamp = line.timestamp_ns;
        line.events.retain(|e| match e.data() {
            XEventData::OffsetPs(offset) => {
                timestamp.saturating_mul(1000).saturating_add(offset) >= cut.from_ps
            }
            XEventData::NumOccurrences(_) => true,
        });
    }
    let warning = format!(
        "{what} holds {}: the whole profile is {} bytes, over the {} it may carry; the {} \
         events before were not kept",
        cut.kept(),
        thousands(cut.whole_bytes),
        thousands(cut.max_bytes),
        thousands(cut.events_left_out()),
    );
    note(space, &cut, &warning, None);
    tracing::warn!(target: profiler_core::log::TARGET, "{warning}");
    Ok(Some(cut))
}

/// The note a summary shows for a profile whose `.xplane.pb` was cut: what it left
/// out, and where everything is; read from the stats [`write_xplane`] leaves on the
/// `Task Environment` plane.
pub fn note_of(space: &XSpace) -> Option<String> {
    let plane = space.plane(schema::TASK_ENV_PLANE)?;
    let stat = |name| plane.find_stat(&plane.stats, name);
    let events = match stat(EVENTS_LEFT_OUT)? {
        XStatValue::Uint64(n) => *n,
        _ => return None,
    };
    let steps = match stat(STEPS_LEFT_OUT) {
        Some(XStatValue::Uint64(n)) if *n > 0 => format!(" ({n} whole steps)"),
        _ => String::new(),
    };
    let full = match stat(FULL_TRACE) {
        Some(XStatValue::Str(file)) => format!("; {file} beside it holds every event"),
        _ => String::new(),
    };
    Some(format!(
        "the .xplane.pb leaves out the first {} events{steps}, to open in XProf{full}",
        thousands(events)
    ))
}

/// `path` with `.pftrace` in place of `.xplane.pb`.
fn full_trace_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let stem = name.strip_suffix(".xplane.pb").unwrap_or(&name);
    path.with_file_name(format!("{stem}.{}", perfetto::EXTENSION))
}

fn check_limit(max_bytes: u64) -> Result<()> {
    if max_bytes > XPROF_MAX_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "a .xplane.pb of up to {max_bytes} bytes could not be opened: XProf reads \
                 files of at most {XPROF_MAX_BYTES} bytes (the default limit is \
                 {DEFAULT_MAX_XPLANE_BYTES})"
            ),
        ));
    }
    Ok(())
}

/// Calls `f` with each timed event of `space` and its start on the lines' axis.
fn each_timed(space: &XSpace, mut f: impl FnMut(i64, &XEvent)) {
    for line in space.planes.iter().flat_map(|p| &p.lines) {
        for event in &line.events {
            if let XEventData::OffsetPs(offset) = event.data() {
                f(start_ps(line, offset), event);
            }
        }
    }
}

/// Where to cut `space`, which encodes to `whole` bytes, to fit `max_bytes`.
fn find(space: &XSpace, whole: u64, max_bytes: u64) -> Result<Cut> {
    let (mut lo, mut hi, mut events) = (i64::MAX, i64::MIN, 0u64);
    each_timed(space, |start, _| {
        lo = lo.min(start);
        hi = hi.max(start);
        events += 1;
    });
    let mut budget = None;
    // Bytes of the events after the range being narrowed, all kept.
    let mut above = 0u64;
    let from = loop {
        if events == 0 || lo > hi {
            break i64::MAX;
        }
        // A histogram of the bytes of the events starting in [lo, hi].
        let span = (i128::from(hi) - i128::from(lo) + 1) as u128;
        let width = span.div_ceil(BUCKETS.min(span));
        let buckets = span.div_ceil(width) as usize;
        let mut bytes = vec![0u64; buckets];
        let mut all = 0u64;
        each_timed(space, |start, event| {
            let size = framed_len(event) as u64;
            all += size;
            if (lo..=hi).contains(&start) {
                bytes[((i128::from(start) - i128::from(lo)) as u128 / width) as usize] += size;
            }
        });
        // Known once every event's size is: what the space takes without its events.
        let budget = *budget.get_or_insert_with(|| {
            let fixed = whole.saturating_sub(all);
            max_bytes.checked_sub(fixed + NOTES_BYTES)
        });
        let Some(budget) = budget else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the profile's metadata and aggregated events alone take {} bytes: \
                     no .xplane.pb within {max_bytes} bytes can hold them",
                    whole.saturating_sub(all)
                ),
            ));
        };
        // The highest bucket whose events do not all fit with those above it.
        let mut kept = above;
        let mut over = None;
        for b in (0..buckets).rev() {
            if kept + bytes[b] > budget {
                over = Some(b);
                break;
            }
            kept += bytes[b];
        }
        let Some(b) = over else {
            break lo; // everything from `lo` on fits
        };
        let bucket_lo = (i128::from(lo) + (b as u128 * width) as i128) as i64;
        if width == 1 {
            // One timestamp, whose events do not all fit: keep from the next.
            break bucket_lo.saturating_add(1);
        }
        above = kept;
        let bucket_hi = (i128::from(bucket_lo) + width as i128 - 1) as i64;
        (lo, hi) = (bucket_lo, bucket_hi.min(hi));
    };
    // Back to the start of the earliest step that fits whole.
    let roots = step_roots(space);
    let step_start = roots
        .iter()
        .filter(|&&(start, _)| start >= from)
        .map(|&(start, _)| start)
        .min();
    let from = step_start.unwrap_or(from);
    let mut events_kept = 0;
    each_timed(space, |start, _| events_kept += u64::from(start >= from));
    let steps: HashSet<i64> = roots.iter().map(|&(_, step)| step).collect();
    let steps_kept: HashSet<i64> = roots
        .iter()
        .filter(|&&(start, _)| start >= from)
        .map(|&(_, step)| step)
        .collect();
    // A step with a root before the cut (on another thread) is not whole.
    let steps_cut: HashSet<i64> = roots
        .iter()
        .filter(|&&(start, _)| start < from)
        .map(|&(_, step)| step)
        .collect();
    Ok(Cut {
        from_ps: from,
        events,
        events_kept,
        steps: steps.len() as u64,
        steps_kept: steps_kept.difference(&steps_cut).count() as u64,
        at_step: step_start.is_some(),
        whole_bytes: whole,
        max_bytes,
    })
}

/// The step roots of the host plane (events with `_r` and an integer `step_num`, as
/// XProf finds steps): (start, step number).
fn step_roots(space: &XSpace) -> Vec<(i64, i64)> {
    let Some(plane) = space.plane(schema::HOST_PLANE) else {
        return Vec::new();
    };
    let (Some(root), Some(step)) = (
        plane.stat_id(schema::IS_ROOT),
        plane.stat_id(schema::STEP_NUM),
    ) else {
        return Vec::new();
    };
    let mut roots = Vec::new();
    for line in &plane.lines {
        for event in &line.events {
            let XEventData::OffsetPs(offset) = event.data() else {
                continue;
            };
            if event.stat(Some(root)).is_none() {
                continue;
            }
            if let Some(n) = event.stat(Some(step)).and_then(XStatValue::as_i64) {
                roots.push((start_ps(line, offset), n));
            }
        }
    }
    roots
}

/// Notes `cut` in `space`: `warning` in its warnings, and the stats on its `Task
/// Environment` plane (made if it has none).
fn note(space: &mut XSpace, cut: &Cut, warning: &str, full_trace: Option<&str>) {
    space.warnings.push(warning.to_owned());
    let at = match space
        .planes
        .iter()
        .position(|p| p.name == schema::TASK_ENV_PLANE)
    {
        Some(at) => at,
        None => {
            let id = space.planes.iter().map(|p| p.id).max().unwrap_or(0) + 1;
            space.planes.push(XPlane {
                id,
                name: schema::TASK_ENV_PLANE.to_owned(),
                ..XPlane::default()
            });
            space.planes.len() - 1
        }
    };
    let plane = &mut space.planes[at];
    let mut names = Interner::new(plane);
    let mut stats = vec![
        (EVENTS_LEFT_OUT, XStatValue::Uint64(cut.events_left_out())),
        (STEPS_LEFT_OUT, XStatValue::Uint64(cut.steps_left_out())),
    ];
    if let Some(file) = full_trace {
        stats.push((FULL_TRACE, XStatValue::Str(file.to_owned())));
    }
    for (name, value) in stats {
        let stat = names.stat(plane, name, value);
        plane.stats.retain(|s| s.metadata_id != stat.metadata_id);
        plane.stats.push(stat);
    }
}

/// `n` with thousands separated by commas.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(123_456_789), "123,456,789");
    }

    #[test]
    fn the_full_trace_goes_beside_the_file() {
        assert_eq!(
            full_trace_path(Path::new("/l/plugins/profile/r/h_1.xplane.pb")),
            Path::new("/l/plugins/profile/r/h_1.pftrace")
        );
    }
}
