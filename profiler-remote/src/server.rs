//! The `tensorflow.ProfilerService` server: on-demand captures of this process by
//! TensorBoard/XProf's Capture button, `python -m jax.collect_profile`, or
//! `capture-profile`.
//!
//! ```no_run
//! let server = profiler_remote::server::start(6009)?; // 127.0.0.1:6009
//! // ... a plain synchronous training loop; captures happen on the server's threads ...
//! server.stop();
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! It behaves as the JAX and TensorFlow servers do: a `Profile` call records for
//! `opts.duration_ms` from `opts.start_timestamp_ns` with the tracer levels and
//! `advanced_configuration` it carries, then writes
//! `repository_root/session_id/<host>.xplane.pb` (or, with `emit_xspace`, returns the
//! XSpace and writes nothing); one capture runs at a time, and `Terminate(session_id)`
//! ends one early, keeping what it recorded. Where they are unsafe it is stricter: it
//! binds 127.0.0.1 unless told otherwise, refuses session ids and host names that
//! would leave `repository_root`, and a client that hangs up mid-capture ends the
//! capture instead of leaving the process recording.

use std::collections::{BTreeMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use profiler_core::flight_recorder::{self, FlightRecorder};
use profiler_core::{session, ConfigValue, Error, ErrorKind, Profile, ProfileOptions};
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use crate::proto::{self, advanced_config_value::Value};
use crate::rpc::profiler_service_server::{ProfilerService, ProfilerServiceServer};

/// Longest delay a client may ask for through `start_timestamp_ns`.
const MAX_DELAY: Duration = Duration::from_secs(3600);
/// The message real servers answer a second concurrent capture with; clients and
/// `capture-profile` recognise it.
pub const BUSY: &str = "Another profiling session active.";

/// Starts a server on 127.0.0.1:`port` (0 picks a free port), on its own threads.
///
/// # Errors
/// [`ErrorKind::Io`] when the port cannot be bound.
pub fn start(port: u16) -> profiler_core::Result<ServerHandle> {
    ServerBuilder::new(port).start()
}

/// Configures a server before starting it.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    addr: SocketAddr,
}

impl ServerBuilder {
    /// A server for 127.0.0.1:`port`.
    pub fn new(port: u16) -> Self {
        ServerBuilder {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        }
    }

    /// Listens on `ip` instead of 127.0.0.1, e.g. `0.0.0.0` to be captured from
    /// another machine. Anyone who can reach the port can then profile the process
    /// and have it write under any `repository_root` it can write to.
    pub fn address(mut self, ip: IpAddr) -> Self {
        self.addr.set_ip(ip);
        self
    }

