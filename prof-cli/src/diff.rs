//! `prof-diff`: two runs compared (step time, ops, kernels, memory), what moved most
//! first with the significant rows marked, and a gate for CI.

use std::path::PathBuf;

use crate::fetched::Readable;

use clap::{Parser, ValueEnum};
use profiler_analysis::diff::{self, DiffOptions, GateOptions, RenderOptions};
use profiler_core::error::report;

/// Compares two profiles: what got slower, what got faster, and whether each
/// difference is significant or noise. BASE and NEW are each a .xplane.pb file, a run
/// directory (every host) or a logdir (its newest run), written by prof, JAX or
/// TensorFlow. Each step is a sample; nothing is written.
#[derive(Debug, Parser)]
#[command(
    name = "prof-diff",
    version,
    after_help = "Exit status: 0 when compared (and the gate, if asked for, passed), 1 when the \
                  gate failed or an input could not be read, 2 on bad usage.\n\
                  Significance: Mann-Whitney U over the per-step samples, p-values \
                  Holm-adjusted across rows."
)]
pub struct Args {
    /// The run compared against (file, run directory or logdir)
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// The run to judge (file, run directory or logdir)
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    /// Output format: text (a table), markdown (for a pull request), json
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: Format,

    /// Op rows shown, those that moved most first; 0 shows all
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,

    /// Leave out rows that changed less than PCT percent
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = percent)]
    pub min_change: f64,

    /// Compare this host only, of runs with several (default: every host, merged)
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,

    /// Exit 1 when the median step time or any op's time a step is significantly
    /// slower by more than PCT percent (also when there are no steps to decide on)
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub fail_if_slower: Option<f64>,

    /// With --fail-if-slower: an op fails the gate only when its slowdown is at least
    /// PCT percent of the median step time (0: every op)
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percent)]
    pub gate_min_share: f64,

    /// Pool every run of a logdir (default: its newest run); record the sides in
    /// turn (base, new, base, new) so that a machine's drift does not read as a change
    #[arg(long)]
    pub all_runs: bool,

    /// Significance level, after adjustment for the many rows tested
    #[arg(long, value_name = "P", default_value_t = 0.05, value_parser = level)]
    pub alpha: f64,

    /// Changes smaller than PCT percent are noise, however significant
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percent)]
    pub noise: f64,

    /// Fewest steps a side (and an op must run in) for a difference to be tested
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    pub min_steps: u32,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables.
    Text,
    /// Markdown tables.
    Markdown,
    /// One JSON object.
    Json,
}

/// A percentage: finite and not negative.
fn percent(value: &str) -> Result<f64, String> {
    let v: f64 = value
        .trim_end_matches('%')
        .parse()
        .map_err(|_| "not a number of percent: give one such as 10 or 2.5".to_owned())?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err("not a percentage of 0 or more: give one such as 10 or 2.5".to_owned())
    }
}

/// A significance level, strictly between 0 and 1.
fn level(value: &str) -> Result<f64, String> {
    let v: f64 = value
        .parse()
        .map_err(|_| "not a number: give a level such as 0.05".to_owned())?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err("not between 0 and 1: give a level such as 0.05".to_owned())
    }
}

/// Runs `prof-diff` with the process's arguments; returns the exit status.
pub fn main() -> i32 {
    run(&Args::parse())
}

fn run(args: &Args) -> i32 {
    let mut options = DiffOptions::default()
        .alpha(args.alpha)
        .noise_pct(args.noise)
        .min_steps(args.min_steps as usize)
        .all_runs(args.all_runs);
    if let Some(host) = &args.host {
        options = options.host(host);
    }
    // An s3://, gs:// or az:// side is read from a local copy of its .xplane.pb
    // objects, and named by its URL in what is printed.
    let sides =
        Readable::of(&args.base, None).and_then(|base| Ok((base, Readable::of(&args.new, None)?)));
    let (base, new) = match sides {
        Ok(sides) => sides,
        Err(e) => {
            eprintln!("prof-diff: {}", report(&e));
            return 1;
        }
    };
    let named = |text: String| new.name_in(base.name_in(text));
    let compared = match diff::diff_with(base.path(), new.path(), &options) {
        Ok(compared) => compared,
        Err(e) => {
            eprintln!("prof-diff: {}", named(report(&e).to_string()));
            return 1;
        }
    };
    let mut render = RenderOptions::default().min_change_pct(args.min_change);
    if args.top > 0 {
        render = render.top(args.top);
    }
    match args.format {
        Format::Text => print!("{}", named(compared.table(&render).to_string())),
        Format::Markdown => print!("{}", named(compared.to_markdown(&render).to_string())),
        Format::Json => println!("{}", named(compared.to_json(&render).to_string())),
    }
    let Some(pct) = args.fail_if_slower else {
        return 0;
    };
    // On stderr, so that a JSON or Markdown stdout stays whole.
    let gate = compared.gate_with(&GateOptions::new(pct).min_step_share_pct(args.gate_min_share));
    eprintln!("prof-diff: {gate}");
    i32::from(!gate.passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn args(line: &str) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("prof-diff").chain(line.split_whitespace()))
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn numbers_are_checked_and_usage_errors_exit_2() {
        let ok = args("a b --fail-if-slower 10% --min-change 2 --format markdown").expect("parses");
        assert_eq!(
            (ok.fail_if_slower, ok.min_change, ok.format),
            (Some(10.0), 2.0, Format::Markdown)
        );
        for bad in [
            "a",
            "a b --fail-if-slower -5",
            "a b --fail-if-slower ten",
            "a b --min-change inf",
            "a b --alpha 1.5",
            "a b --min-steps 1",
            "a b --format html",
        ] {
            let e = args(bad).expect_err(bad);
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
        // A misspelt flag is answered with the one meant.
        let e = args("a b --fail-if-slowr 10").expect_err("misspelt");
        assert!(e.to_string().contains("--fail-if-slower"), "{e}");
    }
}
