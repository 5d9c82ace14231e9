//! `capture-profile`: parse, check the logdir, capture every host in parallel, write
//! one run directory (created only once a host has something to write, so a failed
//! capture leaves no empty run for XProf to list), report.
//!
//! Parsing is strict: every number is range-checked by clap (a tracer level of
//! 4294967298 or a delay of 2^64 ms is an error, not a wrapped value), an address is
//! `HOST:PORT` (`grpc://` accepted, as TensorBoard does; a URL scheme such as
//! `http://` is named as the mistake), and a host listed twice is refused rather than
//! written over its own file.

mod plan;
mod report;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use profiler_core::error::report;
use profiler_core::{ConfigValue, Error, ErrorKind, ExportFormat};
use profiler_export::otlp::{OtlpOptions, Protocol};
use profiler_remote::client::{self, CaptureError, CaptureRequest};

use crate::connection::ConnectionArgs;
use crate::formats::{self, Formats};
pub use plan::Plan;
use report::Outcome;

/// Longest capture asked for: a day. Longer is surely a typo.
const MAX_DURATION_MS: u64 = 24 * 3600 * 1000;
/// Longest delay before recording: an hour.
const MAX_DELAY_MS: u64 = 3600 * 1000;

/// Captures a profile from running programs that serve tensorflow.ProfilerService
/// (prof::server::start, jax.profiler.start_server, tf.profiler.experimental.server)
/// into LOGDIR/plugins/profile/RUN/HOST.xplane.pb, one file per host.
#[derive(Debug, Parser)]
#[command(
    name = "capture-profile",
    version,
    after_help = "Exit status: 0 when every host was captured with events, 1 when one failed \
                  or nothing was recorded, 2 on bad usage.\n\
                  View the result with: xprof --logdir LOGDIR",
    // A capture is one call per host: what a timeout or a self-signed server means to it.
    mut_arg("connect_timeout_ms", |a| a.help(
        "How long connecting may take, and then how long a server has to first answer: \
         past it, the host fails (something that is not a gRPC server listens there)")),
    mut_arg("tls_ca", |a| a.help(
        "Connect over TLS, trusting the certificate(s) in this PEM file (the server's own \
         when self-signed)")),
)]
pub struct Args {
    /// Servers to capture: HOST:PORT, comma-separated or repeated
    #[arg(required = true, value_name = "HOST:PORT", value_delimiter = ',', value_parser = parse_address)]
    pub addresses: Vec<String>,

    /// How long to record
    #[arg(long, value_name = "MS", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_DURATION_MS))]
    pub duration_ms: u64,

    /// Wait this long before recording
    #[arg(long, value_name = "MS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=MAX_DELAY_MS))]
    pub delay_ms: u64,

    /// Where to write the run directory
    #[arg(long, value_name = "DIR", default_value = "logs")]
    pub logdir: PathBuf,

    /// Host tracer level: 1 prof's annotations, 2 also `tracing` spans, 3 also events
    #[arg(long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(0..=3))]
    pub host_tracer_level: u32,

    /// Device tracer level: 0 off, 1 GPU tracing where available
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(0..=1))]
    pub device_tracer_level: u32,

    /// Python tracer level, for JAX and TensorFlow servers
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=1))]
    pub python_tracer_level: u32,

    /// Sample every thread's native call stack this many times per CPU second (prof's
    /// servers on Linux; 0 off): a pprof file lands beside each .xplane.pb
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub host_sampling_hz: Option<u32>,

    /// An advanced_configuration entry (repeatable; integers and true/false are typed,
    /// anything else is a string)
    #[arg(long = "advanced", value_name = "KEY=VALUE", value_parser = parse_advanced)]
    pub advanced: Vec<(String, ConfigValue)>,

    /// Tries per host for unreachable or busy servers
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub attempts: u32,

    /// Files to write per host, comma-separated: xplane (always), perfetto, chrome,
    /// chrome.gz
    #[arg(long, value_name = "LIST", default_value = "xplane", value_parser = parse_formats)]
    pub format: Formats,

    /// Also send every host's spans to an OpenTelemetry collector
    /// (http://HOST:4317 for gRPC, http://HOST:4318 for HTTP)
    #[arg(long, value_name = "ENDPOINT", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp: Option<String>,

    /// OTLP protocol: grpc or http/protobuf
    #[arg(long, value_name = "PROTOCOL", default_value = "grpc",
          env = "OTEL_EXPORTER_OTLP_PROTOCOL", value_parser = parse_protocol)]
    pub otlp_protocol: Protocol,

    /// Rows of the summary table (the busiest event names); 0 prints none
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub summary: usize,

    /// With several hosts, print one summary table per host instead of one merged
    #[arg(long)]
    pub summary_per_host: bool,

    /// Serve the first host's Perfetto trace once to ui.perfetto.dev and print the link
    /// (waits up to 5 min)
    #[arg(long)]
    pub perfetto_link: bool,

    /// How the servers are reached: --connect-timeout-ms, --token, --tls-ca,
    /// --tls-domain (clap reads no doc comment of a flattened field)
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

