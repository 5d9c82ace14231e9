//! `ProfileOptions`' validation, `advanced_configuration`'s keys, and export formats.

use super::*;

#[test]
fn every_gpu_key_jax_documents_is_taken_and_checked() {
    let ok = ProfileOptions::default()
        .advanced("gpu_enable_cupti_activity_graph_trace", true)
        .advanced("gpu_dump_graph_node_mapping", false)
        .advanced(
            "gpu_pm_sample_counters",
            "sm__cycles_active.avg.pct_of_peak_sustained_elapsed, dram__throughput.avg.pct_of_peak_sustained_elapsed",
        )
        .advanced("gpu_pm_sample_interval_us", 500)
        .advanced("gpu_pm_sample_buffer_size_per_gpu_mb", 64)
        .advanced("gpu_num_chips_to_profile_per_task", 0);
    ok.validate().expect("valid");
    for (key, value, says) in [
        (
            "gpu_pm_sample_interval_us",
            ConfigValue::Int(0),
            "a positive integer",
        ),
        (
            "gpu_pm_sample_buffer_size_per_gpu_mb",
            ConfigValue::Int(63),
            "from 64 to 4096",
        ),
        (
            "gpu_pm_sample_buffer_size_per_gpu_mb",
            ConfigValue::Int(4097),
            "from 64 to 4096",
        ),
        (
            "gpu_pm_sample_counters",
            ConfigValue::Str("a,,b".into()),
            "comma-separated",
        ),
        (
            "gpu_pm_sample_counters",
            ConfigValue::Str("".into()),
            "comma-separated",
        ),
        (
            "gpu_pm_sample_counters",
            ConfigValue::Str("sm__x; rm -rf".into()),
            "comma-separated",
        ),
        (
            "gpu_pm_sample_counters",
            ConfigValue::Int(3),
            "comma-separated",
        ),
        (
            "gpu_enable_cupti_activity_graph_trace",
            ConfigValue::Int(1),
            "a bool",
        ),
        (
            "gpu_num_chips_to_profile_per_task",
            ConfigValue::Int(-1),
            "non-negative",
        ),
    ] {
        let err = ProfileOptions::default()
            .advanced(key, value.clone())
            .validate()
            .expect_err(key);
        let msg = err.to_string();
        assert!(
            msg.contains(key) && msg.contains(says),
            "{key} = {value:?}: {msg}"
        );
    }
}

#[test]
fn host_sampling_keys_are_checked() {
    let ok = ProfileOptions::default()
        .host_sampling_hz(99)
        .advanced(HOST_SAMPLING_BACKEND, "timer");
    ok.validate().expect("valid");
    assert_eq!(ok.advanced_int(HOST_SAMPLING_HZ), Some(99));
    for (key, value, says) in [
        (HOST_SAMPLING_HZ, ConfigValue::Int(-1), "from 0 to 10000"),
        (
            HOST_SAMPLING_HZ,
            ConfigValue::Int(10_001),
            "from 0 to 10000",
        ),
        (
            HOST_SAMPLING_HZ,
            ConfigValue::Str("99".into()),
            "from 0 to 10000",
        ),
        (
            HOST_SAMPLING_BACKEND,
            ConfigValue::Str("ptrace".into()),
            "one of auto, perf, timer",
        ),
    ] {
        let err = ProfileOptions::default()
            .advanced(key, value.clone())
            .validate()
            .expect_err(key);
        let msg = err.to_string();
        assert!(
            msg.contains(key) && msg.contains(says),
            "{key} = {value:?}: {msg}"
        );
    }
}

#[test]
fn defaults_are_valid() {
    ProfileOptions::default().validate().expect("valid");
}

#[test]
fn the_xplane_limit_is_one_xprof_can_read() {
    const { assert!(DEFAULT_MAX_XPLANE_BYTES < XPROF_MAX_BYTES) };
    for bytes in [MIN_XPLANE_BYTES, XPROF_MAX_BYTES] {
        let options = ProfileOptions::default().max_xplane_bytes(bytes);
        options.validate().expect("in range");
    }
    for bytes in [0, MIN_XPLANE_BYTES - 1, XPROF_MAX_BYTES + 1] {
        let err = ProfileOptions::default()
            .max_xplane_bytes(bytes)
            .validate()
            .expect_err("out of range");
        assert!(err.to_string().contains("max_xplane_bytes"), "{err}");
    }
}

