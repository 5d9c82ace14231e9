//! The messages of `prof.live.v1`, prof's own package beside `tensorflow`: one
//! server-streaming call, `Live/Watch`, whose every message is a whole snapshot of the
//! watched process's last seconds.
//!
//! Full snapshots, not deltas: a client that connects late or reconnects needs no
//! history. Fields are only ever added, never renumbered or reused, so old clients
//! read new servers and the other way round (prost skips what it does not know, and
//! a field a server does not send reads as its default).
#![allow(missing_docs)]

/// `prof.live.v1.WatchRequest`: the server sends a snapshot about once a second.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchRequest {
    /// Trace the process's GPU kernels (CUPTI) while this watcher watches, for the
    /// kernel time of `Snapshot.kernels`. Off by default: CUPTI costs about a
    /// microsecond a launch while it traces.
    #[prost(bool, tag = "1")]
    pub trace_kernels: bool,
}

/// What the watched process is doing with its recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Recording {
    /// Not said (a server older than this field).
    Unspecified = 0,
    /// The live view records (its own background flight recorder, or a flight
    /// recorder the process runs): the numbers are current.
    Live = 1,
    /// A capture (`Profile`) records: the numbers are those from before it, and
    /// resume when it ends.
    Capture = 2,
    /// A session the program itself started records: the numbers resume when it ends.
    Session = 3,
}

/// `prof.live.v1.Snapshot`: one update.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Snapshot {
    /// The watched process's host name.
    #[prost(string, tag = "1")]
    pub host: String,
    /// When the snapshot was taken, ns since the Unix epoch.
    #[prost(uint64, tag = "2")]
    pub time_unix_ns: u64,
    #[prost(enumeration = "Recording", tag = "3")]
    pub recording: i32,
    /// The latest finished step's number.
    #[prost(int64, optional, tag = "4")]
    pub step: Option<i64>,
    /// The last steps, oldest first (at most 120).
    #[prost(message, repeated, tag = "5")]
    pub steps: Vec<Step>,
    /// Step times over the window.
    #[prost(message, optional, tag = "6")]
    pub step_times: Option<StepTimes>,
    #[prost(double, tag = "7")]
    pub steps_per_second: f64,
    /// Share of step time in input annotations, over the window.
    #[prost(message, optional, tag = "8")]
    pub input: Option<InputShare>,
    /// Top ops by self time over the window, then "other".
    #[prost(message, repeated, tag = "9")]
    pub ops: Vec<Op>,
    #[prost(message, optional, tag = "10")]
    pub memory: Option<Memory>,
    /// Snapshots this watcher did not get because it read too slowly.
    #[prost(uint64, tag = "11")]
    pub frames_dropped: u64,
    /// The capture running, when `recording` is `CAPTURE`.
    #[prost(message, optional, tag = "12")]
    pub capture: Option<Capture>,
    /// How long the window is, ns.
    #[prost(uint64, tag = "13")]
    pub window_ns: u64,
    /// Events in the window.
    #[prost(uint64, tag = "14")]
    pub events: u64,
    /// Watchers connected, this one included.
    #[prost(uint32, tag = "15")]
    pub watchers: u32,
    /// The GPUs of the watched process's machine, as NVML reads them.
    #[prost(message, repeated, tag = "16")]
    pub gpus: Vec<Gpu>,
    /// Why there are no GPUs to show (no NVML on the host, no device), when so.
    #[prost(string, optional, tag = "17")]
    pub gpus_unavailable: Option<String>,
    /// The process's own kernel time on each device since the last snapshot, as its
    /// device tracer (CUPTI) saw it, when one runs.
    #[prost(message, repeated, tag = "18")]
    pub kernels: Vec<DeviceKernels>,
    /// Why there is no kernel time (no watcher asked for it, no device tracer in the
    /// process), when so.
    #[prost(string, optional, tag = "19")]
    pub kernels_unavailable: Option<String>,
}

