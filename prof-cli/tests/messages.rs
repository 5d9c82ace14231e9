//! Every bad input the guide lists, run through the real binaries: the tables of bad
//! inputs in `docs/remote.md` (capture-profile and the server), `docs/formats.md`
//! (prof-convert) and `docs/comparing.md` (prof-diff) are read here and each row run.
//! A row passes when the tool exits as the row says and prints the row's message, and
//! that message names the mistake once, says what to do, and carries no Rust Debug
//! form and no error-kind name in front. A message that changes fails here until its
//! row in the guide changes with it.
//!
//! A table follows a line `<!-- bad inputs: checked by prof-cli/tests/messages.rs -->`;
//! its columns are: what you run, the mistake (text the message names exactly once),
//! the exit status, what the tool says (one line of its stderr; `…` stands for any
//! text), and what to do (text its stderr says: on that line, or for clap's usage
//! errors on the lines below it). In commands and messages, `$HOST` is
//! a prof server on loopback, `$DEAD` a loopback port nothing listens on, `$DIR` a
//! directory, `$FILE` a profile, `$JUNK` a file that is not one, `$MISSING` a path with
//! nothing there and `$PLAIN` a plain file. `PROF_MESSAGES_SHOW=1` prints what each
//! row's command said, to write a new row from.
#![allow(clippy::print_stdout)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use profiler_core::{session, trace, ProfileOptions};

const MARKER: &str = "<!-- bad inputs: checked by prof-cli/tests/messages.rs -->";
/// The chapters holding the tables, from the crate's directory.
const CHAPTERS: [&str; 3] = [
    "../docs/remote.md",
    "../docs/formats.md",
    "../docs/comparing.md",
];
/// Longest a row may run: every command fails fast (one attempt, short captures).
const ROW_TIMEOUT: Duration = Duration::from_secs(60);

/// One row of a table.
#[derive(Debug)]
struct Row {
    chapter: &'static str,
    command: String,
    mistake: String,
    exit: i32,
    says: String,
    fix: String,
}

/// The text of a cell in backticks, or the cell itself.
fn cell(text: &str) -> String {
    let t = text.trim();
    t.strip_prefix('`')
        .and_then(|t| t.strip_suffix('`'))
        .unwrap_or(t)
        .to_owned()
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for chapter in CHAPTERS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(chapter);
        let text = std::fs::read_to_string(&path).expect("the chapter");
        let mut lines = text.lines();
        let mut tables = 0;
        while lines.any(|l| l.trim() == MARKER) {
            tables += 1;
            // The header and its rule, then rows until the table ends.
            let body = lines
                .by_ref()
                .skip_while(|l| l.trim().is_empty())
                .skip(2)
                .take_while(|l| l.starts_with('|'));
            for line in body {
                let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
                assert_eq!(cells.len(), 5, "{chapter}: a row of five cells: {line}");
                rows.push(Row {
                    chapter,
                    command: cell(cells[0]),
                    mistake: cell(cells[1]),
                    exit: cell(cells[2]).parse().expect("an exit status"),
                    says: cell(cells[3]),
                    fix: cell(cells[4]),
                });
            }
        }
        assert!(tables > 0, "{chapter} has no table of bad inputs");
    }
    rows
}

/// What the placeholders stand for in this run.
struct Places {
    names: Vec<(&'static str, String)>,
    _dir: tempfile::TempDir,
    _server: profiler_remote::server::ServerHandle,
}

impl Places {
    fn new() -> Places {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().to_path_buf();
        let file = root.join("run.xplane.pb");
        session::start(ProfileOptions::default(), None).expect("start");
        for step in 0..8 {
            let _t = trace!("Train", step_num = step);
            let _w = trace!("work");
        }
        let profile = session::stop().expect("stop");
        profiler_export::xplane::write(&file, profile.xspace()).expect("write");
        let junk = root.join("junk.xplane.pb");
        std::fs::write(&junk, b"\x0a\xff\xff\xff\xff\x0f not a profile").expect("junk");
        let plain = root.join("plain.txt");
        std::fs::write(&plain, b"a file, not a directory").expect("plain");
        let server = profiler_remote::server::start(0).expect("server");
        let host = format!("127.0.0.1:{}", server.local_addr().port());
        let dead = {
            let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
            format!("127.0.0.1:{}", listener.local_addr().expect("addr").port())
        };
        let shown = |p: PathBuf| p.to_string_lossy().into_owned();
        Places {
            // Longer names first, so that none is read as the start of another.
            names: vec![
                ("$MISSING", shown(root.join("missing.xplane.pb"))),
                ("$PLAIN", shown(plain)),
                ("$HOST", host),
                ("$DEAD", dead),
                ("$FILE", shown(file)),
                ("$JUNK", shown(junk)),
                ("$DIR", shown(root)),
            ],
            _dir: dir,
            _server: server,
        }
    }

