//! `ProfileOptions`: what a session records, validated before it starts.
//!
//! The fields and their defaults are those of TSL's `ProfileOptions` as JAX exposes it
//! (`jax.profiler.ProfileOptions`), plus a cap on recorded events.

use std::collections::BTreeMap;

use crate::error::{Error, ErrorKind, Result};

mod config;
mod format;
#[cfg(test)]
mod tests;

pub(crate) use config::is_device_key;
pub use config::{
    ConfigKey, ConfigKind, ConfigValue, CONFIG_KEYS, HOST_SAMPLING_BACKEND, HOST_SAMPLING_HZ,
    WRITE_ON_SIGNALS, WRITE_ON_SIGNALS_BUDGET_MS,
};
pub use format::ExportFormat;

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

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}
