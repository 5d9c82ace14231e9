//! `prof::stop` at scale: one-field annotations in steps of 10,000 (`Train` with its
//! `step_num`, then 9,999 `op`s with an `i` field), recorded on one thread, then the
//! session stopped with the logdir writer (what `prof::start` installs: collect, then
//! `logdir::write_logdir_within`, the `.xplane.pb` streamed and `fsync`ed, cut to its
//! latest steps past 2 GiB with the whole session as a `.pftrace` beside it).
//!
//! Each size runs in a child process of its own, which reports:
//! - the wall time of recording and of `stop` (with the write), per event;
//! - the CPU time `stop` took (user, system) and its minor page faults, which tell the
//!   process's own work from the kernel's (faults on fresh memory) and from waiting
//!   (for the disk, or for a CPU on a shared machine);
//! - the peak resident set while stopping (`VmHWM`, reset before) and before it (the
//!   thread's buffers), and `MemAvailable` before stopping;
//! - the files written.
//!
//! With `--phases`, `stop` only collects (no writer); the `.xplane.pb` (and its
//! `.pftrace`, when cut) is then written and timed by itself, and the Perfetto
//! encoding alone (into nothing) beside it.
//!
//! With `--ring N`, the session is a flight recorder keeping the last `N` records of
//! the thread (`prof::flight_recorder`): memory is bounded whatever the run's length,
//! and `stop` collects and writes what the ring holds.
//!
//! A size needs about 110 bytes of memory per event at its peak (the profile's ~100,
//! the records' 64 given back as `stop` reads them, past the first 1Mi of a thread):
//! the child waits (up to 10 min) for that much to be available, and says so. With
//! `--swap`, free swap counts as available (a size larger than the machine's memory
//! then runs, slowed by paging), and the line says how much of the child went to swap
//! (`VmSwap`).
//!
//! `cargo bench -p profiler-export --bench stop_scale -- --events 10000000,50000000`
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use profiler_core::flight_recorder::{self, FlightRecorder};
use profiler_core::options::DEFAULT_MAX_XPLANE_BYTES;
use profiler_core::{session, trace, ProfileOptions};
use profiler_export::{fit, logdir, perfetto};

#[path = "../../profiler-core/benches/support/args.rs"]
mod args;

const CHILD: &str = "PROF_STOP_SCALE_CHILD";
const PHASES: &str = "PROF_STOP_SCALE_PHASES";
const LOGDIR: &str = "PROF_STOP_SCALE_LOGDIR";
const RING: &str = "PROF_STOP_SCALE_RING";
const SWAP: &str = "PROF_STOP_SCALE_SWAP";

/// A field of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

/// `MemAvailable` and `MemFree` of `/proc/meminfo`, in bytes (with `--swap`,
/// `SwapFree` is added to what is available).
fn meminfo() -> (u64, u64) {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    let get = |field: &str| {
        let line = info.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    };
    let swap = if std::env::var_os(SWAP).is_some() {
        get("SwapFree:")
    } else {
        0
    };
    (get("MemAvailable:") + swap, get("MemFree:"))
}

/// (user s, system s, minor faults) of this process so far.
fn usage() -> (f64, f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (
        fields[11].parse::<f64>().unwrap() / ticks,
        fields[12].parse::<f64>().unwrap() / ticks,
        fields[7].parse().unwrap(),
    )
}

fn gb(bytes: u64) -> f64 {
    bytes as f64 / 1e9
}

/// Records `events` one-field annotations in steps of 10,000.
fn record(events: u64) {
    for step in 0..events.div_ceil(10_000) {
        let _step = trace!("Train", step_num = step);
        for i in 0..9_999u64.min(events - step * 10_000 - 1) {
            let _op = trace!("op", i = i);
        }
    }
}

