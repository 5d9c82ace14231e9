//! Publishing a run written locally to an object-storage logdir: nothing half-written
//! (each object appears whole or not at all), nothing overwritten (create-only PUTs,
//! the next free run name when the name is taken), nothing lost (the local run is
//! kept, and named, when the upload fails).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::join_all;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};
use profiler_core::{Error, ErrorKind, Result};

use super::client::{block_on, cause, connect};
use super::url::ObjectUrl;

/// Files at least this large, other than `.xplane.pb` files, are uploaded in parts
/// (the whole-session `.pftrace` of a cut profile); smaller ones in one PUT. A
/// `.xplane.pb` is always one PUT: it is at most 2 GiB after the cut, within one PUT's
/// 5 GiB, and a GCS object put whole keeps the MD5 XProf checks its cache with.
pub const MULTIPART_FROM: u64 = 32 << 20;

/// Run names tried after the first is taken: `<run>_1` … `<run>_999`, as a local
/// logdir names them.
const MAX_RUN_SUFFIX: u32 = 1000;
/// Parts of a multipart upload in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// A run published to object storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishedRun {
    /// The run's URL: `<runs>/<run>`.
    pub run: ObjectUrl,
    /// The URL of every file, in the order of the local run's files.
    pub files: Vec<ObjectUrl>,
}

/// Uploads the local run directory `local_run` (its files, named as
/// [`crate::logdir::RunDir`] names them) to `runs` (a logdir's `plugins/profile`) as
/// `<runs>/<run>/…`, where `<run>` is the local run's name, or
/// `<run>_1`, `<run>_2`, … when another writer has that run's first `.xplane.pb`. `files`
/// lists the files to upload, `.xplane.pb` files first; the first one claims the run.
///
/// Each `.xplane.pb` (and any file under [`MULTIPART_FROM`]) is one create-only PUT; a
/// larger file is a multipart upload, aborted on any error, so it too appears whole or
/// not at all. After the first file the others go concurrently. Failed requests are
/// retried a bounded number of times.
///
/// The local run is left as it is: the caller removes it once this returns `Ok`.
///
/// # Errors
/// [`ErrorKind::Unavailable`] (or [`ErrorKind::Unauthenticated`] for refused
/// credentials) naming the object's URL, why (`access denied (403)`, `DNS lookup
/// failed`, `timed out`, …) and the local run that keeps the profile, with the store's
/// error as its source.
pub fn publish_run(local_run: &Path, files: &[PathBuf], runs: &ObjectUrl) -> Result<PublishedRun> {
    publish(local_run, files, runs).map_err(|f| kept(f, "the profile is", local_run))
}

/// Uploads each of `files` (under the local directory `root`) to `dest`, keeping its
/// path below `root`: create-only, concurrently, each whole (as [`publish_run`] puts
/// them). For files that are not a run: `prof-convert --out URL`'s conversions.
///
/// # Errors
/// As [`publish_run`], naming `root` as where the files are kept; an object already
/// at one of the names fails that file, and is left as it was.
pub fn publish_files(root: &Path, files: &[PathBuf], dest: &ObjectUrl) -> Result<Vec<ObjectUrl>> {
    let uploads = || -> std::result::Result<Vec<ObjectUrl>, Failure> {
        let store = connect(dest)?;
        let mut items = Vec::with_capacity(files.len());
        for file in files {
            let rel = file.strip_prefix(root).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("{} is not in {}", file.display(), root.display()),
                )
            })?;
            items.push((
                file.as_path(),
                dest.join(&rel.to_string_lossy().replace('\\', "/")),
            ));
        }
        block_on(put_all(&store, &items))??;
        Ok(items.into_iter().map(|(_, url)| url).collect())
    };
    uploads().map_err(|f| kept(f, "the files are", root))
}

/// Every file to its URL, create-only, concurrently; every upload runs to its end
/// and the first failure is the one reported.
async fn put_all(
    store: &Arc<dyn ObjectStore>,
    items: &[(&Path, ObjectUrl)],
) -> std::result::Result<(), Failure> {
    let uploads = items.iter().map(|(file, url)| async move {
        match put_file(store, file, url).await {
            Ok(()) => Ok(()),
            Err(Put::Taken) => Err(Failure {
                kind: ErrorKind::Unavailable,
                message: format!("cannot upload {url}: another writer put an object there first"),
                source: None,
            }),
            Err(Put::Failed(e)) => Err(e),
        }
    });
    join_all(uploads)
        .await
        .into_iter()
        .collect::<std::result::Result<Vec<()>, Failure>>()
        .map(drop)
}

