#![doc = include_str!("../README.md")]
//!
//! `#[prof::instrument]` records every call of a function as an event named after it,
//! through prof's own annotation path (not the `tracing` dispatcher): while no session
//! records, a call costs one relaxed atomic load more than the bare function.
//!
//! ```ignore
//! #[prof::instrument]                          // event "load", field `shard`
//! fn load(shard: u32, path: &Path) -> Batch { .. }
//!
//! #[prof::instrument(name = "Train", fields(step_num = step), skip(model))]
//! fn train_step(model: &mut Model, step: u64) { .. }
//!
//! #[prof::instrument]                          // each poll is an event
//! async fn fetch(id: u64) -> Item { .. }
//! ```
//!
//! Options, as `tracing::instrument` spells them:
//! - `name = "..."`: the event name (default: the function's name);
//! - `fields(key = expr, ...)`: extra fields, evaluated only while recording;
//! - `skip(arg, ...)` / `skip_all`: arguments not to record.
//!
//! Arguments are recorded when their declared type is one a field can hold without
//! formatting: the integer types, `f32`, `f64`, `bool`, `String` and `str`, or
//! references to them; other arguments are left out (prof never formats with `Debug`
//! on the hot path). For an `async fn`, every poll is an event on the thread that ran
//! it, and the fields are on the first poll's event.

mod attr;
mod expand;

use proc_macro::TokenStream;

/// Records every call of the function as a prof event; see the crate documentation.
#[proc_macro_attribute]
pub fn instrument(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = match syn::parse::<attr::Args>(args) {
        Ok(args) => args,
        Err(e) => return e.to_compile_error().into(),
    };
    let item_fn = match syn::parse::<syn::ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let mut out = proc_macro2::TokenStream::from(item);
            let e = syn::Error::new(
                e.span(),
                "#[prof::instrument] applies to functions and methods",
            );
            out.extend(e.to_compile_error());
            return out.into();
        }
    };
    match expand::instrument(args, item_fn) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
