//! The flight recorder: bounded rings, snapshots while threads keep writing, and
//! records decoded whole however the ring wrapped.

use std::alloc::System;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prof_test_support::{read, serial};
use profiler_core::flight_recorder::{self, FlightRecorder};
use profiler_core::xspace::XStatValue;
use profiler_core::{schema, session, trace, ErrorKind, ProfileOptions, TrackingAllocator};

#[global_allocator]
static ALLOC: TrackingAllocator<System> = TrackingAllocator::new(System);

/// Every `work` event carries `i` and a string `s` of [`len`]`(i)` bytes; checks
/// each one decoded whole, and each line's `i`s consecutive (a writer's events, oldest
/// dropped, none missing in between); returns the `i`s in order.
fn checked_work(profile: &profiler_core::Profile) -> Vec<i64> {
    let host = read::host(profile);
    let mut seen = Vec::new();
    for line in &host.lines {
        let first = seen.len();
        for e in &line.events {
            if read::name(host, e) != "work" {
                continue;
            }
            let Some(XStatValue::Int64(i)) = read::stat(host, e, "i") else {
                // Its field records were overwritten before its event record: allowed
                // only at the oldest end of the ring, never in the middle.
                continue;
            };
            if let Some(XStatValue::Str(s)) = read::stat(host, e, "s") {
                assert_eq!(s.len() as i64, len(i), "event {i}: {s:?}");
                assert!(s.bytes().all(|b| b == b'a' + (i % 26) as u8), "event {i}");
            }
            seen.push(i);
        }
        let on_line = &seen[first..];
        assert!(
            on_line.windows(2).all(|w| w[1] == w[0] + 1),
            "{}: a gap or reordering in {on_line:?}",
            line.name
        );
    }
    seen
}

/// Up to 532 bytes: string fields from none to 17 record slots, so records often
/// straddle chunk and ring boundaries, and a snapshot often catches one half written.
fn len(i: i64) -> i64 {
    (i % 77) * 7
}

fn work(i: i64) {
    let s = String::from(char::from(b'a' + (i % 26) as u8)).repeat(len(i) as usize);
    let _t = trace!("work", i = i, s = s.as_str());
}

#[test]
fn rings_keep_the_latest_records_in_bounded_memory() {
    let _serial = serial();
    flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(4096)).expect("start");
    assert!(flight_recorder::is_running());
    for i in 0..2000 {
        work(i);
    }
    let before = TrackingAllocator::<System>::bytes_in_use();
    for i in 2000..200_000 {
        work(i);
    }
    let grown = TrackingAllocator::<System>::bytes_in_use() - before;
    // The ring's 4 chunks of 32 KiB were allocated in the first 2000 events' time or
    // soon after; 200k more events (~14 MiB in a plain session) add at most that.
    assert!(grown < 256 * 1024, "grew by {grown} bytes");

    let snapshot = flight_recorder::snapshot().expect("snapshot");
    let seen = checked_work(&snapshot);
    assert!(!seen.is_empty() && seen.len() < 4096, "{}", seen.len());
    assert_eq!(*seen.last().expect("latest"), 199_999);
    assert!(
        seen.windows(2).all(|w| w[1] == w[0] + 1),
        "contiguous, oldest dropped"
    );
    // Recording goes on after a snapshot.
    work(200_000);
    let last = session::stop().expect("stop");
    assert_eq!(checked_work(&last).last(), Some(&200_000));
}

/// A ring of records of three slots (an event and two scalar fields): they straddle
/// chunk ends and the ring's wrap, and the latest keep their fields.
#[test]
fn scalar_fields_keep_their_event_in_a_ring() {
    let _serial = serial();
    flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(2048)).expect("start");
    for i in 0..50_000i64 {
        let _t = trace!("pair", i = i, twice = i * 2);
    }
    let profile = session::stop().expect("stop");
    let host = read::host(&profile);
    let mut seen = Vec::new();
    for e in host.lines.iter().flat_map(|l| &l.events) {
        if read::name(host, e) != "pair" {
            continue;
        }
        let (Some(XStatValue::Int64(i)), Some(XStatValue::Int64(twice))) =
            (read::stat(host, e, "i"), read::stat(host, e, "twice"))
        else {
            continue; // the oldest end of the ring may have lost its fields
        };
        assert_eq!(twice, 2 * i);
        seen.push(i);
    }
    assert!(seen.len() > 500, "{}", seen.len());
    assert_eq!(seen.last(), Some(&49_999));
    assert!(seen.windows(2).all(|w| w[1] == w[0] + 1), "contiguous");
}

