//! `prof-top`: a live view of running programs serving prof's profiler port (steps,
//! input share, top ops, memory; a row per host with the slowest marked), refreshed
//! about once a second from each server's `prof.live.v1.Live/Watch` stream, with
//! TensorFlow's `Monitor` as the fallback.
//!
//! ```text
//! $ prof-top localhost:6009
//! $ prof-top host1:6009,host2:6009,host3:6009
//! $ prof-top localhost:6009 --once --json | jq .hosts[0].step_time_ms.p50
//! ```

pub mod feed;
pub mod plain;
pub mod state;
pub mod view;

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};
use profiler_core::error::report;
use profiler_remote::client::Connection;
use profiler_remote::live::proto::WatchRequest;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::capture::parse_address;
use crate::connection::ConnectionArgs;
use state::{Action, App, CaptureRun, Key, Update};

/// Longest wait for --once: a minute.
const MAX_WAIT_MS: u64 = 60_000;

/// A live view of running programs that serve prof's profiler port
/// (prof::server::start): step times, input share, top ops, memory and GPUs, a row per
/// host with the slowest marked.
#[derive(Debug, Parser)]
#[command(
    name = "prof-top",
    version,
    after_help = "Keys: q quit, p pause, c capture, s sort, / filter, j/k host, ? help.\n\
                  Exit status: 0; with --once, 1 when a host gave nothing; 2 on bad usage."
)]
pub struct Args {
    /// Servers to watch: HOST:PORT, comma-separated or repeated
    #[arg(required = true, value_name = "HOST:PORT", value_delimiter = ',', value_parser = parse_address)]
    pub addresses: Vec<String>,

    /// Print one snapshot of every host and exit
    #[arg(long)]
    pub once: bool,

    /// Print the snapshot as JSON (implies --once)
    #[arg(long)]
    pub json: bool,

    /// With --once, how long to wait for every host's first steps
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_WAIT_MS))]
    pub wait_ms: u64,

    /// Where `c` writes its capture (capture-profile's --logdir)
    #[arg(long, value_name = "DIR", default_value = "logs")]
    pub logdir: PathBuf,

    /// How long `c` records
    #[arg(long, value_name = "MS", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub capture_ms: u64,

    /// Trace the watched processes' GPU kernels (CUPTI) while watching, to show the
    /// time each GPU spends in their own kernels; costs them about 1 µs a launch
    #[arg(long)]
    pub kernels: bool,

    /// How the servers are reached: --connect-timeout-ms, --token, --tls-ca,
    /// --tls-domain (clap reads no doc comment of a flattened field)
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

impl Args {
    /// The connection every host is reached with.
    ///
    /// # Errors
    /// A message naming the mistake (a host listed twice, an unreadable CA file).
    pub fn connection(&self) -> Result<Connection, String> {
        let mut seen = HashSet::new();
        for address in &self.addresses {
            if !seen.insert(address.as_str()) {
                return Err(format!("{address} is listed twice: list each host once"));
            }
        }
        self.connection.connection()
    }
}

/// Runs `prof-top` with the process's arguments; returns the exit status.
pub fn main() -> i32 {
    let args = Args::parse();
    let connection = match args.connection() {
        Ok(c) => c,
        Err(message) => Args::command()
            .error(clap::error::ErrorKind::ValueValidation, message)
            .exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("prof-top: cannot start: {}", report(&e));
            return 1;
        }
    };
    let (updates, received) = mpsc::channel();
    for (index, address) in args.addresses.iter().enumerate() {
        runtime.spawn(feed::follow(
            index,
            address.clone(),
            connection.clone(),
            WatchRequest {
                trace_kernels: args.kernels,
            },
            updates.clone(),
        ));
    }
    drop(updates);
    let mut app = App::new(&args.addresses);
    if args.once || args.json {
        return once(&args, &mut app, &received);
    }
    match interactive(&args, &mut app, &received) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("prof-top: the terminal failed: {e}");
            1
        }
    }
}

