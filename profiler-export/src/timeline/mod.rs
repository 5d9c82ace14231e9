//! One walk over an [`XSpace`] in the shape every timeline format wants: processes,
//! threads, properly nested slices, counters and flows.
//!
//! Perfetto, Chrome JSON and OTLP all differ from XPlane in the same ways, so the
//! differences are settled here once and each exporter is a [`Visitor`]:
//!
//! - **Time.** XPlane lines are relative to the profile start (absolute nanoseconds
//!   overflow XProf's picosecond arithmetic); the wall-clock start lives on the
//!   `Task Environment` plane. Files whose lines are already absolute (older
//!   TensorFlow) are detected and rebased. Times handed to visitors are picoseconds
//!   from [`Origin::unix_ns`].
//! - **Nesting.** Begin/end formats need slices on one track to nest. Events that
//!   partially overlap an enclosing one (possible in files from other producers) move
//!   to an extra lane of the same line, shown as its own thread, instead of being
//!   clipped: no duration changes between formats.
//! - **Flows.** `_p`/`_c` producer/consumer links and `correlation_id` (a host launch
//!   and the device activity it started) become flow ids, only when both ends are
//!   slices (not instants) in the profile.
//! - **Counters.** Events on XProf's `_counters_` line are samples of counter tracks.
//!
//! The walk holds one stack per lane and the flow index; it never copies events, so
//! exporting costs memory for the output buffer only. It walks a decoded space
//! ([`Timeline::new`]) or one whose events stay encoded until walked
//! ([`Timeline::lazy`], for converting files).
//!
//! `lines` walks a plane's lines into threads and counter tracks, `lanes` places each
//! slice on a lane in O(log lanes); `flows` finds the links and which have both ends;
//! `names` indexes the plane's metadata by id for the lookups made per slice; `model`
//! holds what visitors are handed, `origin` where the timeline starts.

mod events;
mod flows;
mod lanes;
mod lines;
mod model;
mod names;
mod origin;

use profiler_core::schema;
use profiler_core::xspace::XSpace;

use crate::xplane::LazySpace;

use events::Source;
#[cfg(feature = "otlp")]
pub(crate) use flows::mix;
pub use flows::FlowIds;
use flows::{FlowIndex, FlowWalk};
use lines::{PlaneWalk, Tids};
pub use model::{Arg, CounterTrack, Process, Slice, Thread, Totals, Visitor};
pub use origin::{Origin, NO_CLOCK_UNIX_NS};

/// The line XProf reads counter samples from.
pub const COUNTERS_LINE: &str = schema::COUNTERS_LINE;

/// Stat linking a host launch to device activity (CUPTI's correlation id).
pub const CORRELATION_ID: &str = schema::CORRELATION_ID;

/// A walk over one space.
#[derive(Debug)]
pub struct Timeline<'a> {
    source: Source<'a>,
    origin: Origin,
    flows: FlowIndex,
}

impl<'a> Timeline<'a> {
    /// Prepares a walk over `space`: finds its origin and which flows have both ends.
    pub fn new(space: &'a XSpace) -> Timeline<'a> {
        Timeline::of(Source::decoded(space))
    }

    /// Prepares a walk over a space read by [`crate::xplane::read_lazy`], whose events
    /// are decoded one at a time as they are walked.
    pub fn lazy(space: &'a LazySpace) -> Timeline<'a> {
        Timeline::of(Source::lazy(space))
    }

    fn of(source: Source<'a>) -> Timeline<'a> {
        let origin = Origin::find(&source);
        Timeline {
            source,
            origin,
            flows: FlowIndex::build(&source, &origin),
        }
    }

    /// Where the timeline's picosecond 0 is.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Places a timeline whose space records no wall-clock start at `unix_ns`
    /// (a converted file's modification time, say); one that records its start keeps
    /// it.
    pub fn or_start_at(mut self, unix_ns: i64) -> Timeline<'a> {
        self.origin = self.origin.or_start_at(unix_ns);
        self
    }

    /// The space walked.
    pub fn space(&self) -> &'a XSpace {
        self.source.space
    }

    /// Host name of the space.
    pub fn host_name(&self) -> &'a str {
        self.source
            .space
            .hostnames
            .first()
            .map_or("localhost", String::as_str)
    }

    /// Walks every exported plane (all but `Task Environment`) through `visitor`.
    ///
    /// # Errors
    /// The first error the visitor returns; the walk stops there.
    pub fn walk<V: Visitor<'a>>(&self, visitor: &mut V) -> Result<Totals, V::Error> {
        let mut totals = Totals {
            flows: self.flows.len(),
            ..Totals::default()
        };
        let mut flows = FlowWalk::default();
        let mut seq = 0u64;
        // Thread ids are unique across planes, not only within one: Perfetto treats a
        // tid as system-wide and would merge a GPU stream with a host thread of the
        // same number.
        let mut tids = Tids::default();
        let planes = self.source.space.planes.iter().enumerate();
        let planes = planes.filter(|&(p, plane)| {
            plane.name != schema::TASK_ENV_PLANE && self.source.has_events(p)
        });
        for (index, (p, plane)) in planes.enumerate() {
            let process = Process {
                pid: index as u32 + 1,
                name: &plane.name,
                plane,
            };
            visitor.process(&process)?;
            let mut walk =
                PlaneWalk::new(self.origin, &self.flows, &process, &mut tids, &mut flows);
            for (l, line) in plane.lines.iter().enumerate() {
                let events = self.source.events(p, l);
                if line.name == COUNTERS_LINE {
                    walk.counters(line, events, visitor, &mut totals)?;
                } else {
                    walk.line(line, events, visitor, &mut totals, &mut seq)?;
                }
            }
        }
        Ok(totals)
    }
}
