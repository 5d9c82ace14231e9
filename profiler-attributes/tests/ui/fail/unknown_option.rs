#[prof::instrument(level = "debug")]
fn f() {}

fn main() {}