    fn fill(&self, text: &str) -> String {
        self.names
            .iter()
            .fold(text.to_owned(), |t, (name, value)| t.replace(name, value))
    }
}

/// Whether `line` is `pattern`, where `…` in the pattern stands for any text.
fn matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    let (first, rest) = parts.split_first().expect("at least one part");
    let Some(mut left) = line.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

/// Runs `command` (a binary of this crate and its arguments), at most [`ROW_TIMEOUT`];
/// its exit status and stderr.
fn run(command: &str) -> (Option<i32>, String) {
    let mut words = command.split_whitespace();
    let bin = match words.next() {
        Some("capture-profile") => env!("CARGO_BIN_EXE_capture-profile"),
        Some("prof-convert") => env!("CARGO_BIN_EXE_prof-convert"),
        Some("prof-diff") => env!("CARGO_BIN_EXE_prof-diff"),
        other => panic!("not a tool of prof-cli: {other:?}"),
    };
    let mut child = Command::new(bin)
        .args(words)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("PROF_PROFILER_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let until = Instant::now() + ROW_TIMEOUT;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("{command}: still running after {ROW_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Rust's Debug form of a value (`Str("x")`, `Int(-2)`, `Error { kind: ... }`), which
/// no message shows a person.
fn debug_form(text: &str) -> Option<&str> {
    const FORMS: [&str; 10] = [
        "Str(", "Int(", "Bool(", "Some(", "None", "Ok(", "Err(", " { kind:", "Error {", "\\\"",
    ];
    FORMS.into_iter().find(|f| text.contains(f))
}

/// An error kind's name in front of a message (`Io: cannot ...`).
fn kind_prefix(text: &str) -> Option<&str> {
    const KINDS: [&str; 9] = [
        "InvalidArgument: ",
        "AlreadyExists: ",
        "FailedPrecondition: ",
        "Io: ",
        "Unavailable: ",
        "DeadlineExceeded: ",
        "Unauthenticated: ",
        "Unimplemented: ",
        "Internal: ",
    ];
    KINDS.into_iter().find(|k| text.contains(k))
}

#[test]
fn every_bad_input_in_the_guide_gets_the_message_the_guide_shows() {
    let rows = rows();
    assert!(rows.len() >= 15, "{} rows", rows.len());
    let places = Places::new();
    let show = std::env::var_os("PROF_MESSAGES_SHOW").is_some();
    let mut failures = Vec::new();
    for row in &rows {
        let command = places.fill(&row.command);
        let (exit, stderr) = run(&command);
        if show {
            println!(
                "{}\n  exit {exit:?}\n  {}",
                row.command,
                stderr.trim_end().replace('\n', "\n  ")
            );
        }
        let says = places.fill(&row.says);
        let mistake = places.fill(&row.mistake);
        let fix = places.fill(&row.fix);
        let Some(line) = stderr.lines().find(|l| matches(&says, l)) else {
            failures.push(format!(
                "{}: `{}` did not say\n    {says}\n  but:\n    {}",
                row.chapter,
                row.command,
                stderr.trim_end().replace('\n', "\n    ")
            ));
            continue;
        };
        let mut wrong = Vec::new();
        if exit != Some(row.exit) {
            wrong.push(format!("exit {exit:?}, not {}", row.exit));
        }
        if line.matches(mistake.as_str()).count() != 1 {
            wrong.push(format!(
                "names {mistake:?} {} times, not once",
                line.matches(mistake.as_str()).count()
            ));
        }
        // clap puts its suggestion on the lines below its error.
        if !stderr.contains(&fix) {
            wrong.push(format!("does not say what to do ({fix:?})"));
        }
        if let Some(form) = debug_form(&stderr) {
            wrong.push(format!("shows a Debug form ({form:?})"));
        }
        if let Some(kind) = kind_prefix(&stderr) {
            wrong.push(format!("puts an error kind in front ({kind:?})"));
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{}: `{}`: {}\n    {}",
                row.chapter,
                row.command,
                wrong.join("; "),
                stderr.trim_end().replace('\n', "\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_matcher_reads_ellipses_as_any_text() {
    assert!(matches("a…c", "abc"));
    assert!(matches("a…c", "ac"));
    assert!(matches("error: x … y", "error: x 1 2 y"));
    assert!(!matches("a…c", "abd"));
    assert!(!matches("a", "ab"));
    assert!(matches("a…", "abcdef"));
    assert!(debug_form("got Str(\"9\")").is_some());
    assert!(kind_prefix("prof-convert: Io: cannot").is_some());
    assert!(kind_prefix("prof-convert: cannot").is_none());
}
