//! `prof-convert`: every `.xplane.pb` under the given paths into Perfetto and Chrome
//! JSON traces, beside each file or under `--out`.

use std::path::{Path, PathBuf};

use clap::Parser;
use profiler_core::error::report;
use profiler_core::ExportFormat;
use profiler_export::convert::{self, ConvertOptions};
use profiler_export::store::Location;

use crate::fetched::Readable;

use crate::formats::{self, Formats};

/// Converts every .xplane.pb at PATH (a file, a run directory or a whole logdir,
/// written by prof, JAX or TensorFlow) into the given formats, beside each file or
/// under DIR. A PATH may be an s3://, gs:// or az:// URL: its .xplane.pb files are
/// copied under DIR, as laid out below the URL, and converted beside the copies.
#[derive(Debug, Parser)]
#[command(
    name = "prof-convert",
    version,
    after_help = "Exit status: 0 when everything converted, 1 when a file failed, 2 on bad usage."
)]
pub struct Args {
    /// Files, run directories or logdirs to convert (local, or s3://, gs://, az:// URLs)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Formats to write, comma-separated: perfetto, chrome, chrome.gz
    #[arg(long, value_name = "LIST", default_value = "perfetto,chrome.gz", value_parser = parse_formats)]
    pub format: Formats,

    /// Write under this directory instead of beside each input
    #[arg(long, value_name = "DIR", value_parser = parse_out)]
    pub out: Option<PathBuf>,
}

/// What prof-convert writes: everything but the `.xplane.pb` it reads.
const WRITABLE: &[ExportFormat] = &[
    ExportFormat::Perfetto,
    ExportFormat::ChromeJson,
    ExportFormat::ChromeJsonGz,
];

/// A `--format` list that asks for something to write: `xplane` is the input (so it is
/// neither listed nor taken), and an empty list would exit 0 having done nothing.
fn parse_formats(list: &str) -> Result<Formats, String> {
    let wanted = formats::parse(list, WRITABLE)?;
    if wanted.0.is_empty() {
        return Err("names nothing to write: give perfetto, chrome or chrome.gz".into());
    }
    Ok(wanted)
}

/// `--out`: a directory, or a path where one can be made; an existing file would fail
/// every conversion, each naming it.
fn parse_out(path: &str) -> Result<PathBuf, String> {
    let out = PathBuf::from(path);
    match std::fs::metadata(&out) {
        Ok(meta) if !meta.is_dir() => {
            Err("is a file, not a directory: give a directory (it is made if missing)".into())
        }
        _ => Ok(out),
    }
}

/// Runs `prof-convert` with the process's arguments; returns the exit status.
pub fn main() -> i32 {
    let args = Args::parse();
    crate::interrupt::install("prof-convert");
    run(&args)
}

