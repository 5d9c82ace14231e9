//! `ProfileOptions`: what a session records, validated before it starts.
//!
//! The fields and their defaults are those of TSL's `ProfileOptions` as JAX exposes it
//! (`jax.profiler.ProfileOptions`), plus a cap on recorded events.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// Default cap on recorded records: 8 Mi × 32 bytes = 256 MiB at most.
pub const DEFAULT_MAX_EVENTS: u64 = 8 << 20;

/// The largest `.xplane.pb` XProf and TensorBoard can open: they read a host's file as
/// one protobuf message, which protobuf caps at 2 GiB less a byte (JAX's profiling
/// guide: "XSpace exceeded maximum protobuf size of 2GB").
pub const XPROF_MAX_BYTES: u64 = (1 << 31) - 1;

/// The least [`ProfileOptions::max_xplane_bytes`]: room for a profile's metadata and a
/// few events.
pub const MIN_XPLANE_BYTES: u64 = 4 << 10;

/// Default [`ProfileOptions::max_xplane_bytes`]: XProf's limit less 64 MiB, a margin
/// for what readers add around the message.
pub const DEFAULT_MAX_XPLANE_BYTES: u64 = XPROF_MAX_BYTES + 1 - (64 << 20);

/// The `advanced_configuration` key asking for [`ProfileOptions::write_on_signals`].
pub const WRITE_ON_SIGNALS: &str = "write_on_signals";

/// The `advanced_configuration` key bounding how long a signal waits for the profile
/// to be written ([`ProfileOptions::signal_budget`]).
pub const WRITE_ON_SIGNALS_BUDGET_MS: &str = "write_on_signals_budget_ms";

/// The default time a SIGTERM or SIGINT leaves the profile's writing: inside the 30 s
/// that Kubernetes (`terminationGracePeriodSeconds`) and SLURM (`KillWait`) wait
/// between SIGTERM and SIGKILL by default, with room for the program's own shutdown.
pub const DEFAULT_SIGNAL_BUDGET_MS: u64 = 20_000;

/// What a profiling session records.
///
/// ```
/// use profiler_core::ProfileOptions;
///
/// let options = ProfileOptions::default()
///     .host_tracer_level(3)
///     .duration_ms(2_000)
///     .advanced("gpu_max_activity_api_events", 1 << 20);
/// assert!(options.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileOptions {
    /// 0 records nothing on the host, 1 only prof's own annotations (`prof::trace!`,
    /// `#[prof::instrument]`), 2 (default) also every `tracing` span the subscriber
    /// passes, 3 verbose: also `tracing` events and every poll of async spans.
    pub host_tracer_level: u32,
    /// 0 disables the GPU tracer, 1 (default) enables it when one is available.
    pub device_tracer_level: u32,
    /// Wait this long after `start` before recording.
    pub delay_ms: u64,
    /// Stop, collect and write automatically after recording this long; 0 records until
    /// `stop`.
    pub duration_ms: u64,
    /// Cap on recorded records: each event, and each field of an event, is one 32-byte
    /// record. What is dropped past it is counted and reported as a warning.
    pub max_events: u64,
    /// Tracer-specific settings, checked against [`CONFIG_KEYS`].
    pub advanced_configuration: BTreeMap<String, ConfigValue>,
    /// Formats written beside the `.xplane.pb` when the session's profile is written
    /// (the exporters live in `profiler-export`; this only records the choice).
    pub export_formats: Vec<ExportFormat>,
    /// Largest `.xplane.pb` written ([`DEFAULT_MAX_XPLANE_BYTES`], at most
    /// [`XPROF_MAX_BYTES`]): a longer session's file keeps its latest steps that fit,
    /// and the whole session is written as Perfetto beside it (`profiler-export`'s
    /// `fit`). Lower it to keep files small; a test sets it to a few kilobytes.
    pub max_xplane_bytes: u64,
    /// On Unix, write the profile when SIGTERM or SIGINT arrives (a scheduler's
    /// preemption, Ctrl-C), then let the signal do what it did before: its previous
    /// handler runs, or the process ends with the signal's status. Off by default: a
    /// library installs no signal handler unasked. The `advanced_configuration` key
    /// `write_on_signals` asks for the same where only keys travel (remote captures);
    /// see [`crate::exit`].
    pub write_on_signals: bool,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            host_tracer_level: 2,
            device_tracer_level: 1,
            delay_ms: 0,
            duration_ms: 0,
            max_events: DEFAULT_MAX_EVENTS,
            advanced_configuration: BTreeMap::new(),
            export_formats: Vec::new(),
            max_xplane_bytes: DEFAULT_MAX_XPLANE_BYTES,
            write_on_signals: false,
        }
    }
}

