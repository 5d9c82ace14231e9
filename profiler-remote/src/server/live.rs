//! The live view in the watched process: `prof.live.v1.Live/Watch` streams and
//! TensorFlow's `Monitor`, both from [`profiler_analysis::live`].
//!
//! Where the numbers come from: a background flight recorder
//! ([`flight_recorder::start_background`]) with rings of
//! [`Limits::live_ring_events`] records per thread, started when the first watcher
//! comes and stopped when the last one goes, so a process nobody watches pays
//! nothing. A capture, a flight recorder or a session the program starts takes its
//! place at once (the background recorder makes way for any session), so watching
//! never makes a capture fail; while a flight recorder the process runs records, its
//! snapshots serve the view too. The recording itself costs what any session costs on
//! the hot path; the rest happens here, off the training threads.
//!
//! One thread (`prof-live`), alive only while someone watches, takes a snapshot about
//! once a second, aggregates it once, and offers the result to each watcher's channel
//! of [`FRAMES`] frames. A watcher that reads too slowly (or not at all: a stopped
//! `prof-top`) misses frames, counted and told in the next one it gets, rather than
//! making the process queue them. At most [`Limits::max_watchers`] watch at once.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use profiler_analysis::live::{Live, LiveOptions, LiveView};
use profiler_core::flight_recorder::{self, FlightRecorder};
use profiler_core::{session, ProfileOptions};
use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

use super::gpus;
use super::kernels::KernelMeter;
use crate::live::proto::{self as wire, Recording};
use crate::live_rpc::live_server;
use crate::proto;
use crate::server::conn::InFlight;
use crate::server::limits::Limits;

/// Frames a watcher's channel holds: one waiting while the transport sends the last.
const FRAMES: usize = 1;
/// How often watchers get a frame.
const TICK: Duration = Duration::from_secs(1);
/// The first frame comes this soon, so a client sees it is connected at once.
const FIRST_TICK: Duration = Duration::from_millis(200);
/// The window a frame's step times and ops are over.
const WINDOW: Duration = Duration::from_secs(5);

/// The capture running, for the view to say so.
#[derive(Clone, Debug)]
struct CaptureInfo {
    session_id: String,
    started: Instant,
    duration: Duration,
}

struct Watcher {
    frames: mpsc::Sender<Result<wire::Snapshot, Status>>,
    dropped: u64,
    /// Whether it asked for the GPU's kernels to be traced while it watches.
    trace_kernels: bool,
}

#[derive(Default)]
struct Users {
    watchers: Vec<Watcher>,
    /// `Monitor` calls running.
    monitors: usize,
    /// Whether the `prof-live` thread runs.
    ticking: bool,
}

impl Users {
    fn count(&self) -> usize {
        self.watchers.len() + self.monitors
    }
}

struct Shared {
    users: Mutex<Users>,
    capture: Mutex<Option<CaptureInfo>>,
    max_watchers: usize,
    ring_events: u64,
}

/// The live view's state, shared by the `Live` service, `Monitor` and captures.
#[derive(Clone)]
pub(super) struct Hub {
    shared: Arc<Shared>,
}

/// Marks a capture running while alive.
pub(super) struct CaptureMark(Hub);

impl Drop for CaptureMark {
    fn drop(&mut self) {
        *lock(&self.0.shared.capture) = None;
    }
}

/// Live views using the background recorder, in every server of the process (the
/// recorder is the process's, as sessions are): the last to leave stops it.
static RECORDER_USERS: Mutex<usize> = Mutex::new(0);

/// Whether the background recorder the live view started traces the GPU's kernels.
static RECORDER_TRACES_KERNELS: AtomicBool = AtomicBool::new(false);

/// A live view's use of the background recorder, until dropped.
struct RecorderUse;

impl RecorderUse {
    fn acquire() -> RecorderUse {
        *lock(&RECORDER_USERS) += 1;
        RecorderUse
    }
}

