//! cubecl's launch observer: told of every kernel on the thread that issues it.
//!
//! cubecl calls [`LaunchObserver::launched`] on the issuing thread, before the launch
//! reaches its device thread: the last point where the annotations the user opened
//! around the work are still open. The observer notes the kernel, the time and the
//! innermost annotation ([`profiler_core::tracer::innermost_scope`]), and, where a
//! device tracer launches on another thread (CUDA through CUPTI), hands the annotation
//! off to it ([`profiler_core::tracer::hand_off`]).
//!
//! With timing asked for (`cubecl_kernel_timing`), cubecl brackets each launch with a
//! device measurement (wgpu's timestamp queries, CUDA and HIP events) and hands it over
//! unread ([`TimingRequest::Deferred`]): the observer keeps it, and it is read once the
//! session stops, so the kernels still run back to back.

use cubecl_runtime::logging::{
    Duration, LaunchObserver, ProfileDuration, TimingMethod, TimingRequest,
};
use profiler_core::{clock, tracer};

use crate::log::{self, Launch, Measurement};

/// The observer of one session.
#[derive(Debug)]
pub(crate) struct Observer {
    /// The session's generation of launch logs.
    pub(crate) generation: u64,
    /// Whether each launch is timed on the device.
    pub(crate) timing: bool,
    /// Whether the annotation of each launch is handed off to the launching thread
    /// (a CUDA device, traced by CUPTI).
    pub(crate) hand_off: bool,
}

impl LaunchObserver for Observer {
    fn launched(&self, kernel: &'static str) {
        // A dry run compiles and drops its launches: no kernel runs, and a hand-off
        // for it would be taken by the next real launch.
        if cubecl_runtime::dry_run::dry_run() {
            return;
        }
        let launch = Launch {
            kernel,
            issued: clock::now(),
            returned: 0,
            scope: tracer::innermost_scope(),
        };
        if self.hand_off {
            tracer::hand_off();
        }
        log::with_mine(self.generation, |log| log.launches.push(launch));
    }

    fn timing(&self) -> TimingRequest {
        if self.timing {
            TimingRequest::Deferred
        } else {
            TimingRequest::None
        }
    }

    fn profiled(&self, kernel: &'static str, profile: ProfileDuration) {
        let returned = clock::now();
        self.measured(kernel, returned, Measurement::Unread(profile));
    }

    fn timed(&self, kernel: &'static str, duration: Duration, method: TimingMethod) {
        let read = clock::now();
        self.measured(
            kernel,
            read,
            Measurement::Length {
                duration,
                method,
                read,
            },
        );
    }
}

impl Observer {
    /// A measurement of `kernel`, arriving on the thread that issued it right after its
    /// launch: it belongs to this thread's last launch.
    fn measured(&self, kernel: &'static str, returned: u64, measurement: Measurement) {
        log::with_mine(self.generation, |log| {
            let Some(index) = log.launches.len().checked_sub(1) else {
                return;
            };
            let last = &mut log.launches[index];
            // Names are `type_name`s: one string per kernel type, compared by content.
            if last.kernel != kernel || last.returned != 0 {
                return;
            }
            last.returned = returned;
            log.measurements.push((index, measurement));
        });
    }
}
