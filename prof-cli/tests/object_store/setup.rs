//! What every test here shares: the user a tool runs as, the captured servers (prof
//! servers in child processes), and reading what a tool said.

use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::Duration;

use prof_test_support::child;
use prof_test_support::workload::Workload;
use profiler_remote::server;

/// The bucket (the container, on Azurite) every test writes to.
pub(crate) const BUCKET: &str = "prof";

/// Where a tool runs: its working directory, its `TMPDIR`, and its credentials (no
/// other `AWS_*` or `AZURE*` variable reaches it).
pub(crate) struct User {
    pub(crate) cwd: tempfile::TempDir,
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) env: Vec<(&'static str, String)>,
}

impl User {
    pub(crate) fn with(env: Vec<(&'static str, String)>) -> User {
        User {
            cwd: tempfile::tempdir().expect("tmp"),
            tmp: tempfile::tempdir().expect("tmp"),
            env,
        }
    }

    pub(crate) fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        for (key, _) in std::env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("AWS_") || key_text.starts_with("AZURE") {
                command.env_remove(key);
            }
        }
        command
            .current_dir(self.cwd.path())
            .env("TMPDIR", self.tmp.path())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
        command
    }

    pub(crate) fn run(&self, program: &str, args: &[&str]) -> Output {
        self.command(program).args(args).output().expect("runs")
    }

    /// No `s3:` (or `gs:`) directory where the tool ran, nor anywhere under it.
    pub(crate) fn assert_no_scheme_directory(&self) {
        let mut dirs = vec![self.cwd.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("listed") {
                let path = entry.expect("entry").path();
                let name = path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned();
                assert!(!name.ends_with(':'), "{} was created", path.display());
                if path.is_dir() {
                    dirs.push(path);
                }
            }
        }
    }
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The local copy a failure names: the path after "kept in ", up to the next `;`.
pub(crate) fn kept_in(stderr: &str) -> PathBuf {
    let at = stderr.find("kept in ").expect("the local copy is named") + "kept in ".len();
    let rest = &stderr[at..];
    let end = [rest.find(';'), rest.find('\n'), rest.find(": ")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    PathBuf::from(&rest[..end])
}

/// Set in the child processes [`serve_as_a_child_process`] runs in.
const CHILD: &str = "PROF_STORE_CHILD_SERVER";

/// Not a test of its own, so ignored: [`child_server`] runs it in a child process, a
/// prof server with a workload for a few seconds, without any credentials.
#[test]
#[ignore = "a child process of the capture tests, run by them"]
fn serve_as_a_child_process() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "run by child_server, with {CHILD} set"
    );
    let server = server::start(0).expect("server");
    let _work = Workload::start();
    child::listening(&format!("127.0.0.1:{}", server.local_addr().port()));
    std::thread::sleep(Duration::from_secs(10));
}

/// A prof server in a child process with no `AWS_*` variable; its address.
pub(crate) fn child_server() -> (Child, String) {
    let mut command = child::this_test("setup::serve_as_a_child_process");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("AWS_") {
            command.env_remove(key);
        }
    }
    child::server(command.env(CHILD, "1"))
}

pub(crate) fn capture(user: &User, hosts: &[String], logdir: &str) -> Output {
    user.run(
        env!("CARGO_BIN_EXE_capture-profile"),
        &[
            &hosts.join(","),
            "--duration-ms",
            "300",
            "--attempts",
            "1",
            "--logdir",
            logdir,
        ],
    )
}

pub(crate) fn host_file(addr: &str) -> String {
    format!("{}.xplane.pb", addr.replace(':', "_"))
}
