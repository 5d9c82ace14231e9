//! A plane's interned metadata by id, for the per-event lookups of the walk: an
//! index into a table where ids are dense from 0 (as producers number them), instead
//! of a walk down the plane's map for every slice and every argument. Ids beyond a
//! few per metadata are left to the map, so a plane numbering its metadata sparsely
//! gets no table the size of its largest id.

use std::collections::BTreeMap;

use profiler_core::schema;
use profiler_core::xspace::{XEventMetadata, XPlane};

/// Stats that describe links rather than the event: they become flows, not arguments.
const LINK_STATS: [&str; 5] = [
    schema::PRODUCER_TYPE,
    schema::PRODUCER_ID,
    schema::CONSUMER_TYPE,
    schema::CONSUMER_ID,
    schema::IS_ROOT,
];

/// Ids beyond this many per metadata (plus some) are looked up in the map instead.
const DENSE_IDS_PER_METADATA: usize = 4;

/// `map`'s values indexed by id (`None` for gaps), for the ids from 0 up to a few
/// per entry.
fn dense<'a, M, T>(
    map: &'a BTreeMap<i64, M>,
    value: impl Fn(i64, &'a M) -> Option<T>,
) -> Vec<Option<T>>
where
    T: Copy,
{
    let room = map.len() * DENSE_IDS_PER_METADATA + 64;
    let mut table = Vec::new();
    for (&id, entry) in map.range(0..room as i64) {
        let index = id as usize;
        if table.len() <= index {
            table.resize(index + 1, None);
        }
        table[index] = value(id, entry);
    }
    table
}

/// A plane's event metadata by id.
pub(super) struct EventMetadata<'a> {
    plane: &'a XPlane,
    dense: Vec<Option<&'a XEventMetadata>>,
}

impl<'a> EventMetadata<'a> {
    pub(super) fn of(plane: &'a XPlane) -> Self {
        EventMetadata {
            plane,
            dense: dense(&plane.event_metadata, |_, m| Some(m)),
        }
    }

    /// The metadata with id `id`, if the plane has one.
    #[inline]
    pub(super) fn get(&self, id: i64) -> Option<&'a XEventMetadata> {
        match usize::try_from(id).ok().and_then(|i| self.dense.get(i)) {
            Some(&found) => found,
            None => self.plane.event_metadata.get(&id),
        }
    }
}

/// The names a plane's stats are shown under as arguments, by id. The link stats
/// (which become flows) have none: they are not shown.
#[derive(Debug)]
pub(super) struct StatNames<'a> {
    plane: &'a XPlane,
    dense: Vec<Option<&'a str>>,
    hidden: Vec<i64>,
}

impl<'a> StatNames<'a> {
    pub(super) fn of(plane: &'a XPlane) -> Self {
        let hidden: Vec<i64> = LINK_STATS.iter().filter_map(|n| plane.stat_id(n)).collect();
        let dense = dense(&plane.stat_metadata, |id, m| {
            (!hidden.contains(&id)).then_some(m.name.as_str())
        });
        StatNames {
            plane,
            dense,
            hidden,
        }
    }

    /// The name of stat `id`, unless the plane has none or it is a link stat.
    #[inline]
    pub(super) fn get(&self, id: i64) -> Option<&'a str> {
        match usize::try_from(id).ok().and_then(|i| self.dense.get(i)) {
            Some(&found) => found,
            None if self.hidden.contains(&id) => None,
            None => self.plane.stat_name(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use profiler_core::xspace::XStatMetadata;

    use super::*;

    /// Dense ids, a gap, a far one (left to the map), a negative one.
    const IDS: [i64; 6] = [1, 2, 3, 7, 1_000_000, -3];
    const PROBES: [i64; 5] = [999_999, 1_000_000, 1_000_001, i64::MIN, i64::MAX];

    #[test]
    fn event_metadata_is_found_by_id_as_the_map_finds_it() {
        let mut plane = XPlane::default();
        for id in IDS {
            plane.event_metadata.insert(
                id,
                XEventMetadata {
                    id,
                    name: format!("e{id}"),
                    ..XEventMetadata::default()
                },
            );
        }
        let table = EventMetadata::of(&plane);
        assert!(
            table.dense.len() <= 8,
            "a table up to the dense ids only: {}",
            table.dense.len()
        );
        for id in (-5..40).chain(PROBES) {
            let found = table.get(id).map(|m| m.name.as_str());
            assert_eq!(found, plane.event_name(id), "id {id}");
        }
    }

    #[test]
    fn stat_names_are_the_map_s_without_the_link_stats() {
        let mut plane = XPlane::default();
        let mut stat = |id: i64, name: String| {
            plane.stat_metadata.insert(
                id,
                XStatMetadata {
                    id,
                    name,
                    ..XStatMetadata::default()
                },
            );
        };
        for id in IDS {
            stat(id, format!("s{id}"));
        }
        // A link stat among the dense ids, and one beyond them.
        stat(5, LINK_STATS[1].to_owned());
        stat(2_000_000, LINK_STATS[0].to_owned());
        let names = StatNames::of(&plane);
        assert!(names.dense.len() <= 8, "{}", names.dense.len());
        for id in (-5..40).chain(PROBES).chain([2_000_000]) {
            let expected = plane
                .stat_name(id)
                .filter(|name| !LINK_STATS.contains(name));
            assert_eq!(names.get(id), expected, "id {id}");
        }
        assert_eq!(names.get(5), None);
        assert_eq!(names.get(2_000_000), None);
    }
}
