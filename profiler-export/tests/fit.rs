//! A profile past its `.xplane.pb` limit (XProf opens no file over 2 GiB; a few
//! kilobytes here): the file keeps the latest whole steps that fit, or the latest
//! events when there are no steps, and says what it left out.

use prof_test_support::spaces;
use profiler_core::schema;
use profiler_core::xspace::{PlaneBuilder, XEvent, XEventData, XLine, XSpace, XStatValue};
use profiler_core::{ErrorKind, Profile};
use profiler_export::fit::{self, EVENTS_LEFT_OUT, FULL_TRACE, STEPS_LEFT_OUT};
use profiler_export::xplane;
use prost::Message;

/// `n` events 1 µs apart on two lines of a host plane, no steps, with a start time.
fn events_only(n: i64) -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let op = plane.event_metadata_id("op");
    for l in 0..2 {
        let events = (0..n / 2)
            .map(|i| {
                let mut e = XEvent::new(op, (2 * i + l) * 1_000_000, 500_000);
                e.stats.push(plane.stat("i", XStatValue::Int64(2 * i + l)));
                e
            })
            .collect();
        plane.add_line(XLine {
            id: l + 1,
            name: format!("t{l}"),
            events,
            ..XLine::default()
        });
    }
    let mut space = spaces::space();
    space.planes[0] = plane.build();
    space.planes.truncate(1); // the host plane only
    space
}

/// The starts (ps) of the timed events of `space`.
fn starts(space: &XSpace) -> Vec<i64> {
    let mut starts: Vec<i64> = space
        .planes
        .iter()
        .flat_map(|p| &p.lines)
        .flat_map(|l| {
            l.events.iter().filter_map(move |e| match e.data() {
                XEventData::OffsetPs(o) => Some(l.timestamp_ns * 1000 + o),
                XEventData::NumOccurrences(_) => None,
            })
        })
        .collect();
    starts.sort_unstable();
    starts
}

#[test]
fn without_steps_the_latest_events_that_fit_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host.xplane.pb");
    let whole = events_only(2000);
    let mut profile = Profile::new(whole.clone());
    let limit = 16 << 10;
    let written = fit::write_xplane(&path, &mut profile, limit).expect("written");
    let cut = written.cut.expect("cut");
    assert!(!cut.at_step);
    let bytes = std::fs::metadata(&path).expect("file").len();
    assert!(bytes <= limit, "{bytes}");

    let file = xplane::read(&path).expect("read");
    let kept = starts(&file);
    let all = starts(&whole);
    assert_eq!(kept.len() as u64, cut.events_kept);
    assert_eq!(all.len() as u64, cut.events);
    // The latest ones: a suffix of the session's events in time.
    assert_eq!(kept[..], all[all.len() - kept.len()..]);
    // And as many as fit: the next earlier event would not have, notes and all (the
    // room kept for them is 4 KiB).
    let next = &all[all.len() - kept.len() - 1];
    assert!(*next < cut.from_ps);
    assert!(
        bytes + 30 + (4 << 10) > limit,
        "{bytes} leaves room for more"
    );

    // The whole session is in the Perfetto trace beside it.
    let full = written.full_trace.expect("a full trace");
    assert_eq!(full, dir.path().join("host.pftrace"));
    let trace = profiler_export::perfetto::proto::Trace::decode(
        std::fs::read(&full).expect("read").as_slice(),
    )
    .expect("trace");
    let begins = trace
        .packet
        .iter()
        .filter_map(|p| p.track_event.as_ref()?.r#type)
        .filter(|&t| t == profiler_export::perfetto::proto::TYPE_SLICE_BEGIN)
        .count();
    assert_eq!(begins, all.len());
}

#[test]
fn a_foreign_space_without_a_task_environment_gets_one_with_the_stats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jax.xplane.pb");
    let mut space = events_only(1000);
    space.planes.retain(|p| p.name != schema::TASK_ENV_PLANE);
    let mut profile = Profile::new(space);
    let cut = fit::write_xplane(&path, &mut profile, 8 << 10)
        .expect("written")
        .cut
        .expect("cut");
    let file = xplane::read(&path).expect("read");
    let env = file.plane(schema::TASK_ENV_PLANE).expect("made");
    let stat = |n| env.find_stat(&env.stats, n).cloned();
    assert_eq!(
        stat(EVENTS_LEFT_OUT),
        Some(XStatValue::Uint64(cut.events_left_out()))
    );
    assert_eq!(stat(STEPS_LEFT_OUT), Some(XStatValue::Uint64(0)));
    assert_eq!(
        stat(FULL_TRACE),
        Some(XStatValue::Str("jax.pftrace".into()))
    );
    let note = fit::note_of(&file).expect("a note");
    assert!(note.contains("jax.pftrace"), "{note}");
}

