//! `.xplane.pb` files: one [`XSpace`] serialized as protobuf.

use std::path::Path;

use profiler_core::xspace::XSpace;
use profiler_core::{Error, Result};
use prost::Message;

use crate::atomic::write_atomic;

/// Serializes a space as TensorFlow and JAX write it.
pub fn encode(space: &XSpace) -> Vec<u8> {
    space.encode_to_vec()
}

/// Parses a `.xplane.pb` (from prof, JAX or TensorFlow; unknown fields are skipped).
///
/// # Errors
/// [`profiler_core::ErrorKind::InvalidArgument`] when the bytes are not an XSpace.
pub fn decode(bytes: &[u8]) -> Result<XSpace> {
    XSpace::decode(bytes).map_err(|e| {
        Error::new(
            profiler_core::ErrorKind::InvalidArgument,
            format!("not an XSpace protobuf: {e}"),
        )
    })
}

/// Writes a space to `path` atomically.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path when the file cannot be written.
pub fn write(path: &Path, space: &XSpace) -> Result<()> {
    write_atomic(path, &encode(space))
        .map_err(|e| Error::io("cannot write the .xplane.pb file", path, e))
}

/// Reads and parses the `.xplane.pb` at `path`.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] when the file cannot be read,
/// [`profiler_core::ErrorKind::InvalidArgument`] when it is not an XSpace.
pub fn read(path: &Path) -> Result<XSpace> {
    let bytes =
        std::fs::read(path).map_err(|e| Error::io("cannot read the .xplane.pb file", path, e))?;
    decode(&bytes)
}
