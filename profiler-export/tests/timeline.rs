//! The walk every exporter shares: nesting, lanes, flows, counters and time.

use std::collections::HashMap;
use std::convert::Infallible;

use prof_test_support::spaces;
use profiler_core::schema;
use profiler_core::xspace::XSpace;
use profiler_export::timeline::{Arg, CounterTrack, Process, Slice, Thread, Timeline, Visitor};

#[derive(Debug, Clone, PartialEq)]
struct Seen {
    thread: String,
    name: String,
    start_ns: i64,
    dur_ns: i64,
    seq: u64,
    parent: Option<u64>,
    root: u64,
    flows_out: Vec<u64>,
    flows_in: Vec<u64>,
    args: Vec<(String, String)>,
}

#[derive(Default)]
struct Log {
    processes: Vec<(u32, String)>,
    threads: Vec<(u32, u32, String)>,
    slices: Vec<Seen>,
    /// Per thread, the stack of open slices (by name), to check ends come innermost first.
    open: HashMap<String, Vec<(String, i64)>>,
    ends: usize,
    counters: Vec<(String, i64, f64)>,
    tracks: Vec<String>,
}

impl<'a> Visitor<'a> for Log {
    type Error = Infallible;
    fn process(&mut self, p: &Process<'a>) -> Result<(), Infallible> {
        self.processes.push((p.pid, p.name.to_owned()));
        Ok(())
    }
    fn thread(&mut self, t: &Thread<'a>) -> Result<(), Infallible> {
        assert!(
            self.processes.iter().any(|(pid, _)| *pid == t.pid),
            "thread before its process"
        );
        self.threads.push((t.pid, t.tid, t.name.to_string()));
        Ok(())
    }
    fn slice(&mut self, s: &Slice<'a, '_>) -> Result<(), Infallible> {
        let thread = s.thread.name.to_string();
        assert!(
            self.threads.iter().any(|t| t.2 == thread),
            "slice before its thread"
        );
        let args = s
            .args()
            .map(|(k, v)| (k.to_owned(), format!("{v:?}")))
            .collect();
        if !s.is_instant() {
            self.open
                .entry(thread.clone())
                .or_default()
                .push((s.name.to_string(), s.start_ps + s.duration_ps));
        }
        self.slices.push(Seen {
            thread,
            name: s.name.to_string(),
            start_ns: s.start_ps / 1000,
            dur_ns: s.duration_ps / 1000,
            seq: s.seq,
            parent: s.parent,
            root: s.root,
            flows_out: s.flows_out.as_slice().to_vec(),
            flows_in: s.flows_in.as_slice().to_vec(),
            args,
        });
        Ok(())
    }
    fn slice_end(&mut self, t: &Thread<'a>, end_ps: i64) -> Result<(), Infallible> {
        let (name, end) = self
            .open
            .get_mut(t.name.as_ref())
            .and_then(Vec::pop)
            .expect("end without an open slice");
        assert_eq!(end, end_ps, "{name} ended at the wrong time");
        self.ends += 1;
        Ok(())
    }
    fn counter_track(&mut self, c: &CounterTrack<'a>) -> Result<(), Infallible> {
        self.tracks.push(c.name.to_string());
        Ok(())
    }
    fn counter(&mut self, c: &CounterTrack<'a>, at: i64, v: Arg<'_>) -> Result<(), Infallible> {
        self.counters
            .push((c.name.to_string(), at / 1000, v.as_f64().expect("numeric")));
        Ok(())
    }
}

fn walk(space: &XSpace) -> (Log, profiler_export::timeline::Totals) {
    let mut log = Log::default();
    let Ok(totals) = Timeline::new(space).walk(&mut log);
    (log, totals)
}

fn find<'l>(log: &'l Log, name: &str) -> &'l Seen {
    log.slices
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no slice {name}"))
}

#[test]
fn every_event_once_with_totals_and_balanced_ends() {
    let space = spaces::space();
    let (log, totals) = walk(&space);
    assert_eq!(totals.slices, spaces::SLICES);
    assert_eq!(log.slices.len() as u64, spaces::SLICES);
    assert_eq!(totals.duration_ps, i128::from(spaces::DURATION_NS) * 1000);
    assert_eq!(totals.counter_samples, spaces::COUNTER_SAMPLES);
    assert_eq!(totals.flows, spaces::FLOWS);
    let instants = log.slices.iter().filter(|s| s.dur_ns == 0).count();
    assert_eq!(log.ends, log.slices.len() - instants);
    assert!(log.open.values().all(Vec::is_empty));
    // The task environment is not a process; the host and the GPU are.
    let names: Vec<_> = log.processes.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(names, ["/host:CPU", "/device:GPU:0"]);
}

#[test]
fn times_are_rebased_on_the_wall_clock_start() {
    let space = spaces::space();
    let timeline = Timeline::new(&space);
    assert_eq!(timeline.origin().unix_ns, spaces::START_UNIX_NS as i64);
    let (log, _) = walk(&space);
    // Lines start 1000 ns (main) and 1500 ns (GPU) after the profile start.
    assert_eq!(find(&log, "Train").start_ns, 1000);
    assert_eq!(find(&log, "forward").start_ns, 1100);
    assert_eq!(find(&log, "gemm_kernel").start_ns, 1500);
    assert_eq!(
        timeline.origin().to_unix_ns(1_100_000),
        spaces::START_UNIX_NS as i64 + 1100
    );
}

