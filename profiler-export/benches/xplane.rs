//! Export benchmark (written next).
#![allow(missing_docs)]
fn main() {}
