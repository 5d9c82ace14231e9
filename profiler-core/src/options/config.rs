//! `advanced_configuration`: its values, the kind of value each key takes, and every
//! accepted key ([`CONFIG_KEYS`]), named as JAX and TSL name them.

use std::fmt;

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

/// The `advanced_configuration` key asking for [`ProfileOptions::write_on_signals`](crate::ProfileOptions::write_on_signals).
pub const WRITE_ON_SIGNALS: &str = "write_on_signals";

/// The `advanced_configuration` key bounding how long a signal waits for the profile
/// to be written ([`ProfileOptions::signal_budget`](crate::ProfileOptions::signal_budget)).
pub const WRITE_ON_SIGNALS_BUDGET_MS: &str = "write_on_signals_budget_ms";

/// The `advanced_configuration` key of [`ProfileOptions::host_sampling_hz`](crate::ProfileOptions::host_sampling_hz): samples
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
