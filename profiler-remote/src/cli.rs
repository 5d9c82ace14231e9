//! The `capture-profile` command line: parse, capture every host in parallel, write
//! one run directory, summarise.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use profiler_core::{ConfigValue, ExportFormat, Profile};
use profiler_export::link::{LinkOptions, LinkOutcome};
use profiler_export::otlp::{OtlpOptions, Protocol};
use profiler_export::summary::SummaryOptions;
use profiler_export::{ProfileExport, RunDir};

use crate::client::{self, CaptureError, CaptureRequest, Captured};

const USAGE: &str = "\
usage: capture-profile HOST:PORT[,HOST:PORT...] [options]

Captures a profile from running programs that serve tensorflow.ProfilerService
(prof::server::start, jax.profiler.start_server, tf.profiler.experimental.server)
into LOGDIR/plugins/profile/<run>/<host>.xplane.pb, one file per host.

options:
  --duration-ms N          how long to record (default 2000)
  --delay-ms N             wait this long before recording (default 0)
  --logdir DIR             where to write (default ./logs)
  --host-tracer-level N    0-3 (default 2)
  --device-tracer-level N  0-1 (default 1)
  --python-tracer-level N  0-1, for JAX/TensorFlow servers (default 0)
  --advanced KEY=VALUE     advanced_configuration entry (repeatable; ints and
                           true/false are typed, anything else is a string)
  --attempts N             tries per host for unreachable or busy servers (default 3)
  --format LIST            files to write per host, comma-separated: xplane (always),
                           perfetto, chrome, chrome.gz (default xplane)
  --otlp ENDPOINT          also send every host's spans to an OpenTelemetry collector
                           (http://host:4317 for gRPC, http://host:4318 for HTTP)
  --otlp-protocol P        grpc (default) or http/protobuf
  --summary N              print each host's N busiest event names (default 10;
                           0 prints none)
  --perfetto-link          serve the first host's Perfetto trace once to
                           ui.perfetto.dev and print the link (waits up to 5 min)
  -h, --help               this text

exit status: 0 when every host was captured, 1 when one failed, 2 on bad usage";

/// Parsed command line.
#[derive(Debug)]
struct Args {
    addresses: Vec<String>,
    logdir: PathBuf,
    attempts: u32,
    request: CaptureRequest,
    /// Formats written besides the `.xplane.pb`.
    formats: Vec<ExportFormat>,
    otlp: Option<OtlpOptions>,
    perfetto_link: bool,
    /// Rows of the summary printed per host; 0 prints none.
    summary_rows: usize,
}

fn parse(argv: Vec<String>) -> Result<Option<Args>, String> {
    let mut addresses = Vec::new();
    let mut logdir = PathBuf::from("logs");
    let mut attempts = 3;
    let mut request = CaptureRequest::default();
    let mut advanced = BTreeMap::new();
    let mut formats = Vec::new();
    let mut otlp = None;
    let mut protocol = Protocol::Grpc;
    let mut perfetto_link = false;
    let mut summary_rows = 10;
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        let number = |flag: &str, v: String| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{flag} {v:?}: not a non-negative integer"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--perfetto-link" => perfetto_link = true,
            "--format" => {
                formats =
                    ExportFormat::parse_list(&value(&arg)?).map_err(|e| format!("--format: {e}"))?
            }
            "--otlp" => otlp = Some(OtlpOptions::new(value(&arg)?)),
            "--otlp-protocol" => {
                protocol = value(&arg)?
                    .parse()
                    .map_err(|e| format!("--otlp-protocol: {e}"))?
            }
            "--duration-ms" => request.duration_ms = number(&arg, value(&arg)?)?,
            "--delay-ms" => request.delay_ms = number(&arg, value(&arg)?)?,
            "--logdir" => logdir = PathBuf::from(value(&arg)?),
            "--summary" => summary_rows = number(&arg, value(&arg)?)? as usize,
            "--attempts" => attempts = number(&arg, value(&arg)?)?.clamp(1, 100) as u32,
            "--host-tracer-level" => request.host_tracer_level = number(&arg, value(&arg)?)? as u32,
            "--device-tracer-level" => {
                request.device_tracer_level = number(&arg, value(&arg)?)? as u32
            }
            "--python-tracer-level" => {
                request.python_tracer_level = number(&arg, value(&arg)?)? as u32
            }
            "--advanced" => {
                let kv = value(&arg)?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or(format!("--advanced {kv:?}: expected KEY=VALUE"))?;
                let v = match (v.parse::<i64>(), v) {
                    (Ok(i), _) => ConfigValue::Int(i),
                    (_, "true") => ConfigValue::Bool(true),
                    (_, "false") => ConfigValue::Bool(false),
                    _ => ConfigValue::Str(v.to_owned()),
                };
                advanced.insert(k.to_owned(), v);
            }
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            list => addresses.extend(
                list.split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned),
            ),
        }
    }
    if addresses.is_empty() {
        return Err("no address given".into());
    }
    for address in &addresses {
        client::endpoint_uri(address).map_err(|e| e.to_string())?;
    }
    if request.duration_ms == 0 {
        return Err("--duration-ms must be more than 0".into());
    }
    request.advanced_configuration = advanced;
    // Where a server that ignores emit_xspace writes on its side, as xprof's client asks.
    request.repository_root = logdir
        .join(profiler_export::logdir::PROFILE_PLUGIN_DIR)
        .to_string_lossy()
        .into_owned();
    let otlp = otlp.map(|o| o.protocol(protocol).service_name("capture-profile"));
    if perfetto_link && !formats.contains(&ExportFormat::Perfetto) {
        formats.push(ExportFormat::Perfetto);
    }
    formats.retain(|&f| f != ExportFormat::XPlane);
    Ok(Some(Args {
        addresses,
        logdir,
        attempts,
        request,
        formats,
        otlp,
        perfetto_link,
        summary_rows,
    }))
}

