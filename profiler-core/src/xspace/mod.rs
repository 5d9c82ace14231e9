//! The XSpace data model: the one representation between recording and every output.
//!
//! These are the messages of TSL's `tsl/profiler/protobuf/xplane.proto` (package
//! `tensorflow.profiler`), written by hand with prost so that no `protoc` is needed.
//! Field numbers follow the public schema; a file encoded from these types is read by
//! XProf/TensorBoard exactly like one written by TensorFlow or JAX.
//!
//! An [`XSpace`] holds [`XPlane`]s (one per host or device); a plane holds [`XLine`]s
//! (one per thread or stream) of [`XEvent`]s. Event and stat names are interned per
//! plane in [`XEventMetadata`] / [`XStatMetadata`] maps keyed by id; [`PlaneBuilder`]
//! does that interning for a plane made from scratch, [`Interner`] for one that
//! already has metadata, and [`merge_into_line`] adds events to an existing line.
//! [`tf_op`] spells a stack of annotations as the op XProf files work under,
//! [`HostScopes`] finds what enclosed a moment on a host thread (the stack a launch of
//! device work was made under, the step a sample fell in), and
//! [`device`] builds the planes device tracers add (`/device:GPU:<n>`).

mod builder;
pub mod device;
mod edit;
mod event_encoding;
mod model;
mod ops;
mod scopes;

pub use builder::PlaneBuilder;
pub use edit::{merge_into_line, Interner};
pub use model::*;
pub use ops::tf_op;
pub use scopes::{Enclosing, HostScopes};