#[test]
fn unknown_key_is_named_with_the_valid_ones() {
    let err = ProfileOptions::default()
        .advanced("gpu_max_activty_api_events", 5)
        .validate()
        .expect_err("typo must be rejected");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let msg = err.to_string();
    assert!(msg.contains("\"gpu_max_activty_api_events\""), "{msg}");
    assert!(msg.contains("gpu_max_activity_api_events"), "{msg}");
    assert!(msg.contains("gpu_enable_nvtx_tracking"), "{msg}");
}

#[test]
fn wrong_type_is_named() {
    let err = ProfileOptions::default()
        .advanced("gpu_enable_nvtx_tracking", "yes")
        .validate()
        .expect_err("string for a bool");
    let msg = err.to_string();
    assert!(
        msg.contains("gpu_enable_nvtx_tracking") && msg.contains("a bool"),
        "{msg}"
    );
    ProfileOptions::default()
        .advanced("gpu_trace_all_api_calls", true)
        .validate()
        .expect("a bool");
    let err = ProfileOptions::default()
        .advanced("gpu_trace_all_api_calls", 1)
        .validate()
        .expect_err("an int for a bool");
    assert!(
        err.to_string().contains("gpu_trace_all_api_calls") && err.to_string().contains("a bool"),
        "{err}"
    );
    // -1 is TSL's "no limit"; below that is an error naming the accepted values.
    ProfileOptions::default()
        .advanced("gpu_max_activity_api_events", -1)
        .validate()
        .expect("-1: no limit");
    let err = ProfileOptions::default()
        .advanced("gpu_max_annotation_strings", -2)
        .validate()
        .expect_err("negative cap");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("-1 for no limit"), "{err}");
}

#[test]
fn a_wrong_value_is_said_in_the_words_it_was_given() {
    let said = |key: &str, value: ConfigValue| {
        ProfileOptions::default()
            .advanced(key, value)
            .validate()
            .expect_err("refused")
            .to_string()
    };
    let cap = "advanced_configuration key \"gpu_max_activity_api_events\" takes a \
               non-negative integer, or -1 for no limit: ";
    for (value, why) in [
        (
            ConfigValue::Str("99999999999999999999".into()),
            "99999999999999999999 is too large for a 64-bit integer",
        ),
        (
            ConfigValue::Str("-99999999999999999999".into()),
            "-99999999999999999999 is too small for a 64-bit integer",
        ),
        (ConfigValue::Int(-2), "-2 is negative and not -1"),
        (
            ConfigValue::Str("lots".into()),
            "\"lots\" is not an integer",
        ),
        (ConfigValue::Bool(true), "\"true\" is not an integer"),
    ] {
        let value = match value {
            // A bool spelled as a string, as a client that types nothing sends it.
            ConfigValue::Bool(b) => ConfigValue::Str(b.to_string()),
            v => v,
        };
        assert_eq!(
            said("gpu_max_activity_api_events", value),
            format!("{cap}{why}")
        );
    }
    assert!(said("gpu_enable_nvtx_tracking", ConfigValue::Int(1)).ends_with(": 1 is an integer"));
    let msg = said("gpu_pm_sample_counters", ConfigValue::Str("a b".into()));
    assert!(msg.ends_with(": \"a b\" is not such a list"), "{msg}");
    // Never Rust's Debug form of the value.
    for msg in [
        said("gpu_max_activity_api_events", ConfigValue::Int(-2)),
        said("gpu_max_activity_api_events", ConfigValue::Str("x".into())),
    ] {
        assert!(!msg.contains("Int(") && !msg.contains("Str("), "{msg}");
    }
}

#[test]
fn export_formats_parse_and_name_the_unknown() {
    assert_eq!(
        ExportFormat::parse_list("xplane, perfetto,chrome,chrome.gz,perfetto").expect("ok"),
        [
            ExportFormat::XPlane,
            ExportFormat::Perfetto,
            ExportFormat::ChromeJson,
            ExportFormat::ChromeJsonGz
        ]
    );
    let err = ExportFormat::parse_list("perfetto,svg").expect_err("svg");
    assert!(err.to_string().contains("\"svg\""), "{err}");
    assert!(err.to_string().contains("chrome.gz"), "{err}");
    for (format, name) in ExportFormat::ALL {
        assert_eq!(format.to_string(), name);
    }
}

#[test]
fn levels_are_range_checked() {
    for (opts, name) in [
        (
            ProfileOptions::default().host_tracer_level(4),
            "host_tracer_level",
        ),
        (
            ProfileOptions::default().device_tracer_level(2),
            "device_tracer_level",
        ),
        (ProfileOptions::default().max_events(0), "max_events"),
    ] {
        let err = opts.validate().expect_err("out of range");
        assert!(err.to_string().contains(name), "{err}");
    }
}
