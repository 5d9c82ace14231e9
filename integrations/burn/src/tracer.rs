//! The tracer a prof session starts: installs the launch observer while the session
//! records, reads the measurements back when it stops, and adds the launches to the
//! profile.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cubecl_runtime::logging::{LaunchObservation, LaunchObserver};
use profiler_core::tracer::{self, SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::ProfileOptions;

use crate::convert::{self, Issued, Length};
use crate::device::{self, DeviceName};
use crate::log::{self, Measurement};
use crate::observer::Observer;
use crate::timing::{self, InstantClock};

/// The option key that turns kernel timing on (see [`crate`]'s documentation).
pub const KERNEL_TIMING: &str = "cubecl_kernel_timing";

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);
/// The observer installed now, for [`observer`].
static INSTALLED: Mutex<Option<Arc<Observer>>> = Mutex::new(None);

/// The launch observer of the session recording now (what cubecl calls), `None`
/// outside a session: for tests that play cubecl's part where no GPU runtime runs.
pub fn observer() -> Option<Arc<dyn LaunchObserver>> {
    let installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    installed.clone().map(|o| o as Arc<dyn LaunchObserver>)
}

/// cubecl's kernels in one session.
pub struct BurnTracer {
    timing: bool,
    device: DeviceName,
    generation: u64,
    observation: Option<LaunchObservation>,
    /// Taken when the session stopped, measurements read.
    issued: Vec<Issued>,
    /// When they were read, on the tracer clock.
    read_at: u64,
    /// Measurements that came back empty.
    unmeasured: u64,
}

/// Makes the tracer for a session that asks for device tracing
/// (`device_tracer_level >= 1`, the default).
pub fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    (options.device_tracer_level >= 1).then(|| {
        Box::new(BurnTracer {
            timing: options.advanced_bool(KERNEL_TIMING).unwrap_or(false),
            device: device::current(),
            generation: 0,
            observation: None,
            issued: Vec::new(),
            read_at: 0,
            unmeasured: 0,
        }) as Box<dyn Tracer>
    })
}

impl Tracer for BurnTracer {
    fn start(&mut self) -> Result<(), profiler_core::Error> {
        self.generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        tracer::keep_scope_stack(true);
        let observer = Arc::new(Observer {
            generation: self.generation,
            timing: self.timing,
            hand_off: self.device.is_cuda(),
        });
        *INSTALLED.lock().unwrap_or_else(PoisonError::into_inner) = Some(observer.clone());
        self.observation = Some(LaunchObservation::new(observer));
        Ok(())
    }

    fn stop(&mut self) -> Result<(), profiler_core::Error> {
        // Dropping the guard puts back whatever observer was installed before.
        self.observation = None;
        *INSTALLED.lock().unwrap_or_else(PoisonError::into_inner) = None;
        tracer::keep_scope_stack(false);
        let clock = InstantClock::now();
        for thread in log::take(self.generation) {
            let mut windows = Vec::with_capacity(thread.measurements.len());
            let mut lengths = Vec::new();
            for (index, measurement) in thread.measurements {
                match measurement {
                    Measurement::Unread(profile) => match timing::read(profile, &clock) {
                        Some(w) => windows.push((index, w)),
                        None => self.unmeasured += 1,
                    },
                    Measurement::Length {
                        duration,
                        method,
                        read,
                    } => lengths.push((
                        index,
                        Length {
                            ns: duration.as_nanos() as u64,
                            method,
                            read,
                        },
                    )),
                }
            }
            self.issued.push(Issued {
                thread: thread.thread,
                launches: thread.launches,
                windows,
                lengths,
            });
        }
        self.read_at = tracer::clock_ns();
        Ok(())
    }

    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        let issued = std::mem::take(&mut self.issued);
        let done = convert::add_to_space(&issued, &self.device, space, session, self.read_at);
        if self.unmeasured > 0 {
            space.warnings.push(format!(
                "prof: {} of cubecl's kernel timings carried no measurement (the device wrote no timestamps for them); those kernels are on the host lines only",
                self.unmeasured
            ));
        }
        if done.host_timed > 0 {
            space.warnings.push(format!(
                "prof: {} of {} kernels on {} were timed by the host's clock around a blocking submit (no device timestamps: the runtime has none, or their budget was spent), which counts more than the kernel",
                done.host_timed,
                done.kernels,
                self.device.runtime
            ));
        }
        let unattributed = done.launches - done.launches.min(attributed_launches(&issued));
        if unattributed > 0 && done.launches > 0 {
            space.warnings.push(format!(
                "prof: {unattributed} of {} cubecl kernels were issued where no annotation was open (burn's fusion launches from a thread of its own, with its own fusion feature on): they are on a `cubecl launches` line, attributed to nothing",
                done.launches
            ));
        }
    }
}

/// Launches made inside an annotation.
fn attributed_launches(issued: &[Issued]) -> u64 {
    issued
        .iter()
        .flat_map(|t| &t.launches)
        .filter(|l| l.scope.is_some())
        .count() as u64
}