#[test]
fn a_profile_that_fits_is_written_whole_and_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host.xplane.pb");
    let mut profile = Profile::new(spaces::space());
    let written = fit::write_xplane(&path, &mut profile, 1 << 20).expect("written");
    assert_eq!(written, fit::Written::default());
    assert_eq!(&xplane::read(&path).expect("read"), profile.xspace());
    assert!(!dir.path().join("host.pftrace").exists());
    assert_eq!(fit::note_of(profile.xspace()), None);
}

#[test]
fn limits_xprof_cannot_read_or_that_hold_nothing_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host.xplane.pb");
    let mut profile = Profile::new(events_only(1000));
    let over = fit::write_xplane(&path, &mut profile, 3 << 30).expect_err("over 2 GiB");
    assert_eq!(over.kind(), ErrorKind::InvalidArgument);
    assert!(over.to_string().contains("2147483647"), "{over}");
    let tiny = fit::write_xplane(&path, &mut profile, 100).expect_err("too small");
    assert_eq!(tiny.kind(), ErrorKind::InvalidArgument);
    assert!(!path.exists());
}

/// `steps` steps of 1 ms: a root (`_r`, `step_num`) with 9 children on one thread,
/// and 10 events on another thread during it.
fn steps(steps: i64) -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let (train, op, load) = (
        plane.event_metadata_id("Train"),
        plane.event_metadata_id("op"),
        plane.event_metadata_id("load"),
    );
    let (mut main, mut worker) = (Vec::new(), Vec::new());
    for step in 0..steps {
        let at = step * 1_000_000_000;
        let mut root = XEvent::new(train, at, 900_000_000);
        root.stats
            .push(plane.stat(schema::STEP_NUM, XStatValue::Int64(step)));
        root.stats
            .push(plane.stat(schema::IS_ROOT, XStatValue::Int64(1)));
        main.push(root);
        for i in 0..9 {
            main.push(XEvent::new(op, at + (i + 1) * 50_000_000, 40_000_000));
            worker.push(XEvent::new(load, at + i * 60_000_000, 30_000_000));
        }
        worker.push(XEvent::new(load, at + 600_000_000, 30_000_000));
    }
    for (id, events) in [(1, main), (2, worker)] {
        plane.add_line(XLine {
            id,
            name: format!("t{id}"),
            events,
            ..XLine::default()
        });
    }
    XSpace {
        planes: vec![plane.build()],
        ..XSpace::default()
    }
}

#[test]
fn a_response_is_cut_in_place_to_its_latest_steps() {
    let mut space = steps(100);
    let whole = space.encoded_len() as u64;
    let limit = whole / 3;
    let cut = fit::retain_within(&mut space, limit, "the response")
        .expect("cut")
        .expect("over the limit");
    assert!(cut.at_step);
    assert!((space.encoded_len() as u64) <= limit);
    assert!(space
        .warnings
        .iter()
        .any(|w| w.starts_with("the response holds the last")));
    let cut_profile = Profile::new(space);
    let kept = cut_profile.steps();
    assert_eq!(kept.len() as u64, cut.steps_kept);
    assert_eq!(kept, (100 - kept.len() as i64..100).collect::<Vec<_>>());
    // Each step whole: its root, 9 children and 10 events of the other thread.
    assert_eq!(cut_profile.event_count(), kept.len() * 20);
    assert!(fit::retain_within(&mut XSpace::default(), limit, "x")
        .expect("fits")
        .is_none());
}

/// A process given a grace period (a scheduler's SIGTERM) may be killed while it
/// writes: the cut `.xplane.pb`, the file XProf opens, is written before the whole
/// session's Perfetto trace. Here the trace cannot be written at all (a directory
/// stands at its path), and the `.xplane.pb` is there all the same.
#[test]
fn the_cut_xplane_is_written_before_the_whole_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host.xplane.pb");
    let full = dir.path().join("host.pftrace");
    std::fs::create_dir(&full).expect("a directory where the trace would go");
    let mut profile = Profile::new(events_only(2000));
    let err = fit::write_xplane(&path, &mut profile, 16 << 10).expect_err("no trace");
    assert!(err.to_string().contains("host.pftrace"), "{err}");
    let file = xplane::read(&path).expect("the cut file was written first");
    assert!(std::fs::metadata(&path).expect("file").len() <= 16 << 10);
    assert!(!starts(&file).is_empty());
}
