//! `--format LIST`, shared by the tools.

use profiler_core::ExportFormat;

/// The formats of a `--format` list, in the order given, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Formats(pub Vec<ExportFormat>);

/// Every format a capture can write.
pub const ALL: &[ExportFormat] = &[
    ExportFormat::XPlane,
    ExportFormat::Perfetto,
    ExportFormat::ChromeJson,
    ExportFormat::ChromeJsonGz,
];

/// Parses `perfetto,chrome.gz`-style lists of the formats in `accepted`. The error is
/// what clap shows after naming the value, so it does not name it again: it says which
/// name is unknown only when the list has several, and lists exactly the formats this
/// tool takes (so no format it lists is then refused).
///
/// # Errors
/// The unknown format and the valid ones.
pub fn parse(list: &str, accepted: &[ExportFormat]) -> Result<Formats, String> {
    let names = |formats: &[ExportFormat]| {
        formats
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut formats = Vec::new();
    let items: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    for &name in &items {
        let which = if items.len() > 1 {
            format!("{name:?} is an unknown format")
        } else {
            "unknown format".to_owned()
        };
        let format = match name.parse::<ExportFormat>() {
            Ok(f) if accepted.contains(&f) => f,
            Ok(ExportFormat::XPlane) => {
                let which = if items.len() > 1 {
                    "\"xplane\" is the format this tool reads"
                } else {
                    "this tool reads that format"
                };
                return Err(format!(
                    "{which}, not one it writes; valid formats: {}",
                    names(accepted)
                ));
            }
            _ => return Err(format!("{which}; valid formats: {}", names(accepted))),
        };
        if !formats.contains(&format) {
            formats.push(format);
        }
    }
    Ok(Formats(formats))
}
