//! The live CUPTI tracer: what it asks of CUPTI when a session starts and stops, and
//! what it hands the conversion at collection.
//!
//! - API calls come through CUPTI's callback API (`callbacks`): one subscriber, told
//!   of the functions that matter (every function with `gpu_trace_all_api_calls`);
//!   the callback records each call in its thread's log with the annotation open on
//!   the thread, read from the stack the core keeps (`tracer::innermost_scope`). No
//!   CUPTI call is made per annotation.
//! - The device's work comes as activity records (`buffers`): kernels, copies,
//!   memsets, and as asked, memory, NVTX markers and whole-graph launches (`enable`).
//! - PM sampling runs beside them when metrics are asked for (`pm`).
//!
//! cudarc panics on the first use of a symbol whose library is missing, so the tracer
//! checks for libcuda and libcupti before anything else and turns their absence into
//! one warning. The steps that touch CUDA sit behind [`Cupti`], so the order of start
//! and stop, and what a refusal leaves behind, are tested without a GPU.

#![allow(unsafe_code)]

mod buffers;
pub(crate) mod callbacks;
mod enable;
mod live;
mod pm;
mod settings;
mod steps;
#[cfg(test)]
mod tests;

use profiler_core::tracer::{self, DeviceTime, SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind, ProfileOptions};

use crate::activity::{DeviceInfo, PmSample};
use crate::calls;
use crate::graphs::{self, GraphNote};

pub use live::missing_libraries;
use live::Live;
pub(crate) use settings::Settings;
pub(crate) use steps::{Cupti, Records};

/// Makes the CUPTI tracer for sessions with `device_tracer_level >= 1`.
pub fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    if options.device_tracer_level == 0 {
        return None;
    }
    Some(Box::new(CuptiTracer::new(
        Settings::of(options),
        Box::new(Live::default()),
    )))
}

/// The CUPTI device tracer of one session.
pub struct CuptiTracer {
    settings: Settings,
    cupti: Box<dyn Cupti>,
    devices: Vec<DeviceInfo>,
    running: bool,
    /// The session's generation of API call logs.
    generation: u64,
    /// Warnings of the start, reported at collection.
    warnings: Vec<String>,
    graph_notes: Vec<GraphNote>,
    pm_samples: Vec<PmSample>,
    /// Hand-offs of issuing threads' annotations dropped because their ring was full.
    hand_offs_dropped: u64,
}

impl CuptiTracer {
    pub(crate) fn new(settings: Settings, cupti: Box<dyn Cupti>) -> CuptiTracer {
        CuptiTracer {
            settings,
            cupti,
            devices: Vec::new(),
            running: false,
            generation: 0,
            warnings: Vec::new(),
            graph_notes: Vec::new(),
            pm_samples: Vec::new(),
            hand_offs_dropped: 0,
        }
    }

    /// Undoes a partial start.
    fn abandon(&mut self, why: String) -> Result<(), Error> {
        self.cupti.unsubscribe();
        self.cupti.disable_all();
        Err(unavailable(why))
    }

    /// Everything [`Tracer::start`] does, its failures said as the warnings the
    /// profile will carry.
    fn try_start(&mut self) -> Result<(), String> {
        if let Some(why) = self.cupti.missing_libraries() {
            return Err(why);
        }
        self.devices = self.cupti.devices()?;
        self.cupti.prepare()?;
        // Nothing is enabled yet: a refusal (another subscriber) leaves nothing behind.
        self.cupti.subscribe(self.settings.all_api_calls)
    }
}

/// A GPU that cannot be traced (libraries missing, CUPTI refusing) is, to the session,
/// a tracer that is not available; the host records on.
fn unavailable(why: String) -> Error {
    Error::new(ErrorKind::Unavailable, why)
}