pub(crate) fn parse_address(address: &str) -> Result<String, String> {
    let trimmed = address.trim();
    let bare = trimmed.strip_prefix("grpc://").unwrap_or(trimmed);
    if let Some((scheme, _)) = bare.split_once("://") {
        return Err(format!(
            "{scheme}:// is a URL scheme; give HOST:PORT (the profiler service speaks gRPC, \
             drop the {scheme}://)"
        ));
    }
    client::endpoint_uri(bare).map_err(|e| {
        // clap names the value already: say only what is wrong with it.
        let said = e.to_string();
        said.strip_prefix(&format!("bad address {bare:?}: "))
            .map_or(said.clone(), str::to_owned)
    })?;
    Ok(bare.to_owned())
}

fn parse_formats(list: &str) -> Result<Formats, String> {
    formats::parse(list, formats::ALL)
}

fn parse_advanced(kv: &str) -> Result<(String, ConfigValue), String> {
    let (key, value) = kv
        .split_once('=')
        .ok_or("expected KEY=VALUE, as gpu_max_activity_api_events=1000000")?;
    if key.is_empty() {
        return Err("the key is empty: give KEY=VALUE".into());
    }
    let value = match (value.parse::<i64>(), value) {
        (Ok(i), _) => ConfigValue::Int(i),
        // Digits an int64 cannot hold are a mistake, not a string to send.
        (Err(e), _) if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) => {
            return Err(format!(
                "the value is too large for a 64-bit integer (at most {})",
                i64::MAX
            ))
        }
        (Err(e), _) if matches!(e.kind(), std::num::IntErrorKind::NegOverflow) => {
            return Err(format!(
                "the value is too small for a 64-bit integer (at least {})",
                i64::MIN
            ))
        }
        (_, "true") => ConfigValue::Bool(true),
        (_, "false") => ConfigValue::Bool(false),
        _ => ConfigValue::Str(value.to_owned()),
    };
    Ok((key.to_owned(), value))
}

fn parse_protocol(protocol: &str) -> Result<Protocol, String> {
    protocol
        .parse()
        .map_err(|e: profiler_core::Error| e.to_string())
}

impl Args {
    /// Checks what clap cannot see one flag at a time, and builds the plan.
    ///
    /// # Errors
    /// A message naming the mistake (a host listed twice, a key given twice).
    pub fn plan(self) -> Result<Plan, String> {
        let mut seen = HashSet::new();
        for address in &self.addresses {
            if !seen.insert(address.as_str()) {
                return Err(format!(
                    "{address} is listed twice: each host is captured once, into one file; list it once"
                ));
            }
        }
        let mut advanced = BTreeMap::new();
        for (key, value) in self.advanced {
            if advanced.insert(key.clone(), value).is_some() {
                return Err(format!("--advanced {key} is given twice"));
            }
        }
        if let Some(hz) = self.host_sampling_hz {
            let key = profiler_core::options::HOST_SAMPLING_HZ;
            if advanced
                .insert(key.into(), ConfigValue::Int(hz.into()))
                .is_some()
            {
                return Err(format!(
                    "--host-sampling-hz and --advanced {key} are both given"
                ));
            }
        }
        let connection = self.connection.connection()?;
        let request = CaptureRequest {
            duration_ms: self.duration_ms,
            delay_ms: self.delay_ms,
            host_tracer_level: self.host_tracer_level,
            device_tracer_level: self.device_tracer_level,
            python_tracer_level: self.python_tracer_level,
            advanced_configuration: advanced,
            // Where a server that ignores emit_xspace writes on its side, as xprof's
            // client asks.
            repository_root: self
                .logdir
                .join(profiler_export::logdir::PROFILE_PLUGIN_DIR)
                .to_string_lossy()
                .into_owned(),
            connection,
            ..CaptureRequest::default()
        };
        let mut formats = self.format.0;
        if self.perfetto_link && !formats.contains(&ExportFormat::Perfetto) {
            formats.push(ExportFormat::Perfetto);
        }
        formats.retain(|&f| f != ExportFormat::XPlane);
        let otlp = self.otlp.map(|endpoint| {
            OtlpOptions::new(endpoint)
                .protocol(self.otlp_protocol)
                .service_name("capture-profile")
        });
        Ok(Plan {
            addresses: self.addresses,
            logdir: self.logdir,
            attempts: self.attempts,
            request,
            formats,
            otlp,
            perfetto_link: self.perfetto_link,
            summary_rows: self.summary,
            summary_per_host: self.summary_per_host,
        })
    }
}

