//! OTLP: a profile's events as OpenTelemetry spans, sent to any collector over gRPC or
//! HTTP/protobuf with the `opentelemetry-otlp` exporter (feature `otlp`).
//!
//! # One trace per top-level event
//!
//! Each top-level event of a thread (a training step, or any outermost work on another
//! thread) starts a trace; the events nested in it are its spans, each the child of the
//! event that encloses it. Steps are the unit of work of a training loop as a request
//! is of a server, so a step is one trace in Jaeger or Tempo, and a long session never
//! becomes one trace of millions of spans, which backends truncate or reject (Tempo's
//! default limit is 5 MB per trace). Every span carries `prof.session`, shared by the
//! whole profile, to find a session's traces together.
//!
//! Ids are derived from the profile (its host, wall-clock start and the event's place),
//! so exporting the same profile twice gives the same 16-byte trace ids and 8-byte span
//! ids, which collectors deduplicate. Times are Unix-epoch nanoseconds. Stats become
//! attributes; `thread.name`, `thread.id` and `prof.plane` say where the event ran;
//! the resource carries `service.name` and `host.name`. Instants become zero-length
//! spans. Counters are not traces: they are not sent.
//!
//! Spans go out in batches of [`OtlpOptions::batch_size`], each request bounded by
//! [`OtlpOptions::timeout`]; an unreachable collector is an error naming the endpoint.
//!
//! ```no_run
//! # let space = profiler_core::xspace::XSpace::default();
//! use profiler_export::otlp::{self, OtlpOptions};
//! let report = otlp::export(&space, &OtlpOptions::new("http://127.0.0.1:4317"))?;
//! println!("{} spans in {} traces", report.spans, report.traces);
//! # Ok::<(), profiler_core::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use opentelemetry_sdk::Resource;
use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind, Result};

use crate::sink::Sink;
use crate::timeline::{mix, Arg, CounterTrack, Process, Slice, Thread, Timeline, Visitor};

/// Default bound on each export request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How spans travel to the collector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (conventionally port 4317).
    #[default]
    Grpc,
    /// OTLP/HTTP with protobuf bodies (conventionally port 4318, path `/v1/traces`).
    HttpProtobuf,
}

impl FromStr for Protocol {
    type Err = Error;
    fn from_str(s: &str) -> Result<Protocol> {
        match s {
            "grpc" => Ok(Protocol::Grpc),
            "http" | "http/protobuf" => Ok(Protocol::HttpProtobuf),
            other => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("unknown OTLP protocol {other:?}: use grpc or http/protobuf"),
            )),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        })
    }
}

/// Where and how to send a profile.
#[derive(Clone, Debug)]
pub struct OtlpOptions {
    /// `http://host:port` of the collector. For HTTP, a URL without a path gets the
    /// standard `/v1/traces`.
    pub endpoint: String,
    /// gRPC (default) or HTTP/protobuf.
    pub protocol: Protocol,
    /// Bound on each export request, retries included.
    pub timeout: Duration,
    /// The resource's `service.name`.
    pub service_name: String,
    /// Spans per request.
    pub batch_size: usize,
}

impl OtlpOptions {
    /// gRPC to `endpoint`, 10 s per request, service `prof`, 1024 spans per request.
    pub fn new(endpoint: impl Into<String>) -> OtlpOptions {
        OtlpOptions {
            endpoint: endpoint.into(),
            protocol: Protocol::Grpc,
            timeout: DEFAULT_TIMEOUT,
            service_name: "prof".to_owned(),
            batch_size: 1024,
        }
    }

