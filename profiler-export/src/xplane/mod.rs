//! `.xplane.pb` files: one [`XSpace`] serialized as protobuf.
//!
//! Files from elsewhere are read defensively (regular files only, within
//! [`ReadLimits`]) and streamed: see [`read_with`]. For conversion, [`read_lazy`]
//! keeps each line's events encoded until they are walked, so converting a file takes
//! about its size in memory rather than five to ten times it.

pub(crate) mod encode;
mod fields;
mod lazy;
mod read;

use std::path::{Path, PathBuf};

use profiler_core::xspace::XSpace;
use profiler_core::{Error, Result};

use crate::atomic::write_streaming;
use crate::sink::Sink;

pub(crate) use lazy::EncodedEvents;
pub use lazy::LazySpace;
pub use read::{ReadLimits, DEFAULT_MAX_BYTES, DEFAULT_MAX_STRINGS};

/// File extension of XProf's profiles.
pub const EXTENSION: &str = "xplane.pb";

/// The largest `.xplane.pb` XProf and TensorBoard can open: they read a host's file as
/// one protobuf message, which protobuf caps at 2 GiB less a byte.
pub use profiler_core::options::XPROF_MAX_BYTES;

/// Serializes a space as TensorFlow and JAX write it (the bytes prost's encoder
/// writes, computing each event's length once: see `encode.rs`).
pub fn encode(space: &XSpace) -> Vec<u8> {
    encode::encode(space)
}

/// Parses a `.xplane.pb` (from prof, JAX or TensorFlow), as [`read_with`] reads a
/// file: unknown fields of every wire type are skipped, and events no profile can hold
/// are left out, a warning in the space's `warnings` saying how many.
///
/// # Errors
/// [`profiler_core::ErrorKind::InvalidArgument`] when the bytes are not an XSpace.
pub fn decode(bytes: &[u8]) -> Result<XSpace> {
    read::decode_bytes(bytes)
}

/// Writes a space to `path` atomically, encoded a block at a time into the temporary
/// file: the file's bytes are never all in memory. A space that would encode past
/// [`XPROF_MAX_BYTES`] is refused, naming both sizes, before anything is written:
/// XProf could not open it. [`crate::fit`] writes such a profile into a logdir: the
/// latest steps that fit, and the whole session as Perfetto beside them.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path when the file cannot be written;
/// [`profiler_core::ErrorKind::InvalidArgument`] when the space is too large.
pub fn write(path: &Path, space: &XSpace) -> Result<()> {
    let layout = encode::Layout::of(space, encode::Keep::All);
    if layout.total() > XPROF_MAX_BYTES {
        return Err(Error::new(
            profiler_core::ErrorKind::InvalidArgument,
            format!(
                "{} not written: the profile encodes to {} bytes, over the {XPROF_MAX_BYTES} \
                 bytes XProf reads in one file (protobuf's 2 GiB limit on a message); write it \
                 to a logdir (which keeps the latest steps that fit, and the whole session as \
                 Perfetto beside them), or as Perfetto",
                path.display(),
                layout.total()
            ),
        ));
    }
    write_layout(path, space, &layout)
}

/// A `.xplane.pb` file: the [`Sink`] of [`write()`] (the whole space, or an error when
/// XProf could not open it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XPlaneFile {
    path: PathBuf,
}

impl XPlaneFile {
    /// The file at `path` (`<host>.xplane.pb` in a logdir's run).
    pub fn new(path: impl Into<PathBuf>) -> XPlaneFile {
        XPlaneFile { path: path.into() }
    }

    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Sink for XPlaneFile {
    type Report = ();

    fn export(&self, space: &XSpace) -> Result<()> {
        write(&self.path, space)
    }
}

/// Writes `space` to `path` atomically as `layout` lays it out.
pub(crate) fn write_layout(path: &Path, space: &XSpace, layout: &encode::Layout) -> Result<()> {
    write_streaming(path, |out| encode::encode_to(space, layout, out))
        .map_err(|e| Error::io("cannot write the .xplane.pb file", path, e))
}

/// Reads and parses the `.xplane.pb` at `path`, within the default [`ReadLimits`].
///
/// # Errors
/// As [`read_with`].
pub fn read(path: &Path) -> Result<XSpace> {
    read_with(path, &ReadLimits::default())
}

/// Reads and parses the `.xplane.pb` at `path` (from prof, JAX or TensorFlow),
/// decoding it as it is read. Unknown fields of every wire type are skipped, groups
/// included, as protobuf skips them. An event that no profile can hold (an offset or
/// occurrence count beyond ±2^62) is left out and the rest read; a warning appended to
/// the space's `warnings` says how many were and why. Only a regular file is read (not a
/// FIFO, a device or a directory, checked on the opened file), and only if it is at
/// most `limits.max_bytes` long; `limits.max_strings` of its host names, errors and
/// warnings are kept (a warning says how many more there were).
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] when the file cannot be opened or read;
/// [`profiler_core::ErrorKind::InvalidArgument`] naming the file when it is not a
/// regular file, is over the limit, or is not an XSpace.
pub fn read_with(path: &Path, limits: &ReadLimits) -> Result<XSpace> {
    read::read_space(path, limits)
}

/// Reads the `.xplane.pb` at `path` for conversion: as [`read_with`], but each line's
/// events stay encoded until [`Timeline::lazy`](crate::timeline::Timeline::lazy)
/// walks them (each is decoded once here, so a bad event fails the read).
///
/// # Errors
/// As [`read_with`].
pub fn read_lazy(path: &Path, limits: &ReadLimits) -> Result<LazySpace> {
    let read = read::read_encoded(path, limits)?;
    Ok(LazySpace::new(read.space, read.encoded, read.notes))
}
