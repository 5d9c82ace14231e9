//! Lane assignment: the same lanes, parents and end order as the plain greedy scan it
//! replaced, and O(n log n) on lines of slices that overlap without nesting.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::mpsc;
use std::time::Duration;

use profiler_core::schema;
use profiler_core::xspace::{sort_events, PlaneBuilder, XEvent, XLine, XSpace};
use profiler_export::timeline::{Arg, CounterTrack, Process, Slice, Thread, Timeline, Visitor};

/// What the walk did, in order: slices as (lane, parent seq) and ends as (lane, end).
#[derive(Default, Debug, PartialEq)]
struct Placed {
    lanes: Vec<u32>,
    slices: Vec<(usize, Option<u64>)>,
    ends: Vec<(usize, i64)>,
    /// Lane of each thread id.
    lane_of: HashMap<u32, usize>,
}

impl Placed {
    fn lane(&self, tid: u32) -> usize {
        self.lane_of[&tid]
    }
}

impl<'a> Visitor<'a> for Placed {
    type Error = Infallible;
    fn process(&mut self, _: &Process<'a>) -> Result<(), Infallible> {
        Ok(())
    }
    fn thread(&mut self, t: &Thread<'a>) -> Result<(), Infallible> {
        self.lane_of.insert(t.tid, self.lanes.len());
        self.lanes.push(t.tid);
        Ok(())
    }
    fn slice(&mut self, s: &Slice<'a, '_>) -> Result<(), Infallible> {
        let lane = self.lane(s.thread.tid);
        self.slices.push((lane, s.parent));
        Ok(())
    }
    fn slice_end(&mut self, t: &Thread<'a>, end_ps: i64) -> Result<(), Infallible> {
        let lane = self.lane(t.tid);
        self.ends.push((lane, end_ps));
        Ok(())
    }
    fn counter_track(&mut self, _: &CounterTrack<'a>) -> Result<(), Infallible> {
        Ok(())
    }
    fn counter(&mut self, _: &CounterTrack<'a>, _: i64, _: Arg<'_>) -> Result<(), Infallible> {
        Ok(())
    }
}

/// The rule as it was first written: scan every lane to close, then to place.
fn reference(events: &[(i64, i64)]) -> Placed {
    let mut placed = Placed::default();
    let mut lanes: Vec<Vec<(i64, u64)>> = Vec::new();
    for (seq, &(start, dur)) in events.iter().enumerate() {
        let end = start + dur;
        for (n, lane) in lanes.iter_mut().enumerate() {
            while lane.last().is_some_and(|&(e, _)| e <= start) {
                placed.ends.push((n, lane.pop().expect("open").0));
            }
        }
        let n = match lanes
            .iter()
            .position(|l| l.last().is_none_or(|&(top, _)| end <= top))
        {
            Some(n) => n,
            None => {
                lanes.push(Vec::new());
                placed.lanes.push(lanes.len() as u32);
                lanes.len() - 1
            }
        };
        placed.slices.push((n, lanes[n].last().map(|&(_, s)| s)));
        if dur > 0 {
            lanes[n].push((end, seq as u64));
        }
    }
    for (n, lane) in lanes.iter_mut().enumerate() {
        while let Some((e, _)) = lane.pop() {
            placed.ends.push((n, e));
        }
    }
    placed
}

/// One plane of one line holding `events` (start, duration), in picoseconds.
fn space(events: &[(i64, i64)]) -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let name = plane.event_metadata_id("e");
    let events = events
        .iter()
        .map(|&(start, dur)| XEvent::new(name, start, dur))
        .collect();
    plane.add_line(XLine {
        id: 1,
        name: "line".into(),
        events,
        ..XLine::default()
    });
    XSpace {
        planes: vec![plane.build()],
        ..XSpace::default()
    }
}

fn walk(space: &XSpace) -> Placed {
    let mut placed = Placed::default();
    let Ok(_) = Timeline::new(space).walk(&mut placed);
    placed
}

/// `events` in the walk's order, as the reference needs them.
fn sorted(events: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut xs: Vec<XEvent> = events.iter().map(|&(s, d)| XEvent::new(0, s, d)).collect();
    sort_events(&mut xs);
    xs.iter().map(|e| (e.offset_ps(), e.duration_ps)).collect()
}

#[test]
fn lanes_match_the_greedy_scan_on_random_lines() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for round in 0..300 {
        let n = 1 + next(60) as usize;
        // Short spans nest often, long ones overlap; some instants, some shared ends.
        let span = [10, 100, 1000][round % 3];
        let events: Vec<(i64, i64)> = (0..n)
            .map(|_| (next(500) as i64, next(span) as i64))
            .collect();
        let events = sorted(&events);
        let mut want = reference(&events);
        let got = walk(&space(&events));
        // Lanes are compared by position; the thread ids themselves are the walk's.
        want.lanes.clone_from(&got.lanes);
        want.lane_of.clone_from(&got.lane_of);
        assert_eq!(got, want, "round {round}: {events:?}");
    }
}

#[test]
fn a_staircase_of_overlapping_slices_is_not_quadratic() {
    // Each slice starts before the previous one ends and ends after it: none nest, so
    // every slice needs a lane of its own. The plain scan took minutes here.
    const N: i64 = 100_000;
    let events: Vec<(i64, i64)> = (0..N).map(|i| (i * 1000, N * 1000)).collect();
    let space = space(&events);
    let (done, wait) = mpsc::channel();
    std::thread::spawn(move || {
        let placed = walk(&space);
        let _ = done.send((placed.lanes.len(), placed.ends.len()));
    });
    let (lanes, ends) = wait
        .recv_timeout(Duration::from_secs(60))
        .expect("the walk finished within a minute");
    assert_eq!(lanes, N as usize);
    assert_eq!(ends, N as usize);
}
