//! Reading `.xplane.pb` files from elsewhere: the streamed reader agrees with prost,
//! refuses what is not a regular file or is too large, names the file in every error,
//! and keeps lists a hostile file can inflate short.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use prof_test_support::spaces;
use profiler_core::xspace::XSpace;
use profiler_core::ErrorKind;
use profiler_export::convert::convert;
use profiler_export::timeline::Timeline;
use profiler_export::xplane::{self, ReadLimits};
use profiler_export::{chrome, perfetto, ExportFormat};
use prost::Message;

fn write_bytes(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

/// `field` as a varint field, then as a length-delimited one: what a newer producer
/// might add.
fn unknown_fields(field: u32) -> Vec<u8> {
    let mut b = Vec::new();
    prost::encoding::encode_key(field, prost::encoding::WireType::Varint, &mut b);
    prost::encoding::encode_varint(300, &mut b);
    prost::encoding::encode_key(
        field + 1,
        prost::encoding::WireType::LengthDelimited,
        &mut b,
    );
    prost::encoding::encode_varint(3, &mut b);
    b.extend_from_slice(b"abc");
    b
}

#[test]
fn reads_what_prost_decodes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut unsorted = spaces::space();
    unsorted.planes[0].lines[0].events.reverse();
    for (i, space) in [spaces::space(), spaces::large_space(2000, 3), unsorted]
        .iter()
        .enumerate()
    {
        let mut bytes = space.encode_to_vec();
        bytes.extend(unknown_fields(90));
        let path = write_bytes(dir.path(), &format!("{i}.xplane.pb"), &bytes);
        let read = xplane::read(&path).expect("read");
        assert_eq!(
            read,
            XSpace::decode(bytes.as_slice()).expect("prost"),
            "{i}"
        );
        assert_eq!(&read, space);
    }
}

#[test]
fn every_prefix_of_a_file_reads_as_prost_decodes_it_or_fails_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = spaces::space().encode_to_vec();
    for n in 0..bytes.len() {
        let path = write_bytes(dir.path(), "cut.xplane.pb", &bytes[..n]);
        let prost = XSpace::decode(&bytes[..n]);
        match (xplane::read(&path), prost) {
            (Ok(read), Ok(decoded)) => assert_eq!(read, decoded, "prefix {n}"),
            (Err(e), Err(_)) => {
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "prefix {n}: {e}");
                assert!(e.to_string().contains("cut.xplane.pb"), "{e}");
            }
            (read, prost) => panic!("prefix {n}: read {read:?}, prost {prost:?}"),
        }
        let lazy = xplane::read_lazy(&path, &ReadLimits::default());
        assert_eq!(
            lazy.is_ok(),
            XSpace::decode(&bytes[..n]).is_ok(),
            "prefix {n}"
        );
    }
}

#[test]
fn lengths_past_the_end_fail_without_allocating_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A plane claiming 2^60 bytes.
    let bytes = [0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10];
    let path = write_bytes(dir.path(), "huge.xplane.pb", &bytes);
    let err = xplane::read(&path).expect_err("length past the end");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("huge.xplane.pb"), "{err}");
}

#[test]
fn host_names_errors_and_warnings_are_capped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut space = spaces::space();
    space.hostnames = (0..1000).map(|i| format!("h{i}")).collect();
    space.errors = vec!["e".into(); 100];
    let path = dir.path().join("many.xplane.pb");
    xplane::write(&path, &space).expect("write");
    let read = xplane::read_with(&path, &ReadLimits::default().max_strings(8)).expect("read");
    assert_eq!(read.hostnames, space.hostnames[..8]);
    assert_eq!(read.errors.len(), 8);
    assert_eq!(read.planes, space.planes);
    let note = read.warnings.last().expect("a warning");
    assert!(note.contains("1084 more"), "{note}");
    assert_eq!(
        xplane::read(&path).expect("read").hostnames.len(),
        xplane::DEFAULT_MAX_STRINGS
    );
}

