#[prof::instrument(skip(model))]
fn f(batch: u32) -> u32 {
    batch
}

fn main() {}