#[test]
fn absolute_lines_from_older_producers_are_rebased() {
    let mut space = spaces::space();
    space.planes.retain(|p| p.name != "Task Environment");
    for line in space.planes.iter_mut().flat_map(|p| &mut p.lines) {
        line.timestamp_ns += spaces::START_UNIX_NS as i64;
    }
    let origin = Timeline::new(&space).origin();
    // The earliest line (main, at +1000 ns) becomes the origin.
    assert_eq!(origin.unix_ns, spaces::START_UNIX_NS as i64 + 1000);
    let (log, _) = walk(&space);
    assert_eq!(find(&log, "Train").start_ns, 0);
    assert_eq!(find(&log, "gemm_kernel").start_ns, 500);
}

#[test]
fn nesting_gives_parents_and_roots() {
    let (log, _) = walk(&spaces::space());
    let train = find(&log, "Train");
    assert_eq!(train.parent, None);
    assert_eq!(train.root, train.seq);
    let fwd = find(&log, "forward");
    assert_eq!(fwd.parent, Some(train.seq));
    let launch = find(&log, "cuLaunchKernel");
    assert_eq!(launch.parent, Some(find(&log, "backward").seq));
    assert_eq!(launch.root, train.seq);
    // The instant after backward ended sits directly under the step.
    assert_eq!(find(&log, "checkpoint").parent, Some(train.seq));
}

#[test]
fn partial_overlaps_move_to_another_lane_unclipped() {
    let (log, _) = walk(&spaces::space());
    let a = find(&log, "overlap_a");
    let b = find(&log, "overlap_b");
    assert_eq!(a.thread, "io");
    assert_eq!(b.thread, "io (2)");
    assert_eq!((b.start_ns, b.dur_ns), (2050, 80));
    assert_eq!(b.parent, None);
    let io: Vec<_> = log
        .threads
        .iter()
        .filter(|t| t.2.starts_with("io"))
        .collect();
    assert_eq!(io.len(), 2);
    assert_ne!(io[0].1, io[1].1, "lanes need distinct thread ids");
    assert_eq!(io[0].1, 3, "the first lane keeps the line id");
}

#[test]
fn thread_ids_are_unique_across_planes() {
    let mut space = spaces::space();
    // A GPU stream numbered like the host's main thread.
    space.planes[1].lines[0].id = 1;
    let (log, _) = walk(&space);
    let mut tids: Vec<_> = log.threads.iter().map(|t| t.1).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), log.threads.len(), "{:?}", log.threads);
}

#[test]
fn flows_join_both_ends_only() {
    let (log, _) = walk(&spaces::space());
    let send = find(&log, "enqueue");
    let recv = find(&log, "dequeue");
    assert_eq!(send.flows_out.len(), 1);
    assert_eq!(send.flows_out, recv.flows_in);
    let launch = find(&log, "cuLaunchKernel");
    let kernel = find(&log, "gemm_kernel");
    assert_eq!(launch.flows_out.len(), 1);
    assert_eq!(launch.flows_out, kernel.flows_in);
    assert_ne!(launch.flows_out, send.flows_out);
    assert!(find(&log, "orphan").flows_out.is_empty());
    // A link whose end is an instant is no flow: nothing to attach the arrow to.
    let mut space = spaces::space();
    let worker = &mut space.planes[0].lines[1];
    worker.events[0].duration_ps = 0; // dequeue, the consumer
    let (log, totals) = walk(&space);
    assert!(find(&log, "enqueue").flows_out.is_empty());
    assert_eq!(totals.flows, spaces::FLOWS - 1);
    // Link stats become flows, not arguments; the rest are arguments.
    assert!(send.args.is_empty(), "{:?}", send.args);
    let train = find(&log, "Train");
    assert_eq!(train.args, [("step_num".to_owned(), "Int(3)".to_owned())]);
}

#[test]
fn counters_become_tracks_of_samples_in_order() {
    let (log, _) = walk(&spaces::space());
    assert_eq!(log.tracks, [schema::HOST_BYTES_IN_USE]);
    let samples: Vec<_> = log.counters.iter().map(|c| (c.1, c.2)).collect();
    assert_eq!(samples, [(1000, 1.0), (1500, 3.0), (1900, 2.0)]);
    assert!(log
        .slices
        .iter()
        .all(|s| s.name != schema::HOST_BYTES_IN_USE));
}

#[test]
fn unsorted_lines_are_walked_in_order() {
    let mut space = spaces::space();
    space.planes[0].lines[0].events.reverse();
    let (log, totals) = walk(&space);
    assert_eq!(totals.slices, spaces::SLICES);
    assert_eq!(find(&log, "forward").parent, Some(find(&log, "Train").seq));
}

#[test]
fn a_space_without_events_walks_to_nothing() {
    let (log, totals) = walk(&XSpace::default());
    assert_eq!(totals, Default::default());
    assert!(log.processes.is_empty());
}
