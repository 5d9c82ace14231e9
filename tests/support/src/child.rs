//! Servers in child processes, for tests that need several processes at once (a
//! process has one profiling session, so each host of a multi-host capture or view is
//! a process of its own).
//!
//! The child is the test binary itself, run again with one ignored test alone
//! ([`this_test`]); that test starts its server and says so ([`listening`]: a line
//! `listening on ADDR` on stdout), which [`server`] waits for.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long [`server`] waits for the child's `listening on` line.
pub const WAIT: Duration = Duration::from_secs(10);

/// What the child prints, before its address, once its server listens.
pub const LISTENING_ON: &str = "listening on ";

/// Says, in the child, that its server listens at `addr`: the line [`server`] waits for.
#[allow(clippy::print_stdout)] // stdout is how the child talks to its parent
pub fn listening(addr: &str) {
    println!("{LISTENING_ON}{addr}");
}

/// This test binary, to run its ignored test `test` alone with its output let through
/// (`--ignored --exact TEST --nocapture`). The caller adds what the child needs (an
/// environment variable that says it is wanted, so that the ignored test refuses to run
/// by hand) and passes it to [`server`].
pub fn this_test(test: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args(["--ignored", "--exact", test, "--nocapture"]);
    command
}

/// Starts `command` with its stdout piped, and returns the child and the address it
/// printed as `listening on ADDR`, within [`WAIT`]. The child is not killed on drop:
/// the caller kills it (its server serves for a bounded time in any case).
///
/// # Panics
/// When the child cannot start, exits, or says nothing of the kind within [`WAIT`]
/// (then it is killed): the message quotes the command and every line it printed.
pub fn server(command: &mut Command) -> (Child, String) {
    server_within(command, WAIT)
}

fn server_within(command: &mut Command, wait: Duration) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} did not start: {e}"));
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    // Reads to the end, after the address too: a child whose pipe filled up, or
    // closed, would block or fail on its next line.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + wait;
    let mut printed = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => match line.strip_prefix(LISTENING_ON) {
                Some(addr) => return (child, addr.to_owned()),
                None => printed.push(line),
            },
            Err(RecvTimeoutError::Timeout) => {
                let _ = (child.kill(), child.wait());
                panic!(
                    "{command:?} said no `{LISTENING_ON}ADDR` within {wait:?} (killed); \
                     its stdout: {printed:#?}"
                );
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = end(&mut child, deadline);
                panic!(
                    "{command:?} closed its stdout ({status}) without saying \
                     `{LISTENING_ON}ADDR`; its stdout: {printed:#?}"
                );
            }
        }
    }
}

/// How `child` ended, waiting for it until `deadline` at most (then it is killed).
fn end(child: &mut Child, deadline: Instant) -> String {
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(status)) => return status.to_string(),
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return e.to_string(),
        }
    }
    let _ = (child.kill(), child.wait());
    "still running: killed".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn the_address_is_what_follows_listening_on() {
        let (mut child, addr) = server(&mut sh(
            "echo starting; echo 'listening on 127.0.0.1:5'; echo more; exec sleep 5",
        ));
        assert_eq!(addr, "127.0.0.1:5");
        let _ = (child.kill(), child.wait());
    }

    #[test]
    #[should_panic(
        expected = "(exit status: 3) without saying `listening on ADDR`; its stdout: [\n    \"oops\""
    )]
    fn a_child_that_exits_first_is_named_with_what_it_printed() {
        server(&mut sh("echo oops; exit 3"));
    }

    #[test]
    #[should_panic(expected = "within 200ms (killed); its stdout: [\n    \"still starting\"")]
    fn a_silent_child_is_given_up_on_after_the_wait() {
        server_within(
            &mut sh("echo 'still starting'; exec sleep 30"),
            Duration::from_millis(200),
        );
    }
}
