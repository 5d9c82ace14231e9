//! Links between events, as flows: producer/consumer stats (`_pt`/`_p` →
//! `_ct`/`_c`, async task hops) and `correlation_id` (a host launch → the device
//! activity it started). A link becomes flows only when both ends are slices in the
//! space.
//!
//! **One flow per consumer.** XProf's model is one producer and any number of
//! consumers per link id (JAX's `cuGraphLaunch` correlates with each of the graph's
//! eleven kernels, a `_p` with each `_c` that reads its output); Perfetto's and
//! Chrome's is a flow id with one start and one end. Each (producer, consumer) pair
//! becomes a flow of its own, so every arrow starts at the event that caused it, as
//! XProf's own trace viewer draws them (one `flow_out` on the launch, a `flow_in` on
//! each kernel). A chain in time order (launch → kernel 1 → kernel 2 → …) would bind
//! just as well and draw as many arrows, but each arrow after the first would claim
//! that one consumer led to the next, which the file does not say.
//!
//! **The ends that count.** A link id with two producers (a malformed file) keeps the
//! first the walk meets (planes, then lines, in order; a line in time order); the other
//! starts nothing. Events of a `_counters_` line are counter samples, not slices, and
//! instants have no extent to bind an arrow to: neither is an end. An event that both
//! produces and consumes one id links to itself, which is no flow.
//!
//! The index is built by walking the events in exactly the order and with exactly the
//! rules of the timeline walk, so that the walk, pairing the `k`-th consumer it meets
//! with the producer's `k`-th flow, agrees with it without keeping anything per event.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XEventData, XPlane, XStatValue};

use super::events::Source;
use super::origin::Origin;

/// The flow ids that start (or end) at one slice: one per consumer the slice produces
/// for, or one per link it consumes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowIds<'f> {
    ids: &'f [u64],
}

impl<'f> FlowIds<'f> {
    /// The ids.
    pub fn as_slice(&self) -> &'f [u64] {
        self.ids
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.ids.len()
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

    /// The link ends `event` carries: producers first.
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
            key: key(int(self.producer_type).unwrap_or(0) & 0xff, id),
            producer: true,
        });
        let consumer = int(self.consumer).map(|id| Link {
            key: key(int(self.consumer_type).unwrap_or(0) & 0xff, id),
            producer: false,
        });
        let correlation = int(self.correlation).map(|id| Link {
            key: key(KIND_CORRELATION, id),
            producer: !self.is_device,
        });
        let (host_launch, device_end) = match correlation {
            Some(c) if c.producer => (Some(c), None),
            other => (None, other),
        };
        producer
            .into_iter()
            .chain(host_launch)
            .chain(consumer)
            .chain(device_end)
    }
}

/// One end of a link found on an event.
#[derive(Clone, Copy)]
struct Link {
    /// The link: its kind and id, mixed so that producer ids and correlation ids never
    /// collide.
    key: u64,
    producer: bool,
}

fn key(kind: u64, id: u64) -> u64 {
    mix(id ^ kind.rotate_right(8))
}

const KIND_CORRELATION: u64 = 1 << 40;

/// The id of the flow from link `key`'s producer to its `k`-th consumer.
fn flow_id(key: u64, k: u32) -> u64 {
    mix(key ^ mix(u64::from(k))) | 1
}

/// The links one event produces for (at most its `_p` and a host correlation id).
#[derive(Default)]
struct Produced {
    keys: [u64; 2],
    len: usize,
}

impl Produced {
    fn push(&mut self, key: u64) {
        if self.len < self.keys.len() {
            self.keys[self.len] = key;
            self.len += 1;
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.keys[..self.len].contains(&key)
    }
}

/// A link with both ends: its producer, and where its consumers' starts are.
#[derive(Clone, Copy, Debug)]
struct Matched {
    producer_start: i64,
    /// Index of its first consumer in [`FlowIndex::starts`].
    first: usize,
    count: u32,
}

/// Which links have both ends, and where each end is in time.
///
/// Perfetto's trace processor reads a flow's start (`flow_ids`) before its end
/// (`terminating_flow_ids`) in time order and drops an end it meets first; the DevTools
/// engine does the same with `s` and `f`. Files from other producers have consumers
/// that start before their producers (clocks of different devices, an async hop
/// recorded late); such a flow is emitted from the consumer to the producer, so that
/// it survives, rather than lost.
#[derive(Debug, Default)]
pub(super) struct FlowIndex {
    links: HashMap<u64, Matched>,
    /// Consumers' starts (ps from the origin), grouped by link, each group in the
    /// order the walk meets them.
    starts: Vec<i64>,
    pairs: u64,
}

impl FlowIndex {
    pub(super) fn build(source: &Source<'_>, origin: &Origin) -> FlowIndex {
        let mut producers: HashMap<u64, i64> = HashMap::new();
        // (link, start) of every consumer end, in walk order.
        let mut consumers: Vec<(u64, i64)> = Vec::new();
        each_linked(source, origin, |stats, start, event| {
            let mut produced = Produced::default();
            for link in stats.links(event) {
                if link.producer {
                    if let std::collections::hash_map::Entry::Vacant(e) = producers.entry(link.key)
                    {
                        e.insert(start);
                        produced.push(link.key);
                    }
                } else if !produced.contains(link.key) {
                    consumers.push((link.key, start));
                }
            }
        });
        consumers.retain(|(key, _)| producers.contains_key(key));
        // Stable: each link's consumers stay in walk order.
        consumers.sort_by_key(|&(key, _)| key);
        let mut index = FlowIndex {
            links: HashMap::new(),
            starts: consumers.iter().map(|&(_, start)| start).collect(),
            pairs: consumers.len() as u64,
        };
        let mut at = 0;
        for group in consumers.chunk_by(|a, b| a.0 == b.0) {
            let key = group[0].0;
            index.links.insert(
                key,
                Matched {
                    producer_start: producers[&key],
                    first: at,
                    count: u32::try_from(group.len()).unwrap_or(u32::MAX),
                },
            );
            at += group.len();
        }
        index
    }

