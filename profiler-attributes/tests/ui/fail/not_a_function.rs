#[prof::instrument]
struct Model;

fn main() {}
