//! What a session's options ask of the CUPTI tracer: its caps, NVTX, graph and PM
//! settings, read from the `advanced_configuration` keys JAX names them by.

use profiler_core::ProfileOptions;

use super::pm::PmSettings;

/// Default caps, as JAX's defaults for the same keys.
pub(super) const DEFAULT_MAX_ACTIVITY: u64 = 2 << 20;
pub(super) const DEFAULT_MAX_API: u64 = 2 << 20;
pub(super) const DEFAULT_MAX_ANNOTATIONS: u64 = 1 << 20;
/// `gpu_pm_sample_interval_us` and `gpu_pm_sample_buffer_size_per_gpu_mb` defaults.
pub(super) const DEFAULT_PM_INTERVAL_US: u64 = 500;
pub(super) const DEFAULT_PM_BUFFER_MB: u64 = 64;

/// What a session's options ask of the tracer.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) max_activity: u64,
    pub(crate) max_api: u64,
    pub(crate) max_annotation_strings: u64,
    /// `gpu_enable_nvtx_tracking`.
    pub(crate) nvtx: bool,
    /// `gpu_trace_all_api_calls`.
    pub(crate) all_api_calls: bool,
    /// `gpu_enable_cupti_activity_graph_trace`.
    pub(crate) graph_trace: bool,
    /// `gpu_dump_graph_node_mapping`.
    pub(crate) dump_graph_node_mapping: bool,
    /// `gpu_pm_sample_*`.
    pub(crate) pm: PmSettings,
    /// `gpu_num_chips_to_profile_per_task` (`None`: every device).
    pub(crate) max_devices: Option<u32>,
}

impl Settings {
    /// The settings of `options`, already validated by `ProfileOptions::validate`.
    pub(crate) fn of(options: &ProfileOptions) -> Settings {
        // A cap is >= 0, or -1 for no limit.
        let cap = |key, default| {
            options
                .advanced_int(key)
                .map_or(default, |v| u64::try_from(v).unwrap_or(u64::MAX))
        };
        let metrics = options
            .advanced_str("gpu_pm_sample_counters")
            .map(|list| {
                list.split(',')
                    .map(|m| m.trim().to_owned())
                    .filter(|m| !m.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Settings {
            max_activity: cap("gpu_max_activity_api_events", DEFAULT_MAX_ACTIVITY),
            max_api: cap("gpu_max_callback_api_events", DEFAULT_MAX_API),
            max_annotation_strings: cap("gpu_max_annotation_strings", DEFAULT_MAX_ANNOTATIONS),
            nvtx: options.advanced_bool("gpu_enable_nvtx_tracking") == Some(true),
            all_api_calls: options.advanced_bool("gpu_trace_all_api_calls") == Some(true),
            graph_trace: options.advanced_bool("gpu_enable_cupti_activity_graph_trace")
                == Some(true),
            dump_graph_node_mapping: options.advanced_bool("gpu_dump_graph_node_mapping")
                == Some(true),
            pm: PmSettings {
                metrics,
                interval_us: options
                    .advanced_int("gpu_pm_sample_interval_us")
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(DEFAULT_PM_INTERVAL_US),
                buffer_mb: options
                    .advanced_int("gpu_pm_sample_buffer_size_per_gpu_mb")
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(DEFAULT_PM_BUFFER_MB),
            },
            max_devices: options
                .advanced_int("gpu_num_chips_to_profile_per_task")
                .and_then(|v| u32::try_from(v).ok())
                .filter(|&n| n > 0),
        }
    }
}
