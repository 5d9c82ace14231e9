//! The `tensorflow.ProfilerService` implementation: the RPC handlers, and the
//! bookkeeping that keeps to one capture at a time and lets `Terminate` end one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use profiler_core::error::report;
use profiler_core::flight_recorder::{self, FlightRecorder};
use profiler_core::{session, Error, ErrorKind, Profile};
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use crate::proto;
use crate::rpc::profiler_service_server::ProfilerService;
use crate::server::conn::InFlight;
use crate::server::limits::{Limits, MAX_RESPONSE_XSPACE_BYTES};
use crate::server::live::{CaptureMark, Hub};
use crate::server::output::{Output, Writes};
use crate::server::quote::clip;
use crate::server::request::{
    check_len, invalid, request_options, session_id, target_file, Capture, MAX_NAME_BYTES,
};

/// The message real servers answer a second concurrent capture with; clients and
/// `capture-profile` recognise it.
pub const BUSY: &str = "Another profiling session active.";

/// `Terminate` calls that came before their `Profile`, which then ends at once, as in
/// TSL. TSL keeps them forever; here they expire and there are at most `cap` of them,
/// the oldest making way, so a client cannot grow the process with them.
#[derive(Debug)]
struct EarlyTerminations {
    entries: VecDeque<(Instant, String)>,
    cap: usize,
    ttl: Duration,
}

impl EarlyTerminations {
    fn new(limits: &Limits) -> EarlyTerminations {
        EarlyTerminations {
            entries: VecDeque::new(),
            cap: limits.early_terminations,
            ttl: limits.early_termination_ttl,
        }
    }

    fn expire(&mut self, now: Instant) {
        while let Some((at, _)) = self.entries.front() {
            if now.duration_since(*at) < self.ttl {
                break;
            }
            self.entries.pop_front();
        }
    }

    fn insert(&mut self, session_id: String) {
        let now = Instant::now();
        self.expire(now);
        self.entries.retain(|(_, id)| *id != session_id);
        if self.cap == 0 {
            return;
        }
        while self.entries.len() >= self.cap {
            self.entries.pop_front();
        }
        self.entries.push_back((now, session_id));
    }

    /// Whether `session_id` was terminated early (and forgets it).
    fn take(&mut self, session_id: &str) -> bool {
        self.expire(Instant::now());
        let before = self.entries.len();
        self.entries.retain(|(_, id)| id != session_id);
        self.entries.len() < before
    }
}

/// Captures in progress and early terminations.
#[derive(Debug)]
struct Captures {
    /// Session id of the running capture, and how to end it early.
    active: Option<(String, Arc<Notify>)>,
    terminated_early: EarlyTerminations,
}

pub(super) struct Service {
    captures: Arc<Mutex<Captures>>,
    limits: Limits,
    writes: Writes,
    /// The live view, told when a capture runs.
    live: Hub,
}

impl Service {
    pub(super) fn new(limits: Limits, writes: Writes, live: Hub) -> Service {
        let captures = Captures {
            active: None,
            terminated_early: EarlyTerminations::new(&limits),
        };
        Service {
            captures: Arc::new(Mutex::new(captures)),
            limits,
            writes,
            live,
        }
    }

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
    /// Tells the live view a capture runs, until the claim ends.
    _live: CaptureMark,
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

/// A profile's space cut to fit a response (its latest steps that fit, and a warning
/// saying what was not kept), rather than a response the transport refuses whole.
fn within_response(
    mut space: profiler_core::xspace::XSpace,
) -> Result<profiler_core::xspace::XSpace, Status> {
    profiler_export::fit::retain_within(&mut space, MAX_RESPONSE_XSPACE_BYTES, "the response")
        .map_err(|e| Status::internal(report(&e).to_string()))?;
    Ok(space)
}

impl Service {
    /// Claims the server for `capture`, or says it is busy.
    fn claim(
        &self,
        session_id: &str,
        duration: Duration,
        stop: &Arc<Notify>,
    ) -> Result<Claim, Status> {
        let mut captures = self.captures();
        if captures.active.is_some() {
            return Err(busy());
        }
        if captures.terminated_early.take(session_id) {
            stop.notify_one();
        }
        captures.active = Some((session_id.to_owned(), Arc::clone(stop)));
        Ok(Claim {
            captures: Arc::clone(&self.captures),
            recording: false,
            _live: self.live.capture_started(session_id, duration),
        })
    }

    /// Runs a capture: claims the server, creates its file (so an unwritable place
    /// fails before anything is recorded), waits for its start, records. The session
    /// writes the file itself when it stops (by this capture, or by the process's end
    /// with `write_on_signals`); the flag says whether it did.
    async fn capture(&self, capture: Capture) -> Result<(Profile, bool), Status> {
        let stop = Arc::new(Notify::new());
        let mut claim = self.claim(&capture.session_id, capture.duration, &stop)?;
        let output = match &capture.file {
            Some(file) => Some(Output::create(file, &self.writes)?),
            None => None,
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
        let writes_file = output.is_some();
        session::start(capture.options.clone(), output.map(writer)).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => Status::aborted(format!(
                "{BUSY} (this process already runs a session: prof::start, a schedule or the flight recorder)"
            )),
            _ => Status::internal(format!("cannot start profiling: {}", report(&e))),
        })?;
        claim.recording = true;
        tokio::select! {
            () = tokio::time::sleep(capture.duration) => {}
            () = stop.notified() => {}
        }
        claim.recording = false;
        let profile = session::stop()
            .map_err(|e| Status::internal(format!("cannot stop profiling: {}", report(&e))))?;
        drop(claim);
        Ok((profile, writes_file))
    }
}