/// Runs `capture-profile` with the process's arguments; returns the exit status.
pub fn main() -> i32 {
    let plan = match Args::parse().plan() {
        Ok(plan) => plan,
        Err(message) => Args::command()
            .error(clap::error::ErrorKind::ValueValidation, message)
            .exit(),
    };
    crate::interrupt::install("capture-profile");
    // Before capturing: a logdir that cannot be written would throw the capture away.
    // The run itself is created once a host has something to write.
    if let Err(e) = profiler_export::logdir::check_writable(&plan.logdir) {
        eprintln!(
            "capture-profile: {}; nothing was captured: give a --logdir that can be written",
            report(&e)
        );
        return 1;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("capture-profile: cannot start: {}", report(&e));
            return 1;
        }
    };
    let outcomes = runtime.block_on(capture_all(&plan));
    report::report(&plan, outcomes)
}

async fn capture_all(plan: &Plan) -> Vec<Outcome> {
    let total = Duration::from_millis(plan.request.delay_ms + plan.request.duration_ms);
    let bar = report::progress_bar(total, plan.addresses.len());
    let ticker = {
        let bar = bar.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                report::advance(&bar);
            }
        })
    };
    let tasks: Vec<_> = plan
        .addresses
        .iter()
        .map(|address| {
            let (address, request, attempts) =
                (address.clone(), plan.request.clone(), plan.attempts);
            tokio::spawn(async move {
                let result = client::capture_with_retries(&address, &request, attempts).await;
                Outcome { address, result }
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for (task, address) in tasks.into_iter().zip(&plan.addresses) {
        outcomes.push(task.await.unwrap_or_else(|e| Outcome {
            address: address.clone(),
            result: Err(CaptureError::Server(
                Error::new(ErrorKind::Internal, "the capture task failed").with_source(e),
            )),
        }));
    }
    ticker.abort();
    bar.finish_and_clear();
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(line: &str) -> Result<Plan, String> {
        let argv = std::iter::once("capture-profile").chain(line.split_whitespace());
        Args::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .plan()
    }

    #[test]
    fn addresses_and_options_parse() {
        let p = plan(
            "localhost:6009,10.0.0.2:6009 grpc://h:1 --duration-ms 500 \
             --advanced gpu_max_activity_api_events=1024 --advanced x=true --attempts 1",
        )
        .expect("parses");
        assert_eq!(p.addresses, ["localhost:6009", "10.0.0.2:6009", "h:1"]);
        assert_eq!(p.request.duration_ms, 500);
        assert_eq!(p.attempts, 1);
        assert_eq!(
            p.request
                .advanced_configuration
                .get("gpu_max_activity_api_events"),
            Some(&ConfigValue::Int(1024))
        );
        assert_eq!(
            p.request.advanced_configuration.get("x"),
            Some(&ConfigValue::Bool(true))
        );
        assert_eq!(p.logdir, PathBuf::from("logs"));
        assert_eq!(p.request.repository_root, "logs/plugins/profile");
        assert_eq!(p.summary_rows, 10);
        assert_eq!(plan("h:1 --summary 0").expect("parses").summary_rows, 0);
        let f = plan("h:1 --format perfetto,xplane --perfetto-link").expect("parses");
        assert_eq!(f.formats, [ExportFormat::Perfetto]);
    }

    #[test]
    fn bad_usage_names_what_is_wrong() {
        let err = |line: &str| plan(line).expect_err(line);
        assert!(err("").contains("HOST:PORT"));
        assert!(err("localhost").contains("no port"));
        assert!(err("h:99999").contains("port"));
        assert!(err("h:1 --duration-ms x").contains("--duration-ms"));
        assert!(err("h:1 --bogus").contains("--bogus"));
        assert!(err("h:1 --duration-ms 0").contains("--duration-ms"));
        assert!(err("h:1 --format perfetto,svg").contains("svg"));
        assert!(err("h:1 --otlp-protocol udp").contains("udp"));
        assert!(err("h:1 --connect-timeout-ms 0").contains("--connect-timeout-ms"));
        assert!(err("h:1 --advanced novalue").contains("KEY=VALUE"));
    }

    #[test]
    fn numbers_are_range_checked_not_wrapped() {
        let err = |line: &str| plan(line).expect_err(line);
        // 2^32 + 2 used to become 2.
        assert!(err("h:1 --host-tracer-level 4294967298").contains("--host-tracer-level"));
        assert!(err("h:1 --host-tracer-level 4").contains("--host-tracer-level"));
        // u64::MAX used to wrap to a start in the past.
        assert!(err("h:1 --delay-ms 18446744073709551615").contains("--delay-ms"));
        assert!(err("h:1 --attempts 0").contains("--attempts"));
    }

    #[test]
    fn addresses_are_host_port_once_each() {
        let err = |line: &str| plan(line).expect_err(line);
        assert!(err("h:1,h:1").contains("listed twice"));
        assert!(err("h:1 grpc://h:1").contains("listed twice"));
        let url = err("http://h:1");
        assert!(
            url.contains("http://") && url.contains("HOST:PORT"),
            "{url}"
        );
        assert!(err("h:1 --advanced a=1 --advanced a=2").contains("twice"));
        // Refused as bad usage like any malformed address, not tried and failed.
        let ipv6 = err("::1:5");
        assert!(ipv6.contains("[::1]:5"), "{ipv6}");
        let space = Args::try_parse_from(["capture-profile", "a b:5"]).expect_err("a space");
        assert_eq!(space.exit_code(), 2);
        assert!(space.to_string().contains("' '"), "{space}");
        assert!(err("h/x:5").contains("host"));
        let ok = plan("[::1]:5,localhost:1 --connect-timeout-ms 250").expect("parses");
        assert_eq!(ok.addresses, ["[::1]:5", "localhost:1"]);
        assert_eq!(
            ok.request.connection.connect_timeout,
            Duration::from_millis(250)
        );
    }

    #[test]
    fn a_misspelt_flag_gets_a_suggestion_and_usage_exits_2() {
        let e = Args::try_parse_from(["capture-profile", "h:1", "--duraton-ms", "5"])
            .expect_err("misspelt");
        assert!(e.to_string().contains("--duration-ms"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let help = Args::try_parse_from(["capture-profile", "-h"]).expect_err("help");
        assert_eq!(help.exit_code(), 0);
    }

    #[test]
    fn the_otlp_endpoint_falls_back_to_the_opentelemetry_variable() {
        let cmd = Args::command();
        let otlp = cmd
            .get_arguments()
            .find(|a| a.get_id() == "otlp")
            .expect("--otlp");
        assert_eq!(
            otlp.get_env().and_then(|e| e.to_str()),
            Some("OTEL_EXPORTER_OTLP_ENDPOINT")
        );
    }

    #[test]
    fn token_and_tls_reach_the_request() {
        let dir = tempfile::tempdir().expect("tmp");
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, b"-----BEGIN CERTIFICATE-----").expect("write");
        let p = plan(&format!(
            "h:1 --token s3cret --tls-ca {} --tls-domain localhost",
            ca.display()
        ))
        .expect("parses");
        let c = &p.request.connection;
        assert_eq!(c.bearer_token.as_deref(), Some("s3cret"));
        let tls = c.tls.as_ref().expect("tls");
        assert_eq!(tls.domain_name.as_deref(), Some("localhost"));
        assert!(!tls.ca_certificate_pem.is_empty());
        assert!(plan("h:1 --tls-ca /nonexistent/ca.pem")
            .expect_err("missing file")
            .contains("/nonexistent/ca.pem"));
        assert!(
            plan("h:1 --tls-domain x").is_err(),
            "--tls-domain needs --tls-ca"
        );
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }
}