    /// Binds the port and serves on a thread of its own.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the port cannot be bound or the thread not spawned.
    pub fn start(self) -> profiler_core::Result<ServerHandle> {
        let io = |what: String| {
            move |e: std::io::Error| Error::new(ErrorKind::Io, format!("{what}: {e}"))
        };
        let listener = std::net::TcpListener::bind(self.addr).map_err(io(format!(
            "profiler server cannot listen on {}",
            self.addr
        )))?;
        let local_addr = listener
            .local_addr()
            .map_err(io("profiler server address".into()))?;
        listener
            .set_nonblocking(true)
            .map_err(io("profiler server socket".into()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("prof-server")
            .enable_all()
            .build()
            .map_err(io("profiler server runtime".into()))?;
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let service = ProfilerServiceServer::new(Service::default())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(1 << 30);
        let thread = std::thread::Builder::new()
            .name("prof-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("prof: profiler server on {local_addr} failed: {e}");
                            return;
                        }
                    };
                    let incoming = tonic::transport::server::TcpIncoming::from(listener);
                    let served = tonic::transport::Server::builder()
                        .add_service(service)
                        .serve_with_incoming_shutdown(incoming, async {
                            let _ = shutdown_rx.await;
                        })
                        .await;
                    if let Err(e) = served {
                        eprintln!("prof: profiler server on {local_addr} stopped: {e}");
                    }
                });
                // In-flight captures are cancelled, which stops their sessions.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(io("profiler server thread".into()))?;
        Ok(ServerHandle {
            local_addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }
}

/// A running server; stops when dropped.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on (with the port it picked, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving and waits for the server's threads to end.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Captures in progress and early terminations.
#[derive(Default)]
struct Captures {
    /// Session id of the running capture, and how to end it early.
    active: Option<(String, Arc<Notify>)>,
    /// `Terminate` calls that came before their `Profile`: it ends at once, as in TSL.
    terminated_early: HashSet<String>,
}

#[derive(Default)]
struct Service {
    captures: Arc<Mutex<Captures>>,
}

impl Service {
    fn captures(&self) -> std::sync::MutexGuard<'_, Captures> {
        self.captures.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running capture's claim on the server: released (and the session stopped, if
/// it still runs) when the capture ends, however it ends; a client hanging up drops
/// the capture's future mid-way, which must not leave the process recording.
struct Claim {
    captures: Arc<Mutex<Captures>>,
    recording: bool,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.recording {
            let _ = session::stop();
        }
        let mut captures = self.captures.lock().unwrap_or_else(|e| e.into_inner());
        captures.active = None;
    }
}

/// A validated `Profile` request.
#[derive(Debug)]
struct Capture {
    options: ProfileOptions,
    duration: Duration,
    start_at: Option<SystemTime>,
    session_id: String,
    /// Where to write; `None` with `emit_xspace`.
    file: Option<PathBuf>,
}

fn invalid(message: String) -> Status {
    Status::invalid_argument(message)
}

/// A path component a client chose: one plain name, never a way out of the root.
fn check_component(what: &str, value: &str) -> Result<(), Status> {
    let mut components = Path::new(value).components();
    let plain = matches!(
        (components.next(), components.next()),
        (Some(Component::Normal(_)), None)
    );
    if !plain || value.contains(['/', '\\', '\0']) {
        return Err(invalid(format!(
            "{what} {value:?} is not a plain name: it must not be empty, absolute, `..`, or contain path separators"
        )));
    }
    Ok(())
}

fn config_value(key: &str, value: &proto::AdvancedConfigValue) -> Result<ConfigValue, Status> {
    match &value.value {
        Some(Value::StringValue(s)) => Ok(ConfigValue::Str(s.clone())),
        Some(Value::BoolValue(b)) => Ok(ConfigValue::Bool(*b)),
        Some(Value::Int64Value(i)) => Ok(ConfigValue::Int(*i)),
        None => Err(invalid(format!(
            "advanced_configuration {key:?} has no value"
        ))),
    }
}

/// What a `ProfileRequest` asks for, read once for captures and the flight recorder.
struct Requested {
    options: ProfileOptions,
    /// When recording should start (`opts.start_timestamp_ns`).
    start_at: Option<SystemTime>,
    /// `opts.duration_ms`, else the request's own; 0 when neither says.
    duration_ms: u64,
}

/// The session options a request asks for, when it asks recording to start, and for
/// how long.
fn request_options(request: &proto::ProfileRequest) -> Result<Requested, Status> {
    let default = proto::ProfileOptions::default();
    let opts = request.opts.as_ref().unwrap_or(&default);
    // Version 0 means an old client that filled in nothing: the server's defaults.
    let mut options = ProfileOptions::default();
    let mut start_at = None;
    if opts.version > 0 {
        options.host_tracer_level = opts.host_tracer_level;
        options.device_tracer_level = opts.device_tracer_level;
        let advanced: Result<BTreeMap<_, _>, Status> = opts
            .advanced_configuration
            .iter()
            .map(|(k, v)| Ok((k.clone(), config_value(k, v)?)))
            .collect();
        options.advanced_configuration = advanced?;
        if opts.start_timestamp_ns > 0 {
            start_at = Some(UNIX_EPOCH + Duration::from_nanos(opts.start_timestamp_ns));
        }
    }
    if request.max_events > 0 {
        options.max_events = request.max_events;
    }
    options
        .validate()
        .map_err(|e| invalid(format!("ProfileRequest.opts: {e}")))?;
    let duration_ms = if opts.duration_ms > 0 {
        opts.duration_ms
    } else {
        request.duration_ms
    };
    Ok(Requested {
        options,
        start_at,
        duration_ms,
    })
}

impl Capture {
    fn from_request(request: &proto::ProfileRequest) -> Result<Capture, Status> {
        let default = proto::ProfileOptions::default();
        let opts = request.opts.as_ref().unwrap_or(&default);
        let Requested {
            options,
            start_at,
            duration_ms,
        } = request_options(request)?;
        if duration_ms == 0 {
            return Err(invalid(
                "duration_ms is 0 (in ProfileRequest.opts and in ProfileRequest): say how long to capture".into(),
            ));
        }
        if let Some(at) = start_at {
            if at.duration_since(SystemTime::now()).unwrap_or_default() > MAX_DELAY {
                return Err(invalid(format!(
                    "opts.start_timestamp_ns is more than {} s away: clocks differ, or the delay is a mistake",
                    MAX_DELAY.as_secs()
                )));
            }
        }
        let session_id = if request.session_id.is_empty() {
            opts.session_id.clone()
        } else {
            request.session_id.clone()
        };
        let file = if request.emit_xspace {
            None
        } else {
            if request.repository_root.is_empty() {
                return Err(invalid(
                    "repository_root is empty: say where to write, or set emit_xspace".into(),
                ));
            }
            check_component("session_id", &session_id)?;
            let host = [&opts.override_hostname, &request.host_name]
                .into_iter()
                .find(|h| !h.is_empty())
                .cloned()
                .unwrap_or_else(profiler_core::host_name);
            // `host:port` is the usual host name: ':' becomes '_' as TSL does.
            let stem = host.replace(':', "_");
            check_component("host name", &stem)?;
            Some(
                Path::new(&request.repository_root)
                    .join(&session_id)
                    .join(format!("{stem}.xplane.pb")),
            )
        };
        Ok(Capture {
            options,
            duration: Duration::from_millis(duration_ms),
            start_at,
            session_id,
            file,
        })
    }
}

fn busy() -> Status {
    Status::aborted(BUSY)
}

impl Service {
    async fn capture(&self, capture: Capture) -> Result<Profile, Status> {
        let stop = Arc::new(Notify::new());
        let mut claim = {
            let mut captures = self.captures();
            if captures.active.is_some() {
                return Err(busy());
            }
            if captures.terminated_early.remove(&capture.session_id) {
                stop.notify_one();
            }
            captures.active = Some((capture.session_id.clone(), Arc::clone(&stop)));
            Claim {
                captures: Arc::clone(&self.captures),
                recording: false,
            }
        };
        if let Some(at) = capture.start_at {
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = stop.notified() => return Err(Status::cancelled(
                        "terminated before the capture started: nothing was recorded",
                    )),
                }
            }
        }
        session::start(capture.options.clone(), None).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => Status::aborted(format!(
                "{BUSY} (this process already runs a session: prof::start, a schedule or the flight recorder)"
            )),
            _ => Status::internal(format!("cannot start profiling: {e}")),
        })?;
        claim.recording = true;
        tokio::select! {
            () = tokio::time::sleep(capture.duration) => {}
            () = stop.notified() => {}
        }
        claim.recording = false;
        let profile =
            session::stop().map_err(|e| Status::internal(format!("cannot stop profiling: {e}")))?;
        drop(claim);
        Ok(profile)
    }
}