fn run(args: &Args) -> i32 {
    // --out URL: the conversions are written to a local staging directory, then each
    // uploaded whole and create-only; the staging copy is kept, and named, when that
    // fails.
    let remote_out = match args.out.as_deref().map(Location::of) {
        Some(Ok(Location::Object(url))) => Some(url),
        Some(Err(e)) => {
            eprintln!("prof-convert: --out: {}", report(&e));
            return 1;
        }
        _ => None,
    };
    let staging = match &remote_out {
        Some(_) => match tempfile::Builder::new().prefix("prof-convert-").tempdir() {
            Ok(dir) => Some(dir),
            Err(e) => {
                eprintln!(
                    "prof-convert: cannot create a staging directory: {}",
                    report(&e)
                );
                return 1;
            }
        },
        None => None,
    };
    let out_dir = match &staging {
        Some(dir) => Some(dir.path().to_path_buf()),
        None => args.out.clone(),
    };
    let options = ConvertOptions {
        out_dir: out_dir.clone(),
        ..ConvertOptions::default()
    };
    // An s3://, gs:// or az:// PATH: its .xplane.pb objects are copied under --out,
    // laid out as below the URL (a logdir URL gives a local logdir XProf reads), and
    // converted beside those copies.
    let mut local = Vec::new();
    let mut fetched = Vec::new();
    for path in &args.paths {
        match Location::of(path) {
            Ok(Location::Local(_)) => local.push(path.clone()),
            Ok(Location::Object(url)) => {
                let Some(out) = args.out.as_ref().filter(|_| remote_out.is_none()) else {
                    eprintln!(
                        "prof-convert: {url} is an object-storage URL: give --out DIR (a local \
                         directory), where its .xplane.pb files are copied and converted"
                    );
                    return 1;
                };
                match Readable::of(path, Some(out)) {
                    Ok(copy) => {
                        println!("{url} -> {}", copy.path().display());
                        fetched.push(copy.path().to_path_buf());
                    }
                    Err(e) => {
                        eprintln!("prof-convert: {}", report(&e));
                        return 1;
                    }
                }
            }
            Err(e) => {
                eprintln!("prof-convert: {}", report(&e));
                return 1;
            }
        }
    }
    let beside = ConvertOptions::default();
    let converted = convert::convert_all(&local, &args.format.0, &options).and_then(|mut all| {
        if !fetched.is_empty() {
            all.extend(convert::convert_all(&fetched, &args.format.0, &beside)?);
        }
        Ok(all)
    });
    let outcomes = match converted {
        Ok(outcomes) => outcomes,
        // Refused before anything was written: two inputs for one output, say.
        Err(e) => {
            eprintln!("prof-convert: {}", report(&e));
            return 1;
        }
    };
    let mut failed = Vec::new();
    // The staged conversions go up before anything is said about them; then each is
    // named by its URL.
    let mut uploaded: Option<(PathBuf, String)> = None;
    let mut upload_failed = false;
    if let (Some(url), Some(dir)) = (&remote_out, staging) {
        let written: Vec<_> = outcomes
            .iter()
            .flat_map(|o| {
                o.written
                    .iter()
                    .map(|c| c.output.clone())
                    .chain(o.pprof.clone())
            })
            .collect();
        match profiler_export::store::publish_files(dir.path(), &written, url) {
            Ok(_) => uploaded = Some((dir.path().to_path_buf(), url.to_string())),
            Err(e) => {
                // Kept: the error names it.
                let _ = dir.keep();
                eprintln!("prof-convert: {}", report(&e));
                upload_failed = true;
            }
        }
    }
    let named = |path: &Path| match &uploaded {
        Some((root, url)) => match path.strip_prefix(root) {
            Ok(rel) => format!("{url}/{}", rel.display()),
            Err(_) => path.display().to_string(),
        },
        None => path.display().to_string(),
    };
    let mut converted = 0usize;
    for outcome in &outcomes {
        for c in &outcome.written {
            println!(
                "{} -> {} ({} events, {} counter samples, {} flows)",
                c.input.display(),
                named(&c.output),
                c.totals.slices,
                c.totals.counter_samples,
                c.totals.flows
            );
        }
        if let Some(pprof) = &outcome.pprof {
            println!(
                "{} -> {} (stack samples: go tool pprof reads it)",
                outcome.input.display(),
                named(pprof)
            );
        }
        for warning in &outcome.warnings {
            eprintln!("prof-convert: warning: {warning}");
        }
        match &outcome.error {
            Some(e) => {
                eprintln!("prof-convert: {}", report(e));
                failed.push(outcome.input.display().to_string());
            }
            None => converted += 1,
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "prof-convert: {converted} file(s) converted, {} failed: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    i32::from(!failed.is_empty() || upload_failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn args(line: &str) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("prof-convert").chain(line.split_whitespace()))
    }

    #[test]
    fn formats_must_name_something_to_write() {
        assert_eq!(
            args("logs").expect("parses").format.0,
            [ExportFormat::Perfetto, ExportFormat::ChromeJsonGz]
        );
        let e = args("logs --format ,").expect_err("nothing");
        assert!(e.to_string().contains("nothing to write"), "{e}");
        assert_eq!(e.exit_code(), 2);
        // The formats a refusal lists are the ones it takes: xplane is in neither.
        for bad in ["xplane", "svg"] {
            let e = args(&format!("logs --format {bad}")).expect_err(bad);
            assert!(
                e.to_string()
                    .contains("valid formats: perfetto, chrome, chrome.gz\n"),
                "{e}"
            );
            assert_eq!(e.exit_code(), 2);
        }
        assert!(args("").is_err(), "a path is required");
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }
}
