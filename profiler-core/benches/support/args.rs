//! The command line of the benches that print their own tables (`harness = false`,
//! no criterion): they measure only when cargo passes `--bench` (`cargo test
//! --benches` runs them without it, to check they start), and take their sizes as a
//! comma-separated list.
#![allow(dead_code, unreachable_pub)]

/// The process's arguments.
pub fn args() -> Vec<String> {
    std::env::args().collect()
}

/// Whether cargo ran this as a bench (`cargo bench`), not as a test.
pub fn bench_mode(args: &[String]) -> bool {
    args.iter().any(|a| a == "--bench")
}

/// Whether `flag` was given.
pub fn has(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}

/// The argument after `flag`, if given.
pub fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// The counts after `flag` (`10000,1_000_000`), else `default`'s.
///
/// # Panics
/// On a count that does not parse, naming the flag.
pub fn sizes(args: &[String], flag: &str, default: &str) -> Vec<u64> {
    value(args, flag)
        .unwrap_or(default)
        .split(',')
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse()
                .unwrap_or_else(|_| panic!("{flag}: comma-separated counts, not {s:?}"))
        })
        .collect()
}