#[test]
fn snapshots_while_threads_write_decode_whole_records() {
    let _serial = serial();
    flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(1024)).expect("start");
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut i = 0;
                // Bounded: at most 2M events, or until told to stop.
                while !stop.load(Ordering::Relaxed) && i < 2_000_000 {
                    work(i);
                    i += 1;
                }
            })
        })
        .collect();
    for _ in 0..50 {
        let snapshot = flight_recorder::snapshot().expect("snapshot");
        // Each thread's events are whole and in order (checked_work asserts both
        // per event; order is per line).
        checked_work(&snapshot);
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    session::stop().expect("stop");
}

#[test]
fn an_event_outlived_by_its_slot_is_dropped_not_corrupting() {
    let _serial = serial();
    flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(1024)).expect("start");
    let long = trace!("long");
    for i in 0..5000 {
        work(i);
    }
    // Its slot now holds another record: closing it must not write there.
    drop(long);
    let snapshot = session::stop().expect("stop");
    assert!(!read::all_names(&snapshot).contains(&"long".to_owned()));
    let seen = checked_work(&snapshot);
    assert_eq!(seen.last(), Some(&4999));
}

#[test]
fn a_window_leaves_out_what_ended_before_it() {
    let _serial = serial();
    let recorder = FlightRecorder::new(1 << 16).window(Duration::from_millis(50));
    flight_recorder::start(ProfileOptions::default(), recorder).expect("start");
    {
        let _t = trace!("old");
    }
    std::thread::sleep(Duration::from_millis(120));
    {
        let _t = trace!("recent");
    }
    let snapshot = flight_recorder::snapshot().expect("snapshot");
    let host = read::host(&snapshot);
    assert_eq!(read::names(host, read::my_line(host)), ["recent"]);
    // The heap's level at the snapshot's end; its start, outside the window, has none.
    let profiler = read::line(host, schema::PROFILER_LINE);
    assert_eq!(read::names(host, profiler), [schema::MEMORY_ALLOCATION]);
    session::stop().expect("stop");
}

#[test]
fn misuse_is_an_error() {
    let _serial = serial();
    let err = flight_recorder::snapshot().expect_err("none running");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    session::start(ProfileOptions::default(), None).expect("start");
    assert!(!flight_recorder::is_running());
    let err = flight_recorder::snapshot().expect_err("not a flight recorder");
    assert!(err.to_string().contains("not a flight recorder"), "{err}");
    session::stop().expect("stop");
    for bad in [
        FlightRecorder::new(0),
        FlightRecorder::new(8).window(Duration::ZERO),
    ] {
        let err = flight_recorder::start(ProfileOptions::default(), bad).expect_err("invalid");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
    assert!(!session::is_running());
}

#[test]
fn a_background_recorder_makes_way_for_any_session() {
    let _serial = serial();
    let background = || {
        flight_recorder::start_background(ProfileOptions::default(), FlightRecorder::new(4096))
            .expect("background recorder")
    };
    background();
    assert!(flight_recorder::is_background() && flight_recorder::is_running());
    {
        let _t = trace!("watched");
    }
    assert_eq!(
        flight_recorder::snapshot().expect("snapshot").event_count(),
        1
    );
    // A capture starts in its place, and sees nothing the background one recorded.
    session::start(ProfileOptions::default(), None).expect("the capture is not refused");
    assert!(!flight_recorder::is_background());
    {
        let _t = trace!("captured");
    }
    let captured = session::stop().expect("stop");
    let host = read::host(&captured);
    assert_eq!(read::names(host, read::my_line(host)), ["captured"]);
    // A background recorder never takes the place of another session...
    session::start(ProfileOptions::default(), None).expect("start");
    let err =
        flight_recorder::start_background(ProfileOptions::default(), FlightRecorder::new(4096))
            .expect_err("a session runs");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    session::stop().expect("stop");
    // ... nor of another background one, and a flight recorder replaces it too.
    background();
    assert_eq!(
        flight_recorder::start_background(ProfileOptions::default(), FlightRecorder::new(4096))
            .expect_err("one runs")
            .kind(),
        ErrorKind::AlreadyExists
    );
    flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(4096))
        .expect("replaces it");
    assert!(flight_recorder::is_running() && !flight_recorder::is_background());
    session::stop().expect("stop");
}
