//! What the examples share: their `--logdir DIR --steps N` flags, the export flags
//! (clap, with each example's own flags beside them), and the summary they print once
//! the profile is written. Not an example itself
//! (Cargo only builds `examples/*.rs` and `examples/*/main.rs`).
#![allow(dead_code, unreachable_pub, clippy::print_stdout)]

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};
use prof::export::link::{LinkOptions, LinkOutcome};
use prof::export::otlp::{OtlpOptions, Protocol};
use prof::prelude::*;
use prof::ExportFormat;

/// The flags every example takes, as parsed.
pub struct Args {
    pub logdir: PathBuf,
    pub steps: u32,
    /// Formats written besides the `.xplane.pb`.
    pub formats: Vec<ExportFormat>,
    pub otlp: Option<OtlpOptions>,
    pub perfetto_link: bool,
    /// `--option KEY=VALUE` pairs: the session's `advanced_configuration`.
    pub advanced: Vec<(String, prof::ConfigValue)>,
    /// Where to write the summary as JSON.
    pub summary_json: Option<PathBuf>,
    /// `--max-xplane-bytes`: the session's `max_xplane_bytes`, when given.
    pub max_xplane_bytes: Option<u64>,
}

impl Args {
    /// Session options with the export formats asked for.
    pub fn options(&self, mut options: prof::ProfileOptions) -> prof::ProfileOptions {
        for &format in &self.formats {
            options = options.export_format(format);
        }
        for (key, value) in &self.advanced {
            options = options.advanced(key.clone(), value.clone());
        }
        if let Some(bytes) = self.max_xplane_bytes {
            options = options.max_xplane_bytes(bytes);
        }
        options
    }
}

// The common flags, and an example's own (`E`, a `clap::Args`; `NoExtra` for none).
#[derive(Parser)]
struct Cli<E: clap::Args> {
    /// Where to write the profile (a TensorBoard/XProf logdir)
    #[arg(long, value_name = "DIR", default_value = "logs")]
    logdir: PathBuf,
    /// Training steps to run
    #[arg(long, value_name = "N")]
    steps: u32,
    /// Also write these beside the .xplane.pb: perfetto, chrome, chrome.gz
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    format: Vec<ExportFormat>,
    /// Send the spans to an OpenTelemetry collector (http://HOST:4317)
    #[arg(long, value_name = "ENDPOINT", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp: Option<String>,
    /// OTLP protocol: grpc or http/protobuf
    #[arg(
        long,
        value_name = "PROTOCOL",
        default_value = "grpc",
        env = "OTEL_EXPORTER_OTLP_PROTOCOL"
    )]
    otlp_protocol: Protocol,
    /// Serve the Perfetto trace once to ui.perfetto.dev and print the link
    #[arg(long)]
    perfetto_link: bool,
    /// An advanced_configuration entry, as JAX's ProfileOptions takes them
    /// (gpu_trace_all_api_calls=true, gpu_max_activity_api_events=100000, ...); repeatable.
    /// `prof::start` checks the key and the value's type
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_option)]
    option: Vec<(String, prof::ConfigValue)>,
    /// Also write the summary (steps, peak memory per allocator and op) as JSON here
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
    /// Largest .xplane.pb to write (XProf opens none over 2 GiB): past it, the file keeps
    /// the latest steps that fit and a .pftrace beside it holds the whole session
    #[arg(long, value_name = "BYTES")]
    max_xplane_bytes: Option<u64>,
    #[command(flatten)]
    extra: E,
}

/// For examples with no flags of their own.
#[derive(clap::Args)]
pub struct NoExtra {}

/// Parses the common flags (`--steps` defaulting to `default_steps`) and the
/// example's own; `--help` describes both, bad usage exits 2.
pub fn parse<E: clap::Args>(
    name: &'static str,
    about: &'static str,
    default_steps: u32,
) -> (Args, E) {
    let command = Cli::<E>::command()
        .name(name)
        .about(about)
        .mut_arg("steps", |a| {
            a.default_value(default_steps.to_string()).required(false)
        });
    let cli = Cli::<E>::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    let otlp = cli.otlp.map(|endpoint| {
        OtlpOptions::new(endpoint)
            .protocol(cli.otlp_protocol)
            .service_name(name)
    });
    let args = Args {
        logdir: cli.logdir,
        steps: cli.steps,
        formats: cli.format,
        otlp,
        perfetto_link: cli.perfetto_link,
        advanced: cli.option,
        summary_json: cli.summary_json,
        max_xplane_bytes: cli.max_xplane_bytes,
    };
    (args, cli.extra)
}

/// `KEY=VALUE`, the value read as a bool (`true`, `false`), else an integer, else text.
fn parse_option(pair: &str) -> Result<(String, prof::ConfigValue), String> {
    let (key, value) = pair
        .split_once('=')
        .filter(|(key, _)| !key.is_empty())
        .ok_or_else(|| format!("'{pair}' is not KEY=VALUE"))?;
    let value = match value {
        "true" => prof::ConfigValue::Bool(true),
        "false" => prof::ConfigValue::Bool(false),
        _ => match value.parse::<i64>() {
            Ok(int) => prof::ConfigValue::Int(int),
            Err(_) => prof::ConfigValue::Str(value.to_owned()),
        },
    };
    Ok((key.to_owned(), value))
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
    let summary = profile.summary(&prof::summary::SummaryOptions::default().limit(10));
    println!("{summary}");
    if let Some(path) = &args.summary_json {
        std::fs::write(path, summary.to_json())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    match prof::export::store::Location::parse(logdir) {
        // XProf reads gs:// and local logdirs; s3:// and az:// runs come down first.
        Ok(prof::export::store::Location::Object(url)) if !url.xprof_reads() => println!(
            "XProf reads gs:// logdirs only: bring the run down with  prof-convert {url} --out logs  \
             then  xprof --logdir logs"
        ),
        _ => println!(
            "view it with:  xprof --logdir {}   (or: tensorboard --logdir {})",
            logdir.display(),
            logdir.display()
        ),
    }
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
