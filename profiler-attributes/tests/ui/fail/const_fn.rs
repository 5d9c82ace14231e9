#[prof::instrument]
const fn f() -> u32 {
    1
}

fn main() {}