impl Tracer for CuptiTracer {
    fn start(&mut self) -> Result<(), Error> {
        self.try_start().map_err(unavailable)?;
        buffers::begin(self.settings.max_activity, self.settings.max_api);
        if let Err(why) = self.cupti.enable(Records::Device) {
            return self.abandon(why);
        }
        self.warnings.clear();
        // Optional records: the rest of the trace is whole without them.
        self.warnings
            .extend(self.cupti.enable(Records::Memory).err());
        if self.settings.nvtx {
            self.warnings.extend(self.cupti.enable(Records::Nvtx).err());
        }
        if self.settings.graph_trace {
            self.warnings
                .extend(self.cupti.enable(Records::GraphTrace).err());
        }
        let profiled: Vec<u32> = self
            .devices
            .iter()
            .map(|d| d.ordinal)
            .filter(|&o| self.settings.max_devices.is_none_or(|n| o < n))
            .collect();
        let pm = self.cupti.start_pm(&self.settings.pm, &profiled);
        self.warnings.extend(pm);
        for why in &self.warnings {
            tracing::warn!(target: profiler_core::log::TARGET, "{why}");
        }
        self.generation = calls::begin_session(self.settings.max_api);
        graphs::begin_session();
        tracer::keep_scope_stack(true);
        // Kernels issued on one thread and launched on another (cubecl) carry the
        // issuing thread's annotation.
        tracer::accept_hand_offs(true);
        self.running = true;
        Ok(())
    }

    fn stop(&mut self) -> Result<(), Error> {
        if !self.running {
            return Ok(());
        }
        tracer::keep_scope_stack(false);
        self.hand_offs_dropped = tracer::hand_offs_dropped();
        tracer::accept_hand_offs(false);
        calls::end_session();
        self.graph_notes = graphs::end_session();
        self.cupti.unsubscribe();
        let (samples, warnings) = self.cupti.stop_pm();
        self.pm_samples = samples;
        self.warnings.extend(warnings);
        self.cupti.disable_all();
        self.running = false;
        // What CUPTI delivered is kept; the profile says it may lack the rest.
        self.cupti
            .flush()
            .map_err(|why| Error::new(ErrorKind::Internal, why))
    }

    fn device_time(&mut self) -> Option<Vec<DeviceTime>> {
        if !self.running {
            return None;
        }
        // A failed delivery leaves the count where the last one left it.
        let _ = self.cupti.deliver();
        let mut counted = buffers::kernel_time();
        let mut out: Vec<DeviceTime> = self
            .devices
            .iter()
            .map(|d| {
                let (kernel_ns, kernels) = counted.remove(&d.ordinal).unwrap_or_default();
                DeviceTime {
                    device: d.ordinal,
                    name: d.name.clone(),
                    kernel_ns,
                    kernels,
                }
            })
            .collect();
        // A device CUPTI reported that the start did not list (none expected).
        out.extend(
            counted
                .into_iter()
                .map(|(device, (kernel_ns, kernels))| DeviceTime {
                    device,
                    name: String::new(),
                    kernel_ns,
                    kernels,
                }),
        );
        Some(out)
    }

    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        let mut trace = buffers::take().map(|c| c.trace).unwrap_or_default();
        let threads = calls::collect(self.generation);
        trace.dropped_api += threads.iter().map(|t| t.dropped).sum::<u64>();
        let cupti = &self.cupti;
        let (api, graph_launches) = calls::into_activities(
            threads,
            |d, cbid| cupti.api_name(d, cbid),
            |ticks| session.ticks_to_clock_ns(ticks),
        );
        trace.activities.extend(api);
        trace.graph_launches = graph_launches;
        trace.graph_notes = std::mem::take(&mut self.graph_notes);
        trace.devices = std::mem::take(&mut self.devices);
        trace.max_annotation_strings = Some(self.settings.max_annotation_strings);
        trace.all_api_calls = self.settings.all_api_calls;
        trace.dump_graph_node_mapping = self.settings.dump_graph_node_mapping;
        trace.max_devices = self.settings.max_devices;
        trace.pm_metrics = self.settings.pm.metrics.clone();
        trace.pm_samples = std::mem::take(&mut self.pm_samples);
        space.warnings.append(&mut self.warnings);
        if self.hand_offs_dropped > 0 {
            space.warnings.push(format!(
                "prof: {} kernels issued on one thread and launched on another (cubecl's device thread) found the hand-off ring full ({} waiting): the launches after them may carry the annotations of their neighbours",
                self.hand_offs_dropped,
                tracer::HAND_OFF_CAPACITY
            ));
        }
        crate::convert::add_to_space(&trace, space, &|ns| session.to_session_ns(ns));
    }
}
