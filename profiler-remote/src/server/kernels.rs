//! The watched process's own kernel time on each GPU, for the live view's frames: the
//! differences between two reads of its device tracer's counts
//! ([`tracer::device_time`], CUPTI's kernel records), so each frame shows what ran
//! since the one before.
//!
//! Beside NVML's utilisation ([`super::gpus`]) it says something else: only this
//! process's kernels, and how long they ran, not whether any kernel of any process ran
//! during NVML's sample. It needs the device tracer to run: a capture or a session
//! tracing the GPU, or the live view's own recorder when a watcher asks for kernels
//! (`WatchRequest.trace_kernels`, `prof-top --kernels`), since CUPTI costs the program
//! about a microsecond a launch while it traces.

use std::collections::HashMap;
use std::time::Instant;

use profiler_core::tracer::{self, DeviceTime};

use crate::live::proto as wire;

/// Reads the device tracer's counts and keeps the last read, to difference the next.
#[derive(Default)]
pub(super) struct KernelMeter {
    last: Option<(Instant, HashMap<u32, DeviceTime>)>,
}

impl KernelMeter {
    /// Takes a first read now if there is none to difference against, so that the
    /// next [`read`](Self::read) has an interval: called when the tracer may just have
    /// started, before waiting for the next frame.
    pub(super) fn prime(&mut self) {
        if self.last.is_none() {
            if let Some(now) = tracer::device_time() {
                self.last = Some((Instant::now(), by_device(now)));
            }
        }
    }

    /// Each device's kernels since the last read, or why there are none to show.
    /// `asked`: whether a watcher asked for kernels, for the reason said without them.
    pub(super) fn read(&mut self, asked: bool) -> Result<Vec<wire::DeviceKernels>, String> {
        self.read_from(tracer::device_time(), Instant::now(), asked)
    }

    fn read_from(
        &mut self,
        now: Option<Vec<DeviceTime>>,
        at: Instant,
        asked: bool,
    ) -> Result<Vec<wire::DeviceKernels>, String> {
        let Some(now) = now else {
            self.last = None;
            return Err(if asked {
                // Short enough for prof-top's line at 80 columns.
                "no GPU tracer runs: no GPU or profiler-cuda, or CUPTI failed (its log)".to_owned()
            } else {
                "off: prof-top --kernels traces them (CUPTI: ~1 µs a launch)".to_owned()
            });
        };
        let now = by_device(now);
        let Some((then, before)) = self.last.replace((at, now.clone())) else {
            return Err("kernel time shows from the next frame".to_owned());
        };
        let interval_ns = at.duration_since(then).as_nanos() as u64;
        let mut out: Vec<wire::DeviceKernels> = now
            .into_values()
            .map(|d| {
                let (ns, kernels) = before
                    .get(&d.device)
                    .map_or((0, 0), |b| (b.kernel_ns, b.kernels));
                wire::DeviceKernels {
                    device: d.device,
                    name: d.name,
                    kernel_ns: d.kernel_ns.saturating_sub(ns),
                    kernels: d.kernels.saturating_sub(kernels),
                    interval_ns,
                }
            })
            .collect();
        out.sort_by_key(|d| d.device);
        Ok(out)
    }
}

fn by_device(devices: Vec<DeviceTime>) -> HashMap<u32, DeviceTime> {
    devices.into_iter().map(|d| (d.device, d)).collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn device(device: u32, kernel_ns: u64, kernels: u64) -> DeviceTime {
        DeviceTime {
            device,
            name: format!("GPU {device}"),
            kernel_ns,
            kernels,
        }
    }

    #[test]
    fn each_read_shows_the_kernels_since_the_one_before() {
        let mut meter = KernelMeter::default();
        let t0 = Instant::now();
        let first = meter.read_from(Some(vec![device(1, 500, 5), device(0, 100, 1)]), t0, true);
        assert_eq!(
            first,
            Err("kernel time shows from the next frame".to_owned())
        );
        let t1 = t0 + Duration::from_millis(1000);
        let second = meter
            .read_from(
                Some(vec![device(0, 400_100, 31), device(1, 500, 5)]),
                t1,
                true,
            )
            .expect("a second read");
        let seen: Vec<_> = second
            .iter()
            .map(|d| (d.device, d.kernel_ns, d.kernels, d.interval_ns))
            .collect();
        assert_eq!(
            seen,
            [(0, 400_000, 30, 1_000_000_000), (1, 0, 0, 1_000_000_000)]
        );
        assert_eq!(second[0].name, "GPU 0");
    }

    #[test]
    fn without_a_tracer_the_reason_depends_on_whether_kernels_were_asked_for() {
        let mut meter = KernelMeter::default();
        let off = meter
            .read_from(None, Instant::now(), false)
            .expect_err("off");
        assert!(off.contains("--kernels"), "{off}");
        let none = meter
            .read_from(None, Instant::now(), true)
            .expect_err("none");
        assert!(none.contains("no GPU tracer runs"), "{none}");
        // A tracer that stops and starts again is measured afresh.
        let t0 = Instant::now();
        assert!(meter
            .read_from(Some(vec![device(0, 9, 1)]), t0, true)
            .is_err());
        assert!(meter.read_from(None, t0, true).is_err());
        assert!(meter
            .read_from(Some(vec![device(0, 9, 1)]), t0, true)
            .is_err());
    }
}