#[tonic::async_trait]
impl ProfilerService for Service {
    async fn profile(
        &self,
        request: Request<proto::ProfileRequest>,
    ) -> Result<Response<proto::ProfileResponse>, Status> {
        let request = request.into_inner();
        let capture = Capture::from_request(&request)?;
        let file = capture.file.clone();
        let profile = self.capture(capture).await?;
        let empty_trace = profile.event_count() == 0;
        let mut response = proto::ProfileResponse {
            empty_trace,
            ..proto::ProfileResponse::default()
        };
        match file {
            None => response.xspace = Some(profile.into_xspace()),
            Some(file) => {
                let written = file
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        profiler_export::xplane::write(&file, profile.xspace())
                            .map_err(|e| e.to_string())
                    });
                written.map_err(|e| {
                    Status::internal(format!("cannot write {}: {e}", file.display()))
                })?;
            }
        }
        Ok(Response::new(response))
    }

    async fn terminate(
        &self,
        request: Request<proto::TerminateRequest>,
    ) -> Result<Response<proto::TerminateResponse>, Status> {
        let session_id = request.into_inner().session_id;
        let mut captures = self.captures();
        match &captures.active {
            Some((active, stop)) if *active == session_id => stop.notify_one(),
            _ => {
                captures.terminated_early.insert(session_id);
            }
        }
        Ok(Response::new(proto::TerminateResponse {}))
    }

    async fn monitor(
        &self,
        _request: Request<proto::MonitorRequest>,
    ) -> Result<Response<proto::MonitorResponse>, Status> {
        Err(Status::unimplemented(
            "Monitor is not supported by prof's server: it captures traces (Profile), not monitoring samples",
        ))
    }

    /// Starts the flight recorder (`prof::flight_recorder`): rings of
    /// `max_events` records per thread (the default when 0), and, when the request
    /// sets a duration, snapshots limited to that last stretch of time.
    async fn start_continuous_profiling(
        &self,
        request: Request<proto::ProfileRequest>,
    ) -> Result<Response<proto::ContinuousProfilingResponse>, Status> {
        let request = request.into_inner();
        let requested = request_options(&request)?;
        let mut recorder = FlightRecorder::default();
        if request.max_events > 0 {
            recorder.events_per_thread = request.max_events;
        }
        if requested.duration_ms > 0 {
            recorder = recorder.window(Duration::from_millis(requested.duration_ms));
        }
        flight_recorder::start(requested.options, recorder).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => Status::already_exists(e.to_string()),
            _ => invalid(e.to_string()),
        })?;
        Ok(Response::new(proto::ContinuousProfilingResponse {}))
    }

    async fn stop_continuous_profiling(
        &self,
        _request: Request<proto::StopContinuousProfilingRequest>,
    ) -> Result<Response<proto::StopContinuousProfilingResponse>, Status> {
        if !flight_recorder::is_running() {
            return Err(Status::failed_precondition(
                "no continuous profiling session is running",
            ));
        }
        session::stop().map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(proto::StopContinuousProfilingResponse {}))
    }

    /// What the flight recorder holds now, as the XSpace of a `ProfileResponse`;
    /// recording goes on. There is one recorder per process, so
    /// `snapshot_session_id` is not needed to find it.
    async fn get_snapshot(
        &self,
        _request: Request<proto::GetSnapshotRequest>,
    ) -> Result<Response<proto::ProfileResponse>, Status> {
        if !flight_recorder::is_running() {
            return Err(Status::not_found(
                "no continuous profiling session is running: call StartContinuousProfiling first",
            ));
        }
        let profile = tokio::task::spawn_blocking(flight_recorder::snapshot)
            .await
            .map_err(|e| Status::internal(format!("the snapshot failed: {e}")))?
            .map_err(|e| Status::failed_precondition(e.to_string()))?;
        Ok(Response::new(proto::ProfileResponse {
            empty_trace: profile.event_count() == 0,
            xspace: Some(profile.into_xspace()),
            ..proto::ProfileResponse::default()
        }))
    }
}
