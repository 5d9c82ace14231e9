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
