//! The sampler as a tracer of the session (`profiler_core::tracer`): started just
//! before host recording starts, stopped just after, then asked to add its samples to
//! the session's XSpace. A sampler that cannot start, or fails, costs the session a
//! warning, never the session.

use profiler_core::tracer::{SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind};

use crate::settings::Settings;

/// One session's sampler.
pub(crate) struct SamplingTracer {
    settings: Settings,
    #[cfg(target_os = "linux")]
    running: Option<crate::collector::Collector>,
    #[cfg(target_os = "linux")]
    collected: Option<crate::collector::Collected>,
    /// How long the collector's stop took.
    #[cfg(target_os = "linux")]
    stopped_in: std::time::Duration,
    warnings: Vec<String>,
}

impl SamplingTracer {
    pub(crate) fn new(settings: Settings) -> SamplingTracer {
        SamplingTracer {
            settings,
            #[cfg(target_os = "linux")]
            running: None,
            #[cfg(target_os = "linux")]
            collected: None,
            #[cfg(target_os = "linux")]
            stopped_in: std::time::Duration::ZERO,
            warnings: Vec::new(),
        }
    }
}

#[cfg(target_os = "linux")]
impl Tracer for SamplingTracer {
    fn start(&mut self) -> Result<(), Error> {
        let started = crate::collector::start(&self.settings).map_err(unavailable)?;
        self.running = Some(started.collector);
        self.warnings = started.warnings;
        Ok(())
    }

    fn stop(&mut self) -> Result<(), Error> {
        let Some(running) = self.running.take() else {
            return Ok(());
        };
        let t0 = std::time::Instant::now();
        self.collected = Some(running.stop().map_err(unavailable)?);
        self.stopped_in = t0.elapsed();
        Ok(())
    }

    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        space.warnings.append(&mut self.warnings);
        let Some(collected) = self.collected.take() else {
            return;
        };
        let t0 = std::time::Instant::now();
        let threads = profiler_core::tracer::host_threads();
        let built = crate::profile::build(
            &collected.recorded,
            space,
            session,
            self.settings.hz,
            &threads,
            collected.cpu_ns,
        );
        space.warnings.extend(built.warnings);
        let samples = built.samples.times.len() as u64;
        space.planes.push(built.samples.to_plane());
        crate::cost::record(crate::cost::StopCost {
            samples,
            addresses: built.addresses as u64,
            stop: self.stopped_in,
            symbolize: built.symbolize,
            collect: t0.elapsed(),
        });
    }
}

#[cfg(not(target_os = "linux"))]
impl Tracer for SamplingTracer {
    fn start(&mut self) -> Result<(), Error> {
        let _ = self.settings;
        Err(unavailable(
            "prof: host_sampling_hz samples native stacks on Linux only; this session \
             records no stack samples"
                .into(),
        ))
    }

    fn stop(&mut self) -> Result<(), Error> {
        Ok(())
    }

    fn collect(&mut self, space: &mut XSpace, _session: &SessionClock) {
        space.warnings.append(&mut self.warnings);
    }
}

/// The sampler's failures as a tracer's: nothing to retry, the session goes on without
/// samples.
fn unavailable(why: String) -> Error {
    Error::new(ErrorKind::Unavailable, why)
}
