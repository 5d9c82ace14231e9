//! The profile survives the program's end, proven in child processes (`exit-child`):
//! each scenario records a session and ends without `stop`, and the test reads the
//! logdir it left with prof's reader (CI's exit step then has xprof's converters read
//! the same files: set `PROF_EXIT_LOGS` to an absolute DIR to keep them there; tests run
//! in `tests/exit`).
//!
//! The `panic = "abort"` scenarios need the child built with `cargo build -p
//! prof-exit-tests --profile panic-abort`, named by an absolute `PROF_EXIT_ABORT_CHILD`; CI's exit
//! step does both. Without it they say so and pass: cargo cannot build a test target
//! with `panic = "abort"`, so the plain `cargo test` has no such binary.
// What was skipped and the big session's figures go to the test's output.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use prof::export::xplane;
use prof::xspace::XStatValue;
use prof::Profile;

/// The longest any child may run before the test kills it and fails.
const CHILD_LIMIT: Duration = Duration::from_secs(120);

const UNWIND: &str = env!("CARGO_BIN_EXE_exit-child");

fn abort_child() -> Option<PathBuf> {
    let child = std::env::var_os("PROF_EXIT_ABORT_CHILD").map(PathBuf::from);
    if child.is_none() {
        println!(
            "skipped: the panic = \"abort\" child is not built (cargo build -p prof-exit-tests \
             --profile panic-abort, then PROF_EXIT_ABORT_CHILD=$PWD/target/panic-abort/exit-child)"
        );
    }
    child
}

/// A fresh logdir for `name`: under `PROF_EXIT_LOGS` when set (kept for CI's xprof
/// reads), else in a temporary directory dropped with the guard.
fn logdir(name: &str) -> (PathBuf, Option<tempfile::TempDir>) {
    match std::env::var_os("PROF_EXIT_LOGS") {
        Some(base) => {
            let dir = Path::new(&base).join(name);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("logdir");
            (dir, None)
        }
        None => {
            let tmp = tempfile::tempdir().expect("tempdir");
            (tmp.path().join(name), Some(tmp))
        }
    }
}

struct Ended {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ended {
    /// prof's lines on stderr.
    fn prof_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("prof: "))
            .collect()
    }

    fn context(&self) -> String {
        format!(
            "status {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

fn spawn(child: &Path, scenario: &str, logdir: &Path, args: &[String]) -> Child {
    Command::new(child)
        .arg(scenario)
        .arg(logdir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child")
}

/// Waits for `child` (killing it past [`CHILD_LIMIT`]) and collects its output;
/// `seen` is what was already read from its stdout.
fn finish(mut child: Child, seen: String) -> Ended {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > CHILD_LIMIT {
            let _ = child.kill();
            panic!("the child ran past {CHILD_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = seen;
    let mut stderr = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut stdout).expect("stdout");
    }
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr).expect("stderr");
    }
    Ended {
        status,
        stdout,
        stderr,
    }
}

fn run(child: &Path, scenario: &str, logdir: &Path) -> Ended {
    finish(spawn(child, scenario, logdir, &[]), String::new())
}

/// Reads the child's stdout up to its `ready` line; returns what it read.
fn await_ready(child: &mut Child) -> String {
    let out = child.stdout.take().expect("stdout");
    let mut reader = BufReader::new(out);
    let mut seen = String::new();
    // Bounded: the child gives up waiting for a signal after 30 s and exits.
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).expect("read stdout");
        seen.push_str(&line);
        if n == 0 || line.trim() == "ready" {
            break;
        }
    }
    assert!(
        seen.ends_with("ready\n"),
        "the child never got ready: {seen}"
    );
    child.stdout = Some(reader.into_inner());
    seen
}

fn kill(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    #[allow(unsafe_code)]
    // SAFETY: kill has no memory preconditions; the pid is our own child's.
    let sent = unsafe { libc::kill(pid, sig) };
    assert_eq!(sent, 0, "kill {pid}");
}