/// What happened to one host.
struct Outcome {
    address: String,
    result: Result<Captured, CaptureError>,
}

/// Shows elapsed time against the capture's length until `done` fires.
async fn progress(total: Duration, hosts: usize, mut done: tokio::sync::oneshot::Receiver<()>) {
    let started = Instant::now();
    let tty = std::io::stderr().is_terminal();
    if !tty {
        eprintln!(
            "capturing {hosts} host(s) for {:.1} s ...",
            total.as_secs_f64()
        );
        let _ = done.await;
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            _ = &mut done => break,
            _ = tick.tick() => {
                let elapsed = started.elapsed();
                let frac = (elapsed.as_secs_f64() / total.as_secs_f64().max(0.001)).min(1.0);
                let filled = (frac * 30.0) as usize;
                let state = if frac >= 1.0 { "collecting" } else { "capturing" };
                eprint!(
                    "\r{state} {hosts} host(s) [{}{}] {:.1}/{:.1} s ",
                    "#".repeat(filled),
                    "-".repeat(30 - filled),
                    elapsed.as_secs_f64(),
                    total.as_secs_f64()
                );
                let _ = std::io::stderr().flush();
            }
        }
    }
    eprintln!();
}

/// Runs the command; returns the exit status.
pub fn main(argv: Vec<String>) -> i32 {
    let args = match parse(argv) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("capture-profile: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("capture-profile: cannot start: {e}");
            return 1;
        }
    };
    let outcomes = runtime.block_on(capture_all(&args));
    report(&args, outcomes)
}

