#[prof::instrument(fields(step_num))]
fn f() {}

fn main() {}