    /// Flows with both ends: one per consumer of a link with a producer.
    pub(super) fn len(&self) -> u64 {
        self.pairs
    }

    /// Whether the consumer of flow `k` of `link` comes before its producer.
    fn backwards(&self, link: &Matched, k: u32) -> bool {
        self.starts[link.first + k as usize] < link.producer_start
    }
}

/// Calls `f` with each event that can be a flow's end, in the order of the timeline
/// walk, with its plane's link stats and its start (ps from the origin): slices (not
/// instants, not aggregated events) of every line but `_counters_`, on the planes the
/// walk shows.
fn each_linked(source: &Source<'_>, origin: &Origin, mut f: impl FnMut(&LinkStats, i64, &XEvent)) {
    for (p, plane) in source.space.planes.iter().enumerate() {
        if plane.name == schema::TASK_ENV_PLANE {
            continue;
        }
        let stats = LinkStats::of(plane);
        if !stats.any() {
            continue;
        }
        for (l, line) in plane.lines.iter().enumerate() {
            if line.name == schema::COUNTERS_LINE {
                continue;
            }
            let base = origin.line_start_ps(line);
            let Ok(()) = source.events(p, l).for_each(true, |event| {
                if let XEventData::OffsetPs(offset) = event.data() {
                    if event.duration_ps > 0 {
                        f(&stats, base.saturating_add(offset), event);
                    }
                }
                Ok::<(), Infallible>(())
            });
        }
    }
}

/// What one walk has met of the flows: which links' producers, how many of each
/// link's consumers; and the ids of the slice being walked.
#[derive(Debug, Default)]
pub(super) struct FlowWalk {
    produced: HashSet<u64>,
    next_consumer: HashMap<u64, u32>,
    out: Vec<u64>,
    into: Vec<u64>,
}

impl FlowWalk {
    /// Finds the flows that start and end at `event` (a slice of a plane with link
    /// stats `stats`, walked in the index's order); [`FlowWalk::ids`] gives them.
    ///
    /// Inlined for its test alone: most profiles have no flows.
    #[inline]
    pub(super) fn visit(&mut self, index: &FlowIndex, stats: &LinkStats, event: &XEvent) {
        if index.links.is_empty() {
            return;
        }
        self.out.clear();
        self.into.clear();
        if event.duration_ps <= 0 {
            return;
        }
        self.visit_linked(index, stats, event);
    }

    fn visit_linked(&mut self, index: &FlowIndex, stats: &LinkStats, event: &XEvent) {
        let mut produced = Produced::default();
        for link in stats.links(event) {
            let Some(matched) = index.links.get(&link.key) else {
                continue;
            };
            if link.producer {
                if !self.produced.insert(link.key) {
                    continue; // a second producer of the link
                }
                produced.push(link.key);
                for k in 0..matched.count {
                    let id = flow_id(link.key, k);
                    // A backwards flow starts at its consumer.
                    if index.backwards(matched, k) {
                        self.into.push(id);
                    } else {
                        self.out.push(id);
                    }
                }
            } else if !produced.contains(link.key) {
                let next = self.next_consumer.entry(link.key).or_insert(0);
                let k = *next;
                *next += 1;
                if k < matched.count {
                    let id = flow_id(link.key, k);
                    if index.backwards(matched, k) {
                        self.out.push(id);
                    } else {
                        self.into.push(id);
                    }
                }
            }
        }
    }

    /// The flows that start and end at the slice last visited.
    pub(super) fn ids(&self) -> (FlowIds<'_>, FlowIds<'_>) {
        (FlowIds { ids: &self.out }, FlowIds { ids: &self.into })
    }
}
