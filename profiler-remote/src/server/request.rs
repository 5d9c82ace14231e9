//! Request validation: a `ProfileRequest` and its advanced configuration become the
//! session options and the checked capture (duration, start time, where to write) the
//! service runs, or an `InvalidArgument` naming what is wrong.
//!
//! Everything that can refuse a request is checked here, before the capture claims
//! the server, so a refusal never costs a recorded profile. Messages quote at most
//! [`QUOTE_BYTES`](super::quote::QUOTE_BYTES) of what the client sent: a long string quoted whole would turn the
//! real error into RESOURCE_EXHAUSTED (the status no longer fits in the trailers).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use profiler_core::error::report;
use profiler_core::{ConfigValue, ProfileOptions};
use profiler_export::formats::{self, host_file_stem};
use profiler_export::store::Location;
use tonic::Status;

use super::limits::Limits;
use super::output::Writes;
use super::quote::{clip, quote};
use crate::proto::{self, advanced_config_value::Value};

/// Longest session id or file name: one path component on Linux and macOS (`NAME_MAX`).
pub(super) const MAX_NAME_BYTES: usize = 255;
/// Longest `repository_root` (`PATH_MAX`).
const MAX_ROOT_BYTES: usize = 4096;
/// Most `advanced_configuration` entries; prof knows a handful of keys.
const MAX_CONFIG_ENTRIES: usize = 64;
/// Longest `advanced_configuration` key; prof's are under 40 bytes.
const MAX_CONFIG_KEY_BYTES: usize = 64;
/// Longest string value in `advanced_configuration`.
const MAX_CONFIG_STRING_BYTES: usize = 1024;

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

/// `value` is at most `max` bytes.
pub(super) fn check_len(what: &str, value: &str, max: usize) -> Result<(), Status> {
    if value.len() > max {
        return Err(invalid(format!(
            "{what} {} is too long: at most {max} bytes",
            quote(value)
        )));
    }
    Ok(())
}

/// A path component a client chose: one plain name, never a way out of the root.
fn check_component(what: &str, value: &str) -> Result<(), Status> {
    check_len(what, value, MAX_NAME_BYTES)?;
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
        "{what} {} is not a plain name: it must not be empty, absolute, `..`, or contain path separators",
        quote(value)
    ))
}

