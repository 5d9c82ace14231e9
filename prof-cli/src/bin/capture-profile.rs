//! `capture-profile`: captures a profile from running programs over the
//! `tensorflow.ProfilerService` protocol (prof, JAX, TensorFlow) into a
//! TensorBoard/XProf logdir.

fn main() {
    std::process::exit(prof_cli::capture::main());
}
