//! A PATH argument that may be an object-storage URL: read through a local copy of its
//! `.xplane.pb` objects, and named by its URL in what the tool prints.

use std::path::{Path, PathBuf};

use profiler_core::Result;
use profiler_export::store::{self, Location};

/// A readable local path for an argument, and what to call it when printing.
pub(crate) struct Readable {
    path: PathBuf,
    /// The local copy of a URL and the URL it stands for; removed on drop.
    copy: Option<(tempfile::TempDir, String)>,
}

impl Readable {
    /// `arg` itself when it is local; for a URL, its objects copied into a temporary
    /// directory (into `into` instead, kept, when given).
    ///
    /// # Errors
    /// A malformed URL, or one that cannot be read (naming it and why).
    pub(crate) fn of(arg: &Path, into: Option<&Path>) -> Result<Readable> {
        let url = match Location::of(arg)? {
            Location::Local(path) => return Ok(Readable { path, copy: None }),
            Location::Object(url) => url,
        };
        if let Some(into) = into {
            let path = store::fetch(&url, into)?;
            return Ok(Readable { path, copy: None });
        }
        let dir = tempfile::Builder::new()
            .prefix("prof-fetched-")
            .tempdir()
            .map_err(|e| {
                profiler_core::Error::io(
                    "cannot create a temporary directory",
                    std::env::temp_dir(),
                    e,
                )
            })?;
        let path = store::fetch(&url, dir.path())?;
        Ok(Readable {
            path,
            copy: Some((dir, url.to_string())),
        })
    }

    /// The local path to read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `text` with the local copy's directory named by its URL, so a URL's output
    /// reads as it would on local files named so.
    pub(crate) fn name_in(&self, text: String) -> String {
        match &self.copy {
            Some((dir, url)) => text.replace(&*dir.path().to_string_lossy(), url),
            None => text,
        }
    }
}
