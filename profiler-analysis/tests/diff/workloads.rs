//! The profiles the tests compare: training loops written event by event, with a
//! seeded, portable jitter, so each case's answer is known.

use profiler_analysis::diff::{self, OpKind, Side};
use profiler_core::schema;
use profiler_core::xspace::{sort_events, PlaneBuilder, Stats, XEvent, XLine, XSpace, XStatValue};
use profiler_core::Profile;

pub(crate) const US: i64 = 1_000_000; // ps

/// splitmix64: a seeded, portable source of jitter.
pub(crate) struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `mean_us` with a multiplicative jitter of about `sd` (5% for 0.05).
    pub(crate) fn jitter(&mut self, mean_us: f64, sd: f64) -> i64 {
        (mean_us * (sd * self.normal()).exp()).round() as i64
    }
}

/// A host line being written: events placed one after another.
pub(crate) struct Loop {
    pub(crate) host: PlaneBuilder,
    events: Vec<XEvent>,
    pub(crate) rng: Rng,
    /// The op made slower, and by how much.
    slower: Option<(&'static str, f64)>,
}

impl Loop {
    pub(crate) fn new(seed: u64, slower: Option<(&'static str, f64)>) -> Loop {
        Loop {
            host: PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE),
            events: Vec::new(),
            rng: Rng(seed),
            slower,
        }
    }

    pub(crate) fn event(
        &mut self,
        name: &str,
        from_us: i64,
        to_us: i64,
        stats: Stats,
    ) -> &mut XEvent {
        let id = self.host.event_metadata_id(name);
        self.events
            .push(XEvent::new(id, from_us * US, (to_us - from_us) * US).with_stats(stats));
        self.events.last_mut().expect("pushed")
    }

    /// An op of about `mean_us` at `at`, jittered (and slowed if it is the one);
    /// returns where it ends.
    pub(crate) fn op(&mut self, name: &'static str, at: i64, mean_us: f64) -> i64 {
        let factor = match self.slower {
            Some((slow, by)) if slow == name => by,
            _ => 1.0,
        };
        let end = at + self.rng.jitter(mean_us * factor, 0.05);
        self.event(name, at, end, Stats::new());
        end
    }

    pub(crate) fn step_stats(&mut self, step: i64) -> Stats {
        Stats::from([
            self.host.stat(schema::STEP_NUM, XStatValue::Int64(step)),
            self.host.stat(schema::IS_ROOT, XStatValue::Int64(1)),
        ])
    }

    pub(crate) fn space(mut self, host: &str) -> XSpace {
        sort_events(&mut self.events);
        self.host.add_line(XLine {
            id: 1,
            name: "main".into(),
            timestamp_ns: 1000,
            events: self.events,
            ..XLine::default()
        });
        XSpace {
            planes: vec![self.host.build()],
            hostnames: vec![host.to_owned()],
            ..XSpace::default()
        }
    }
}

/// `steps` steps of a train_loop-shaped workload (load, forward with two matmuls,
/// loss, backward, optimizer; every eighth batch a cache miss), each op jittered by
/// about 5%, as `Train` steps with `step_num` (or without, when `marked` is false).
pub(crate) fn train_loop(
    seed: u64,
    steps: i64,
    slower: Option<(&'static str, f64)>,
    marked: bool,
) -> XSpace {
    loop_space(seed, steps, slower, marked, false)
}

/// `steps` whole steps of [`train_loop`], then one more that the session's stop cut in
/// its forward pass: its `Train` root ends at the stop, marked `cut_by_session`, as the
/// recorder marks a step still open at the stop.
pub(crate) fn train_loop_cut_at_stop(seed: u64, steps: i64) -> XSpace {
    loop_space(seed, steps, None, true, true)
}

fn loop_space(
    seed: u64,
    steps: i64,
    slower: Option<(&'static str, f64)>,
    marked: bool,
    cut_after: bool,
) -> XSpace {
    let mut l = Loop::new(seed, slower);
    let mut t = 0;
    for step in 0..steps + i64::from(cut_after) {
        let start = t;
        let miss = if step % 8 == 0 { 3.0 } else { 1.0 };
        let mut at = l.op("load_batch", start + 20, 2000.0 * miss);
        let forward = at;
        at = l.op("dense_1/MatMul", at + 50, 5000.0);
        let mut stats = if marked {
            l.step_stats(step)
        } else {
            Stats::new()
        };
        if step == steps {
            // The stop came here: forward and the step end with it.
            l.event("forward", forward, at, Stats::new());
            stats.push(l.host.stat(
                schema::CUT_BY_SESSION,
                XStatValue::Str(schema::CUT_AT_STOP.into()),
            ));
            l.event("Train", start, at, stats);
            break;
        }
        at = l.op("dense_2/MatMul", at, 800.0);
        l.event("forward", forward, at, Stats::new());
        at = l.op("loss", at, 300.0);
        at = l.op("backward", at, 7000.0);
        at = l.op("optimizer", at, 1500.0);
        let end = at + 100;
        l.event("Train", start, end, stats);
        t = end + 10;
    }
    l.space("trainer")
}

pub(crate) fn profile(space: XSpace) -> Side {
    Side::from(Profile::new(space))
}

pub(crate) fn host_ops(d: &diff::Diff) -> Vec<&diff::OpDiff> {
    d.ops.iter().filter(|o| o.kind == OpKind::Host).collect()
}
