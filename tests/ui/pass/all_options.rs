#[prof::instrument]
fn plain() {}

#[prof::instrument(name = "renamed", fields(a = 1, b = "two"), skip(x))]
fn options(x: u32, y: &str) -> usize {
    x as usize + y.len()
}

#[prof::instrument(skip_all)]
async fn asynchronous(n: u64) -> u64 {
    n
}

struct S;
impl S {
    #[prof::instrument]
    fn method(&mut self, k: i32) -> i32 {
        k
    }
}

fn main() {
    plain();
    let _ = options(1, "a");
    let _ = asynchronous(1);
    let _ = S.method(1);
}
