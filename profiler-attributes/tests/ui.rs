//! Misuse of `#[prof::instrument]` is a compile error that says what was wrong and
//! where: one mistake per file in `tests/ui/fail/`, named after it, with the error
//! rustc prints beside it (`.stderr`).
//!
//! Only failures are compiled here. trybuild checks them in a project of its own
//! (`target/tests/trybuild`, its own flags), which shares nothing with the workspace's
//! build, so it compiles every dependency again: with no passing case it only checks
//! (`cargo check`, no code generated or linked), and with this crate's dependencies
//! alone rather than the facade's dev-dependencies (candle, cudarc, OTLP), it checks a
//! few crates. Every option used correctly is compiled, and its recording checked, by
//! the facade's `tests/instrument.rs`.

#[test]
fn misuse_is_a_clear_compile_error() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
