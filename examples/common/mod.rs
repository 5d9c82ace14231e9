//! What the examples share: their `--logdir DIR --steps N` flags and the summary they
//! print once the profile is written. Not an example itself (Cargo only builds
//! `examples/*.rs` and `examples/*/main.rs`).
#![allow(dead_code, unreachable_pub, clippy::print_stdout)]

use std::path::{Path, PathBuf};

/// The flags every example takes.
pub struct Args {
    pub logdir: PathBuf,
    pub steps: u32,
}

/// Parses `--logdir DIR` (default `logs`) and `--steps N` (default `steps`), handing
/// any other flag and its value to `extra`, which returns false for flags it does not
/// know. `-h`/`--help` prints `usage` and exits.
pub fn parse_args(
    usage: &str,
    steps: u32,
    mut extra: impl FnMut(&str, &str) -> Result<bool, String>,
) -> Result<Args, String> {
    let mut args = Args {
        logdir: PathBuf::from("logs"),
        steps,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if matches!(flag.as_str(), "-h" | "--help") {
            println!("usage: {usage}");
            std::process::exit(0);
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--logdir" => args.logdir = PathBuf::from(value),
            "--steps" => args.steps = number(&flag, &value)?,
            other => {
                if !extra(other, &value)? {
                    return Err(format!("unknown argument {other}; try --help"));
                }
            }
        }
    }
    Ok(args)
}

/// `value` of `flag` as a number, or an error naming both.
pub fn number(flag: &str, value: &str) -> Result<u32, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} {value}: not a number"))
}

/// Prints where the profile went, `stats` (one line about what it holds), its
/// warnings, and how to view it.
pub fn report(profile: &prof::Profile, logdir: &Path, stats: &str) -> Result<(), String> {
    let file = profile.files().first().ok_or("no file was written")?;
    println!("profile written to {}", file.display());
    println!("  {stats}");
    for warning in profile.warnings() {
        println!("  warning: {warning}");
    }
    println!(
        "view it with:  xprof --logdir {}   (or: tensorboard --logdir {})",
        logdir.display(),
        logdir.display()
    );
    Ok(())
}
