//! `prof-convert`: existing `.xplane.pb` files (prof's, JAX's, TensorFlow's) into
//! Perfetto and Chrome JSON traces.

fn main() {
    std::process::exit(prof_cli::convert::main());
}
