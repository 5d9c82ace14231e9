//! The live view over the wire: `prof.live.v1.Live/Watch`, a stream of whole
//! snapshots of the watched process's last seconds (step times, input share, top ops,
//! memory, whether a capture runs), served by [`crate::server`] on the profiler's own
//! port, and its client, which `prof-top` uses.
//!
//! ```no_run
//! use profiler_remote::client::Connection;
//! use profiler_remote::live::{self, Source};
//!
//! # async fn run() -> Result<(), profiler_remote::client::CaptureError> {
//! let mut watching = live::watch("localhost:6009", &Connection::default()).await?;
//! match &mut watching {
//!     Source::Live(stream) => {
//!         while let Some(snapshot) = stream.message().await.map_err(live::error)? {
//!             println!("step {:?}", snapshot.step);
//!         }
//!     }
//!     // A TensorFlow server, or a prof server older than the live view.
//!     Source::MonitorOnly => println!("{}", live::monitor("localhost:6009", &Connection::default(), 1000, 2).await?.data),
//! }
//! # Ok(()) }
//! ```
//!
//! A server without `prof.live.v1` answers Watch with UNIMPLEMENTED, which
//! [`watch`] returns as [`Source::MonitorOnly`]: the client falls back to
//! TensorFlow's `Monitor` ([`monitor`]), and where that is UNIMPLEMENTED too, it says
//! that the server has no live view.
//!
//! The server side's bounds (how many watch, what each costs the watched process) are
//! in the [server documentation](crate::server) and `Limits`.

pub mod proto;

use std::time::Duration;

use profiler_core::{Error, ErrorKind};
use tonic::Code;

use crate::client::{authorized, endpoint, CaptureError, Connection};
use crate::live_rpc::live_client::LiveClient;
use crate::rpc::profiler_service_client::ProfilerServiceClient;

/// What a server offers a watcher.
#[derive(Debug)]
pub enum Source {
    /// `prof.live.v1.Live/Watch`: a snapshot about once a second.
    Live(Box<tonic::Streaming<proto::Snapshot>>),
    /// The server has no `prof.live.v1` (UNIMPLEMENTED): only TensorFlow's `Monitor`,
    /// if that.
    MonitorOnly,
}

/// A status from the server as an error saying what failed.
pub fn error(status: tonic::Status) -> CaptureError {
    let kind = match status.code() {
        Code::Unavailable | Code::Cancelled => ErrorKind::Unavailable,
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthenticated,
        Code::Unimplemented => ErrorKind::Unimplemented,
        Code::ResourceExhausted => ErrorKind::AlreadyExists,
        Code::InvalidArgument => ErrorKind::InvalidArgument,
        _ => ErrorKind::Internal,
    };
    let error = Error::new(kind, format!("the live view failed: {}", status.message()));
    match status.code() {
        Code::Unavailable | Code::Cancelled => CaptureError::Unreachable(error),
        _ => CaptureError::Server(error),
    }
}

async fn channel(
    address: &str,
    connection: &Connection,
) -> Result<tonic::transport::Channel, CaptureError> {
    endpoint(address, connection)?
        .connect_timeout(connection.connect_timeout)
        .connect()
        .await
        .map_err(|e| {
            CaptureError::Unreachable(
                Error::new(ErrorKind::Unavailable, format!("cannot reach {address}"))
                    .with_source(e),
            )
        })
}

/// Starts watching the server at `address`.
///
/// # Errors
/// A [`CaptureError`]: unreachable, refused (a token, too many watchers), or a bad
/// address.
pub async fn watch(address: &str, connection: &Connection) -> Result<Source, CaptureError> {
    watch_with(address, connection, proto::WatchRequest::default()).await
}

/// Starts watching the server at `address` with what `request` asks (the GPU's
/// kernels traced while watching: [`proto::WatchRequest::trace_kernels`]).
///
/// # Errors
/// As [`watch`].
pub async fn watch_with(
    address: &str,
    connection: &Connection,
    request: proto::WatchRequest,
) -> Result<Source, CaptureError> {
    let mut client = LiveClient::new(channel(address, connection).await?);
    match client.watch(authorized(request, connection)?).await {
        Ok(response) => Ok(Source::Live(Box::new(response.into_inner()))),
        Err(status) if status.code() == Code::Unimplemented => Ok(Source::MonitorOnly),
        Err(status) => Err(error(status)),
    }
}

/// TensorFlow's `Monitor` call: the server's text and numbers over `duration_ms` at
/// `level` (1: utilisation; 2: also step time and input percentage).
///
/// # Errors
/// A [`CaptureError`]; one of kind [`ErrorKind::Unimplemented`] when the server has
/// no `Monitor` either (JAX's and TensorFlow's open-source servers).
pub async fn monitor(
    address: &str,
    connection: &Connection,
    duration_ms: u64,
    level: i32,
) -> Result<crate::proto::MonitorResponse, CaptureError> {
    let channel = channel(address, connection).await?;
    let mut client = ProfilerServiceClient::new(channel);
    let mut request = authorized(
        crate::proto::MonitorRequest {
            duration_ms,
            monitoring_level: level,
            timestamp: false,
        },
        connection,
    )?;
    request.set_timeout(Duration::from_millis(duration_ms) + Duration::from_secs(10));
    client
        .monitor(request)
        .await
        .map(tonic::Response::into_inner)
        .map_err(error)
}