/// `--once`: waits for every host to settle (or `--wait-ms`), prints, exits.
fn once(args: &Args, app: &mut App, received: &Receiver<Update>) -> i32 {
    let deadline = Instant::now() + Duration::from_millis(args.wait_ms);
    while !app.hosts.iter().all(plain::settled) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match received.recv_timeout(left) {
            Ok(update) => app.apply(update),
            Err(_) => break,
        }
    }
    if args.json {
        println!("{}", plain::json(app));
    } else {
        let (width, height) = ratatui::crossterm::terminal::size().unwrap_or((80, 24));
        for i in 0..app.hosts.len() {
            app.selected = i;
            println!("{}", plain::text(app, width, height));
        }
    }
    let silent: Vec<&str> = app
        .hosts
        .iter()
        .filter(|h| !plain::answered(h))
        .map(|h| h.address.as_str())
        .collect();
    if silent.is_empty() {
        0
    } else {
        eprintln!(
            "prof-top: no snapshot from {} within {} ms",
            silent.join(", "),
            args.wait_ms
        );
        1
    }
}

fn key_of(code: KeyCode) -> Option<Key> {
    Some(match code {
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        _ => return None,
    })
}

/// The terminal view, until `q`. `ratatui::init` switches to the alternate screen and
/// installs a panic hook that restores the terminal; `restore` leaves it.
fn interactive(args: &Args, app: &mut App, received: &Receiver<Update>) -> std::io::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = run(&mut terminal, args, app, received);
    ratatui::try_restore()?;
    result
}

fn run(
    terminal: &mut ratatui::DefaultTerminal,
    args: &Args,
    app: &mut App,
    received: &Receiver<Update>,
) -> std::io::Result<()> {
    let mut child: Option<Child> = None;
    loop {
        while let Ok(update) = received.try_recv() {
            app.apply(update);
        }
        finish_capture(app, &mut child, args);
        terminal.draw(|f| view::draw(f, app, Instant::now()))?;
        if !event::poll(Duration::from_millis(200))? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Ok(());
        }
        let Some(key) = key_of(key.code) else {
            continue;
        };
        match app.key(key) {
            Action::Quit => return Ok(()),
            Action::Capture if child.is_none() => {
                child = start_capture(app, args);
            }
            Action::Capture | Action::None => {}
        }
    }
}

/// `capture-profile` beside this program (or on the PATH), capturing every host.
fn start_capture(app: &mut App, args: &Args) -> Option<Child> {
    let sibling = std::env::current_exe()
        .ok()
        .map(|p| p.with_file_name("capture-profile"))
        .filter(|p| p.exists());
    let program = sibling.map_or_else(|| "capture-profile".into(), PathBuf::into_os_string);
    let mut command = Command::new(program);
    command
        .arg(args.addresses.join(","))
        .arg("--duration-ms")
        .arg(args.capture_ms.to_string())
        .arg("--logdir")
        .arg(&args.logdir)
        .arg("--summary")
        .arg("0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let connection = &args.connection;
    if let Some(token) = &connection.token {
        command.env("PROF_PROFILER_TOKEN", token);
    }
    if let Some(ca) = &connection.tls_ca {
        command.arg("--tls-ca").arg(ca);
    }
    if let Some(domain) = &connection.tls_domain {
        command.arg("--tls-domain").arg(domain);
    }
    let mut run = CaptureRun {
        started: Instant::now(),
        duration_ms: args.capture_ms,
        outcome: None,
    };
    let spawned = command.spawn();
    if let Err(e) = &spawned {
        run.outcome = Some(format!("capture-profile did not start: {e}"));
    }
    app.capture = Some(run);
    spawned.ok()
}

/// Notes how a capture ended once it has.
fn finish_capture(app: &mut App, child: &mut Option<Child>, args: &Args) {
    let Some(running) = child else {
        return;
    };
    let Ok(Some(status)) = running.try_wait() else {
        return;
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = running.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    let outcome = if status.success() {
        format!("capture written to {}", args.logdir.display())
    } else {
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        format!("capture failed: {last}")
    };
    if let Some(run) = &mut app.capture {
        run.outcome = Some(outcome);
    }
    *child = None;
}
