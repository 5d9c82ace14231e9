//! The `tensorflow.ProfilerService` implementation: the RPC handlers, and the
//! bookkeeping that keeps to one capture at a time and lets `Terminate` end one.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use profiler_core::flight_recorder::{self, FlightRecorder};
use profiler_core::{session, ErrorKind, Profile};
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use crate::proto;
use crate::rpc::profiler_service_server::ProfilerService;
use crate::server::request::{invalid, request_options, Capture};

/// The message real servers answer a second concurrent capture with; clients and
/// `capture-profile` recognise it.
pub const BUSY: &str = "Another profiling session active.";

/// Captures in progress and early terminations.
#[derive(Default)]
struct Captures {
    /// Session id of the running capture, and how to end it early.
    active: Option<(String, Arc<Notify>)>,
    /// `Terminate` calls that came before their `Profile`: it ends at once, as in TSL.
    terminated_early: HashSet<String>,
}

#[derive(Default)]
pub(super) struct Service {
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
