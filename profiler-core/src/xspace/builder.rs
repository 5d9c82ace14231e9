//! [`PlaneBuilder`]: a plane made from scratch, interning names as it goes.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::model::{XEventMetadata, XLine, XPlane, XStat, XStatMetadata, XStatValue};

/// Builds an [`XPlane`], interning event and stat names into its metadata maps.
///
/// Ids start at 1: XProf treats metadata id 0 as "no metadata" and shows the event
/// without a name.
#[derive(Debug)]
pub struct PlaneBuilder {
    plane: XPlane,
    // foldhash, not SipHash: every stat and event made looks its name up here, and the
    // names are the program's own (no untrusted keys to defend against).
    events: HashMap<String, i64, FixedState>,
    stats: HashMap<String, i64, FixedState>,
}

impl PlaneBuilder {
    /// A builder for an empty plane.
    pub fn new(id: i64, name: impl Into<String>) -> Self {
        PlaneBuilder {
            plane: XPlane {
                id,
                name: name.into(),
                ..XPlane::default()
            },
            events: HashMap::default(),
            stats: HashMap::default(),
        }
    }

    /// The metadata id for an event name, interning it on first use.
    pub fn event_metadata_id(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.events.get(name) {
            return id;
        }
        let id = self.events.len() as i64 + 1;
        self.events.insert(name.to_owned(), id);
        self.plane.event_metadata.insert(
            id,
            XEventMetadata {
                id,
                name: name.to_owned(),
                ..XEventMetadata::default()
            },
        );
        id
    }

    /// The metadata id for a stat name, interning it on first use.
    pub fn stat_metadata_id(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.stats.get(name) {
            return id;
        }
        let id = self.stats.len() as i64 + 1;
        self.stats.insert(name.to_owned(), id);
        self.plane.stat_metadata.insert(
            id,
            XStatMetadata {
                id,
                name: name.to_owned(),
                description: String::new(),
            },
        );
        id
    }

    /// The event name interned as `id`.
    pub fn event_name(&self, id: i64) -> Option<&str> {
        self.plane.event_metadata.get(&id).map(|m| m.name.as_str())
    }

    /// The metadata id of stat name `name`, if already interned.
    pub fn find_stat_metadata_id(&self, name: &str) -> Option<i64> {
        self.stats.get(name).copied()
    }

    /// A stat named `name` with `value`, its name interned in this plane.
    pub fn stat(&mut self, name: &str, value: XStatValue) -> XStat {
        XStat {
            metadata_id: self.stat_metadata_id(name),
            value: Some(value),
        }
    }

    /// Adds a stat describing the whole plane.
    pub fn add_plane_stat(&mut self, name: &str, value: XStatValue) {
        let stat = self.stat(name, value);
        self.plane.stats.push(stat);
    }

    /// Adds a finished line.
    pub fn add_line(&mut self, line: XLine) {
        self.plane.lines.push(line);
    }

    /// The finished plane.
    pub fn build(self) -> XPlane {
        self.plane
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_ids_start_at_one_and_are_interned() {
        let mut b = PlaneBuilder::new(0, "/host:CPU");
        assert_eq!(b.event_metadata_id("a"), 1);
        assert_eq!(b.event_metadata_id("b"), 2);
        assert_eq!(b.event_metadata_id("a"), 1);
        assert_eq!(b.stat_metadata_id("step_num"), 1);
        let plane = b.build();
        assert_eq!(plane.event_metadata[&2].name, "b");
        assert_eq!(plane.event_metadata[&2].id, 2);
    }
}