#[test]
fn files_over_the_limit_are_refused_naming_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.xplane.pb");
    xplane::write(&path, &spaces::space()).expect("write");
    let len = std::fs::metadata(&path).expect("meta").len();
    let limits = ReadLimits::default().max_bytes(len - 1);
    let err = xplane::read_with(&path, &limits).expect_err("over the limit");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let text = err.to_string();
    assert!(
        text.contains("big.xplane.pb") && text.contains("limit"),
        "{text}"
    );
    assert!(xplane::read_with(&path, &limits.max_bytes(len)).is_ok());
    assert_eq!(xplane::DEFAULT_MAX_BYTES, 4 << 30);
}

/// Runs `f` on another thread and fails the test if it does not return in time.
fn within_seconds<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, wait) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    wait.recv_timeout(Duration::from_secs(secs))
        .expect("returned in time")
}

#[cfg(unix)]
#[test]
fn special_files_are_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo.xplane.pb");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let zero = dir.path().join("zero.xplane.pb");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
    let cases = [
        (fifo, "a FIFO"),
        (zero, "a character device"),
        (dir.path().to_path_buf(), "a directory"),
    ];
    for (path, kind) in cases {
        let shown = path.display().to_string();
        let err = within_seconds(10, move || xplane::read(&path).expect_err("refused"));
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        let text = err.to_string();
        assert!(text.contains(&shown) && text.contains(kind), "{text}");
    }
}

#[test]
fn a_lazy_walk_writes_what_the_decoded_space_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let mut unsorted = spaces::space();
    unsorted.planes[0].lines[0].events.reverse();
    unsorted.planes[0].lines[1].events.reverse();
    for (i, space) in [spaces::space(), unsorted, spaces::large_space(5000, 2)]
        .iter()
        .enumerate()
    {
        let path = dir.path().join(format!("{i}.xplane.pb"));
        xplane::write(&path, space).expect("write");
        let lazy = xplane::read_lazy(&path, &ReadLimits::default()).expect("read");
        let lines = || lazy.space().planes.iter().flat_map(|p| &p.lines);
        assert!(lines().all(|l| l.events.is_empty()));
        let events = space.planes.iter().flat_map(|p| &p.lines);
        let events: usize = events.map(|l| l.events.len()).sum();
        assert_eq!(lazy.event_count(), events);
        assert_eq!(
            Timeline::lazy(&lazy).origin(),
            Timeline::new(space).origin()
        );

        let formats = [ExportFormat::Perfetto, ExportFormat::ChromeJson];
        convert(&path, &formats, Some(out.path())).expect("convert");
        let (mut pftrace, mut json) = (Vec::new(), Vec::new());
        perfetto::write_to(space, &mut pftrace).expect("decoded");
        chrome::write_to(space, &mut json).expect("decoded");
        let written = |ext: &str| std::fs::read(out.path().join(format!("{i}.{ext}")));
        assert!(
            written("pftrace").expect("pftrace") == pftrace,
            "{i}: Perfetto"
        );
        assert!(written("trace.json").expect("json") == json, "{i}: Chrome");
    }
}

// Hand-made protobuf, as a newer or another producer may write it.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

fn key(field: u32, wire: u8) -> Vec<u8> {
    let mut b = Vec::new();
    prost::encoding::encode_varint(u64::from(field) << 3 | u64::from(wire), &mut b);
    b
}

fn vi(field: u32, n: u64) -> Vec<u8> {
    let mut b = key(field, VARINT);
    prost::encoding::encode_varint(n, &mut b);
    b
}

fn ld(field: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = key(field, LEN);
    prost::encoding::encode_varint(payload.len() as u64, &mut b);
    b.extend_from_slice(payload);
    b
}

