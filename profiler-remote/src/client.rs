//! Captures from a `tensorflow.ProfilerService` server: prof's own, JAX's
//! (`jax.profiler.start_server`) or TensorFlow's (`tf.profiler.experimental.server`).
//!
//! The client asks for `emit_xspace`, so the profile comes back in the response and is
//! written on the capturing machine: no shared filesystem is needed. A server that
//! ignores the flag writes its own file under the request's `repository_root`, on its
//! machine; [`Captured::WrittenByServer`] says so.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use profiler_core::xspace::XSpace;
use profiler_core::ConfigValue;
use tonic::Code;

use crate::proto::{self, advanced_config_value::Value};
use crate::rpc::profiler_service_client::ProfilerServiceClient;

/// What to capture.
#[derive(Clone, Debug)]
pub struct CaptureRequest {
    /// How long to record.
    pub duration_ms: u64,
    /// Wait this long before recording (sent as `opts.start_timestamp_ns`).
    pub delay_ms: u64,
    /// Host tracer level (TSL's meaning; prof's servers map it as `ProfileOptions`).
    pub host_tracer_level: u32,
    /// Device tracer level.
    pub device_tracer_level: u32,
    /// Python tracer level (JAX and TensorFlow servers).
    pub python_tracer_level: u32,
    /// Tracer-specific settings.
    pub advanced_configuration: BTreeMap<String, ConfigValue>,
    /// Session id, also the run directory's name on servers that write their own file.
    pub session_id: String,
    /// Where a server that ignores `emit_xspace` writes, on its machine.
    pub repository_root: String,
}

impl Default for CaptureRequest {
    fn default() -> Self {
        CaptureRequest {
            duration_ms: 2000,
            delay_ms: 0,
            host_tracer_level: 2,
            device_tracer_level: 1,
            python_tracer_level: 0,
            advanced_configuration: BTreeMap::new(),
            session_id: profiler_export::logdir::run_name(),
            repository_root: format!("logs/{}", profiler_export::logdir::PROFILE_PLUGIN_DIR),
        }
    }
}

/// What a capture brought back.
#[derive(Debug)]
pub enum Captured {
    /// The profile itself.
    Space(Box<XSpace>),
    /// The server wrote its own file, under `repository_root/session_id` on its side.
    WrittenByServer {
        /// Whether the server said nothing was recorded.
        empty: bool,
    },
}

/// Why a capture failed, in the terms a user acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureError {
    /// The address is not `HOST:PORT`.
    BadAddress(String),
    /// Nothing answers there (refused, unresolvable, unreachable).
    Unreachable(String),
    /// The server is already capturing.
    Busy(String),
    /// The capture did not finish in time.
    Deadline(String),
    /// The server refused or failed the capture.
    Server(String),
}

impl CaptureError {
    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, CaptureError::Unreachable(_) | CaptureError::Busy(_))
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::BadAddress(m) => write!(f, "bad address: {m}"),
            CaptureError::Unreachable(m) => write!(f, "unreachable: {m}"),
            CaptureError::Busy(m) => write!(f, "busy: {m}"),
            CaptureError::Deadline(m) => write!(f, "deadline exceeded: {m}"),
            CaptureError::Server(m) => write!(f, "server error: {m}"),
        }
    }
}

impl std::error::Error for CaptureError {}

/// `HOST:PORT` (optionally `grpc://HOST:PORT`, as TensorBoard accepts) as a URI.
///
/// # Errors
/// [`CaptureError::BadAddress`] naming what is wrong.
pub fn endpoint_uri(address: &str) -> Result<String, CaptureError> {
    let bare = address.trim().trim_start_matches("grpc://");
    let bad =
        |why: &str| CaptureError::BadAddress(format!("{address:?}: {why}; expected HOST:PORT"));
    let (host, port) = bare.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    port.parse::<u16>()
        .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
    Ok(format!("http://{host}:{port}"))
}