/// In the child: one size, reported as one line.
fn child(events: u64, phases: bool, ring: Option<u64>, dir: &Path) {
    let need = match ring {
        Some(ring) => ring * 140 + (1 << 30),
        None => events * 110 + (1 << 30),
    };
    let until = Instant::now() + Duration::from_secs(600);
    while meminfo().0 < need {
        if Instant::now() > until {
            println!("{events}: skipped, {:.1} GB not available", gb(need));
            return;
        }
        eprintln!(
            "{events}: waiting for {:.1} GB to be available ({:.1} now)",
            gb(need),
            gb(meminfo().0)
        );
        std::thread::sleep(Duration::from_secs(30));
    }
    // Each event is one record and its field another.
    let options = ProfileOptions::default().max_events(2 * events + 1000);
    let finisher: Option<session::Finisher> = if phases {
        None
    } else {
        let dir = dir.to_path_buf();
        let limit = options.max_xplane_bytes;
        Some(Box::new(move |profile| {
            logdir::write_logdir_within(&dir, profile, &[], limit)
        }))
    };
    match ring {
        Some(ring) => flight_recorder::start(options, FlightRecorder::new(ring)).unwrap(),
        None => session::start(options, finisher).unwrap(),
    }
    let t = Instant::now();
    record(events);
    let record_s = t.elapsed().as_secs_f64();
    let buffers = status_bytes("VmRSS:");
    let (available, free) = meminfo();
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let (user0, sys0, faults0) = usage();
    let t = Instant::now();
    let mut profile = session::stop().unwrap();
    if ring.is_some() && !phases {
        profile = logdir::write_logdir(dir, profile).unwrap();
    }
    let stop_s = t.elapsed().as_secs_f64();
    let (user1, sys1, faults1) = usage();
    let peak = status_bytes("VmHWM:");
    if ring.is_none() {
        assert_eq!(profile.event_count() as u64, events);
    }
    let mut line = format!(
        "{events:>11}{} record {record_s:6.2} s  stop {stop_s:6.2} s {:5.0} ns/event  \
         user {:6.2} sys {:6.2}  faults {:>9}  buffers {:5.2} GB peak {:5.2} GB  \
         available {:5.2} GB (free {:5.2})",
        ring.map_or_else(String::new, |r| format!(
            " (ring of {r}: {} events kept)",
            profile.event_count()
        )),
        stop_s * 1e9 / events as f64,
        user1 - user0,
        sys1 - sys0,
        faults1 - faults0,
        gb(buffers),
        gb(peak),
        gb(available),
        gb(free),
    );
    if phases {
        // The Perfetto trace's encoding alone, into nothing.
        let t = Instant::now();
        perfetto::write_to(profile.xspace(), std::io::sink()).unwrap();
        let perfetto_s = t.elapsed().as_secs_f64();
        let path = dir.join("phases.xplane.pb");
        let t = Instant::now();
        let written = fit::write_xplane(&path, &mut profile, DEFAULT_MAX_XPLANE_BYTES).unwrap();
        let write_s = t.elapsed().as_secs_f64();
        line += &format!(
            "  write+fsync {write_s:6.2} s {:5.0} ns/event  file {:.2} GB{}  (Perfetto \
             encoding alone {perfetto_s:.2} s)",
            write_s * 1e9 / events as f64,
            gb(std::fs::metadata(&path).unwrap().len()),
            if written.cut.is_some() {
                " cut, with its .pftrace"
            } else {
                ""
            },
        );
    } else {
        for file in profile.files() {
            line += &format!(
                "  {} {:.2} GB",
                file.file_name().unwrap().to_string_lossy(),
                gb(std::fs::metadata(file).unwrap().len())
            );
        }
    }
    if std::env::var_os(SWAP).is_some() {
        line += &format!("  swapped {:.2} GB", gb(status_bytes("VmSwap:")));
    }
    println!("{line}");
    for warning in profile.warnings() {
        println!("  warning: {warning}");
    }
}

fn main() {
    if let Some(events) = std::env::var_os(CHILD) {
        let events = events.to_string_lossy().parse().unwrap();
        let dir = std::env::var_os(LOGDIR).unwrap();
        let ring = std::env::var_os(RING).map(|r| r.to_string_lossy().parse().unwrap());
        child(
            events,
            std::env::var_os(PHASES).is_some(),
            ring,
            Path::new(&dir),
        );
        return;
    }
    let args = args::args();
    if !args::bench_mode(&args) {
        return;
    }
    let sizes = args::sizes(&args, "--events", "10000000");
    let phases = args::has(&args, "--phases");
    let ring = args::value(&args, "--ring");
    let base = args::value(&args, "--dir").map_or_else(std::env::temp_dir, Into::into);
    // --keep: the files stay (to open in XProf), their directory printed.
    let keep = args::has(&args, "--keep");
    let swap = args::has(&args, "--swap");
    for events in sizes {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap());
        child.env(CHILD, events.to_string()).env(LOGDIR, dir.path());
        if phases {
            child.env(PHASES, "1");
        }
        if let Some(ring) = ring {
            child.env(RING, ring);
        }
        if swap {
            child.env(SWAP, "1");
        }
        let status = child.status().unwrap();
        assert!(status.success(), "{events}: {status}");
        if keep {
            println!("  kept in {}", dir.keep().display());
        }
    }
}