/// A session finisher writing `output`: a capture's file, or a remote flight
/// recorder's last snapshot.
fn writer(output: Output) -> session::Finisher {
    Box::new(move |mut profile| {
        output
            .commit(&mut profile)
            .map_err(|status| Error::new(ErrorKind::Io, status.message().to_owned()))?;
        Ok(profile)
    })
}

#[tonic::async_trait]
impl ProfilerService for Service {
    async fn profile(
        &self,
        request: Request<proto::ProfileRequest>,
    ) -> Result<Response<proto::ProfileResponse>, Status> {
        let _in_flight = InFlight::of(&request);
        let capture = Capture::from_request(request.get_ref(), &self.limits, &self.writes)?;
        let (profile, wrote_file) = self.capture(capture).await?;
        let mut response = proto::ProfileResponse {
            empty_trace: profile.event_count() == 0,
            ..proto::ProfileResponse::default()
        };
        if !wrote_file {
            response.xspace = Some(within_response(profile.into_xspace())?);
        }
        Ok(Response::new(response))
    }

    async fn terminate(
        &self,
        request: Request<proto::TerminateRequest>,
    ) -> Result<Response<proto::TerminateResponse>, Status> {
        let _in_flight = InFlight::of(&request);
        let session_id = request.into_inner().session_id;
        // Longer ids name no capture this server would run.
        check_len("session_id", &session_id, MAX_NAME_BYTES)?;
        let mut captures = self.captures();
        match &captures.active {
            Some((active, stop)) if *active == session_id => stop.notify_one(),
            _ => {
                captures.terminated_early.insert(session_id);
            }
        }
        Ok(Response::new(proto::TerminateResponse {}))
    }

    /// TensorFlow's monitoring call: records for `duration_ms` (unless a session
    /// already does) and answers with the step time, input share and utilisation of
    /// that stretch, as the live view computes them.
    async fn monitor(
        &self,
        request: Request<proto::MonitorRequest>,
    ) -> Result<Response<proto::MonitorResponse>, Status> {
        let _in_flight = InFlight::of(&request);
        let response = self
            .live
            .monitor(request.into_inner(), self.limits.max_duration)
            .await?;
        Ok(Response::new(response))
    }

    /// Starts the flight recorder (`prof::flight_recorder`): rings of
    /// `max_events` records per thread (the default when 0), and, when the request
    /// sets a duration, snapshots limited to that last stretch of time.
    async fn start_continuous_profiling(
        &self,
        request: Request<proto::ProfileRequest>,
    ) -> Result<Response<proto::ContinuousProfilingResponse>, Status> {
        let _in_flight = InFlight::of(&request);
        let request = request.into_inner();
        let requested = request_options(&request)?;
        if request.max_events > self.limits.max_ring_events {
            return Err(invalid(format!(
                "max_events = {} records per thread is over this server's limit of {} (Limits::max_ring_events)",
                request.max_events, self.limits.max_ring_events
            )));
        }
        let mut recorder = FlightRecorder::default();
        if request.max_events > 0 {
            recorder.events_per_thread = request.max_events;
        }
        if requested.duration_ms > 0 {
            recorder = recorder.window(Duration::from_millis(requested.duration_ms));
        }
        let started = if requested.options.writes_on_signals() {
            // The last snapshot goes where a capture's file would: written when the
            // recorder stops, by StopContinuousProfiling or by the process's end.
            if request.repository_root.is_empty() {
                return Err(invalid(
                    "ProfileRequest.opts: write_on_signals: say where this server writes the \
                     flight recorder's last snapshot (repository_root)"
                        .into(),
                ));
            }
            let file = target_file(&request, &session_id(&request)?, &self.writes)?;
            let output = Output::create(&file, &self.writes)?;
            flight_recorder::start_writing(requested.options, recorder, writer(output))
        } else {
            flight_recorder::start(requested.options, recorder)
        };
        started.map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => Status::already_exists(e.to_string()),
            _ => invalid(clip(&e.to_string())),
        })?;
        Ok(Response::new(proto::ContinuousProfilingResponse {}))
    }

    async fn stop_continuous_profiling(
        &self,
        _request: Request<proto::StopContinuousProfilingRequest>,
    ) -> Result<Response<proto::StopContinuousProfilingResponse>, Status> {
        if !flight_recorder::is_running() || flight_recorder::is_background() {
            return Err(Status::failed_precondition(
                "no continuous profiling session is running",
            ));
        }
        session::stop().map_err(|e| Status::internal(report(&e).to_string()))?;
        Ok(Response::new(proto::StopContinuousProfilingResponse {}))
    }

    /// What the flight recorder holds now, as the XSpace of a `ProfileResponse`;
    /// recording goes on. There is one recorder per process, so
    /// `snapshot_session_id` is not needed to find it.
    async fn get_snapshot(
        &self,
        request: Request<proto::GetSnapshotRequest>,
    ) -> Result<Response<proto::ProfileResponse>, Status> {
        let _in_flight = InFlight::of(&request);
        if !flight_recorder::is_running() || flight_recorder::is_background() {
            return Err(Status::not_found(
                "no continuous profiling session is running: call StartContinuousProfiling first",
            ));
        }
        let profile = tokio::task::spawn_blocking(flight_recorder::snapshot)
            .await
            .map_err(|e| Status::internal(format!("the snapshot failed: {e}")))?
            .map_err(|e| Status::failed_precondition(report(&e).to_string()))?;
        Ok(Response::new(proto::ProfileResponse {
            empty_trace: profile.event_count() == 0,
            xspace: Some(within_response(profile.into_xspace())?),
            ..proto::ProfileResponse::default()
        }))
    }
}
