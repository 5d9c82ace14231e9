#[prof::instrument(name = train)]
fn f() {}

fn main() {}