/// An unknown group field `field`: a value of every other wire type, and `depth - 1`
/// groups nested inside it.
fn group(field: u32, depth: usize) -> Vec<u8> {
    let mut b = key(field, START_GROUP);
    b.extend(vi(1, 300));
    b.extend(key(2, FIXED64));
    b.extend([0; 8]);
    b.extend(ld(3, b"newer schema"));
    b.extend(key(4, FIXED32));
    b.extend([0; 4]);
    if depth > 1 {
        b.extend(group(field + 1, depth - 1));
    }
    b.extend(key(field, END_GROUP));
    b
}

/// An event of metadata 1 at `offset_ps` (an int64, as the schema has it) with one
/// stat; unknown groups in both with `groups`.
fn event(offset_ps: i64, groups: bool) -> Vec<u8> {
    let g = |field| if groups { group(field, 2) } else { Vec::new() };
    let stat = [vi(1, 1), vi(4, 42), g(94)].concat();
    [
        vi(1, 1),
        vi(2, offset_ps as u64),
        vi(3, 5000),
        ld(4, &stat),
        g(95),
    ]
    .concat()
}

/// A space of one plane whose one line holds `events`, with its metadata; unknown
/// groups in the space, the plane, the line and both metadata with `groups`.
fn space_bytes(events: &[Vec<u8>], groups: bool) -> Vec<u8> {
    let g = |field| if groups { group(field, 2) } else { Vec::new() };
    let mut line = [vi(1, 7), ld(2, b"main"), vi(3, 1000)].concat();
    for e in events {
        line.extend(ld(4, e));
    }
    line.extend(g(90));
    let event_meta = ld(
        4,
        &[vi(1, 1), ld(2, &[vi(1, 1), ld(2, b"op"), g(91)].concat())].concat(),
    );
    let stat_meta = ld(
        5,
        &[vi(1, 1), ld(2, &[vi(1, 1), ld(2, b"stat"), g(92)].concat())].concat(),
    );
    let plane = [
        vi(1, 49),
        ld(2, b"/host:CPU"),
        ld(3, &line),
        event_meta,
        stat_meta,
        g(93),
    ]
    .concat();
    [ld(1, &plane), ld(4, b"host"), g(50)].concat()
}

/// Issue 36: a valid `.xplane.pb` with unknown group fields (wire types 3 and 4) was
/// refused ("unsupported wire type 3"), where protobuf skips them as any unknown field.
#[test]
fn unknown_groups_anywhere_are_skipped_as_protobuf_skips_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = [event(10_000, true), event(20_000, true)];
    let with = space_bytes(&events, true);
    let without = space_bytes(&[event(10_000, false), event(20_000, false)], false);
    let plain = XSpace::decode(without.as_slice()).expect("prost");
    assert_eq!(plain.planes[0].lines[0].events.len(), 2);
    // prost, the derived decoder, skips groups too: the reader agrees with it.
    assert_eq!(XSpace::decode(with.as_slice()).expect("prost"), plain);
    let path = write_bytes(dir.path(), "groups.xplane.pb", &with);
    assert_eq!(xplane::read(&path).expect("read"), plain);
    assert_eq!(xplane::decode(&with).expect("decode"), plain);
    let lazy = xplane::read_lazy(&path, &ReadLimits::default()).expect("lazy");
    assert_eq!(lazy.event_count(), 2);
    assert!(lazy.read_warnings().is_empty());

    // The case: a real file with one group appended.
    let mut real = spaces::space().encode_to_vec();
    real.extend(group(50, 1));
    let path = write_bytes(dir.path(), "appended.xplane.pb", &real);
    assert_eq!(xplane::read(&path).expect("read"), spaces::space());
    // Nested as deep as protobuf allows (100 levels).
    let mut deep = spaces::space().encode_to_vec();
    deep.extend(group(50, 100));
    let path = write_bytes(dir.path(), "deep.xplane.pb", &deep);
    assert_eq!(xplane::read(&path).expect("read"), spaces::space());
}

