//! `az://` against Azurite 3.35.0 (npm, `tests/interop/azurite`), the official Azure
//! Storage emulator, blob service only, in memory, on a free loopback port, without
//! telemetry (it would reach the internet otherwise).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::setup::{capture, child_server, host_file, User, BUCKET};

/// Azurite's well-known development account and key.
const AZ_ACCOUNT: &str = "devstoreaccount1";
pub(crate) const AZ_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// A running Azurite with the container [`BUCKET`]; `None` when it is not installed
/// (`npm ci --prefix tests/interop/azurite`; CI installs it and sets
/// `PROF_REQUIRE_AZURITE=1`, so that its absence fails there).
pub(crate) struct Azurite {
    child: Child,
    endpoint: String,
}

impl Azurite {
    pub(crate) fn start() -> Option<Azurite> {
        let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/interop/azurite/node_modules/.bin/azurite-blob");
        if !bin.exists() {
            assert!(
                std::env::var("PROF_REQUIRE_AZURITE").as_deref() != Ok("1"),
                "Azurite is required here: npm ci --prefix tests/interop/azurite"
            );
            eprintln!("az:// not tested: Azurite is not installed (npm ci --prefix tests/interop/azurite)");
            return None;
        }
        let data = std::env::temp_dir();
        let mut child = Command::new(&bin)
            .args([
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                "0",
                "--inMemoryPersistence",
                "--skipApiVersionCheck",
                "--disableTelemetry",
                "--silent",
            ])
            .current_dir(data)
            .stdout(Stdio::piped())
            .spawn()
            .expect("azurite starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(at) = line.split("listens on ").nth(1) {
                    let _ = tx.send(at.trim().to_owned());
                }
            }
        });
        let endpoint = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("Azurite listens");
        let azurite = Azurite { child, endpoint };
        azurite.create_container(BUCKET);
        Some(azurite)
    }

    /// Creates `name` with a Shared Key request (object_store creates no containers).
    fn create_container(&self, name: &str) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let date = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let version = "2021-08-06";
        // VERB, then eleven standard headers (all empty here), the x-ms- headers, and
        // the resource: the account, then the path-style URL's path.
        let to_sign = format!(
            "PUT\n{}x-ms-date:{date}\nx-ms-version:{version}\n/{AZ_ACCOUNT}/{AZ_ACCOUNT}/{name}\nrestype:container",
            "\n".repeat(11)
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &b64.decode(AZ_KEY).expect("key"));
        let signature = b64.encode(ring::hmac::sign(&key, to_sign.as_bytes()).as_ref());
        let host = self.endpoint.trim_start_matches("http://");
        let mut conn = TcpStream::connect(host).expect("connect");
        write!(
            conn,
            "PUT /{AZ_ACCOUNT}/{name}?restype=container HTTP/1.1\r\nHost: {host}\r\n\
             x-ms-date: {date}\r\nx-ms-version: {version}\r\n\
             Authorization: SharedKey {AZ_ACCOUNT}:{signature}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
        .expect("request");
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 201"),
            "creating {name}: {answer}"
        );
    }

    /// A user of this Azurite, with the account's key or another.
    pub(crate) fn user(&self, key: &str) -> User {
        User::with(vec![
            ("AZURE_STORAGE_USE_EMULATOR", "true".to_owned()),
            ("AZURITE_BLOB_STORAGE_URL", self.endpoint.clone()),
            ("AZURE_STORAGE_ACCOUNT_KEY", key.to_owned()),
        ])
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every `.xplane.pb` under the URL, brought down by `prof-convert URL --out DIR`: the
/// files, relative to DIR.
fn read_back(user: &User, url: &str) -> Vec<PathBuf> {
    let down = user.tmp.path().join("down");
    let _ = std::fs::remove_dir_all(&down);
    let out = user.run(
        env!("CARGO_BIN_EXE_prof-convert"),
        &[url, "--out", &down.to_string_lossy()],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut files: Vec<PathBuf> = profiler_export::convert::find_xplanes(&down)
        .expect("copied")
        .into_iter()
        .inspect(|f| assert!(profiler_export::xplane::read(f).is_ok(), "{}", f.display()))
        .map(|f| f.strip_prefix(&down).expect("under --out").to_path_buf())
        .collect();
    files.sort();
    files
}

#[test]
fn az_capture_profile_puts_three_hosts_in_one_run_and_two_captures_get_two_runs() {
    let Some(azurite) = Azurite::start() else {
        return;
    };
    let user = azurite.user(AZ_KEY);
    let servers: Vec<_> = (0..3).map(|_| child_server()).collect();
    let hosts: Vec<String> = servers.iter().map(|(_, a)| a.clone()).collect();
    let logdir = format!("az://{BUCKET}/cap");
    let out = capture(&user, &hosts, &logdir);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let files = read_back(&user, &logdir);
    assert_eq!(files.len(), 3, "{files:?}");
    let runs: std::collections::BTreeSet<_> =
        files.iter().map(|f| f.parent().expect("run")).collect();
    assert_eq!(runs.len(), 1, "one run: {files:?}");
    for host in &hosts {
        assert!(
            files.iter().any(|f| f.ends_with(host_file(host))),
            "{host}: {files:?}"
        );
    }
    // The same host captured again at once: a second run, the first left as it was.
    let again = capture(&user, &hosts[..1], &logdir);
    for (mut child, _) in servers {
        let _ = (child.kill(), child.wait());
    }
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    let after = read_back(&user, &logdir);
    assert_eq!(after.len(), 4, "{after:?}");
    let runs: std::collections::BTreeSet<_> =
        after.iter().map(|f| f.parent().expect("run")).collect();
    assert_eq!(runs.len(), 2, "{after:?}");
    user.assert_no_scheme_directory();
}
