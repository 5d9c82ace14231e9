//! Captures from a `tensorflow.ProfilerService` server: prof's own, JAX's
//! (`jax.profiler.start_server`) or TensorFlow's (`tf.profiler.experimental.server`).
//!
//! The client asks for `emit_xspace`, so the profile comes back in the response and is
//! written on the capturing machine: no shared filesystem is needed. A server that
//! ignores the flag writes its own file under the request's `repository_root`, on its
//! machine; [`Captured::WrittenByServer`] says so.
//!
//! Connecting gives up after [`Connection::connect_timeout`] (5 s by default), and so
//! does waiting for the server's first answer once connected: an address where
//! something else listens fails in seconds, saying what answered ([`CaptureError::NotGrpc`]).

mod answer;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use profiler_core::xspace::XSpace;
use profiler_core::{ConfigValue, Error, ErrorKind};
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
    /// How to reach the server: a bearer token, TLS.
    pub connection: Connection,
}

/// How to reach a server: how long to wait for it, and beyond plain HTTP/2 the
/// credentials and transport security a server started with
/// `ServerBuilder::bearer_token` and `ServerBuilder::tls` expects. The default is
/// plaintext without a token, which every JAX and TensorFlow server speaks, waiting
/// [`DEFAULT_CONNECT_TIMEOUT`].
#[derive(Clone)]
pub struct Connection {
    /// Sent with every call as `authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Connect over TLS (needs this crate's `tls` feature).
    pub tls: Option<ClientTls>,
    /// How long connecting may take, and then how long the server has to first
    /// answer (its HTTP/2 settings, or TLS's handshake).
    pub connect_timeout: Duration,
}

/// [`Connection::connect_timeout`] unless told otherwise: a server on the same
/// network answers in milliseconds.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Default for Connection {
    fn default() -> Self {
        Connection {
            bearer_token: None,
            tls: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("tls", &self.tls)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// TLS settings for a [`Connection`].
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    /// The PEM certificate(s) to trust for the server: its own certificate when
    /// self-signed, else the authority that signed it. Empty: the server's certificate
    /// is checked against nothing and the connection fails.
    pub ca_certificate_pem: Vec<u8>,
    /// The name the server's certificate must carry, when it is not the host in the
    /// address (e.g. the address is an IP and the certificate names `localhost`).
    pub domain_name: Option<String>,
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
            connection: Connection::default(),
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

/// Why a capture failed, in the terms a user acts on; each carries an [`Error`] whose
/// [kind](Error::kind) is the TensorFlow status code of the failure and whose
/// [source](std::error::Error::source) is its cause (a transport error, say), so the
/// message says it once and `?` turns it into a `prof::Error` ([`From`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum CaptureError {
    /// The address is not `HOST:PORT`, or the connection settings cannot be used (a
    /// token that cannot travel in a header, TLS without the `tls` feature, an
    /// unreadable certificate): [`ErrorKind::InvalidArgument`].
    BadAddress(Error),
    /// Nothing answers there (refused, unresolvable, unreachable):
    /// [`ErrorKind::Unavailable`].
    Unreachable(Error),
    /// Something answers there, but not a gRPC server: an HTTP/1 server, one that wants
    /// TLS, or one that accepts the connection and says nothing:
    /// [`ErrorKind::Unavailable`].
    NotGrpc(Error),
    /// The server is already capturing: [`ErrorKind::AlreadyExists`].
    Busy(Error),
    /// The capture did not finish in time: [`ErrorKind::DeadlineExceeded`].
    Deadline(Error),
    /// The server refused or failed the capture, with the kind its status code names
    /// (`INVALID_ARGUMENT` is [`ErrorKind::InvalidArgument`], `UNAUTHENTICATED`
    /// [`ErrorKind::Unauthenticated`], `INTERNAL` [`ErrorKind::Internal`], ...).
    Server(Error),
}

impl CaptureError {
    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, CaptureError::Unreachable(_) | CaptureError::Busy(_))
    }

    /// The error inside: its message, kind and cause.
    pub fn error(&self) -> &Error {
        match self {
            CaptureError::BadAddress(e)
            | CaptureError::Unreachable(e)
            | CaptureError::NotGrpc(e)
            | CaptureError::Busy(e)
            | CaptureError::Deadline(e)
            | CaptureError::Server(e) => e,
        }
    }

    /// The kind of failure, as the rest of prof names them.
    pub fn kind(&self) -> ErrorKind {
        self.error().kind()
    }

    /// A [`CaptureError::BadAddress`] saying `message`.
    fn bad_address(message: impl Into<String>) -> CaptureError {
        CaptureError::BadAddress(Error::new(ErrorKind::InvalidArgument, message))
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.error(), f)
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error().source()
    }
}

