//! `prof-top`: a live view of running programs that serve prof's profiler port.

fn main() {
    std::process::exit(prof_cli::top::main());
}
