//! Where a timeline starts: the wall-clock time of picosecond 0, and how each line's
//! timestamp is rebased on it (relative lines as prof and XProf write them, absolute
//! ones from older TensorFlow).

use profiler_core::schema;
use profiler_core::xspace::{XLine, XSpace, XStatValue};

use super::events::Source;

/// Line timestamps at or past this (about 1973 in Unix nanoseconds) are absolute.
const ABSOLUTE_NS: i64 = 100_000_000_000_000_000;

/// Recorded starts at or past this (about 2096) are not believed: a hostile or broken
/// file's start would put every timestamp past what `u64` nanoseconds hold.
const LATEST_START_NS: i64 = 4_000_000_000_000_000_000;

/// Where a timeline with no recorded wall-clock start is placed when nothing better
/// is known: 2020-01-01 00:00:00 UTC. Perfetto's timestamps must be Unix-epoch
/// nanoseconds (its checkers refuse a trace near 0), and a converted file is placed
/// at its modification time instead (see `Timeline::or_start_at`).
pub const NO_CLOCK_UNIX_NS: i64 = 1_577_836_800_000_000_000;

/// Where the timeline starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Wall-clock time of picosecond 0, in nanoseconds since the Unix epoch: the
    /// recorded start, or a stand-in when the file records none
    /// ([`Origin::is_recorded`]).
    pub unix_ns: i64,
    /// Subtracted from every line's `timestamp_ns` to rebase it on the origin.
    line_base_ns: i64,
    recorded: bool,
}

impl Origin {
    /// The origin of `space`: its `profile_start_time` when lines are relative to it,
    /// the earliest line start when lines are absolute, else [`NO_CLOCK_UNIX_NS`].
    pub fn of(space: &XSpace) -> Origin {
        Origin::find(&Source::decoded(space))
    }

    pub(super) fn find(source: &Source<'_>) -> Origin {
        let space = source.space;
        let lines = space.planes.iter().enumerate().flat_map(|(p, plane)| {
            plane
                .lines
                .iter()
                .enumerate()
                .map(move |(l, line)| (p, l, line))
        });
        let first_line = lines
            .filter(|&(p, l, _)| !source.events(p, l).is_empty())
            .map(|(_, _, line)| line.timestamp_ns)
            .min()
            .unwrap_or(0);
        if (ABSOLUTE_NS..LATEST_START_NS).contains(&first_line) {
            return Origin {
                unix_ns: first_line,
                line_base_ns: first_line,
                recorded: true,
            };
        }
        let start = space
            .plane(schema::TASK_ENV_PLANE)
            .and_then(|p| p.find_stat(&p.stats, schema::PROFILE_START_TIME))
            .and_then(|v| match v {
                XStatValue::Uint64(n) => i64::try_from(*n).ok(),
                XStatValue::Int64(n) => Some(*n),
                _ => None,
            })
            .filter(|start| (ABSOLUTE_NS..LATEST_START_NS).contains(start));
        Origin {
            unix_ns: start.unwrap_or(NO_CLOCK_UNIX_NS),
            line_base_ns: 0,
            recorded: start.is_some(),
        }
    }

    /// Whether the space records its wall-clock start; otherwise [`Origin::unix_ns`]
    /// is a stand-in.
    pub fn is_recorded(&self) -> bool {
        self.recorded
    }

    /// This origin, or one at `unix_ns` when the space records no start (and
    /// `unix_ns` is a plausible one).
    pub(super) fn or_start_at(mut self, unix_ns: i64) -> Origin {
        if !self.recorded && (ABSOLUTE_NS..LATEST_START_NS).contains(&unix_ns) {
            self.unix_ns = unix_ns;
        }
        self
    }

    /// Nanoseconds since the Unix epoch of `ps` picoseconds from the origin.
    pub fn to_unix_ns(&self, ps: i64) -> i64 {
        self.unix_ns.saturating_add(ps.div_euclid(1000))
    }

    /// Where `line` starts, in picoseconds from the origin.
    pub(super) fn line_start_ps(&self, line: &XLine) -> i64 {
        // Saturating: the base is the earliest line with events, and an empty line of
        // another producer's file may lie anywhere.
        line.timestamp_ns
            .saturating_sub(self.line_base_ns)
            .saturating_mul(1000)
    }
}
