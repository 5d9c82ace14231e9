//! Field numbers of `XSpace`, `XPlane` and `XLine` in xplane.proto
//! (`profiler_core::xspace`), for the hand-written reader and encoder.

pub(super) const SPACE_PLANES: u32 = 1;
pub(super) const SPACE_ERRORS: u32 = 2;
pub(super) const SPACE_WARNINGS: u32 = 3;
pub(super) const SPACE_HOSTNAMES: u32 = 4;
pub(super) const PLANE_ID: u32 = 1;
pub(super) const PLANE_NAME: u32 = 2;
pub(super) const PLANE_LINES: u32 = 3;
pub(super) const PLANE_EVENT_METADATA: u32 = 4;
pub(super) const PLANE_STAT_METADATA: u32 = 5;
pub(super) const PLANE_STATS: u32 = 6;
pub(super) const LINE_ID: u32 = 1;
pub(super) const LINE_NAME: u32 = 2;
pub(super) const LINE_TIMESTAMP_NS: u32 = 3;
pub(super) const LINE_EVENTS: u32 = 4;
pub(super) const LINE_DURATION_PS: u32 = 9;
pub(super) const LINE_DISPLAY_ID: u32 = 10;
pub(super) const LINE_DISPLAY_NAME: u32 = 11;