/// The failure as an error that names where the files are kept.
fn kept(f: Failure, what: &str, local: &Path) -> Error {
    let error = Error::new(
        f.kind,
        format!("{}; {what} kept in {}", f.message, local.display()),
    );
    match f.source {
        Some(source) => error.with_source(source),
        None => error,
    }
}

/// Why an upload failed, before the local copy is named.
struct Failure {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure {
            kind: e.kind(),
            message: e.to_string(),
            source: std::error::Error::source(&e).map(|s| s.to_string().into()),
        }
    }
}

fn publish(
    local_run: &Path,
    files: &[PathBuf],
    profiles: &ObjectUrl,
) -> std::result::Result<PublishedRun, Failure> {
    let store = connect(profiles)?;
    let stamp = local_run
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "the local run has no name"))?;
    let mut names = Vec::with_capacity(files.len());
    for file in files {
        let rel = file.strip_prefix(local_run).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is not in the run {}",
                    file.display(),
                    local_run.display()
                ),
            )
        })?;
        names.push(rel.to_string_lossy().replace('\\', "/"));
    }
    let Some((first, rest)) = files.split_first() else {
        return Err(
            Error::new(ErrorKind::InvalidArgument, "the run has no files to upload").into(),
        );
    };
    block_on(async {
        // Claim a run: the first file's create-only PUT decides whose the run is.
        let mut run = None;
        for n in 0..MAX_RUN_SUFFIX {
            let name = if n == 0 {
                stamp.clone()
            } else {
                format!("{stamp}_{n}")
            };
            let url = profiles.join(&name);
            match put_file(&store, first, &url.join(&names[0])).await {
                Ok(()) => {
                    run = Some(url);
                    break;
                }
                Err(Put::Taken) => continue,
                Err(Put::Failed(e)) => return Err(e),
            }
        }
        let run = run.ok_or_else(|| Failure {
            kind: ErrorKind::Unavailable,
            message: format!("more than {MAX_RUN_SUFFIX} runs named {stamp} in {profiles}"),
            source: None,
        })?;
        let rest: Vec<(&Path, ObjectUrl)> = rest
            .iter()
            .zip(&names[1..])
            .map(|(file, name)| (file.as_path(), run.join(name)))
            .collect();
        put_all(&store, &rest).await?;
        let files = names.iter().map(|n| run.join(n)).collect();
        Ok(PublishedRun { run, files })
    })?
}

enum Put {
    /// A create-only PUT found an object there.
    Taken,
    Failed(Failure),
}

async fn put_file(
    store: &Arc<dyn ObjectStore>,
    file: &Path,
    url: &ObjectUrl,
) -> std::result::Result<(), Put> {
    let key = Key::from(url.prefix());
    let read_failed = |e: std::io::Error| {
        Put::Failed(Error::io("cannot read the file to upload", file, e).into())
    };
    let len = std::fs::metadata(file).map_err(read_failed)?.len();
    let is_xplane = file.to_string_lossy().ends_with(".xplane.pb");
    if is_xplane || len < MULTIPART_FROM {
        let bytes = std::fs::read(file).map_err(read_failed)?;
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        return match store.put_opts(&key, PutPayload::from(bytes), options).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => Err(Put::Taken),
            Err(e) => Err(Put::Failed(failed(url, e))),
        };
    }
    // The whole-session trace of a cut profile, past one PUT's comfort: in parts,
    // invisible until completed, aborted on any error so no parts are left behind.
    let upload = store
        .put_multipart(&key)
        .await
        .map_err(|e| Put::Failed(failed(url, e)))?;
    let mut writer = WriteMultipart::new(upload);
    let sent = async {
        use std::io::Read;
        let mut input = std::fs::File::open(file).map_err(read_failed)?;
        let mut chunk = vec![0u8; 8 << 20];
        loop {
            let n = input.read(&mut chunk).map_err(read_failed)?;
            if n == 0 {
                return Ok(());
            }
            writer
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(|e| Put::Failed(failed(url, e)))?;
            writer.write(&chunk[..n]);
        }
    }
    .await;
    match sent {
        Ok(()) => writer
            .finish()
            .await
            .map(drop)
            .map_err(|e| Put::Failed(failed(url, e))),
        Err(e) => {
            // The abort's own failure adds nothing to the first.
            drop(writer.abort().await);
            Err(e)
        }
    }
}

fn failed(url: &ObjectUrl, e: object_store::Error) -> Failure {
    let kind = match e {
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => ErrorKind::Unauthenticated,
        _ => ErrorKind::Unavailable,
    };
    Failure {
        kind,
        message: format!("cannot upload {url}: {}", cause(&e)),
        source: Some(Box::new(e)),
    }
}