    /// Sets [`OtlpOptions::protocol`].
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Sets [`OtlpOptions::timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`OtlpOptions::service_name`].
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Sets [`OtlpOptions::batch_size`].
    pub fn batch_size(mut self, spans: usize) -> Self {
        self.batch_size = spans;
        self
    }

    /// The URL requests go to.
    fn url(&self) -> Result<String> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("OTLP endpoint {:?} {why}", self.endpoint),
            )
        };
        let rest = self
            .endpoint
            .strip_prefix("http://")
            .ok_or_else(|| bad("must start with http:// (TLS is not built in)"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(bad("has no host"));
        }
        if self.batch_size == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "OTLP batch_size = 0 would send nothing: use a positive size",
            ));
        }
        Ok(match (self.protocol, path.trim_end_matches('/')) {
            (Protocol::HttpProtobuf, "") => format!("http://{authority}/v1/traces"),
            _ => self.endpoint.clone(),
        })
    }
}

/// What an export sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtlpReport {
    /// Spans accepted by the collector.
    pub spans: u64,
    /// Traces they form.
    pub traces: u64,
    /// Requests sent.
    pub requests: u64,
}

/// Sends the events of `space` to the collector in `options`, and waits until the
/// collector accepted them.
///
/// Runs its own single-threaded Tokio runtime on a helper thread, so it may be called
/// from anywhere, including from inside another runtime.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for a malformed endpoint; [`ErrorKind::Unavailable`]
/// when the collector cannot be reached or rejects a request;
/// [`ErrorKind::DeadlineExceeded`] when a request takes longer than the timeout. The
/// error says how many spans were accepted before it.
pub fn export(space: &XSpace, options: &OtlpOptions) -> Result<OtlpReport> {
    let url = options.url()?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| run(space, options, &url))
            .join()
            .unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Unavailable,
                    "the OTLP export thread panicked",
                ))
            })
    })
}

/// The collector the options name is the sink: [`export`] to it.
impl Sink for OtlpOptions {
    type Report = OtlpReport;

    fn export(&self, space: &XSpace) -> Result<OtlpReport> {
        export(space, self)
    }
}

fn run(space: &XSpace, options: &OtlpOptions, url: &str) -> Result<OtlpReport> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::new(ErrorKind::Unavailable, "cannot start a Tokio runtime").with_source(e)
        })?;
    let mut exporter = {
        // tonic's channel must be created inside the runtime.
        let _guard = runtime.enter();
        let built = match options.protocol {
            Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(url)
                .with_timeout(options.timeout)
                .build(),
            Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(url)
                .with_timeout(options.timeout)
                .build(),
        };
        built.map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("cannot set up OTLP/{} export to {url}", options.protocol),
            )
            .with_source(e)
        })?
    };
    let timeline = Timeline::new(space);
    exporter.set_resource(
        &Resource::builder_empty()
            .with_attributes([
                KeyValue::new("service.name", options.service_name.clone()),
                KeyValue::new("host.name", timeline.host_name().to_owned()),
            ])
            .build(),
    );
    let session = session_id(&timeline);
    let mut sender = Sender {
        runtime: &runtime,
        exporter: &exporter,
        options,
        url,
        session,
        session_attr: format!("{session:016x}"),
        scope: InstrumentationScope::builder("prof")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
        origin_ns: timeline.origin().unix_ns,
        process: String::new(),
        batch: Vec::with_capacity(options.batch_size),
        report: OtlpReport::default(),
    };
    timeline.walk(&mut sender)?;
    sender.flush()?;
    let report = sender.report;
    // Shutting down only drops connections: every batch was already acknowledged.
    let _ = exporter.shutdown_with_timeout(Duration::from_millis(100));
    Ok(report)
}

/// A per-profile value every id is derived from.
fn session_id(timeline: &Timeline<'_>) -> u64 {
    let mut h = mix(timeline.origin().unix_ns as u64);
    for b in timeline.host_name().bytes() {
        h = mix(h ^ u64::from(b));
    }
    h
}

/// The 16-byte trace id of the trace rooted at event `root` (never zero).
fn trace_id(session: u64, root: u64) -> TraceId {
    let hi = mix(session ^ mix(root));
    let lo = mix(hi ^ root) | 1;
    TraceId::from(u128::from(hi) << 64 | u128::from(lo))
}

/// The 8-byte span id of event `seq` (never zero).
fn span_id(session: u64, seq: u64) -> SpanId {
    SpanId::from(mix(session.rotate_left(17) ^ seq) | 1)
}

struct Sender<'r> {
    runtime: &'r tokio::runtime::Runtime,
    exporter: &'r opentelemetry_otlp::SpanExporter,
    options: &'r OtlpOptions,
    url: &'r str,
    session: u64,
    session_attr: String,
    scope: InstrumentationScope,
    origin_ns: i64,
    process: String,
    batch: Vec<SpanData>,
    report: OtlpReport,
}

impl Sender<'_> {
    fn time(&self, ps: i64) -> SystemTime {
        let ns = self.origin_ns.saturating_add(ps.div_euclid(1000));
        UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
    }

    fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(self.options.batch_size));
        let spans = batch.len() as u64;
        let sent = self.report.spans;
        let timeout = self.options.timeout;
        let began = Instant::now();
        let result = self
            .runtime
            .block_on(async { tokio::time::timeout(timeout, self.exporter.export(batch)).await });
        let (kind, why, cause) = match result {
            Ok(Ok(())) => {
                self.report.spans += spans;
                self.report.requests += 1;
                return Ok(());
            }
            Err(_) => (
                ErrorKind::DeadlineExceeded,
                format!("no answer within {timeout:?}"),
                None,
            ),
            Ok(Err(opentelemetry_sdk::error::OTelSdkError::Timeout(t))) => (
                ErrorKind::DeadlineExceeded,
                format!("no answer within {t:?}"),
                None,
            ),
            // HTTP clients report their own timeout as a network error.
            Ok(Err(e)) if began.elapsed() >= timeout => (
                ErrorKind::DeadlineExceeded,
                format!("no answer within {timeout:?}"),
                Some(e),
            ),
            Ok(Err(e)) => (
                ErrorKind::Unavailable,
                "the collector failed".into(),
                Some(e),
            ),
        };
        let error = Error::new(
            kind,
            format!(
                "OTLP/{} export to {} failed after {sent} spans were accepted: {why}",
                self.options.protocol, self.url
            ),
        );
        Err(match cause {
            Some(e) => error.with_source(e),
            None => error,
        })
    }
}

fn attribute(name: &str, arg: Arg<'_>) -> KeyValue {
    let value: Value = match arg {
        Arg::Int(v) => v.into(),
        Arg::Uint(v) => match i64::try_from(v) {
            Ok(v) => v.into(),
            // OpenTelemetry has no unsigned integers; keep the exact digits.
            Err(_) => v.to_string().into(),
        },
        Arg::Double(v) => v.into(),
        Arg::Str(s) => s.to_owned().into(),
        Arg::Bytes(b) => format!("<{} bytes>", b.len()).into(),
    };
    KeyValue::new(name.to_owned(), value)
}

impl<'a> Visitor<'a> for Sender<'_> {
    type Error = Error;

    fn process(&mut self, process: &Process<'a>) -> Result<()> {
        process.name.clone_into(&mut self.process);
        Ok(())
    }

    fn thread(&mut self, _thread: &Thread<'a>) -> Result<()> {
        Ok(())
    }

    fn slice(&mut self, slice: &Slice<'a, '_>) -> Result<()> {
        let trace = trace_id(self.session, slice.root);
        let mut attributes = vec![
            KeyValue::new("thread.name", slice.thread.name.clone().into_owned()),
            KeyValue::new("thread.id", i64::from(slice.thread.tid)),
            KeyValue::new("prof.plane", self.process.clone()),
            KeyValue::new("prof.session", self.session_attr.clone()),
        ];
        attributes.extend(slice.args().map(|(name, value)| attribute(name, value)));
        if slice.parent.is_none() {
            self.report.traces += 1;
        }
        self.batch.push(SpanData {
            span_context: SpanContext::new(
                trace,
                span_id(self.session, slice.seq),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: slice
                .parent
                .map_or(SpanId::INVALID, |p| span_id(self.session, p)),
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Owned(slice.name.clone().into_owned()),
            start_time: self.time(slice.start_ps),
            end_time: self.time(slice.start_ps + slice.duration_ps),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        });
        if self.batch.len() >= self.options.batch_size {
            self.flush()?;
        }
        Ok(())
    }

    fn slice_end(&mut self, _thread: &Thread<'a>, _end_ps: i64) -> Result<()> {
        Ok(())
    }

    fn counter_track(&mut self, _track: &CounterTrack<'a>) -> Result<()> {
        Ok(())
    }

    fn counter(&mut self, _track: &CounterTrack<'a>, _at: i64, _value: Arg<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_endpoints_get_the_standard_path() {
        let o = |e: &str| OtlpOptions::new(e).protocol(Protocol::HttpProtobuf).url();
        assert_eq!(o("http://h:4318").expect("ok"), "http://h:4318/v1/traces");
        assert_eq!(o("http://h:4318/").expect("ok"), "http://h:4318/v1/traces");
        assert_eq!(
            o("http://h:4318/custom").expect("ok"),
            "http://h:4318/custom"
        );
        let grpc = OtlpOptions::new("http://h:4317").url().expect("ok");
        assert_eq!(grpc, "http://h:4317");
    }

    #[test]
    fn bad_endpoints_are_named() {
        for bad in ["h:4317", "https://h:4317", "http://", "ftp://x"] {
            let err = OtlpOptions::new(bad).url().expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            assert!(err.to_string().contains(bad), "{err}");
        }
        let err = OtlpOptions::new("http://h:1")
            .batch_size(0)
            .url()
            .expect_err("0");
        assert!(err.to_string().contains("batch_size"), "{err}");
    }

    #[test]
    fn ids_are_full_width_nonzero_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..1000 {
            let t = trace_id(5, n);
            let s = span_id(5, n);
            assert_ne!(t, TraceId::INVALID);
            assert_ne!(s, SpanId::INVALID);
            assert!(seen.insert((t, s)));
        }
        assert_ne!(trace_id(5, 1), trace_id(6, 1), "sessions differ");
    }

    #[test]
    fn protocols_parse() {
        assert_eq!("grpc".parse::<Protocol>().expect("grpc"), Protocol::Grpc);
        assert_eq!(
            "http/protobuf".parse::<Protocol>().expect("http"),
            Protocol::HttpProtobuf
        );
        assert!("udp".parse::<Protocol>().is_err());
    }
}
