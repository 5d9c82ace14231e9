//! `prof-convert`: every `.xplane.pb` under the given paths into Perfetto and Chrome
//! JSON traces, beside each file or under `--out`.

use std::path::PathBuf;

use clap::Parser;
use profiler_core::ExportFormat;
use profiler_export::convert::{self, ConvertOptions};

use crate::formats::{self, Formats};

/// Converts every .xplane.pb at PATH (a file, a run directory or a whole logdir,
/// written by prof, JAX or TensorFlow) into the given formats, beside each file or
/// under DIR.
#[derive(Debug, Parser)]
#[command(
    name = "prof-convert",
    version,
    after_help = "Exit status: 0 when everything converted, 1 when a file failed, 2 on bad usage."
)]
pub struct Args {
    /// Files, run directories or logdirs to convert
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Formats to write, comma-separated: perfetto, chrome, chrome.gz
    #[arg(long, value_name = "LIST", default_value = "perfetto,chrome.gz", value_parser = parse_formats)]
    pub format: Formats,

    /// Write under this directory instead of beside each input
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// A `--format` list that asks for something to write: `xplane` is the input, and
/// an empty list would exit 0 having done nothing.
fn parse_formats(list: &str) -> Result<Formats, String> {
    let wanted: Vec<_> = formats::parse(list)?
        .0
        .into_iter()
        .filter(|&f| f != ExportFormat::XPlane)
        .collect();
    if wanted.is_empty() {
        return Err(format!(
            "{list:?} names nothing to write: give perfetto, chrome or chrome.gz (the input is already xplane)"
        ));
    }
    Ok(Formats(wanted))
}

/// Runs `prof-convert` with the process's arguments; returns the exit status.
pub fn main() -> i32 {
    let args = Args::parse();
    crate::interrupt::install("prof-convert");
    run(&args)
}

fn run(args: &Args) -> i32 {
    let options = ConvertOptions {
        out_dir: args.out.clone(),
        ..ConvertOptions::default()
    };
    let outcomes = match convert::convert_all(&args.paths, &args.format.0, &options) {
        Ok(outcomes) => outcomes,
        // Refused before anything was written: two inputs for one output, say.
        Err(e) => {
            eprintln!("prof-convert: {e}");
            return 1;
        }
    };
    let mut failed = Vec::new();
    let mut converted = 0usize;
    for outcome in &outcomes {
        for c in &outcome.written {
            println!(
                "{} -> {} ({} events, {} counter samples, {} flows)",
                c.input.display(),
                c.output.display(),
                c.totals.slices,
                c.totals.counter_samples,
                c.totals.flows
            );
        }
        if let Some(pprof) = &outcome.pprof {
            println!(
                "{} -> {} (stack samples: go tool pprof reads it)",
                outcome.input.display(),
                pprof.display()
            );
        }
        for warning in &outcome.warnings {
            eprintln!("prof-convert: warning: {warning}");
        }
        match &outcome.error {
            Some(e) => {
                eprintln!("prof-convert: {e}");
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
    i32::from(!failed.is_empty())
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
        for nothing in ["--format ,", "--format xplane"] {
            let e = args(&format!("logs {nothing}")).expect_err(nothing);
            assert!(e.to_string().contains("nothing to write"), "{e}");
            assert_eq!(e.exit_code(), 2);
        }
        assert!(args("").is_err(), "a path is required");
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }
}
