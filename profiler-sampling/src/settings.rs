//! What a session asks of the sampler, read from its `advanced_configuration`
//! (validated by `ProfileOptions::validate` before any session starts).

use profiler_core::options::{HOST_SAMPLING_BACKEND, HOST_SAMPLING_HZ};
use profiler_core::ProfileOptions;

/// Which trigger to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// `perf_event_open`, else the timers.
    Auto,
    /// `perf_event_open` only.
    Perf,
    /// The timers only.
    Timer,
}

/// A session's sampling settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Samples per second of each thread's CPU time.
    pub(crate) hz: u32,
    pub(crate) backend: Choice,
}

impl Settings {
    /// The settings of a session with these options; `None` when it samples nothing
    /// (`host_sampling_hz` absent or 0).
    pub(crate) fn of(options: &ProfileOptions) -> Option<Settings> {
        let hz = options.advanced_int(HOST_SAMPLING_HZ).unwrap_or(0);
        let hz = u32::try_from(hz).ok().filter(|&hz| hz > 0)?;
        let backend = match options.advanced_str(HOST_SAMPLING_BACKEND) {
            Some("perf") => Choice::Perf,
            Some("timer") => Choice::Timer,
            _ => Choice::Auto,
        };
        Some(Settings { hz, backend })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_unless_a_rate_is_asked_for() {
        assert_eq!(Settings::of(&ProfileOptions::default()), None);
        assert_eq!(
            Settings::of(&ProfileOptions::default().host_sampling_hz(0)),
            None
        );
        assert_eq!(
            Settings::of(
                &ProfileOptions::default()
                    .host_sampling_hz(99)
                    .advanced(HOST_SAMPLING_BACKEND, "timer")
            ),
            Some(Settings {
                hz: 99,
                backend: Choice::Timer
            })
        );
        assert_eq!(
            Settings::of(&ProfileOptions::default().host_sampling_hz(1000)).map(|s| s.backend),
            Some(Choice::Auto)
        );
    }
}
