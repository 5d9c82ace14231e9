//! The messages of TSL's `profiler_service.proto` and `profiler_options.proto`
//! (package `tensorflow`), written from their public field numbers.
//!
//! prost skips fields it does not know, so clients newer or older than these
//! definitions interoperate; the XSpace travels as `profiler_core`'s own model.
#![allow(missing_docs)]

use std::collections::HashMap;

pub use profiler_core::xspace::XSpace;

/// `tensorflow.ProfileRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfileRequest {
    /// Top-level duration; real servers read only `opts.duration_ms`.
    #[prost(uint64, tag = "1")]
    pub duration_ms: u64,
    #[prost(uint64, tag = "2")]
    pub max_events: u64,
    #[prost(string, repeated, tag = "3")]
    pub tools: Vec<String>,
    #[prost(message, optional, tag = "4")]
    pub opts: Option<ProfileOptions>,
    #[prost(string, tag = "5")]
    pub repository_root: String,
    #[prost(string, tag = "6")]
    pub session_id: String,
    #[prost(string, tag = "7")]
    pub host_name: String,
    #[prost(map = "string, message", tag = "8")]
    pub tool_options: HashMap<String, ToolRequestOptions>,
    /// Return the XSpace in the response instead of writing a file.
    #[prost(bool, tag = "9")]
    pub emit_xspace: bool,
}

/// `tensorflow.ToolRequestOptions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ToolRequestOptions {
    #[prost(string, tag = "2")]
    pub output_formats: String,
    #[prost(bool, tag = "3")]
    pub save_to_repo: bool,
}

/// `tensorflow.ProfileOptions` (TSL's wire options, not prof's `ProfileOptions`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfileOptions {
    #[prost(bool, tag = "1")]
    pub include_dataset_ops: bool,
    #[prost(uint32, tag = "2")]
    pub host_tracer_level: u32,
    #[prost(uint32, tag = "3")]
    pub device_tracer_level: u32,
    #[prost(uint32, tag = "4")]
    pub python_tracer_level: u32,
    /// 0: the server's defaults apply (levels, start time); 1: these options do.
    #[prost(uint32, tag = "5")]
    pub version: u32,
    #[prost(int32, tag = "6")]
    pub device_type: i32,
    #[prost(bool, tag = "7")]
    pub enable_hlo_proto: bool,
    /// When the capture starts, in ns since the Unix epoch (the client's delay).
    #[prost(uint64, tag = "8")]
    pub start_timestamp_ns: u64,
    #[prost(uint64, tag = "9")]
    pub duration_ms: u64,
    #[prost(string, tag = "10")]
    pub repository_path: String,
    #[prost(message, optional, tag = "11")]
    pub trace_options: Option<TraceOptions>,
    #[prost(map = "string, message", tag = "12")]
    pub advanced_configuration: HashMap<String, AdvancedConfigValue>,
    #[prost(bool, tag = "13")]
    pub raise_error_on_start_failure: bool,
    #[prost(string, tag = "14")]
    pub session_id: String,
    #[prost(string, tag = "15")]
    pub override_hostname: String,
}

/// `tensorflow.ProfileOptions.TraceOptions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TraceOptions {
    #[prost(uint64, tag = "1")]
    pub host_traceme_filter_mask: u64,
}

/// `tensorflow.ProfileOptions.AdvancedConfigValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AdvancedConfigValue {
    #[prost(oneof = "advanced_config_value::Value", tags = "1, 2, 3")]
    pub value: Option<advanced_config_value::Value>,
}

/// The oneof of [`AdvancedConfigValue`].
pub mod advanced_config_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(string, tag = "1")]
        StringValue(String),
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        #[prost(int64, tag = "3")]
        Int64Value(i64),
    }
}

/// `tensorflow.ProfileToolData`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfileToolData {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub data: Vec<u8>,
}

/// `tensorflow.ProfileResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfileResponse {
    #[prost(message, repeated, tag = "6")]
    pub tool_data: Vec<ProfileToolData>,
    /// True when nothing was recorded.
    #[prost(bool, tag = "7")]
    pub empty_trace: bool,
    /// The capture, when the request asked for `emit_xspace`.
    #[prost(message, optional, tag = "8")]
    pub xspace: Option<XSpace>,
}

/// `tensorflow.TerminateRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TerminateRequest {
    #[prost(string, tag = "1")]
    pub session_id: String,
}

/// `tensorflow.TerminateResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TerminateResponse {}

/// `tensorflow.MonitorRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MonitorRequest {
    #[prost(uint64, tag = "1")]
    pub duration_ms: u64,
    #[prost(int32, tag = "2")]
    pub monitoring_level: i32,
    #[prost(bool, tag = "3")]
    pub timestamp: bool,
}

/// `tensorflow.MonitorResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MonitorResponse {
    /// The text TensorFlow's client prints (and consumers such as wandb parse).
    #[prost(string, tag = "1")]
    pub data: String,
    /// The same numbers, as numbers.
    #[prost(message, optional, tag = "10")]
    pub monitor_result: Option<ProfilerServiceMonitorResult>,
}

/// `tensorflow.ProfilerServiceMonitorResult` (TSL's
/// `profiler_service_monitor_result.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfilerServiceMonitorResult {
    #[prost(
        enumeration = "profiler_service_monitor_result::ResponseType",
        tag = "1"
    )]
    pub response_type: i32,
    #[prost(double, tag = "2")]
    pub device_idle_time_percent: f64,
    #[prost(double, tag = "3")]
    pub matrix_unit_utilization_percent: f64,
    #[prost(double, tag = "4")]
    pub step_time_ms_avg: f64,
    #[prost(double, tag = "5")]
    pub step_time_ms_min: f64,
    #[prost(double, tag = "6")]
    pub step_time_ms_max: f64,
    #[prost(double, tag = "7")]
    pub infeed_percent_avg: f64,
    #[prost(double, tag = "8")]
    pub infeed_percent_min: f64,
    #[prost(double, tag = "9")]
    pub infeed_percent_max: f64,
}

/// The enum of [`ProfilerServiceMonitorResult`].
pub mod profiler_service_monitor_result {
    /// Which of the result's fields are filled.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResponseType {
        EmptyResult = 0,
        UtilOnly = 1,
        UtilIdle = 2,
        UtilIdleStep = 3,
    }
}

/// `tensorflow.ContinuousProfilingResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContinuousProfilingResponse {}

/// `tensorflow.StopContinuousProfilingRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StopContinuousProfilingRequest {}

/// `tensorflow.StopContinuousProfilingResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StopContinuousProfilingResponse {}

/// `tensorflow.GetSnapshotRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetSnapshotRequest {
    #[prost(string, tag = "1")]
    pub snapshot_session_id: String,
}
