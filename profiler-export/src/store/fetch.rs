//! Reading an object-storage logdir: its `.xplane.pb` objects copied down to a local
//! directory laid out as the remote one, which the local readers then read.

use std::path::{Path, PathBuf};

use futures_util::future::join_all;
use futures_util::TryStreamExt;
use object_store::path::Path as Key;
use object_store::ObjectStoreExt;
use profiler_core::{Error, ErrorKind, Result};

use super::client::{block_on, cause, connect};
use super::url::ObjectUrl;
use crate::atomic::write_atomic;

/// Copies every `.xplane.pb` object at or under `url` (one file, a run, a whole
/// logdir) into `into`, keeping each object's path below `url`, and returns the local
/// path that stands for `url`: `into` itself, or the file when `url` names one
/// object. Files are written atomically; objects other than `.xplane.pb` files are
/// not read.
///
/// # Errors
/// [`ErrorKind::Unavailable`] naming the URL and why (`access denied (403)`, `DNS
/// lookup failed`, …); [`ErrorKind::InvalidArgument`] when nothing is there;
/// [`ErrorKind::Io`] naming a local file that could not be written.
pub fn fetch(url: &ObjectUrl, into: &Path) -> Result<PathBuf> {
    let store = connect(url)?;
    let unavailable = |what: &ObjectUrl, e: object_store::Error| {
        Error::new(
            ErrorKind::Unavailable,
            format!("cannot read {what}: {}", cause(&e)),
        )
        .with_source(e)
    };
    block_on(async {
        let prefix = Key::from(url.prefix());
        let listed: Vec<_> = store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| unavailable(url, e))?;
        let mut wanted: Vec<(Key, PathBuf)> = listed
            .into_iter()
            .filter(|meta| meta.location.as_ref().ends_with(".xplane.pb"))
            .filter_map(|meta| {
                let rel = meta.location.prefix_match(&prefix)?;
                let mut local = into.to_path_buf();
                for part in rel {
                    local.push(part.as_ref());
                }
                Some((meta.location, local))
            })
            .collect();
        let mut standing_for = into.to_path_buf();
        if wanted.is_empty() && url.prefix().ends_with(".xplane.pb") {
            // The URL names one object.
            let name = url.prefix().rsplit('/').next().unwrap_or("host.xplane.pb");
            standing_for = into.join(name);
            wanted.push((prefix.clone(), standing_for.clone()));
        }
        if wanted.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{url} holds no .xplane.pb objects"),
            ));
        }
        let downloads = wanted.into_iter().map(|(key, local)| {
            let store = &store;
            async move {
                let object = url.at_key(key.as_ref());
                let bytes = store
                    .get(&key)
                    .await
                    .map_err(|e| unavailable(&object, e))?
                    .bytes()
                    .await
                    .map_err(|e| unavailable(&object, e))?;
                if let Some(dir) = local.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| Error::io("cannot create the directory", dir, e))?;
                }
                write_atomic(&local, &bytes).map_err(|e| Error::io("cannot write", &local, e))
            }
        });
        join_all(downloads)
            .await
            .into_iter()
            .collect::<Result<Vec<()>>>()?;
        Ok(standing_for)
    })?
}