/// A host name a client chose. Its file is named by the exporter's [`host_file_stem`],
/// which turns `host:port`'s ':' into '_' as TSL does but quietly renames anything
/// else that could leave the directory; a client sending such a name asked for a file
/// it would not get, so it is refused rather than written under another name.
fn check_host(host: &str) -> Result<(), Status> {
    check_len("host name", host, MAX_NAME_BYTES)?;
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

/// The file's name must fit in one path component, or the write fails after the
/// capture ran.
fn check_file_name(host: &str, file: &Path) -> Result<(), Status> {
    let name_len = file.file_name().map_or(0, |n| n.len());
    if name_len > MAX_NAME_BYTES {
        return Err(invalid(format!(
            "host name {} makes a file name of {name_len} bytes: at most {MAX_NAME_BYTES}",
            quote(host)
        )));
    }
    Ok(())
}

fn config_value(key: &str, value: &proto::AdvancedConfigValue) -> Result<ConfigValue, Status> {
    match &value.value {
        Some(Value::StringValue(s)) => {
            check_len(
                &format!("advanced_configuration {}", quote(key)),
                s,
                MAX_CONFIG_STRING_BYTES,
            )?;
            Ok(ConfigValue::Str(s.clone()))
        }
        Some(Value::BoolValue(b)) => Ok(ConfigValue::Bool(*b)),
        Some(Value::Int64Value(i)) => Ok(ConfigValue::Int(*i)),
        None => Err(invalid(format!(
            "advanced_configuration {} has no value",
            quote(key)
        ))),
    }
}

fn advanced_configuration(
    opts: &proto::ProfileOptions,
) -> Result<BTreeMap<String, ConfigValue>, Status> {
    let entries = &opts.advanced_configuration;
    if entries.len() > MAX_CONFIG_ENTRIES {
        return Err(invalid(format!(
            "advanced_configuration has {} entries: at most {MAX_CONFIG_ENTRIES}",
            entries.len()
        )));
    }
    entries
        .iter()
        .map(|(k, v)| {
            check_len("advanced_configuration key", k, MAX_CONFIG_KEY_BYTES)?;
            Ok((k.clone(), config_value(k, v)?))
        })
        .collect()
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
        options.advanced_configuration = advanced_configuration(opts)?;
        if opts.start_timestamp_ns > 0 {
            start_at = Some(UNIX_EPOCH + Duration::from_nanos(opts.start_timestamp_ns));
        }
    }
    if request.max_events > 0 {
        options.max_events = request.max_events;
    }
    options
        .validate()
        .map_err(|e| invalid(clip(&format!("ProfileRequest.opts: {}", report(&e)))))?;
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

/// A start time further away than `max_delay` would hold the server's only capture
/// slot all that time, refusing every other capture.
fn check_delay(start_at: Option<SystemTime>, max_delay: Duration) -> Result<(), Status> {
    let Some(at) = start_at else {
        return Ok(());
    };
    let delay = at.duration_since(SystemTime::now()).unwrap_or_default();
    if delay > max_delay {
        return Err(invalid(format!(
            "opts.start_timestamp_ns is {} s away: this server waits at most {} s before a capture (Limits::max_delay); clocks differ, or the delay is a mistake",
            delay.as_secs(),
            max_delay.as_secs()
        )));
    }
    Ok(())
}

fn check_capture_limits(
    request: &proto::ProfileRequest,
    duration_ms: u64,
    limits: &Limits,
) -> Result<(), Status> {
    if duration_ms == 0 {
        return Err(invalid(
            "duration_ms is 0 (in ProfileRequest.opts and in ProfileRequest): say how long to capture".into(),
        ));
    }
    if Duration::from_millis(duration_ms) > limits.max_duration {
        return Err(invalid(format!(
            "duration_ms = {duration_ms} is over this server's limit of {} ms (Limits::max_duration)",
            limits.max_duration.as_millis()
        )));
    }
    if request.max_events > limits.max_events {
        return Err(invalid(format!(
            "max_events = {} is over this server's limit of {} records (Limits::max_events)",
            request.max_events, limits.max_events
        )));
    }
    Ok(())
}

/// The session id a request names: its own, else its options'.
pub(super) fn session_id(request: &proto::ProfileRequest) -> Result<String, Status> {
    let id = match &request.opts {
        Some(opts) if request.session_id.is_empty() => &opts.session_id,
        _ => &request.session_id,
    };
    check_len("session_id", id, MAX_NAME_BYTES)?;
    Ok(id.clone())
}

/// Where a capture that the server writes goes: `repository_root/session_id/<host>`,
/// the root as the server's [`Writes`] allows it.
pub(super) fn target_file(
    request: &proto::ProfileRequest,
    session_id: &str,
    writes: &Writes,
) -> Result<PathBuf, Status> {
    if request.repository_root.is_empty() {
        return Err(invalid(
            "repository_root is empty: say where to write, or set emit_xspace".into(),
        ));
    }
    check_len("repository_root", &request.repository_root, MAX_ROOT_BYTES)?;
    check_component("session_id", session_id)?;
    let override_hostname = request
        .opts
        .as_ref()
        .map_or("", |o| o.override_hostname.as_str());
    let host = [override_hostname, request.host_name.as_str()]
        .into_iter()
        .find(|h| !h.is_empty())
        .map_or_else(profiler_core::host_name, str::to_owned);
    check_host(&host)?;
    refuse_urls(&request.repository_root)?;
    let root = writes.resolve(&request.repository_root)?;
    let file = formats::xplane_file(&root.join(session_id), &host);
    check_file_name(&host, &file)?;
    Ok(file)
}

/// A `repository_root` that is an object-storage URL (XProf's Capture dialog sends
/// `gs://…/plugins/profile` for a `gs://` logdir) is refused by name: the server writes
/// local files only, and a URL taken as a path would make a local directory `gs:`.
/// `capture-profile --logdir URL` asks for the profile back and uploads it itself, so
/// the server needs no credentials.
fn refuse_urls(root: &str) -> Result<(), Status> {
    match Location::parse(Path::new(root)) {
        Ok(Location::Local(_)) => Ok(()),
        Ok(Location::Object(url)) => Err(Status::failed_precondition(format!(
            "repository_root {url} is an object-storage URL, and this server writes local \
             files only: capture with `capture-profile --logdir URL`, which takes the \
             profile back (emit_xspace) and uploads it itself, or give a local directory"
        ))),
        Err(e) => Err(invalid(format!("repository_root: {e}"))),
    }
}

impl Capture {
    pub(super) fn from_request(
        request: &proto::ProfileRequest,
        limits: &Limits,
        writes: &Writes,
    ) -> Result<Capture, Status> {
        let Requested {
            options,
            start_at,
            duration_ms,
        } = request_options(request)?;
        check_capture_limits(request, duration_ms, limits)?;
        check_delay(start_at, limits.max_delay)?;
        let session_id = session_id(request)?;
        let file = if request.emit_xspace {
            None
        } else {
            Some(target_file(request, &session_id, writes)?)
        };
        if file.is_none() && options.writes_on_signals() {
            return Err(invalid(
                "ProfileRequest.opts: write_on_signals: an emit_xspace capture returns its \
                 profile to the client, so a signal ending this server's process would have \
                 nowhere to write it; ask the server to write it (repository_root, without \
                 emit_xspace)"
                    .into(),
            ));
        }
        Ok(Capture {
            options,
            duration: Duration::from_millis(duration_ms),
            start_at,
            session_id,
            file,
        })
    }
}
