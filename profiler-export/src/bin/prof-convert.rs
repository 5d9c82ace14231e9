//! `prof-convert`: existing `.xplane.pb` files (prof's, JAX's, TensorFlow's) into
//! Perfetto and Chrome JSON traces.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use profiler_export::convert;
use profiler_export::ExportFormat;

const USAGE: &str = "\
usage: prof-convert PATH... [--format perfetto,chrome,chrome.gz] [--out DIR]

Converts every .xplane.pb at PATH (a file, a run directory or a whole logdir, written
by prof, JAX or TensorFlow) into the given formats, beside each file or into DIR.

options:
  --format LIST   comma-separated: perfetto, chrome, chrome.gz (default perfetto,chrome.gz)
  --out DIR       write here instead of beside each input
  -h, --help      this text

exit status: 0 when everything converted, 1 when a file failed, 2 on bad usage";

fn main() {
    std::process::exit(run(std::env::args().skip(1).collect()));
}

fn run(argv: Vec<String>) -> i32 {
    let mut paths = Vec::new();
    let mut formats = vec![ExportFormat::Perfetto, ExportFormat::ChromeJsonGz];
    let mut out: Option<PathBuf> = None;
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            "--format" | "--out" => {
                let Some(value) = it.next() else {
                    eprintln!("prof-convert: {arg} needs a value\n\n{USAGE}");
                    return 2;
                };
                if arg == "--out" {
                    out = Some(PathBuf::from(value));
                    continue;
                }
                match ExportFormat::parse_list(&value) {
                    Ok(list) => formats = list,
                    Err(e) => {
                        eprintln!("prof-convert: --format: {e}");
                        return 2;
                    }
                }
            }
            flag if flag.starts_with('-') => {
                eprintln!("prof-convert: unknown option {flag}\n\n{USAGE}");
                return 2;
            }
            path => paths.push(PathBuf::from(path)),
        }
    }
    if paths.is_empty() {
        eprintln!("prof-convert: no path given\n\n{USAGE}");
        return 2;
    }
    if let Some(dir) = &out {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("prof-convert: cannot create {}: {e}", dir.display());
            return 1;
        }
    }
    let mut failed = false;
    for path in paths {
        match convert::convert(&path, &formats, out.as_deref()) {
            Ok(done) => {
                for c in done {
                    println!(
                        "{} -> {} ({} events, {} counter samples, {} flows)",
                        c.input.display(),
                        c.output.display(),
                        c.totals.slices,
                        c.totals.counter_samples,
                        c.totals.flows
                    );
                }
            }
            Err(e) => {
                eprintln!("prof-convert: {}: {e}", path.display());
                failed = true;
            }
        }
    }
    i32::from(failed)
}