/// The runs written under `logdir`, each as its `.xplane.pb`.
fn xplanes(logdir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(runs) = std::fs::read_dir(logdir.join("plugins/profile")) else {
        return files;
    };
    for run in runs {
        let run = run.expect("run").path();
        for file in std::fs::read_dir(&run).expect("run dir") {
            let file = file.expect("file").path();
            if file.to_string_lossy().ends_with(".xplane.pb") {
                files.push(file);
            }
        }
    }
    files.sort();
    files
}

/// The one profile written under `logdir`.
fn the_profile(logdir: &Path, ended: &Ended) -> Profile {
    let files = xplanes(logdir);
    assert_eq!(files.len(), 1, "one run: {files:?}\n{}", ended.context());
    Profile::new(xplane::read(&files[0]).expect("read the .xplane.pb"))
}

/// A `panic` marker: its line's name, message and location.
#[derive(Debug)]
struct Marker {
    line: String,
    message: String,
    location: String,
}

fn panic_markers(profile: &Profile) -> Vec<Marker> {
    let space = profile.xspace();
    let host = space.plane("/host:CPU").expect("host plane");
    let mut markers = Vec::new();
    for line in &host.lines {
        for event in &line.events {
            if host.event_name(event.metadata_id) != Some("panic") {
                continue;
            }
            let text = |name| match host.find_stat(&event.stats, name) {
                Some(XStatValue::Str(s)) => s.clone(),
                Some(other) => host.text_of(other).unwrap_or_default().to_owned(),
                None => String::new(),
            };
            markers.push(Marker {
                line: line.name.clone(),
                message: text("message"),
                location: text("location"),
            });
        }
    }
    markers
}

fn steps(profile: &Profile) -> Vec<i64> {
    let mut steps = profile.steps();
    steps.sort_unstable();
    steps.dedup();
    steps
}

fn check_main_panic(child: &Path, name: &str, aborts: bool) {
    let (dir, _keep) = logdir(name);
    let ended = run(child, "main-panic", &dir);
    if aborts {
        assert_eq!(
            ended.status.signal(),
            Some(libc::SIGABRT),
            "{}",
            ended.context()
        );
    } else {
        assert_eq!(ended.status.code(), Some(101), "{}", ended.context());
    }
    let lines = ended.prof_lines();
    assert_eq!(lines.len(), 1, "{}", ended.context());
    assert!(
        lines[0].contains("the panic at") && lines[0].contains("written to"),
        "{}",
        ended.context()
    );
    // Written first: prof's line comes before the previous hook's panic message.
    let said = ended.stderr.find("prof: ").expect("prof's line");
    let panicked = ended.stderr.find("panicked at").expect("the panic message");
    assert!(said < panicked, "{}", ended.context());

    let profile = the_profile(&dir, &ended);
    assert_eq!(steps(&profile), [0, 1, 2, 3, 4], "{}", ended.context());
    let markers = panic_markers(&profile);
    assert_eq!(markers.len(), 1, "{markers:?}");
    assert_eq!(markers[0].line, "main");
    assert_eq!(markers[0].message, "boom after 5 steps");
    assert!(markers[0].location.contains("main.rs"), "{markers:?}");
    assert!(
        profile.warnings().iter().any(|w| w.contains("panicked at")),
        "{:?}",
        profile.warnings()
    );
}

#[test]
fn a_main_thread_panic_writes_steps_0_to_4_and_the_panic_marker() {
    check_main_panic(Path::new(UNWIND), "main-panic", false);
}

#[test]
fn under_panic_abort_a_main_thread_panic_writes_the_profile_before_the_abort() {
    if let Some(child) = abort_child() {
        check_main_panic(&child, "abort-main-panic", true);
    }
}

#[test]
fn a_worker_thread_panic_leaves_a_marker_on_its_line_and_the_session_running() {
    let (dir, _keep) = logdir("worker-panic");
    let ended = run(Path::new(UNWIND), "worker-panic", &dir);
    assert!(ended.status.success(), "{}", ended.context());
    assert!(ended.prof_lines().is_empty(), "{}", ended.context());
    assert!(ended.stdout.contains("stopped: "), "{}", ended.context());
    let profile = the_profile(&dir, &ended);
    // Steps after the panic are there: the session went on.
    assert_eq!(steps(&profile), [0, 1, 2, 3, 4]);
    let markers = panic_markers(&profile);
    assert_eq!(markers.len(), 1, "{markers:?}");
    assert_eq!(markers[0].line, "worker");
    assert_eq!(markers[0].message, "the worker failed");
    assert!(markers[0].location.contains("main.rs"), "{markers:?}");
    assert!(profile.warnings().is_empty(), "{:?}", profile.warnings());
}