impl From<CaptureError> for Error {
    fn from(e: CaptureError) -> Error {
        match e {
            CaptureError::BadAddress(e)
            | CaptureError::Unreachable(e)
            | CaptureError::NotGrpc(e)
            | CaptureError::Busy(e)
            | CaptureError::Deadline(e)
            | CaptureError::Server(e) => e,
        }
    }
}

/// `HOST:PORT` (optionally `grpc://HOST:PORT`, as TensorBoard accepts) as a URI.
///
/// # Errors
/// [`CaptureError::BadAddress`] naming what is wrong.
pub fn endpoint_uri(address: &str) -> Result<String, CaptureError> {
    let bare = address.trim().trim_start_matches("grpc://");
    let bad = |why: &str| {
        CaptureError::bad_address(format!(
            "bad address {address:?}: {why}; expected HOST:PORT"
        ))
    };
    let (host, port) = bare.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    port.parse::<u16>()
        .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.contains(':') && !bracketed {
        return Err(bad(&format!(
            "an IPv6 address goes in brackets, as in [{host}]:{port}"
        )));
    }
    if let Some(c) = host.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(&format!("the host contains {c:?}")));
    }
    let uri = format!("http://{host}:{port}");
    // Whatever else a URI cannot hold (`/`, `@`, `#`, ...).
    uri.parse::<tonic::codegen::http::Uri>()
        .ok()
        .filter(|u| u.host().is_some() && u.path() == "/")
        .ok_or_else(|| bad("the host is not a host name or an IP address"))?;
    Ok(uri)
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

/// The kind of a gRPC status code, as TensorFlow's status codes name them.
fn kind_of(code: Code) -> ErrorKind {
    match code {
        Code::InvalidArgument | Code::OutOfRange => ErrorKind::InvalidArgument,
        Code::FailedPrecondition | Code::NotFound => ErrorKind::FailedPrecondition,
        Code::AlreadyExists | Code::Aborted => ErrorKind::AlreadyExists,
        Code::Unavailable => ErrorKind::Unavailable,
        Code::DeadlineExceeded | Code::Cancelled => ErrorKind::DeadlineExceeded,
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthenticated,
        Code::Unimplemented => ErrorKind::Unimplemented,
        _ => ErrorKind::Internal,
    }
}

fn classify(status: &tonic::Status) -> CaptureError {
    let code = format!("{:?}", status.code());
    // The code is the error's kind; a message that ends by naming it (JAX's and
    // TensorFlow's do) need not.
    let text = status.message();
    let text = text
        .strip_suffix(code.as_str())
        .and_then(|t| t.strip_suffix(": "))
        .unwrap_or(text);
    let text = without_repeats(text);
    let kind = kind_of(status.code());
    match status.code() {
        Code::Unavailable => CaptureError::Unreachable(Error::new(
            kind,
            format!("the server is unavailable: {text}"),
        )),
        Code::DeadlineExceeded | Code::Cancelled => CaptureError::Deadline(Error::new(
            kind,
            format!("the capture did not finish in time: {text}"),
        )),
        // prof answers ABORTED; JAX and TensorFlow answer INTERNAL with this text.
        _ if status.message().contains("Another profiling session") => {
            CaptureError::Busy(Error::new(
                ErrorKind::AlreadyExists,
                format!("the server is busy: {text}"),
            ))
        }
        _ if kind == ErrorKind::Internal => CaptureError::Server(Error::new(
            kind,
            format!("the server failed the capture: {text}"),
        )),
        _ => CaptureError::Server(Error::new(
            kind,
            format!("the server refused the capture: {text}"),
        )),
    }
}

/// The endpoint for `address` with `connection`'s TLS, if any.
pub(crate) fn endpoint(
    address: &str,
    connection: &Connection,
) -> Result<tonic::transport::Endpoint, CaptureError> {
    let mut uri = endpoint_uri(address)?;
    if connection.tls.is_some() {
        uri = uri.replacen("http://", "https://", 1);
    }
    let endpoint = tonic::transport::Endpoint::from_shared(uri).map_err(|e| {
        CaptureError::BadAddress(
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad address {address:?}"),
            )
            .with_source(e),
        )
    })?;
    match &connection.tls {
        None => Ok(endpoint),
        Some(tls) => with_tls(endpoint, tls),
    }
}

#[cfg(feature = "tls")]
fn with_tls(
    endpoint: tonic::transport::Endpoint,
    tls: &ClientTls,
) -> Result<tonic::transport::Endpoint, CaptureError> {
    let mut config = tonic::transport::ClientTlsConfig::new().ca_certificate(
        tonic::transport::Certificate::from_pem(&tls.ca_certificate_pem),
    );
    if let Some(name) = &tls.domain_name {
        config = config.domain_name(name.clone());
    }
    endpoint.tls_config(config).map_err(|e| {
        CaptureError::BadAddress(
            Error::new(
                ErrorKind::InvalidArgument,
                "the TLS settings cannot be used",
            )
            .with_source(e),
        )
    })
}