async fn capture_all(args: &Args) -> Vec<Outcome> {
    let (done, done_rx) = tokio::sync::oneshot::channel();
    let total = Duration::from_millis(args.request.delay_ms + args.request.duration_ms);
    let bar = tokio::spawn(progress(total, args.addresses.len(), done_rx));
    let tasks: Vec<_> = args
        .addresses
        .iter()
        .map(|address| {
            let (address, request, attempts) =
                (address.clone(), args.request.clone(), args.attempts);
            tokio::spawn(async move {
                let result = client::capture_with_retries(&address, &request, attempts).await;
                Outcome { address, result }
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for (task, address) in tasks.into_iter().zip(&args.addresses) {
        outcomes.push(task.await.unwrap_or_else(|e| Outcome {
            address: address.clone(),
            result: Err(CaptureError::Server(format!("capture task failed: {e}"))),
        }));
    }
    let _ = done.send(());
    let _ = bar.await;
    outcomes
}

/// Sends one host's profile to the collector; false when that failed.
fn send_otlp(address: &str, profile: &Profile, options: &OtlpOptions) -> bool {
    match profile.export_otlp(options) {
        Ok(sent) => {
            println!(
                "  sent {} spans in {} traces to {} ({})",
                sent.spans, sent.traces, options.endpoint, options.protocol
            );
            true
        }
        Err(e) => {
            eprintln!("capture-profile: {address}: captured, but {e}");
            false
        }
    }
}

fn report(args: &Args, outcomes: Vec<Outcome>) -> i32 {
    let mut run: Option<RunDir> = None;
    let mut failed = 0;
    let mut written = 0;
    let mut first: Option<Profile> = None;
    for Outcome { address, result } in outcomes {
        match result {
            Ok(Captured::Space(space)) => {
                if run.is_none() {
                    match RunDir::create(&args.logdir) {
                        Ok(r) => run = Some(r),
                        Err(e) => {
                            eprintln!("capture-profile: {address}: captured, but {e}");
                            failed += 1;
                            continue;
                        }
                    }
                }
                let Some(run) = &run else { continue };
                let mut profile = Profile::new(*space);
                match run.write(&mut profile, &address, &args.formats) {
                    Ok(()) => {
                        written += 1;
                        let files: Vec<_> = profile
                            .files()
                            .iter()
                            .map(|f| f.display().to_string())
                            .collect();
                        println!(
                            "{address}: {} events, {} steps -> {}",
                            profile.event_count(),
                            profile.steps().len(),
                            files.join(", ")
                        );
                        for warning in profile.warnings() {
                            println!("  warning: {warning}");
                        }
                        if args.summary_rows > 0 {
                            let options = SummaryOptions::default().limit(args.summary_rows);
                            println!("{}", profile.summary(&options));
                        }
                        if let Some(otlp) = &args.otlp {
                            failed += usize::from(!send_otlp(&address, &profile, otlp));
                        }
                        first.get_or_insert(profile);
                    }
                    Err(e) => {
                        eprintln!("capture-profile: {address}: captured, but writing failed: {e}");
                        failed += 1;
                    }
                }
            }
            Ok(Captured::WrittenByServer { empty }) => {
                let root = Path::new(&args.request.repository_root).join(&args.request.session_id);
                println!(
                    "{address}: the server wrote its own file under {} on its machine{}",
                    root.display(),
                    if empty {
                        " (it reports an empty trace)"
                    } else {
                        ""
                    }
                );
            }
            Err(e) => {
                eprintln!("capture-profile: {address}: {e}");
                failed += 1;
            }
        }
    }
    if written > 0 {
        println!(
            "view with:  xprof --logdir {}   (or: tensorboard --logdir {})",
            args.logdir.display(),
            args.logdir.display()
        );
    }
    if let (true, Some(profile)) = (args.perfetto_link, &first) {
        match profile.serve_perfetto_link(&LinkOptions::default()) {
            Ok(LinkOutcome::Fetched) => println!("the Perfetto UI fetched the trace"),
            Ok(LinkOutcome::TimedOut) => println!("nobody opened the Perfetto link in time"),
            Err(e) => {
                eprintln!("capture-profile: {e}");
                failed += 1;
            }
        }
    }
    i32::from(failed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Option<Args>, String> {
        parse(line.split_whitespace().map(str::to_owned).collect())
    }

    #[test]
    fn addresses_and_options_parse() {
        let a = args("localhost:6009,10.0.0.2:6009 grpc://h:1 --duration-ms 500 --advanced gpu_max_activity_api_events=1024 --advanced x=true --attempts 1")
            .expect("parses")
            .expect("not help");
        assert_eq!(
            a.addresses,
            ["localhost:6009", "10.0.0.2:6009", "grpc://h:1"]
        );
        assert_eq!(a.request.duration_ms, 500);
        assert_eq!(a.attempts, 1);
        assert_eq!(
            a.request
                .advanced_configuration
                .get("gpu_max_activity_api_events"),
            Some(&ConfigValue::Int(1024))
        );
        assert_eq!(
            a.request.advanced_configuration.get("x"),
            Some(&ConfigValue::Bool(true))
        );
        assert_eq!(a.logdir, PathBuf::from("logs"));
        assert_eq!(a.request.repository_root, "logs/plugins/profile");
        assert_eq!(a.summary_rows, 10);
        let quiet = args("h:1 --summary 0").expect("parses").expect("not help");
        assert_eq!(quiet.summary_rows, 0);
    }

    #[test]
    fn bad_usage_names_what_is_wrong() {
        assert!(args("").expect_err("bad usage").contains("no address"));
        assert!(args("localhost")
            .expect_err("bad usage")
            .contains("no port"));
        assert!(args("h:99999").expect_err("bad usage").contains("port"));
        assert!(args("h:1 --duration-ms x")
            .expect_err("bad usage")
            .contains("--duration-ms"));
        assert!(args("h:1 --bogus")
            .expect_err("bad usage")
            .contains("--bogus"));
        assert!(args("h:1 --duration-ms 0")
            .expect_err("bad usage")
            .contains("more than 0"));
        assert!(args("--help").expect("help").is_none());
        assert!(args("h:1 --format perfetto,svg")
            .expect_err("bad usage")
            .contains("svg"));
        assert!(args("h:1 --otlp-protocol udp")
            .expect_err("bad usage")
            .contains("udp"));
    }

    #[test]
    fn export_flags_parse() {
        let a = args("h:1 --format xplane,chrome.gz --otlp http://c:4318 --otlp-protocol http/protobuf --perfetto-link")
            .expect("parses")
            .expect("not help");
        // The .xplane.pb is always written; the link needs a Perfetto file.
        assert_eq!(
            a.formats,
            [ExportFormat::ChromeJsonGz, ExportFormat::Perfetto]
        );
        let otlp = a.otlp.expect("otlp");
        assert_eq!(otlp.endpoint, "http://c:4318");
        assert_eq!(otlp.protocol, Protocol::HttpProtobuf);
        assert!(a.perfetto_link);
    }
}