#[test]
fn under_panic_abort_a_worker_thread_panic_ends_and_writes_the_session() {
    let Some(child) = abort_child() else {
        return;
    };
    let (dir, _keep) = logdir("abort-worker-panic");
    let ended = run(&child, "worker-panic", &dir);
    assert_eq!(
        ended.status.signal(),
        Some(libc::SIGABRT),
        "{}",
        ended.context()
    );
    assert_eq!(ended.prof_lines().len(), 1, "{}", ended.context());
    let profile = the_profile(&dir, &ended);
    assert_eq!(steps(&profile), [0, 1]);
    let markers = panic_markers(&profile);
    assert_eq!(markers.len(), 1, "{markers:?}");
    assert_eq!(markers[0].line, "worker");
}

fn check_exit(scenario: &str, code: i32) {
    let (dir, _keep) = logdir(scenario);
    let ended = run(Path::new(UNWIND), scenario, &dir);
    assert_eq!(ended.status.code(), Some(code), "{}", ended.context());
    let lines = ended.prof_lines();
    assert_eq!(lines.len(), 1, "one warning: {}", ended.context());
    assert!(
        lines[0].contains("without prof::stop()") && lines[0].contains("written to"),
        "{}",
        ended.context()
    );
    assert_eq!(ended.stderr.lines().count(), 1, "{}", ended.context());
    let profile = the_profile(&dir, &ended);
    assert_eq!(steps(&profile), [0, 1, 2]);
    let warned: Vec<_> = profile
        .warnings()
        .iter()
        .filter(|w| w.contains("without prof::stop()"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", profile.warnings());
}

#[test]
fn a_main_that_returns_without_stop_leaves_a_profile_and_one_warning() {
    check_exit("main-returns", 0);
}

#[test]
fn process_exit_without_stop_leaves_a_profile_and_one_warning() {
    check_exit("process-exit", 3);
}

fn check_signal(scenario: &str, sig: libc::c_int, name: &str) {
    let (dir, _keep) = logdir(&format!("{scenario}-{name}"));
    let mut child = spawn(Path::new(UNWIND), scenario, &dir, &[]);
    let seen = await_ready(&mut child);
    kill(&child, sig);
    let ended = finish(child, seen);
    assert_eq!(ended.status.signal(), Some(sig), "{}", ended.context());
    let lines = ended.prof_lines();
    assert_eq!(lines.len(), 1, "{}", ended.context());
    assert!(
        lines[0].contains(&format!("{name} ended the session")),
        "{}",
        ended.context()
    );
    let profile = the_profile(&dir, &ended);
    let steps = steps(&profile);
    assert!(steps.starts_with(&[0, 1, 2, 3, 4]), "{steps:?}");
    assert!(
        profile.warnings().iter().any(|w| w.contains(name)),
        "{:?}",
        profile.warnings()
    );
}

#[test]
fn sigterm_writes_the_profile_then_ends_the_process_with_sigterm() {
    check_signal("signal", libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_writes_the_profile_then_ends_the_process_with_sigint() {
    check_signal("signal", libc::SIGINT, "SIGINT");
}

#[test]
fn the_advanced_configuration_key_asks_for_the_same() {
    check_signal("signal-key", libc::SIGTERM, "SIGTERM");
}

#[test]
fn no_handler_is_installed_without_the_option_and_none_is_left_after_stop() {
    let (dir, _keep) = logdir("sigcgt");
    let ended = run(Path::new(UNWIND), "sigcgt", &dir);
    assert!(ended.status.success(), "{}", ended.context());
    let mask = |what: &str| -> u64 {
        let line = ended
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{what} ")))
            .unwrap_or_else(|| panic!("no {what} line: {}", ended.context()));
        u64::from_str_radix(line, 16).expect("hex")
    };
    let ours = (1u64 << (libc::SIGTERM - 1)) | (1u64 << (libc::SIGINT - 1));
    assert_eq!(mask("without") & ours, 0, "{}", ended.context());
    assert_eq!(mask("with") & ours, ours, "{}", ended.context());
    assert_eq!(mask("after") & ours, 0, "{}", ended.context());
}

#[test]
fn the_previous_handler_runs_after_the_profile_is_written_and_stop_hands_it_over() {
    let (dir, _keep) = logdir("previous-handler");
    let mut child = spawn(Path::new(UNWIND), "previous-handler", &dir, &[]);
    let seen = await_ready(&mut child);
    kill(&child, libc::SIGTERM);
    let ended = finish(child, seen);
    assert!(ended.status.success(), "{}", ended.context());
    assert!(
        ended.stdout.contains("handler ran: true"),
        "{}",
        ended.context()
    );
    let files = xplanes(&dir);
    assert_eq!(files.len(), 1, "written once: {files:?}");
    assert!(
        ended
            .stdout
            .contains(&format!("stopped: {}", files[0].display())),
        "{}",
        ended.context()
    );
    assert_eq!(ended.prof_lines().len(), 1, "{}", ended.context());
}

/// A session far past its `.xplane.pb` limit under SIGTERM: the cut file is written
/// first, so it is there even when SIGKILL follows 5 s later, as a scheduler's would
/// after its grace period. XProf's 2 GiB limit is scaled down to `max_bytes` (a 2 GiB
/// session is tens of GB in memory); `PROF_EXIT_BIG=EVENTS,MAX_BYTES` sets the size.
#[test]
fn a_session_past_its_xplane_limit_writes_the_cut_file_first_under_sigterm() {
    let (events, max_bytes) = std::env::var("PROF_EXIT_BIG")
        .ok()
        .and_then(|v| {
            let (e, m) = v.split_once(',')?;
            Some((e.parse().ok()?, m.parse().ok()?))
        })
        .unwrap_or((150_000u64, 256u64 << 10));
    let (dir, _keep) = logdir("big");
    let args = [events.to_string(), max_bytes.to_string(), "0".to_owned()];
    let mut child = spawn(Path::new(UNWIND), "big", &dir, &args);
    let seen = await_ready(&mut child);
    let sent = Instant::now();
    kill(&child, libc::SIGTERM);
    let grace = Duration::from_secs(5);
    while sent.elapsed() < grace && child.try_wait().expect("wait").is_none() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = child.try_wait().expect("wait").is_none();
    if killed {
        kill(&child, libc::SIGKILL);
    }
    let ended = finish(child, seen);
    let files = xplanes(&dir);
    assert_eq!(files.len(), 1, "{files:?}\n{}", ended.context());
    let size = std::fs::metadata(&files[0]).expect("xplane").len();
    assert!(size <= max_bytes, "{size} > {max_bytes}");
    let profile = Profile::new(xplane::read(&files[0]).expect("read"));
    let steps = steps(&profile);
    assert_eq!(
        steps.last().copied(),
        Some((events / 1000 - 1) as i64),
        "the latest steps"
    );
    assert!(
        prof::export::fit::note_of(profile.xspace()).is_some(),
        "the cut is noted"
    );
    let beside = |ext: &str| {
        files[0].with_file_name(format!(
            "{}.{ext}",
            files[0]
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".xplane.pb"))
                .unwrap_or_default()
        ))
    };
    println!(
        "{events} events, cut at {max_bytes} bytes: .xplane.pb {size} bytes; {} after SIGTERM; \
         .pftrace {}, .trace.json {}",
        if killed {
            "SIGKILLed 5 s".to_owned()
        } else {
            format!("ended by SIGTERM ({:?})", ended.status.signal())
        },
        if beside("pftrace").exists() {
            "written"
        } else {
            "not written"
        },
        if beside("trace.json").exists() {
            "written"
        } else {
            "not written"
        },
    );
    if !killed {
        assert_eq!(
            ended.status.signal(),
            Some(libc::SIGTERM),
            "{}",
            ended.context()
        );
    }
}