/// `prof.live.v1.DeviceKernels`: the watched process's kernels on one device over an
/// interval, as its device tracer saw them: unlike NVML's utilisation, only this
/// process's kernels, and their whole time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeviceKernels {
    /// The device's ordinal as CUDA numbers it (which `CUDA_VISIBLE_DEVICES` may make
    /// differ from NVML's index).
    #[prost(uint32, tag = "1")]
    pub device: u32,
    #[prost(string, tag = "2")]
    pub name: String,
    /// The kernels' time added up over the interval, ns; kernels overlapping on
    /// several streams each count whole, so it can pass the interval.
    #[prost(uint64, tag = "3")]
    pub kernel_ns: u64,
    /// Kernels that finished in the interval.
    #[prost(uint64, tag = "4")]
    pub kernels: u64,
    /// The interval, ns.
    #[prost(uint64, tag = "5")]
    pub interval_ns: u64,
}

/// `prof.live.v1.Step`: one finished step.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Step {
    #[prost(int64, tag = "1")]
    pub step: i64,
    #[prost(uint64, tag = "2")]
    pub duration_ns: u64,
    /// Of that, time in input annotations.
    #[prost(uint64, tag = "3")]
    pub input_ns: u64,
    #[prost(uint64, tag = "4")]
    pub end_unix_ns: u64,
}

/// `prof.live.v1.StepTimes`, ns.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct StepTimes {
    #[prost(uint64, tag = "1")]
    pub last_ns: u64,
    #[prost(double, tag = "2")]
    pub avg_ns: f64,
    #[prost(uint64, tag = "3")]
    pub min_ns: u64,
    #[prost(uint64, tag = "4")]
    pub p50_ns: u64,
    #[prost(uint64, tag = "5")]
    pub p90_ns: u64,
    #[prost(uint64, tag = "6")]
    pub max_ns: u64,
}

/// `prof.live.v1.InputShare`, percent.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct InputShare {
    #[prost(double, tag = "1")]
    pub avg_percent: f64,
    #[prost(double, tag = "2")]
    pub min_percent: f64,
    #[prost(double, tag = "3")]
    pub max_percent: f64,
}

/// `prof.live.v1.Op`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Op {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(uint64, tag = "2")]
    pub self_ns: u64,
    /// Share of the window's step time, 0 to 1.
    #[prost(double, tag = "3")]
    pub share: f64,
    #[prost(uint64, tag = "4")]
    pub count: u64,
}

/// `prof.live.v1.Memory`, bytes; a value the process cannot tell is absent.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Memory {
    /// Host heap in use (a `TrackingAllocator`'s count).
    #[prost(uint64, optional, tag = "1")]
    pub host_in_use: Option<u64>,
    /// Its peak since the process started.
    #[prost(uint64, optional, tag = "2")]
    pub host_peak: Option<u64>,
    /// Resident set size of the process.
    #[prost(uint64, optional, tag = "3")]
    pub rss: Option<u64>,
}

/// `prof.live.v1.Gpu`: one GPU of the watched host; a value NVML cannot tell is
/// absent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gpu {
    /// Its index, as NVML and `nvidia-smi` number them.
    #[prost(uint32, tag = "1")]
    pub index: u32,
    #[prost(string, tag = "2")]
    pub name: String,
    /// Share of NVML's last sample period in which at least one kernel ran, percent.
    #[prost(uint32, optional, tag = "3")]
    pub busy_percent: Option<u32>,
    /// Device memory in use, bytes.
    #[prost(uint64, optional, tag = "4")]
    pub memory_used: Option<u64>,
    /// Device memory in all, bytes.
    #[prost(uint64, optional, tag = "5")]
    pub memory_total: Option<u64>,
}

/// `prof.live.v1.Capture`: the capture running.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Capture {
    #[prost(string, tag = "1")]
    pub session_id: String,
    #[prost(uint64, tag = "2")]
    pub elapsed_ms: u64,
    #[prost(uint64, tag = "3")]
    pub duration_ms: u64,
}
