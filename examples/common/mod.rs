//! What the examples share: their `--logdir DIR --steps N` flags, the export flags,
//! and the summary they print once the profile is written. Not an example itself
//! (Cargo only builds `examples/*.rs` and `examples/*/main.rs`).
#![allow(dead_code, unreachable_pub, clippy::print_stdout)]

use std::path::{Path, PathBuf};

use prof::export::link::{LinkOptions, LinkOutcome};
use prof::export::otlp::{OtlpOptions, Protocol};
use prof::{ExportFormat, ProfileExport};

/// Export flags every example takes, described in its `--help`.
pub const EXPORT_USAGE: &str = "\
  --format LIST          also write these beside the .xplane.pb: perfetto, chrome, chrome.gz
  --otlp ENDPOINT        send the spans to an OpenTelemetry collector (http://host:4317)
  --otlp-protocol P      grpc (default) or http/protobuf
  --perfetto-link        serve the Perfetto trace once to ui.perfetto.dev, print the link";

/// The flags every example takes.
pub struct Args {
    pub logdir: PathBuf,
    pub steps: u32,
    /// Formats written besides the `.xplane.pb`.
    pub formats: Vec<ExportFormat>,
    pub otlp: Option<OtlpOptions>,
    pub perfetto_link: bool,
}

impl Args {
    /// Session options with the export formats asked for.
    pub fn options(&self, mut options: prof::ProfileOptions) -> prof::ProfileOptions {
        for &format in &self.formats {
            options = options.export_format(format);
        }
        options
    }
}

/// Parses `--logdir DIR` (default `logs`), `--steps N` (default `steps`) and the export
/// flags, handing any other flag and its value to `extra`, which returns false for
/// flags it does not know. `-h`/`--help` prints `usage` and exits.
pub fn parse_args(
    usage: &str,
    steps: u32,
    mut extra: impl FnMut(&str, &str) -> Result<bool, String>,
) -> Result<Args, String> {
    let mut args = Args {
        logdir: PathBuf::from("logs"),
        steps,
        formats: Vec::new(),
        otlp: None,
        perfetto_link: false,
    };
    let mut protocol = Protocol::Grpc;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if matches!(flag.as_str(), "-h" | "--help") {
            println!("usage: {usage}\n\nexport options:\n{EXPORT_USAGE}");
            std::process::exit(0);
        }
        if flag == "--perfetto-link" {
            args.perfetto_link = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--logdir" => args.logdir = PathBuf::from(value),
            "--steps" => args.steps = number(&flag, &value)?,
            "--format" => {
                args.formats = ExportFormat::parse_list(&value).map_err(|e| e.to_string())?
            }
            "--otlp" => args.otlp = Some(OtlpOptions::new(value)),
            "--otlp-protocol" => {
                protocol = value.parse().map_err(|e: prof::Error| e.to_string())?
            }
            other => {
                if !extra(other, &value)? {
                    return Err(format!("unknown argument {other}; try --help"));
                }
            }
        }
    }
    if let Some(otlp) = args.otlp.take() {
        let service = std::env::args()
            .next()
            .and_then(|p| Some(Path::new(&p).file_stem()?.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "prof-example".to_owned());
        args.otlp = Some(otlp.protocol(protocol).service_name(service));
    }
    Ok(args)
}

/// `value` of `flag` as a number, or an error naming both.
pub fn number(flag: &str, value: &str) -> Result<u32, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} {value}: not a number"))
}

/// Prints where the profile went, `stats` (one line about what it holds), its
/// warnings, and how to view it; then sends it to the OTLP collector and serves the
/// Perfetto link when asked.
pub fn report(profile: &prof::Profile, args: &Args, stats: &str) -> Result<(), String> {
    let logdir = &args.logdir;
    let file = profile.files().first().ok_or("no file was written")?;
    println!("profile written to {}", file.display());
    for other in &profile.files()[1..] {
        println!("  also {}", other.display());
    }
    println!("  {stats}");
    for warning in profile.warnings() {
        println!("  warning: {warning}");
    }
    println!(
        "{}",
        profile.summary(&prof::summary::SummaryOptions::default().limit(10))
    );
    println!(
        "view it with:  xprof --logdir {}   (or: tensorboard --logdir {})",
        logdir.display(),
        logdir.display()
    );
    if let Some(otlp) = &args.otlp {
        let sent = profile.export_otlp(otlp).map_err(|e| e.to_string())?;
        println!(
            "sent {} spans in {} traces to {} ({})",
            sent.spans, sent.traces, otlp.endpoint, otlp.protocol
        );
    }
    if args.perfetto_link {
        match profile
            .serve_perfetto_link(&LinkOptions::default(), |url| {
                println!("Perfetto trace link (open it to view; served once): {url}")
            })
            .map_err(|e| e.to_string())?
        {
            LinkOutcome::Fetched => println!("the Perfetto UI fetched the trace"),
            LinkOutcome::TimedOut => println!("nobody opened the Perfetto link in time"),
        }
    }
    Ok(())
}
