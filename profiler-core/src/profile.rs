//! `Profile`: what a finished session hands back.

use std::path::{Path, PathBuf};

use crate::schema;
use crate::xspace::{XSpace, XStatValue};

/// A finished profile: the collected [`XSpace`] and where it was written.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    space: XSpace,
    files: Vec<PathBuf>,
}

impl Profile {
    /// A profile of a collected space, not yet written anywhere.
    pub fn new(space: XSpace) -> Profile {
        Profile {
            space,
            files: Vec::new(),
        }
    }

    /// The collected space.
    pub fn xspace(&self) -> &XSpace {
        &self.space
    }

    /// The collected space, to change: an exporter notes in it what a file left out.
    pub fn xspace_mut(&mut self) -> &mut XSpace {
        &mut self.space
    }

    /// Takes the collected space.
    pub fn into_xspace(self) -> XSpace {
        self.space
    }

    /// Files written for this profile (the `.xplane.pb`, and any other format asked for).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Records that `path` was written for this profile.
    pub fn add_file(&mut self, path: impl Into<PathBuf>) {
        self.files.push(path.into());
    }

    /// Takes the list of files written, leaving it empty: a writer that moved them
    /// (uploaded a run to object storage) records where they went instead.
    pub fn take_files(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.files)
    }

    /// The run directory holding the files, when written to a logdir.
    pub fn run_dir(&self) -> Option<&Path> {
        self.files.first().and_then(|f| f.parent())
    }

    /// The host this profile was recorded on.
    pub fn host_name(&self) -> &str {
        self.space
            .hostnames
            .first()
            .map_or("localhost", String::as_str)
    }

    /// Warnings met while recording (events dropped at the cap, tracers unavailable).
    pub fn warnings(&self) -> &[String] {
        &self.space.warnings
    }

    /// Number of events of work on the host plane: annotations, spans, markers.
    /// Counter samples, memory events ([`memory_event_count`](Profile::memory_event_count))
    /// and the lines prof draws for itself ([`XLine::is_bookkeeping`]: pauses, async
    /// task lifetimes) are not counted: this is the count `prof-diff` reports for a
    /// side, and the summary's rows add up to.
    ///
    /// [`XLine::is_bookkeeping`]: crate::xspace::XLine::is_bookkeeping
    pub fn event_count(&self) -> usize {
        self.count_host_events(|is_memory| !is_memory)
    }

    /// Number of XProf memory events (`MemoryAllocation`, `MemoryDeallocation`) on the
    /// host plane: a tracking allocator's snapshots and large blocks, a GPU tracer's
    /// device allocations.
    pub fn memory_event_count(&self) -> usize {
        self.count_host_events(|is_memory| is_memory)
    }

    fn count_host_events(&self, keep: impl Fn(bool) -> bool) -> usize {
        self.space.plane(schema::HOST_PLANE).map_or(0, |p| {
            let memory = [schema::MEMORY_ALLOCATION, schema::MEMORY_DEALLOCATION].map(|name| {
                p.event_metadata
                    .values()
                    .find(|m| m.name == name)
                    .map(|m| m.id)
            });
            p.lines
                .iter()
                .filter(|l| !l.is_bookkeeping())
                .flat_map(|l| &l.events)
                .filter(|e| keep(memory.contains(&Some(e.metadata_id))))
                .count()
        })
    }

    /// The values recorded for counter `name`, in time order.
    pub fn counter_samples(&self, name: &str) -> Vec<f64> {
        self.counter_series(name)
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    /// The samples of counter `name` as (ns on the host lines' time axis, value), in
    /// time order.
    pub fn counter_series(&self, name: &str) -> Vec<(u64, f64)> {
        let Some(plane) = self.space.plane(schema::HOST_PLANE) else {
            return Vec::new();
        };
        let Some(line) = plane.lines.iter().find(|l| l.name == schema::COUNTERS_LINE) else {
            return Vec::new();
        };
        let origin_ns = line.timestamp_ns.max(0) as u64;
        line.events
            .iter()
            .filter(|e| plane.event_name(e.metadata_id) == Some(name))
            .filter_map(|e| match plane.find_stat(&e.stats, schema::COUNTER_VALUE) {
                Some(XStatValue::Double(v)) => {
                    Some((origin_ns + (e.offset_ps().max(0) / 1000) as u64, *v))
                }
                _ => None,
            })
            .collect()
    }

    /// The step numbers of the training steps recorded (events carrying `step_num`), in
    /// order of first appearance.
    pub fn steps(&self) -> Vec<i64> {
        let Some(plane) = self.space.plane(schema::HOST_PLANE) else {
            return Vec::new();
        };
        let (root, step) = (
            plane.stat_id(schema::IS_ROOT),
            plane.stat_id(schema::STEP_NUM),
        );
        let mut steps = Vec::new();
        for event in plane.lines.iter().flat_map(|l| &l.events) {
            if event.stat(root).is_none() {
                continue;
            }
            if let Some(n) = event.stat(step).and_then(XStatValue::as_i64) {
                if !steps.contains(&n) {
                    steps.push(n);
                }
            }
        }
        steps
    }

    /// Wall-clock start and stop of the recording, in nanoseconds since the Unix epoch.
    pub fn wall_time_ns(&self) -> Option<(u64, u64)> {
        let plane = self.space.plane(schema::TASK_ENV_PLANE)?;
        let get = |name| match plane.find_stat(&plane.stats, name) {
            Some(XStatValue::Uint64(v)) => Some(*v),
            _ => None,
        };
        Some((
            get(schema::PROFILE_START_TIME)?,
            get(schema::PROFILE_STOP_TIME)?,
        ))
    }
}
