//! Request validation: a `ProfileRequest` and its advanced configuration become the
//! session options and the checked capture (duration, start time, where to write) the
//! service runs, or an `InvalidArgument` naming what is wrong.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use profiler_core::{ConfigValue, ProfileOptions};
use profiler_export::formats::{self, host_file_stem, ExportFormat};
use tonic::Status;

use crate::proto::{self, advanced_config_value::Value};

/// Longest delay a client may ask for through `start_timestamp_ns`.
const MAX_DELAY: Duration = Duration::from_secs(3600);

/// A validated `Profile` request.
#[derive(Debug)]
pub(super) struct Capture {
    pub(super) options: ProfileOptions,
    pub(super) duration: Duration,
    pub(super) start_at: Option<SystemTime>,
    pub(super) session_id: String,
    /// Where to write; `None` with `emit_xspace`.
    pub(super) file: Option<PathBuf>,
}

pub(super) fn invalid(message: String) -> Status {
    Status::invalid_argument(message)
}

/// A path component a client chose: one plain name, never a way out of the root.
fn check_component(what: &str, value: &str) -> Result<(), Status> {
    let mut components = Path::new(value).components();
    let plain = matches!(
        (components.next(), components.next()),
        (Some(Component::Normal(_)), None)
    );
    if !plain || value.contains(['/', '\\', '\0']) {
        return Err(not_plain(what, value));
    }
    Ok(())
}

fn not_plain(what: &str, value: &str) -> Status {
    invalid(format!(
        "{what} {value:?} is not a plain name: it must not be empty, absolute, `..`, or contain path separators"
    ))
}

/// A host name a client chose. Its file is named by the exporter's [`host_file_stem`],
/// which turns `host:port`'s ':' into '_' as TSL does but quietly renames anything
/// else that could leave the directory; a client sending such a name asked for a file
/// it would not get, so it is refused rather than written under another name.
fn check_host(host: &str) -> Result<(), Status> {
    let stem = host_file_stem(host);
    // The stem maps ASCII to ASCII, so it lines up byte for byte unless it was replaced.
    let only_colons_renamed = stem.len() == host.len()
        && stem
            .bytes()
            .zip(host.bytes())
            .all(|(s, h)| s == h || h == b':');
    if !only_colons_renamed {
        return Err(not_plain("host name", host));
    }
    Ok(())
}

fn config_value(key: &str, value: &proto::AdvancedConfigValue) -> Result<ConfigValue, Status> {
    match &value.value {
        Some(Value::StringValue(s)) => Ok(ConfigValue::Str(s.clone())),
        Some(Value::BoolValue(b)) => Ok(ConfigValue::Bool(*b)),
        Some(Value::Int64Value(i)) => Ok(ConfigValue::Int(*i)),
        None => Err(invalid(format!(
            "advanced_configuration {key:?} has no value"
        ))),
    }
}

/// What a `ProfileRequest` asks for, read once for captures and the flight recorder.
pub(super) struct Requested {
    pub(super) options: ProfileOptions,
    /// When recording should start (`opts.start_timestamp_ns`).
    pub(super) start_at: Option<SystemTime>,
    /// `opts.duration_ms`, else the request's own; 0 when neither says.
    pub(super) duration_ms: u64,
}

/// The session options a request asks for, when it asks recording to start, and for
/// how long.
pub(super) fn request_options(request: &proto::ProfileRequest) -> Result<Requested, Status> {
    let default = proto::ProfileOptions::default();
    let opts = request.opts.as_ref().unwrap_or(&default);
    // Version 0 means an old client that filled in nothing: the server's defaults.
    let mut options = ProfileOptions::default();
    let mut start_at = None;
    if opts.version > 0 {
        options.host_tracer_level = opts.host_tracer_level;
        options.device_tracer_level = opts.device_tracer_level;
        let advanced: Result<BTreeMap<_, _>, Status> = opts
            .advanced_configuration
            .iter()
            .map(|(k, v)| Ok((k.clone(), config_value(k, v)?)))
            .collect();
        options.advanced_configuration = advanced?;
        if opts.start_timestamp_ns > 0 {
            start_at = Some(UNIX_EPOCH + Duration::from_nanos(opts.start_timestamp_ns));
        }
    }
    if request.max_events > 0 {
        options.max_events = request.max_events;
    }
    options
        .validate()
        .map_err(|e| invalid(format!("ProfileRequest.opts: {e}")))?;
    let duration_ms = if opts.duration_ms > 0 {
        opts.duration_ms
    } else {
        request.duration_ms
    };
    Ok(Requested {
        options,
        start_at,
        duration_ms,
    })
}

impl Capture {
    pub(super) fn from_request(request: &proto::ProfileRequest) -> Result<Capture, Status> {
        let default = proto::ProfileOptions::default();
        let opts = request.opts.as_ref().unwrap_or(&default);
        let Requested {
            options,
            start_at,
            duration_ms,
        } = request_options(request)?;
        if duration_ms == 0 {
            return Err(invalid(
                "duration_ms is 0 (in ProfileRequest.opts and in ProfileRequest): say how long to capture".into(),
            ));
        }
        if let Some(at) = start_at {
            if at.duration_since(SystemTime::now()).unwrap_or_default() > MAX_DELAY {
                return Err(invalid(format!(
                    "opts.start_timestamp_ns is more than {} s away: clocks differ, or the delay is a mistake",
                    MAX_DELAY.as_secs()
                )));
            }
        }
        let session_id = if request.session_id.is_empty() {
            opts.session_id.clone()
        } else {
            request.session_id.clone()
        };
        let file = if request.emit_xspace {
            None
        } else {
            if request.repository_root.is_empty() {
                return Err(invalid(
                    "repository_root is empty: say where to write, or set emit_xspace".into(),
                ));
            }
            check_component("session_id", &session_id)?;
            let host = [&opts.override_hostname, &request.host_name]
                .into_iter()
                .find(|h| !h.is_empty())
                .cloned()
                .unwrap_or_else(profiler_core::host_name);
            check_host(&host)?;
            let dir = Path::new(&request.repository_root).join(&session_id);
            Some(formats::host_file(&dir, &host, ExportFormat::XPlane))
        };
        Ok(Capture {
            options,
            duration: Duration::from_millis(duration_ms),
            start_at,
            session_id,
            file,
        })
    }
}
