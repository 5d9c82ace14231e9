//! `capture-profile`: captures a profile from running programs over the
//! `tensorflow.ProfilerService` protocol (prof, JAX, TensorFlow) into a
//! TensorBoard/XProf logdir.
#![allow(clippy::print_stdout)]

fn main() {
    std::process::exit(profiler_remote::cli::main(
        std::env::args().skip(1).collect(),
    ));
}
