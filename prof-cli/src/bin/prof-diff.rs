//! `prof-diff`: two profiles compared, what moved and whether it is significant, with
//! a gate for CI.

fn main() {
    std::process::exit(prof_cli::diff::main());
}