impl ProfileOptions {
    /// Sets [`ProfileOptions::host_tracer_level`].
    pub fn host_tracer_level(mut self, level: u32) -> Self {
        self.host_tracer_level = level;
        self
    }

    /// Sets [`ProfileOptions::device_tracer_level`].
    pub fn device_tracer_level(mut self, level: u32) -> Self {
        self.device_tracer_level = level;
        self
    }

    /// Sets [`ProfileOptions::delay_ms`].
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }

    /// Sets [`ProfileOptions::duration_ms`].
    pub fn duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = ms;
        self
    }

    /// Sets [`ProfileOptions::max_events`].
    pub fn max_events(mut self, max: u64) -> Self {
        self.max_events = max;
        self
    }

    /// Also writes the profile in `format` (once, whatever the number of calls).
    pub fn export_format(mut self, format: ExportFormat) -> Self {
        if !self.export_formats.contains(&format) {
            self.export_formats.push(format);
        }
        self
    }

    /// Sets [`ProfileOptions::max_xplane_bytes`].
    pub fn max_xplane_bytes(mut self, bytes: u64) -> Self {
        self.max_xplane_bytes = bytes;
        self
    }

    /// Sets [`ProfileOptions::write_on_signals`].
    pub fn write_on_signals(mut self, on: bool) -> Self {
        self.write_on_signals = on;
        self
    }

    /// Whether SIGTERM and SIGINT write the profile: [`ProfileOptions::write_on_signals`]
    /// or the `advanced_configuration` key of the same name.
    pub fn writes_on_signals(&self) -> bool {
        self.write_on_signals || self.advanced_bool(WRITE_ON_SIGNALS) == Some(true)
    }

    /// How long a signal leaves the profile's writing before it takes its course
    /// (`write_on_signals_budget_ms`, [`DEFAULT_SIGNAL_BUDGET_MS`] unless set).
    pub fn signal_budget(&self) -> std::time::Duration {
        let ms = self
            .advanced_int(WRITE_ON_SIGNALS_BUDGET_MS)
            .and_then(|ms| u64::try_from(ms).ok())
            .unwrap_or(DEFAULT_SIGNAL_BUDGET_MS);
        std::time::Duration::from_millis(ms)
    }

    /// Samples every thread's native call stack `hz` times a second of its CPU time
    /// (the `advanced_configuration` key [`HOST_SAMPLING_HZ`]); 0, the default, samples
    /// nothing. The sampler is a tracer of its own (`profiler-sampling`, which the
    /// `prof` facade registers); see its crate documentation for what it records.
    pub fn host_sampling_hz(self, hz: u32) -> Self {
        self.advanced(HOST_SAMPLING_HZ, hz)
    }

    /// Adds one `advanced_configuration` entry.
    pub fn advanced(mut self, key: impl Into<String>, value: impl Into<ConfigValue>) -> Self {
        self.advanced_configuration.insert(key.into(), value.into());
        self
    }

    /// Checks every option; the error names the offending one and what is valid.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a tracer level out of range, a zero
    /// `max_events`, or an `advanced_configuration` key that is unknown or has a value
    /// of the wrong type.
    pub fn validate(&self) -> Result<()> {
        if self.host_tracer_level > 3 {
            return Err(invalid(format!(
                "host_tracer_level = {} is out of range: use 0 (off), 1 (user annotations), 2 (default) or 3 (verbose)",
                self.host_tracer_level
            )));
        }
        if self.device_tracer_level > 1 {
            return Err(invalid(format!(
                "device_tracer_level = {} is out of range: use 0 (off) or 1 (on)",
                self.device_tracer_level
            )));
        }
        if self.max_events == 0 {
            return Err(invalid(
                "max_events = 0 would record nothing: use a positive cap",
            ));
        }
        if !(MIN_XPLANE_BYTES..=XPROF_MAX_BYTES).contains(&self.max_xplane_bytes) {
            return Err(invalid(format!(
                "max_xplane_bytes = {} is out of range: use {MIN_XPLANE_BYTES} to \
                 {XPROF_MAX_BYTES} (XProf reads no file over 2 GiB)",
                self.max_xplane_bytes
            )));
        }
        for (key, value) in &self.advanced_configuration {
            let Some(spec) = CONFIG_KEYS.iter().find(|k| k.name == key) else {
                let valid: Vec<_> = CONFIG_KEYS.iter().map(|k| k.name).collect();
                return Err(invalid(format!(
                    "unknown advanced_configuration key {key:?}; valid keys: {}",
                    valid.join(", ")
                )));
            };
            if let Some(why) = spec.kind.refuses(value) {
                return Err(invalid(format!(
                    "advanced_configuration key {key:?} takes {}: {why}",
                    spec.kind
                )));
            }
        }
        Ok(())
    }

    /// The integer value of an `advanced_configuration` key, if set.
    pub fn advanced_int(&self, key: &str) -> Option<i64> {
        match self.advanced_configuration.get(key) {
            Some(ConfigValue::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// The string value of an `advanced_configuration` key, if set.
    pub fn advanced_str(&self, key: &str) -> Option<&str> {
        match self.advanced_configuration.get(key) {
            Some(ConfigValue::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// The boolean value of an `advanced_configuration` key, if set.
    pub fn advanced_bool(&self, key: &str) -> Option<bool> {
        match self.advanced_configuration.get(key) {
            Some(ConfigValue::Bool(v)) => Some(*v),
            _ => None,
        }
    }
}

/// A file format a profile can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportFormat {
    /// TensorBoard/XProf's `.xplane.pb` (always written to a logdir).
    XPlane,
    /// Perfetto's native protobuf trace, `.pftrace`.
    Perfetto,
    /// Chrome's JSON trace event format, `.trace.json`.
    ChromeJson,
    /// The same, gzipped: `.trace.json.gz`.
    ChromeJsonGz,
}

impl ExportFormat {
    /// Every format, with the name its [`FromStr`](std::str::FromStr) impl accepts first.
    pub const ALL: [(ExportFormat, &'static str); 4] = [
        (ExportFormat::XPlane, "xplane"),
        (ExportFormat::Perfetto, "perfetto"),
        (ExportFormat::ChromeJson, "chrome"),
        (ExportFormat::ChromeJsonGz, "chrome.gz"),
    ];

    /// Parses a comma-separated list such as `xplane,perfetto,chrome`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the unknown format and the valid ones.
    pub fn parse_list(list: &str) -> Result<Vec<ExportFormat>> {
        let mut formats = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let format = name.parse()?;
            if !formats.contains(&format) {
                formats.push(format);
            }
        }
        Ok(formats)
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<ExportFormat> {
        let format = match s {
            "xplane" | "xplane.pb" | "tensorboard" => ExportFormat::XPlane,
            "perfetto" | "pftrace" => ExportFormat::Perfetto,
            "chrome" | "json" | "trace.json" => ExportFormat::ChromeJson,
            "chrome.gz" | "json.gz" | "trace.json.gz" => ExportFormat::ChromeJsonGz,
            other => {
                let valid: Vec<_> = ExportFormat::ALL.iter().map(|(_, n)| *n).collect();
                return Err(invalid(format!(
                    "unknown export format {other:?}; valid formats: {}",
                    valid.join(", ")
                )));
            }
        };
        Ok(format)
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = ExportFormat::ALL
            .iter()
            .find(|(format, _)| format == self)
            .map_or("?", |(_, name)| name);
        f.write_str(name)
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// A value in `advanced_configuration`: a string, a bool or an integer, as in TSL's
/// `AdvancedConfigValue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigValue {
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
}

impl From<&str> for ConfigValue {
    fn from(v: &str) -> Self {
        ConfigValue::Str(v.to_owned())
    }
}
impl From<String> for ConfigValue {
    fn from(v: String) -> Self {
        ConfigValue::Str(v)
    }
}
impl From<bool> for ConfigValue {
    fn from(v: bool) -> Self {
        ConfigValue::Bool(v)
    }
}
impl From<i64> for ConfigValue {
    fn from(v: i64) -> Self {
        ConfigValue::Int(v)
    }
}
impl From<i32> for ConfigValue {
    fn from(v: i32) -> Self {
        ConfigValue::Int(v.into())
    }
}
impl From<u32> for ConfigValue {
    fn from(v: u32) -> Self {
        ConfigValue::Int(v.into())
    }
}

/// A comma-separated list of names (`a.b_c,d`): each non-empty, of letters, digits,
/// `_` and `.`, spaces around commas allowed.
fn is_name_list(s: &str) -> bool {
    !s.trim().is_empty()
        && s.split(',').all(|name| {
            let name = name.trim();
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
}

/// The type an `advanced_configuration` key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigKind {
    /// A non-negative integer.
    Int,
    /// A positive integer.
    Positive,
    /// An integer in an inclusive range.
    Range(i64, i64),
    /// A comma-separated list of names (metric names): letters, digits, `_` and `.`.
    NameList,
    /// A cap: a non-negative integer, or -1 for no limit (as TSL's GPU options take).
    Limit,
    /// A boolean.
    Bool,
    /// A string.
    Str,
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigKind::Int => "a non-negative integer",
            ConfigKind::Positive => "a positive integer",
            ConfigKind::Range(lo, hi) => return write!(f, "an integer from {lo} to {hi}"),
            ConfigKind::NameList => {
                "a comma-separated list of names (letters, digits, '_' and '.')"
            }
            ConfigKind::Limit => "a non-negative integer, or -1 for no limit",
            ConfigKind::Bool => "a bool",
            ConfigKind::Str => "a string",
            ConfigKind::OneOf(names) => return write!(f, "one of {}", names.join(", ")),
        })
    }
}

impl ConfigKind {
    /// Why `value` is not one of this kind, in the words the user gave it
    /// ("-2 is negative", "99999999999999999999 is too large for a 64-bit integer"),
    /// or `None` when it is.
    pub fn refuses(self, value: &ConfigValue) -> Option<String> {
        let int = |v: i64| match self {
            ConfigKind::Int if v < 0 => Some(format!("{v} is negative")),
            ConfigKind::Positive if v < 1 => Some(format!("{v} is not positive")),
            ConfigKind::Range(lo, hi) if !(lo..=hi).contains(&v) => {
                Some(format!("{v} is out of that range"))
            }
            ConfigKind::Limit if v < -1 => Some(format!("{v} is negative and not -1")),
            _ => None,
        };
        match (self, value) {
            (
                ConfigKind::Int | ConfigKind::Positive | ConfigKind::Range(..) | ConfigKind::Limit,
                ConfigValue::Int(v),
            ) => int(*v),
            (
                ConfigKind::Int | ConfigKind::Positive | ConfigKind::Range(..) | ConfigKind::Limit,
                ConfigValue::Str(s),
            ) => Some(not_an_integer(s)),
            (ConfigKind::Bool, ConfigValue::Bool(_)) | (ConfigKind::Str, ConfigValue::Str(_)) => {
                None
            }
            (ConfigKind::NameList, ConfigValue::Str(s)) if is_name_list(s) => None,
            (ConfigKind::NameList, ConfigValue::Str(s)) => {
                Some(format!("{s:?} is not such a list"))
            }
            (ConfigKind::OneOf(names), ConfigValue::Str(s)) if names.contains(&s.as_str()) => None,
            (ConfigKind::OneOf(_), ConfigValue::Str(s)) => {
                Some(format!("{s:?} is not one of them"))
            }
            (_, ConfigValue::Int(v)) => Some(format!("{v} is an integer")),
            (_, ConfigValue::Bool(b)) => Some(format!("{b} is a bool")),
            (_, ConfigValue::Str(s)) => Some(format!("{s:?} is a string")),
        }
    }
}

/// Why `text` (a value that arrived as a string) is not an integer: digits too many
/// for an `i64` are said to be, rather than called a string.
fn not_an_integer(text: &str) -> String {
    let t = text.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let side = if t.starts_with('-') { "small" } else { "large" };
        return format!("{t} is too {side} for a 64-bit integer");
    }
    format!("{text:?} is not an integer")
}

/// One accepted `advanced_configuration` key.
#[derive(Clone, Copy, Debug)]
pub struct ConfigKey {
    /// The key.
    pub name: &'static str,
    /// The type of its value.
    pub kind: ConfigKind,
    /// What it does.
    pub doc: &'static str,
    /// Read by a device tracer: in a session where none runs, the key has no effect
    /// and the profile says so.
    pub device: bool,
}

/// Whether `key` is read by a device tracer (see [`ConfigKey::device`]).
pub(crate) fn is_device_key(key: &str) -> bool {
    CONFIG_KEYS.iter().any(|k| k.name == key && k.device)
}

/// The `advanced_configuration` key of [`ProfileOptions::host_sampling_hz`]: samples
/// of every thread's native stack per second of its CPU time; 0 (the default) is off.
pub const HOST_SAMPLING_HZ: &str = "host_sampling_hz";

/// The `advanced_configuration` key choosing how stacks are sampled: `auto` (the
/// default: `perf_event_open`, else CPU-time timers), `perf` or `timer`.
pub const HOST_SAMPLING_BACKEND: &str = "host_sampling_backend";

/// Every accepted `advanced_configuration` key. The GPU keys are named as JAX and TSL
/// name them; they are read by a device tracer (CUPTI's) and ignored, with a warning in
/// the profile, where none runs.
pub const CONFIG_KEYS: &[ConfigKey] = &[
    ConfigKey {
        name: "gpu_max_activity_api_events",
        kind: ConfigKind::Limit,
        doc: "cap on CUPTI activity records (kernels, copies, memsets) kept per session; default 2097152",
        device: true,
    },
    ConfigKey {
        name: "gpu_max_callback_api_events",
        kind: ConfigKind::Limit,
        doc: "cap on CUDA driver/runtime API calls kept per session; default 2097152",
        device: true,
    },
    ConfigKey {
        name: "gpu_max_annotation_strings",
        kind: ConfigKind::Limit,
        doc: "cap on distinct host annotation stacks (tf_op strings) attached to GPU activity per session; default 1048576",
        device: true,
    },
    ConfigKey {
        name: "gpu_trace_all_api_calls",
        kind: ConfigKind::Bool,
        doc: "record every CUDA driver/runtime API call on the host lines; default false: only launches, copies, memsets, allocations and frees, synchronisation, and calls that launched device work",
        device: true,
    },
    ConfigKey {
        name: "gpu_enable_nvtx_tracking",
        kind: ConfigKind::Bool,
        doc: "record NVTX ranges and marks (CUPTI's marker records) on a host line per thread, `NVTX (thread <tid>)`, with their domain, and give device work the innermost range open at its launch as `nvtx_range`, as TSL does; NVTX calls reach CUPTI only when NVTX_INJECTION64_PATH names libcupti (the profile warns otherwise); default false",
        device: true,
    },
    ConfigKey {
        name: "gpu_enable_cupti_activity_graph_trace",
        kind: ConfigKind::Bool,
        doc: "record each CUDA graph launch as one event on its stream line, `CudaGraphExec:<graph id>`, instead of one per node (CUPTI's GRAPH_TRACE records); default false",
        device: true,
    },
    ConfigKey {
        name: "gpu_dump_graph_node_mapping",
        kind: ConfigKind::Bool,
        doc: "write each CUDA graph's nodes, with the node each was cloned from, its kind and the annotation open when it was captured, on a `CUDA graph nodes` line of the GPU plane (and the summary); default false",
        device: true,
    },
    ConfigKey {
        name: "gpu_pm_sample_counters",
        kind: ConfigKind::NameList,
        doc: "CUPTI performance-monitor metrics to sample (PM sampling, CUPTI >= 12.6), comma-separated, e.g. sm__cycles_active.avg.pct_of_peak_sustained_elapsed; each becomes a counter track of the GPU plane",
        device: true,
    },
    ConfigKey {
        name: "gpu_pm_sample_interval_us",
        kind: ConfigKind::Positive,
        doc: "interval between PM samples, microseconds; default 500",
        device: true,
    },
    ConfigKey {
        name: "gpu_pm_sample_buffer_size_per_gpu_mb",
        kind: ConfigKind::Range(64, 4096),
        doc: "the hardware buffer PM samples collect in, per GPU, MiB; default 64",
        device: true,
    },
    ConfigKey {
        name: "gpu_num_chips_to_profile_per_task",
        kind: ConfigKind::Int,
        doc: "profile GPUs 0..N-1 only, as TSL does; 0 (the default) or more than there are means all of them",
        device: true,
    },
    ConfigKey {
        name: WRITE_ON_SIGNALS,
        kind: ConfigKind::Bool,
        doc: "on Unix, SIGTERM and SIGINT write the profile where stop would, then take their course (the previous handler runs, or the process ends with the signal's status), as ProfileOptions::write_on_signals; default false: no handler is installed",
        device: false,
    },
    ConfigKey {
        name: WRITE_ON_SIGNALS_BUDGET_MS,
        kind: ConfigKind::Positive,
        doc: "with write_on_signals, how long the signal waits for the profile to be written (the .xplane.pb first) before it takes its course, milliseconds; default 20000",
        device: false,
    },
    ConfigKey {
        name: HOST_SAMPLING_HZ,
        kind: ConfigKind::Range(0, 10_000),
        doc: "sample every thread's native call stack this many times per second of its CPU time (Linux; build with frame pointers); 0, the default, is off",
        device: false,
    },
    ConfigKey {
        name: HOST_SAMPLING_BACKEND,
        kind: ConfigKind::OneOf(&["auto", "perf", "timer"]),
        doc: "how host_sampling_hz samples: auto (the default: perf_event_open, else per-thread CPU-time timers), perf, or timer",
        device: false,
    },
    ConfigKey {
        name: "cubecl_kernel_timing",
        kind: ConfigKind::Bool,
        doc: "time every kernel burn's cubecl runtimes launch on the device (wgpu's timestamp queries, CUDA and HIP events; profiler-burn), each an event of the GPU plane linked to its launch; costs the launching thread a round trip to cubecl's device thread per kernel; default false",
        device: true,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpu_key_jax_documents_is_taken_and_checked() {
        let ok = ProfileOptions::default()
            .advanced("gpu_enable_cupti_activity_graph_trace", true)
            .advanced("gpu_dump_graph_node_mapping", false)
            .advanced(
                "gpu_pm_sample_counters",
                "sm__cycles_active.avg.pct_of_peak_sustained_elapsed, dram__throughput.avg.pct_of_peak_sustained_elapsed",
            )
            .advanced("gpu_pm_sample_interval_us", 500)
            .advanced("gpu_pm_sample_buffer_size_per_gpu_mb", 64)
            .advanced("gpu_num_chips_to_profile_per_task", 0);
        ok.validate().expect("valid");
        for (key, value, says) in [
            (
                "gpu_pm_sample_interval_us",
                ConfigValue::Int(0),
                "a positive integer",
            ),
            (
                "gpu_pm_sample_buffer_size_per_gpu_mb",
                ConfigValue::Int(63),
                "from 64 to 4096",
            ),
            (
                "gpu_pm_sample_buffer_size_per_gpu_mb",
                ConfigValue::Int(4097),
                "from 64 to 4096",
            ),
            (
                "gpu_pm_sample_counters",
                ConfigValue::Str("a,,b".into()),
                "comma-separated",
            ),
            (
                "gpu_pm_sample_counters",
                ConfigValue::Str("".into()),
                "comma-separated",
            ),
            (
                "gpu_pm_sample_counters",
                ConfigValue::Str("sm__x; rm -rf".into()),
                "comma-separated",
            ),
            (
                "gpu_pm_sample_counters",
                ConfigValue::Int(3),
                "comma-separated",
            ),
            (
                "gpu_enable_cupti_activity_graph_trace",
                ConfigValue::Int(1),
                "a bool",
            ),
            (
                "gpu_num_chips_to_profile_per_task",
                ConfigValue::Int(-1),
                "non-negative",
            ),
        ] {
            let err = ProfileOptions::default()
                .advanced(key, value.clone())
                .validate()
                .expect_err(key);
            let msg = err.to_string();
            assert!(
                msg.contains(key) && msg.contains(says),
                "{key} = {value:?}: {msg}"
            );
        }
    }

    #[test]
    fn host_sampling_keys_are_checked() {
        let ok = ProfileOptions::default()
            .host_sampling_hz(99)
            .advanced(HOST_SAMPLING_BACKEND, "timer");
        ok.validate().expect("valid");
        assert_eq!(ok.advanced_int(HOST_SAMPLING_HZ), Some(99));
        for (key, value, says) in [
            (HOST_SAMPLING_HZ, ConfigValue::Int(-1), "from 0 to 10000"),
            (
                HOST_SAMPLING_HZ,
                ConfigValue::Int(10_001),
                "from 0 to 10000",
            ),
            (
                HOST_SAMPLING_HZ,
                ConfigValue::Str("99".into()),
                "from 0 to 10000",
            ),
            (
                HOST_SAMPLING_BACKEND,
                ConfigValue::Str("ptrace".into()),
                "one of auto, perf, timer",
            ),
        ] {
            let err = ProfileOptions::default()
                .advanced(key, value.clone())
                .validate()
                .expect_err(key);
            let msg = err.to_string();
            assert!(
                msg.contains(key) && msg.contains(says),
                "{key} = {value:?}: {msg}"
            );
        }
    }

    #[test]
    fn defaults_are_valid() {
        ProfileOptions::default().validate().expect("valid");
    }

    #[test]
    fn the_xplane_limit_is_one_xprof_can_read() {
        const { assert!(DEFAULT_MAX_XPLANE_BYTES < XPROF_MAX_BYTES) };
        for bytes in [MIN_XPLANE_BYTES, XPROF_MAX_BYTES] {
            let options = ProfileOptions::default().max_xplane_bytes(bytes);
            options.validate().expect("in range");
        }
        for bytes in [0, MIN_XPLANE_BYTES - 1, XPROF_MAX_BYTES + 1] {
            let err = ProfileOptions::default()
                .max_xplane_bytes(bytes)
                .validate()
                .expect_err("out of range");
            assert!(err.to_string().contains("max_xplane_bytes"), "{err}");
        }
    }

    #[test]
    fn unknown_key_is_named_with_the_valid_ones() {
        let err = ProfileOptions::default()
            .advanced("gpu_max_activty_api_events", 5)
            .validate()
            .expect_err("typo must be rejected");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        let msg = err.to_string();
        assert!(msg.contains("\"gpu_max_activty_api_events\""), "{msg}");
        assert!(msg.contains("gpu_max_activity_api_events"), "{msg}");
        assert!(msg.contains("gpu_enable_nvtx_tracking"), "{msg}");
    }

    #[test]
    fn wrong_type_is_named() {
        let err = ProfileOptions::default()
            .advanced("gpu_enable_nvtx_tracking", "yes")
            .validate()
            .expect_err("string for a bool");
        let msg = err.to_string();
        assert!(
            msg.contains("gpu_enable_nvtx_tracking") && msg.contains("a bool"),
            "{msg}"
        );
        ProfileOptions::default()
            .advanced("gpu_trace_all_api_calls", true)
            .validate()
            .expect("a bool");
        let err = ProfileOptions::default()
            .advanced("gpu_trace_all_api_calls", 1)
            .validate()
            .expect_err("an int for a bool");
        assert!(
            err.to_string().contains("gpu_trace_all_api_calls")
                && err.to_string().contains("a bool"),
            "{err}"
        );
        // -1 is TSL's "no limit"; below that is an error naming the accepted values.
        ProfileOptions::default()
            .advanced("gpu_max_activity_api_events", -1)
            .validate()
            .expect("-1: no limit");
        let err = ProfileOptions::default()
            .advanced("gpu_max_annotation_strings", -2)
            .validate()
            .expect_err("negative cap");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("-1 for no limit"), "{err}");
    }

    #[test]
    fn a_wrong_value_is_said_in_the_words_it_was_given() {
        let said = |key: &str, value: ConfigValue| {
            ProfileOptions::default()
                .advanced(key, value)
                .validate()
                .expect_err("refused")
                .to_string()
        };
        let cap = "advanced_configuration key \"gpu_max_activity_api_events\" takes a \
                   non-negative integer, or -1 for no limit: ";
        for (value, why) in [
            (
                ConfigValue::Str("99999999999999999999".into()),
                "99999999999999999999 is too large for a 64-bit integer",
            ),
            (
                ConfigValue::Str("-99999999999999999999".into()),
                "-99999999999999999999 is too small for a 64-bit integer",
            ),
            (ConfigValue::Int(-2), "-2 is negative and not -1"),
            (
                ConfigValue::Str("lots".into()),
                "\"lots\" is not an integer",
            ),
            (ConfigValue::Bool(true), "\"true\" is not an integer"),
        ] {
            let value = match value {
                // A bool spelled as a string, as a client that types nothing sends it.
                ConfigValue::Bool(b) => ConfigValue::Str(b.to_string()),
                v => v,
            };
            assert_eq!(
                said("gpu_max_activity_api_events", value),
                format!("{cap}{why}")
            );
        }
        assert!(
            said("gpu_enable_nvtx_tracking", ConfigValue::Int(1)).ends_with(": 1 is an integer")
        );
        let msg = said("gpu_pm_sample_counters", ConfigValue::Str("a b".into()));
        assert!(msg.ends_with(": \"a b\" is not such a list"), "{msg}");
        // Never Rust's Debug form of the value.
        for msg in [
            said("gpu_max_activity_api_events", ConfigValue::Int(-2)),
            said("gpu_max_activity_api_events", ConfigValue::Str("x".into())),
        ] {
            assert!(!msg.contains("Int(") && !msg.contains("Str("), "{msg}");
        }
    }

    #[test]
    fn export_formats_parse_and_name_the_unknown() {
        assert_eq!(
            ExportFormat::parse_list("xplane, perfetto,chrome,chrome.gz,perfetto").expect("ok"),
            [
                ExportFormat::XPlane,
                ExportFormat::Perfetto,
                ExportFormat::ChromeJson,
                ExportFormat::ChromeJsonGz
            ]
        );
        let err = ExportFormat::parse_list("perfetto,svg").expect_err("svg");
        assert!(err.to_string().contains("\"svg\""), "{err}");
        assert!(err.to_string().contains("chrome.gz"), "{err}");
        for (format, name) in ExportFormat::ALL {
            assert_eq!(format.to_string(), name);
        }
    }

    #[test]
    fn levels_are_range_checked() {
        for (opts, name) in [
            (
                ProfileOptions::default().host_tracer_level(4),
                "host_tracer_level",
            ),
            (
                ProfileOptions::default().device_tracer_level(2),
                "device_tracer_level",
            ),
            (ProfileOptions::default().max_events(0), "max_events"),
        ] {
            let err = opts.validate().expect_err("out of range");
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}
