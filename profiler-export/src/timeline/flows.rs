//! Links between events, as flows: producer/consumer stats (`_pt`/`_p` →
//! `_ct`/`_c`, async task hops) and `correlation_id` (a host launch → the device
//! activity it started). A link becomes a flow only when both ends are slices in the
//! space.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::convert::Infallible;

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XPlane, XStatValue};

use super::events::Source;

/// Up to two flow ids (an event can continue one link and start the next, or be both a
/// link and a launch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowIds {
    ids: [u64; 2],
    len: u8,
}

impl FlowIds {
    fn push(&mut self, id: u64) {
        if usize::from(self.len) < self.ids.len() && !self.as_slice().contains(&id) {
            self.ids[usize::from(self.len)] = id;
            self.len += 1;
        }
    }

    /// The ids.
    pub fn as_slice(&self) -> &[u64] {
        &self.ids[..usize::from(self.len)]
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// SplitMix64's finaliser: a bijection that spreads neighbouring inputs apart. Flow
/// ids and OTLP ids are derived with it.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The ids of a plane's link stats, looked up once per plane.
#[derive(Clone, Copy, Debug)]
pub(super) struct LinkStats {
    producer: Option<i64>,
    producer_type: Option<i64>,
    consumer: Option<i64>,
    consumer_type: Option<i64>,
    correlation: Option<i64>,
    /// On a device plane a correlation id ends a flow; on the host it starts one.
    pub(super) is_device: bool,
}

impl LinkStats {
    pub(super) fn of(plane: &XPlane) -> LinkStats {
        LinkStats {
            producer: plane.stat_id(schema::PRODUCER_ID),
            producer_type: plane.stat_id(schema::PRODUCER_TYPE),
            consumer: plane.stat_id(schema::CONSUMER_ID),
            consumer_type: plane.stat_id(schema::CONSUMER_TYPE),
            correlation: plane.stat_id(schema::CORRELATION_ID),
            is_device: plane.name.starts_with("/device:"),
        }
    }

    fn any(&self) -> bool {
        self.producer.is_some() || self.consumer.is_some() || self.correlation.is_some()
    }

    /// The link ends `event` carries.
    fn links(self, event: &XEvent) -> impl Iterator<Item = Link> + '_ {
        let int = move |id: Option<i64>| {
            id.and_then(|id| event.stats.iter().find(|s| s.metadata_id == id))
                .and_then(|s| match s.value {
                    Some(XStatValue::Int64(v)) => Some(v as u64),
                    Some(XStatValue::Uint64(v)) => Some(v),
                    _ => None,
                })
        };
        let producer = int(self.producer).map(|id| Link {
            kind: int(self.producer_type).unwrap_or(0) & 0xff,
            id,
            producer: true,
        });
        let consumer = int(self.consumer).map(|id| Link {
            kind: int(self.consumer_type).unwrap_or(0) & 0xff,
            id,
            producer: false,
        });
        let correlation = int(self.correlation).map(|id| Link {
            kind: KIND_CORRELATION,
            id,
            producer: !self.is_device,
        });
        producer.into_iter().chain(consumer).chain(correlation)
    }
}

/// One end of a link found on an event.
struct Link {
    kind: u64,
    id: u64,
    producer: bool,
}

impl Link {
    /// The flow id both ends share: a mix of the link's kind and id, so producer ids
    /// and correlation ids never collide.
    fn id(&self) -> u64 {
        mix(self.id ^ self.kind.rotate_right(8)) | 1
    }
}

const KIND_CORRELATION: u64 = 1 << 40;

/// Where an event comes in the walk, which is how viewers meet it: by start, then
/// (equal starts) plane, line, longest first, and position in the line.
type WalkKey = (i64, usize, usize, Reverse<i64>, usize);

/// Which flow ids have both ends in the space, and which run backwards in time.
///
/// Perfetto's trace processor reads a flow's start (`flow_ids`) before its end
/// (`terminating_flow_ids`) in time order and drops an end it meets first; the DevTools
/// engine does the same with `s` and `f`. Files from other producers have consumers
/// that start before their producers (clocks of different devices, an async hop
/// recorded late); such a flow is emitted from the consumer to the producer, so that
/// it survives, rather than lost.
#[derive(Debug, Default)]
pub(super) struct FlowIndex {
    /// Matched ids, and whether the consumer comes first.
    matched: HashMap<u64, bool>,
}

impl FlowIndex {
    pub(super) fn build(source: &Source<'_>) -> FlowIndex {
        // The first of each end, per id.
        let mut producers: HashMap<u64, WalkKey> = HashMap::new();
        let mut consumers: HashMap<u64, WalkKey> = HashMap::new();
        for (p, plane) in source.space.planes.iter().enumerate() {
            let stats = LinkStats::of(plane);
            if !stats.any() {
                continue;
            }
            for (l, line) in plane.lines.iter().enumerate() {
                let base = line.timestamp_ns.saturating_mul(1000);
                let mut index = 0;
                let Ok(()) = source.events(p, l).for_each(false, |event| {
                    index += 1;
                    // Flows join slices: an instant has no extent for a viewer to
                    // attach an arrow's end to (Chrome's `"bp":"e"` binds to an
                    // enclosing slice).
                    if event.duration_ps <= 0 {
                        return Ok::<(), Infallible>(());
                    }
                    let start = base.saturating_add(event.offset_ps());
                    let key = (start, p, l, Reverse(event.duration_ps), index);
                    for link in stats.links(event) {
                        let ends = if link.producer {
                            &mut producers
                        } else {
                            &mut consumers
                        };
                        let first = ends.entry(link.id()).or_insert(key);
                        *first = (*first).min(key);
                    }
                    Ok(())
                });
            }
        }
        let matched = producers
            .into_iter()
            .filter_map(|(id, produced)| Some((id, consumers.get(&id)? < &produced)))
            .collect();
        FlowIndex { matched }
    }

    /// Flows with both ends.
    pub(super) fn len(&self) -> usize {
        self.matched.len()
    }

    /// The flows that start and end at `event`, on a plane with link stats `stats`.
    ///
    /// Inlined for its test alone: most profiles have no flows, and the call with its
    /// two `FlowIds` returned through memory took a tenth of the Chrome JSON export.
    #[inline]
    pub(super) fn of(&self, stats: &LinkStats, event: &XEvent) -> (FlowIds, FlowIds) {
        if self.matched.is_empty() || event.duration_ps <= 0 {
            return (FlowIds::default(), FlowIds::default());
        }
        self.of_linked(stats, event)
    }

    fn of_linked(&self, stats: &LinkStats, event: &XEvent) -> (FlowIds, FlowIds) {
        let mut out = FlowIds::default();
        let mut inn = FlowIds::default();
        for link in stats.links(event) {
            let id = link.id();
            if let Some(&backwards) = self.matched.get(&id) {
                // A backwards flow starts at its consumer.
                if link.producer != backwards {
                    out.push(id);
                } else {
                    inn.push(id);
                }
            }
        }
        (out, inn)
    }
}
