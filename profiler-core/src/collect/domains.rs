//! Profiling objects (see [`crate::domain`]): their events move from the thread that
//! stopped them to their domain's line.

use std::collections::BTreeMap;

use super::line::{add_stat, build_line, LineBuilder};
use crate::domain::domain_name;
use crate::schema;
use crate::tags::ObjectKind;
use crate::xspace::{PlaneBuilder, XEvent, XLine, XStatValue};

/// Takes the object events out of `lines` (thread-scoped markers stay, with their
/// domain as a stat) and returns each domain's events by domain id.
pub(super) fn take(
    lines: &mut [LineBuilder<'_>],
    plane: &mut PlaneBuilder,
) -> BTreeMap<u32, Vec<XEvent>> {
    let mut domains: BTreeMap<u32, Vec<XEvent>> = BTreeMap::new();
    for line in lines {
        let mut objects = std::mem::take(&mut line.objects);
        if objects.is_empty() {
            continue;
        }
        objects.sort_unstable_by_key(|&(i, _)| i);
        for &(i, tag) in &objects {
            let Some((kind, domain)) = ObjectKind::from_tag(tag) else {
                continue;
            };
            let stats = &mut line.events[i].stats;
            add_stat(
                plane,
                stats,
                schema::OBJECT,
                XStatValue::Str(kind.object().into()),
            );
            if let Some(scope) = kind.scope() {
                add_stat(plane, stats, schema::SCOPE, XStatValue::Str(scope.into()));
            }
            if kind == ObjectKind::ThreadMarker {
                let name = domain_name(domain).unwrap_or("?");
                add_stat(plane, stats, schema::DOMAIN, XStatValue::Str(name.into()));
            }
        }
        let mut moving = objects
            .iter()
            .filter(|&&(_, tag)| {
                ObjectKind::from_tag(tag).is_none_or(|(kind, _)| kind != ObjectKind::ThreadMarker)
            })
            .peekable();
        let mut kept = Vec::with_capacity(line.events.len());
        for (i, event) in std::mem::take(&mut line.events).into_iter().enumerate() {
            match moving.peek() {
                Some(&&(at, tag)) if at == i => {
                    moving.next();
                    domains.entry(tag as u32).or_default().push(event);
                }
                _ => kept.push(event),
            }
        }
        line.events = kept;
    }
    domains
}

/// One line per domain, named after it, with overlapping objects in extra lanes
/// (`name (2)`, ...); nested ones share a lane. Ids count up from
/// [`schema::DOMAIN_LINES_ID`].
pub(super) fn lines(domains: BTreeMap<u32, Vec<XEvent>>) -> Vec<XLine> {
    let mut out = Vec::new();
    for (id, mut events) in domains {
        let name = domain_name(id).unwrap_or("?");
        events.sort_by_key(|e| (e.offset_ps(), std::cmp::Reverse(e.duration_ps)));
        for (lane, events) in nest(events).into_iter().enumerate() {
            let line_name = match lane {
                0 => name.to_owned(),
                n => format!("{name} ({})", n + 1),
            };
            let line_id = schema::DOMAIN_LINES_ID + out.len() as u32;
            out.extend(build_line(events, line_id, &line_name));
        }
    }
    out
}

/// Packs events sorted by start (longest first on ties) onto the fewest lanes on which
/// each either follows or nests inside what is before it: no partial overlaps.
fn nest(events: Vec<XEvent>) -> Vec<Vec<XEvent>> {
    // Each lane: its events, and the ends of the events still open at the last start.
    let mut lanes: Vec<(Vec<XEvent>, Vec<i64>)> = Vec::new();
    for event in events {
        let (start, end) = (event.offset_ps(), event.offset_ps() + event.duration_ps);
        let fits = |open: &mut Vec<i64>| {
            while open.last().is_some_and(|&e| e <= start) {
                open.pop();
            }
            open.last().is_none_or(|&e| end <= e)
        };
        match lanes
            .iter_mut()
            .find_map(|(lane, open)| fits(open).then_some((lane, open)))
        {
            Some((lane, open)) => {
                lane.push(event);
                open.push(end);
            }
            None => lanes.push((vec![event], vec![end])),
        }
    }
    lanes.into_iter().map(|(lane, _)| lane).collect()
}

#[cfg(test)]
mod tests {
    use super::super::line::lane_tests::{event, spans};
    use super::*;

    #[test]
    fn nested_objects_share_a_lane_and_overlapping_ones_do_not() {
        let lanes = nest(vec![event(0, 10), event(2, 4), event(5, 12), event(10, 11)]);
        assert_eq!(
            spans(&lanes),
            [vec![(0, 10), (2, 4), (10, 11)], vec![(5, 12)]]
        );
    }
}