impl Drop for RecorderUse {
    fn drop(&mut self) {
        let mut users = lock(&RECORDER_USERS);
        *users -= 1;
        if *users == 0 {
            flight_recorder::stop_background();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn busy(max: usize) -> Status {
    Status::resource_exhausted(format!(
        "this server already has {max} live views open (Limits::max_watchers); close one"
    ))
}

impl Hub {
    pub(super) fn new(limits: &Limits) -> Hub {
        Hub {
            shared: Arc::new(Shared {
                users: Mutex::new(Users::default()),
                capture: Mutex::new(None),
                max_watchers: limits.max_watchers,
                ring_events: limits.live_ring_events,
            }),
        }
    }

    /// Says a capture runs until the mark drops.
    pub(super) fn capture_started(&self, session_id: &str, duration: Duration) -> CaptureMark {
        *lock(&self.shared.capture) = Some(CaptureInfo {
            session_id: session_id.to_owned(),
            started: Instant::now(),
            duration,
        });
        CaptureMark(self.clone())
    }

    /// Whether a watcher asks for the GPU's kernels.
    fn kernels_asked(&self) -> bool {
        lock(&self.shared.users)
            .watchers
            .iter()
            .any(|w| w.trace_kernels && !w.frames.is_closed())
    }

    /// Starts the background recorder unless a session runs, tracing the GPU's kernels
    /// (the device tracer, CUPTI) when `kernels`. A background recorder that traces
    /// otherwise is started again, so kernels cost the program only while a watcher
    /// asks for them; any other session is left as it is.
    fn ensure_recording(&self, kernels: bool) {
        if session::is_running() {
            if !flight_recorder::is_background()
                || RECORDER_TRACES_KERNELS.load(Ordering::Relaxed) == kernels
            {
                return;
            }
            flight_recorder::stop_background();
        }
        let options = ProfileOptions::default().device_tracer_level(u32::from(kernels));
        let recorder = FlightRecorder::new(self.shared.ring_events).window(WINDOW);
        // A session that started meanwhile wins: nothing to do then.
        if flight_recorder::start_background(options, recorder).is_ok() {
            RECORDER_TRACES_KERNELS.store(kernels, Ordering::Relaxed);
        }
    }

    /// A new watcher's stream, or RESOURCE_EXHAUSTED.
    fn watch(
        &self,
        in_flight: Option<InFlight>,
        trace_kernels: bool,
    ) -> Result<WatchStream, Status> {
        let (frames, receiver) = mpsc::channel(FRAMES);
        let mut users = lock(&self.shared.users);
        users.watchers.retain(|w| !w.frames.is_closed());
        if users.count() >= self.shared.max_watchers {
            return Err(busy(self.shared.max_watchers));
        }
        users.watchers.push(Watcher {
            frames,
            dropped: 0,
            trace_kernels,
        });
        if !users.ticking {
            let hub = self.clone();
            std::thread::Builder::new()
                .name("prof-live".into())
                .spawn(move || hub.tick())
                .map_err(|e| Status::internal(format!("cannot start the live view: {e}")))?;
            users.ticking = true;
        }
        Ok(WatchStream {
            frames: receiver,
            _in_flight: in_flight,
        })
    }

    /// The `prof-live` thread: a frame a tick while someone watches.
    fn tick(self) {
        let _use = RecorderUse::acquire();
        let mut live = Live::new(LiveOptions::default());
        let mut kernels = KernelMeter::default();
        let mut last = LiveView::default();
        let mut wait = FIRST_TICK;
        loop {
            {
                let mut users = lock(&self.shared.users);
                users.watchers.retain(|w| !w.frames.is_closed());
                if users.watchers.is_empty() {
                    users.ticking = false;
                    return;
                }
            }
            let kernels_asked = self.kernels_asked();
            self.ensure_recording(kernels_asked);
            // A device tracer the recorder just started is measured over this wait.
            kernels.prime();
            std::thread::sleep(wait);
            wait = TICK;
            let (recording, view) = self.view(&mut live, WINDOW);
            if let Some(view) = view {
                last = view;
            }
            let mut frame = self.frame(recording, &last);
            match kernels.read(kernels_asked) {
                Ok(devices) => frame.kernels = devices,
                Err(why) => frame.kernels_unavailable = Some(why),
            }
            let mut users = lock(&self.shared.users);
            let watchers = users.watchers.len() as u32;
            users.watchers.retain_mut(|w| {
                let mut frame = frame.clone();
                frame.frames_dropped = w.dropped;
                frame.watchers = watchers;
                match w.frames.try_send(Ok(frame)) {
                    Ok(()) => true,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        w.dropped += 1;
                        true
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => false,
                }
            });
        }
    }

    /// What records now, and the view over the last `window` when a flight recorder
    /// does.
    fn view(&self, live: &mut Live, window: Duration) -> (Recording, Option<LiveView>) {
        if lock(&self.shared.capture).is_some() {
            return (Recording::Capture, None);
        }
        if !flight_recorder::is_running() {
            let recording = if session::is_running() {
                Recording::Session
            } else {
                Recording::Live
            };
            return (recording, None);
        }
        let Ok(snapshot) = flight_recorder::snapshot() else {
            // It stopped between the two calls: a capture took its place.
            return (Recording::Session, None);
        };
        let since = now_ns().saturating_sub(window.as_nanos() as u64);
        (Recording::Live, Some(live.update_since(&snapshot, since)))
    }

    fn frame(&self, recording: Recording, view: &LiveView) -> wire::Snapshot {
        let capture = lock(&self.shared.capture).clone().map(|c| wire::Capture {
            session_id: c.session_id,
            elapsed_ms: c.started.elapsed().as_millis() as u64,
            duration_ms: c.duration.as_millis() as u64,
        });
        snapshot_of(view, recording, capture)
    }

    /// TensorFlow's `Monitor`: records for `duration` (the background recorder if
    /// nothing else records), then answers from the view of that stretch.
    pub(super) async fn monitor(
        &self,
        request: proto::MonitorRequest,
        max_duration: Duration,
    ) -> Result<proto::MonitorResponse, Status> {
        let duration = Duration::from_millis(request.duration_ms);
        if duration > max_duration {
            return Err(Status::invalid_argument(format!(
                "duration_ms = {} is over this server's limit of {} ms (Limits::max_duration)",
                request.duration_ms,
                max_duration.as_millis()
            )));
        }
        {
            let mut users = lock(&self.shared.users);
            users.watchers.retain(|w| !w.frames.is_closed());
            if users.count() >= self.shared.max_watchers {
                return Err(busy(self.shared.max_watchers));
            }
            users.monitors += 1;
        }
        struct Leave(Hub);
        impl Drop for Leave {
            fn drop(&mut self) {
                lock(&self.0.shared.users).monitors -= 1;
            }
        }
        let _leave = Leave(self.clone());
        let _use = RecorderUse::acquire();
        self.ensure_recording(self.kernels_asked());
        tokio::time::sleep(duration).await;
        let hub = self.clone();
        let (recording, view) = tokio::task::spawn_blocking(move || {
            hub.view(&mut Live::new(LiveOptions::default()), duration)
        })
        .await
        .map_err(|e| Status::internal(format!("the live view failed: {e}")))?;
        Ok(monitor_response(
            &request,
            recording,
            view.as_ref(),
            duration,
        ))
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The process's resident set, from `/proc/self/statm` (Linux).
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system and has no preconditions.
    #[allow(unsafe_code)]
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

fn snapshot_of(
    view: &LiveView,
    recording: Recording,
    capture: Option<wire::Capture>,
) -> wire::Snapshot {
    let host = profiler_core::memory::host();
    let (gpus, gpus_unavailable) = match gpus::read() {
        Ok(gpus) if gpus.is_empty() => (gpus, Some("NVML sees no GPU on this host".into())),
        Ok(gpus) => (gpus, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    wire::Snapshot {
        host: profiler_core::host_name(),
        time_unix_ns: now_ns(),
        recording: recording as i32,
        step: view.step,
        steps: view
            .steps
            .iter()
            .map(|s| wire::Step {
                step: s.step,
                duration_ns: s.duration_ns,
                input_ns: s.input_ns,
                end_unix_ns: s.end_ns,
            })
            .collect(),
        step_times: view.step_times.map(|t| wire::StepTimes {
            last_ns: t.last_ns,
            avg_ns: t.avg_ns,
            min_ns: t.min_ns,
            p50_ns: t.p50_ns,
            p90_ns: t.p90_ns,
            max_ns: t.max_ns,
        }),
        steps_per_second: view.steps_per_second,
        input: view.input.map(|i| wire::InputShare {
            avg_percent: i.avg_percent,
            min_percent: i.min_percent,
            max_percent: i.max_percent,
        }),
        ops: view
            .ops
            .iter()
            .map(|o| wire::Op {
                name: o.name.clone(),
                self_ns: o.self_ns,
                share: o.share,
                count: o.count,
            })
            .collect(),
        memory: Some(wire::Memory {
            host_in_use: host.map(|h| h.in_use),
            host_peak: host.map(|h| h.peak),
            rss: rss_bytes(),
        }),
        frames_dropped: 0,
        capture,
        window_ns: view.window_ns,
        events: view.events,
        watchers: 0,
        gpus,
        gpus_unavailable,
        kernels: Vec::new(),
        kernels_unavailable: None,
    }
}

/// `HH:MM:SS` (UTC) of `now`, as TensorFlow's monitor prints a timestamp.
fn clock(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let day = secs % 86_400;
    format!("{:02}:{:02}:{:02}", day / 3600, day % 3600 / 60, day % 60)
}

/// The answer to `Monitor`, with TPU's wording: level 1 the utilisation, level 2 also
/// the idle time, step time and input ("infeed") percentage.
fn monitor_response(
    request: &proto::MonitorRequest,
    recording: Recording,
    view: Option<&LiveView>,
    duration: Duration,
) -> proto::MonitorResponse {
    use proto::profiler_service_monitor_result::ResponseType;
    let mut lines = Vec::new();
    if request.timestamp {
        lines.push(format!("Timestamp: {}", clock(SystemTime::now())));
    }
    let Some(view) = view.filter(|v| v.step_times.is_some()) else {
        lines.push(match recording {
            Recording::Capture | Recording::Session => {
                "No live numbers: a capture or the program's own session is recording; monitor again after it".to_owned()
            }
            _ => format!(
                "No step finished in the last {} ms: annotate each training step with a step_num",
                duration.as_millis()
            ),
        });
        return proto::MonitorResponse {
            data: lines.join("\n"),
            monitor_result: Some(proto::ProfilerServiceMonitorResult::default()),
        };
    };
    let Some(times) = view.step_times else {
        unreachable!("filtered above")
    };
    let input = view.input.map_or((0.0, 0.0, 0.0), |i| {
        (i.avg_percent, i.min_percent, i.max_percent)
    });
    // What prof can say of a CPU job's "utilisation": the share of step time not
    // spent waiting for input.
    let utilization = 100.0 - input.0;
    let mut result = proto::ProfilerServiceMonitorResult {
        response_type: ResponseType::UtilOnly as i32,
        matrix_unit_utilization_percent: utilization,
        ..proto::ProfilerServiceMonitorResult::default()
    };
    lines.push(format!(
        "Utilization of step time outside input (higher is better): {utilization:.3}%"
    ));
    if request.monitoring_level >= 2 {
        let ms = |ns: f64| ns / 1e6;
        result.response_type = ResponseType::UtilIdleStep as i32;
        result.device_idle_time_percent = input.0;
        result.step_time_ms_avg = ms(times.avg_ns);
        result.step_time_ms_min = ms(times.min_ns as f64);
        result.step_time_ms_max = ms(times.max_ns as f64);
        result.infeed_percent_avg = input.0;
        result.infeed_percent_min = input.1;
        result.infeed_percent_max = input.2;
        lines.push(format!(
            "Idle time waiting for input (lower is better): {:.3}%",
            input.0
        ));
        lines.push(format!(
            "Step time: {:.1}ms (avg), {:.1}ms (min), {:.1}ms (max)",
            result.step_time_ms_avg, result.step_time_ms_min, result.step_time_ms_max
        ));
        lines.push(format!(
            "Infeed percentage: {:.3}% (avg), {:.3}% (min), {:.3}% (max)",
            input.0, input.1, input.2
        ));
    }
    proto::MonitorResponse {
        data: lines.join("\n"),
        monitor_result: Some(result),
    }
}

/// A watcher's frames, and its mark as a call running on its connection (so the
/// connection is never closed as idle while it watches).
pub(super) struct WatchStream {
    frames: mpsc::Receiver<Result<wire::Snapshot, Status>>,
    _in_flight: Option<InFlight>,
}

impl tokio_stream::Stream for WatchStream {
    type Item = Result<wire::Snapshot, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.frames.poll_recv(cx)
    }
}

/// The `prof.live.v1.Live` service.
pub(super) struct LiveService(pub(super) Hub);

#[tonic::async_trait]
impl live_server::Live for LiveService {
    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<wire::WatchRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let in_flight = InFlight::of(&request);
        let trace_kernels = request.get_ref().trace_kernels;
        Ok(Response::new(self.0.watch(in_flight, trace_kernels)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_hours_minutes_seconds() {
        let t = UNIX_EPOCH + Duration::from_secs(86_400 * 3 + 3600 * 13 + 60 * 5 + 7);
        assert_eq!(clock(t), "13:05:07");
    }
}