/// What protobuf refuses, the reader refuses, naming the file and the fault.
#[test]
fn broken_groups_and_wire_types_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = spaces::space().encode_to_vec();
    let cases: [(&str, Vec<u8>, &str); 6] = [
        (
            "stray",
            key(50, END_GROUP),
            "end-group tag (field 50) with no group open",
        ),
        (
            "unclosed",
            [key(50, START_GROUP), vi(1, 1)].concat(),
            "does not end",
        ),
        (
            "mismatched",
            [key(50, START_GROUP), key(51, END_GROUP)].concat(),
            "end-group tag of field 51 inside group field 50",
        ),
        ("too_deep", group(50, 101), "nested deeper than 100"),
        (
            "wire6",
            [key(50, 6), vec![0; 4]].concat(),
            "invalid wire type 6",
        ),
        (
            "wire7",
            [key(50, 7), vec![0; 4]].concat(),
            "invalid wire type 7",
        ),
    ];
    for (name, tail, why) in cases {
        let bytes = [seed.clone(), tail].concat();
        let file = format!("{name}.xplane.pb");
        let path = write_bytes(dir.path(), &file, &bytes);
        let err = xplane::read(&path).expect_err(name);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{name}: {err}");
        let text = err.to_string();
        assert!(text.contains(&file) && text.contains(why), "{name}: {text}");
        assert!(xplane::decode(&bytes).is_err(), "{name}");
        assert!(xplane::read_lazy(&path, &ReadLimits::default()).is_err());
    }
}

/// Issue 36: one event whose offset is beyond what an event holds (±2^62) refused
/// the whole file. It is left out, with a warning saying how many and why, and the
/// rest is read and converted.
#[test]
fn an_event_no_profile_can_hold_is_left_out_and_the_rest_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad_count = [vi(1, 1), vi(5, (-(1i64 << 62) - 1) as u64)].concat();
    let events = [
        event(10_000, false),
        event(1 << 62, false),
        bad_count,
        event(20_000, false),
    ];
    let bytes = space_bytes(&events, false);
    let fine = XSpace::decode(
        space_bytes(&[event(10_000, false), event(20_000, false)], false).as_slice(),
    )
    .expect("prost");
    let path = write_bytes(dir.path(), "impossible.xplane.pb", &bytes);
    let read = xplane::read(&path).expect("read");
    assert_eq!(
        read.planes, fine.planes,
        "the two fine events, and only them"
    );
    let warning = read.warnings.last().expect("a warning");
    assert!(
        warning.starts_with("2 events were left out as no profile can hold them")
            && warning.contains("XEvent.offset_ps: 4611686018427387904 is beyond the ±2^62"),
        "{warning}"
    );
    assert_eq!(xplane::decode(&bytes).expect("decode"), read);

    // Converted, the file's outcome says so, naming it.
    let lazy = xplane::read_lazy(&path, &ReadLimits::default()).expect("lazy");
    assert_eq!(lazy.event_count(), 2);
    assert_eq!(lazy.read_warnings(), std::slice::from_ref(warning));
    let out = tempfile::tempdir().expect("out");
    let options = profiler_export::convert::ConvertOptions::default().out_dir(out.path());
    let outcomes = profiler_export::convert::convert_all(
        std::slice::from_ref(&path),
        &[ExportFormat::ChromeJson],
        &options,
    )
    .expect("convert");
    assert!(outcomes[0].is_ok());
    assert_eq!(outcomes[0].written[0].totals.slices, 2);
    assert!(
        outcomes[0]
            .warnings
            .iter()
            .any(|w| w.contains("impossible.xplane.pb") && w.contains("2 events were left out")),
        "{:?}",
        outcomes[0].warnings
    );

    // An event whose bytes are no protobuf still refuses the file: it is not an XSpace.
    let broken = space_bytes(&[event(10_000, false), vec![0x10, 0x80]], false);
    let path = write_bytes(dir.path(), "broken.xplane.pb", &broken);
    let err = xplane::read(&path).expect_err("a truncated varint");
    assert!(err.to_string().contains("not an XSpace"), "{err}");
}
