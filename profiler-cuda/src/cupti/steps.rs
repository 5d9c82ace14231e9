//! The steps of the tracer that touch CUDA and CUPTI, behind a trait ([`Cupti`]), so
//! that their order at start and stop, and what a refusal leaves behind, are tested
//! with a fake where there is no GPU.

use super::pm::PmSettings;
use crate::activity::{DeviceInfo, PmSample};
use crate::calls::ApiDomain;

/// Which activity records to ask CUPTI for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Records {
    /// Kernels, copies, memsets: the GPU trace itself.
    Device,
    /// Device memory allocations and releases.
    Memory,
    /// NVTX ranges and marks.
    Nvtx,
    /// Whole-graph launches.
    GraphTrace,
}

/// The steps of the tracer that touch CUDA and CUPTI.
pub(crate) trait Cupti: Send {
    /// Why the libraries cannot be used, if they cannot.
    fn missing_libraries(&self) -> Option<String>;
    /// Initialises the driver and describes every device.
    fn devices(&mut self) -> Result<Vec<DeviceInfo>, String>;
    /// Points CUPTI's clock, buffers and thread ids at prof's.
    fn prepare(&mut self) -> Result<(), String>;
    /// Subscribes the callback to the API calls to record (every call with `all`).
    fn subscribe(&mut self, all: bool) -> Result<(), String>;
    /// Ends the subscription, if any.
    fn unsubscribe(&mut self);
    /// Turns activity records on; a warning for optional ones that CUPTI refused is
    /// the error's text.
    fn enable(&mut self, records: Records) -> Result<(), String>;
    /// Turns every kind of activity record off.
    fn disable_all(&mut self);
    /// Delivers the records CUPTI still holds.
    fn flush(&mut self) -> Result<(), String>;
    /// Delivers the finished records CUPTI holds, while tracing goes on (for a view of
    /// the running process), without forcing out the buffers still being written.
    fn deliver(&mut self) -> Result<(), String>;
    /// CUPTI's name of an API function.
    fn api_name(&self, domain: ApiDomain, cbid: u32) -> String;
    /// Starts PM sampling on `devices`; warnings for what failed.
    fn start_pm(&mut self, settings: &PmSettings, devices: &[u32]) -> Vec<String>;
    /// Stops PM sampling; the samples, and warnings for what went wrong.
    fn stop_pm(&mut self) -> (Vec<PmSample>, Vec<String>);
}