#[cfg(not(feature = "tls"))]
fn with_tls(
    _endpoint: tonic::transport::Endpoint,
    _tls: &ClientTls,
) -> Result<tonic::transport::Endpoint, CaptureError> {
    Err(CaptureError::bad_address(
        "TLS was asked for, but profiler-remote was built without its `tls` feature",
    ))
}

/// The wire request, with the bearer token if there is one.
pub(crate) fn authorized<T>(
    message: T,
    connection: &Connection,
) -> Result<tonic::Request<T>, CaptureError> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = &connection.bearer_token {
        let value = format!("Bearer {token}").parse().map_err(|_| {
            CaptureError::bad_address(
                "the bearer token cannot travel in a header: use visible ASCII",
            )
        })?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

/// Captures once from the server at `address` (`HOST:PORT`), reached as
/// `request.connection` says.
///
/// The call's deadline is the delay plus the duration plus 30 s for collection and
/// transfer; connecting, and then the server's first answer, each give up after
/// `request.connection.connect_timeout`.
///
/// # Errors
/// A [`CaptureError`] saying what went wrong.
pub async fn capture(address: &str, request: &CaptureRequest) -> Result<Captured, CaptureError> {
    let finding = answer::Finding::default();
    let result = capture_watched(address, request, Arc::clone(&finding)).await;
    match (result, answer::take(&finding)) {
        // Whatever the call's error says, what answered says more.
        (Err(_), Some(found)) => Err(CaptureError::NotGrpc(Error::new(
            ErrorKind::Unavailable,
            found,
        ))),
        (result, _) => result,
    }
}

async fn capture_watched(
    address: &str,
    request: &CaptureRequest,
    finding: answer::Finding,
) -> Result<Captured, CaptureError> {
    let deadline =
        Duration::from_millis(request.delay_ms + request.duration_ms) + Duration::from_secs(30);
    let connection = &request.connection;
    let endpoint = endpoint(address, connection)?
        .connect_timeout(connection.connect_timeout)
        .timeout(deadline);
    let connector = answer::Connector {
        answer_within: connection.connect_timeout,
        tls: connection.tls.is_some(),
        finding,
    };
    let channel = endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|e| {
            // The transport error stays the cause: tonic's says only "transport error",
            // and the reason (refused, a certificate not trusted) is in its sources,
            // which reporters print, each once (`profiler_core::error::report`).
            CaptureError::Unreachable(
                Error::new(ErrorKind::Unavailable, format!("cannot reach {address}"))
                    .with_source(e),
            )
        })?;
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
        .profile(authorized(wire, &request.connection)?)
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

/// `text` with each run of `: `-separated parts that repeats the run before it said
/// once: a server's message may quote errors that wrap an error of the same words, as
/// hyper's do ("tcp connect error: tcp connect error: Connection refused", "dns error:
/// failed to lookup address information: Name or service not known: failed to lookup
/// address information: Name or service not known").
fn without_repeats(text: &str) -> String {
    let mut parts: Vec<&str> = text.split(": ").collect();
    let mut i = 0;
    while i < parts.len() {
        let repeated =
            (1..=(parts.len() - i) / 2).find(|&n| parts[i..i + n] == parts[i + n..i + 2 * n]);
        match repeated {
            Some(n) => drop(parts.drain(i + n..i + 2 * n)),
            None => i += 1,
        }
    }
    parts.join(": ")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_words_are_said_once() {
        assert_eq!(
            without_repeats("transport error: tcp connect error: tcp connect error: refused"),
            "transport error: tcp connect error: refused"
        );
        assert_eq!(
            without_repeats("dns error: lookup failed: not known: lookup failed: not known"),
            "dns error: lookup failed: not known"
        );
        assert_eq!(without_repeats("a: b: a: b: a: b"), "a: b");
        assert_eq!(without_repeats("a: b: a"), "a: b: a");
        assert_eq!(without_repeats(""), "");
        let status = tonic::Status::invalid_argument("bad duration: InvalidArgument");
        let e = classify(&status);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            e.to_string(),
            "the server refused the capture: bad duration"
        );
    }

    #[test]
    fn addresses_that_cannot_be_a_uri_are_bad_addresses() {
        for (address, why) in [
            ("::1:5", "[::1]:5"),
            ("a b:5", "' '"),
            ("h/x:5", "not a host name"),
            ("h:", "port"),
            (":5", "no host"),
        ] {
            match endpoint_uri(address) {
                Err(CaptureError::BadAddress(m)) => {
                    assert!(m.to_string().contains(why), "{address}: {m}")
                }
                other => panic!("{address}: {other:?}"),
            }
        }
        assert_eq!(endpoint_uri("[::1]:5").expect("ok"), "http://[::1]:5");
        assert_eq!(endpoint_uri("grpc://h:1").expect("ok"), "http://h:1");
    }
}
