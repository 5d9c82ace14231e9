//! Where a logdir lives: a local directory, or an object-storage URL (`s3://bucket/prefix`,
//! `gs://bucket/prefix`, `az://container/prefix`).
//!
//! Every place that takes a logdir takes either: [`Location::of`] tells them apart by
//! the text of the path, so `prof::start("gs://b/logs", ..)` never creates a local
//! directory named `gs:`. `file://` URLs and plain paths are local and keep the atomic
//! writer ([`crate::atomic`]).
//!
//! With the `object-store` feature, a run for a URL is written locally first, under
//! [`ObjectUrl::staging_dir`], exactly as a local run is, then published: each file
//! put whole with a create-only PUT, the run taking the next free name when its name
//! is taken, the whole-session `.pftrace` of a cut profile sent in parts and the
//! upload aborted on any error. The local copy is removed once every file is up, and
//! kept, and named in the error, when the upload fails. Readers ([`fetch`]) copy
//! objects down to a local directory and read that. Without the feature a URL is
//! refused with an error that says so, before anything is recorded.

#[cfg(feature = "object-store")]
use profiler_core::{Error, Result};

#[cfg(feature = "object-store")]
mod client;
#[cfg(feature = "object-store")]
mod fetch;
#[cfg(feature = "object-store")]
mod publish;
mod url;

#[cfg(feature = "object-store")]
pub use fetch::fetch;
#[cfg(feature = "object-store")]
pub use publish::{publish_files, publish_run, PublishedRun, MULTIPART_FROM};
pub use url::{Location, ObjectUrl, Scheme};

/// Checks that runs can be written for `url` without writing one: its store's
/// configuration is complete (no request is made: a wrong secret shows at upload,
/// where the run is kept locally) and its staging directory can be made.
///
/// # Errors
/// [`profiler_core::ErrorKind::InvalidArgument`] naming the URL for an incomplete
/// configuration; [`profiler_core::ErrorKind::Io`] naming the staging directory.
#[cfg(feature = "object-store")]
pub fn check(url: &ObjectUrl) -> Result<()> {
    client::connect(url)?;
    let staging = url.staging_dir();
    std::fs::create_dir_all(&staging)
        .map_err(|e| Error::io("cannot create the local staging logdir", &staging, e))
}