fn wire_options(request: &CaptureRequest) -> proto::ProfileOptions {
    let start_timestamp_ns = if request.delay_ms > 0 {
        let at = SystemTime::now() + Duration::from_millis(request.delay_ms);
        at.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    } else {
        0
    };
    proto::ProfileOptions {
        version: 1,
        include_dataset_ops: true,
        host_tracer_level: request.host_tracer_level,
        device_tracer_level: request.device_tracer_level,
        python_tracer_level: request.python_tracer_level,
        duration_ms: request.duration_ms,
        start_timestamp_ns,
        session_id: request.session_id.clone(),
        advanced_configuration: request
            .advanced_configuration
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    ConfigValue::Str(s) => Value::StringValue(s.clone()),
                    ConfigValue::Bool(b) => Value::BoolValue(*b),
                    ConfigValue::Int(i) => Value::Int64Value(*i),
                };
                (k.clone(), proto::AdvancedConfigValue { value: Some(value) })
            })
            .collect(),
        ..proto::ProfileOptions::default()
    }
}

fn classify(status: &tonic::Status) -> CaptureError {
    let message = format!("{:?}: {}", status.code(), status.message());
    match status.code() {
        Code::Unavailable => CaptureError::Unreachable(message),
        Code::DeadlineExceeded | Code::Cancelled => CaptureError::Deadline(message),
        // prof answers ABORTED; JAX and TensorFlow answer INTERNAL with this text.
        _ if status.message().contains("Another profiling session") => CaptureError::Busy(message),
        _ => CaptureError::Server(message),
    }
}

/// Captures once from the server at `address` (`HOST:PORT`).
///
/// The call's deadline is the delay plus the duration plus 30 s for collection and
/// transfer; connecting gives up after 5 s.
///
/// # Errors
/// A [`CaptureError`] saying what went wrong.
pub async fn capture(address: &str, request: &CaptureRequest) -> Result<Captured, CaptureError> {
    let uri = endpoint_uri(address)?;
    let deadline =
        Duration::from_millis(request.delay_ms + request.duration_ms) + Duration::from_secs(30);
    let endpoint = tonic::transport::Endpoint::from_shared(uri)
        .map_err(|e| CaptureError::BadAddress(format!("{address:?}: {e}")))?
        .connect_timeout(Duration::from_secs(5))
        .timeout(deadline);
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| CaptureError::Unreachable(format!("{address}: {e}")))?;
    let mut client = ProfilerServiceClient::new(channel)
        .max_decoding_message_size(1 << 30)
        .max_encoding_message_size(64 << 20);
    let wire = proto::ProfileRequest {
        duration_ms: request.duration_ms,
        max_events: 0,
        tools: vec!["xplane.pb".into()],
        opts: Some(wire_options(request)),
        repository_root: request.repository_root.clone(),
        session_id: request.session_id.clone(),
        host_name: address.to_owned(),
        emit_xspace: true,
        ..proto::ProfileRequest::default()
    };
    let response = client
        .profile(wire)
        .await
        .map_err(|s| classify(&s))?
        .into_inner();
    Ok(match response.xspace {
        Some(space) => Captured::Space(Box::new(space)),
        None => Captured::WrittenByServer {
            empty: response.empty_trace,
        },
    })
}

/// [`capture`], tried up to `attempts` times while the failure is worth retrying
/// (unreachable, busy), waiting 0.5 s, 1 s, 2 s, ... in between.
///
/// # Errors
/// The last attempt's [`CaptureError`].
pub async fn capture_with_retries(
    address: &str,
    request: &CaptureRequest,
    attempts: u32,
) -> Result<Captured, CaptureError> {
    let mut backoff = Duration::from_millis(500);
    let mut attempt = 1;
    loop {
        match capture(address, request).await {
            Err(e) if e.is_retryable() && attempt < attempts => {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
                attempt += 1;
            }
            other => return other,
        }
    }
}
