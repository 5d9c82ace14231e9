//! Where a capture's file may go, and the file itself.
//!
//! A client names `repository_root`; [`Writes`] says what the server makes of it. A
//! hidden temporary file is created in the final directory before recording starts,
//! so a place the server cannot write fails the request instead of the capture; it is
//! removed when the capture ends, which then writes its files as a logdir's run would
//! be written (`profiler_export::fit`: a profile past XProf's 2 GiB keeps its latest
//! steps in the `.xplane.pb`, the whole session in a `.pftrace` beside it).

use std::fs::{self, File};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use profiler_core::error::report;
use profiler_core::options::DEFAULT_MAX_XPLANE_BYTES;
use profiler_core::Profile;
use tonic::Status;

use super::quote::quote;

/// Where the server writes the files clients ask it to write (a `ProfileRequest`
/// without `emit_xspace`, as TensorBoard/XProf's Capture button and
/// `jax.collect_profile` send).
///
/// Unless [`ServerBuilder::writes`](super::ServerBuilder::writes) says otherwise, a
/// server on a loopback address writes [`Anywhere`](Writes::Anywhere), as JAX's and
/// TensorFlow's do, and a server bound beyond loopback writes
/// [`Nowhere`](Writes::Nowhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Under any `repository_root` the process can write to, a relative one taken
    /// from the process's working directory: TSL's behaviour. XProf sends
    /// `LOGDIR/plugins/profile` with TensorBoard's own logdir, which the process
    /// cannot know, so this is what keeps the Capture button working.
    Anywhere,
    /// Only inside this directory (created when the server starts): a relative
    /// `repository_root` is taken from it, an absolute one must lie in it, and one
    /// that leads out of it (through `..` or a symbolic link) is refused with
    /// PERMISSION_DENIED.
    Under(PathBuf),
    /// Nowhere: requests that would have the server write are refused with
    /// PERMISSION_DENIED; `emit_xspace` captures (`capture-profile`'s) still work, as
    /// they return the profile instead.
    Nowhere,
}

impl Writes {
    /// The policy when none is given: TSL's on loopback, where every client is a user
    /// of this machine; none beyond it, where any host that reaches the port could
    /// otherwise write wherever the process can.
    pub(super) fn default_for(ip: std::net::IpAddr) -> Writes {
        if ip.is_loopback() {
            Writes::Anywhere
        } else {
            Writes::Nowhere
        }
    }

    /// Creates an [`Under`](Writes::Under) directory and makes its path canonical, so
    /// requests compare against what the file system resolves.
    pub(super) fn prepare(self) -> io::Result<Writes> {
        match self {
            Writes::Under(dir) => {
                fs::create_dir_all(&dir)?;
                Ok(Writes::Under(dir.canonicalize()?))
            }
            other => Ok(other),
        }
    }

    /// The directory a client's `repository_root` names, if this policy lets the
    /// server write there.
    pub(super) fn resolve(&self, root: &str) -> Result<PathBuf, Status> {
        match self {
            Writes::Anywhere => Ok(PathBuf::from(root)),
            Writes::Nowhere => Err(Status::permission_denied(
                "this server writes no files (it listens beyond loopback and was not given a directory: ServerBuilder::confine_writes_to); ask for emit_xspace, as capture-profile does",
            )),
            Writes::Under(base) => confine(base, root),
        }
    }

    /// Checks a directory just created for a capture again: a symbolic link put in
    /// place since [`resolve`](Writes::resolve) must not carry the file elsewhere.
    fn recheck(&self, dir: &Path) -> Result<PathBuf, Status> {
        match self {
            Writes::Under(base) => {
                let real = dir.canonicalize().map_err(|e| cannot_write(dir, &e))?;
                if !real.starts_with(base) {
                    return Err(outside(&dir.to_string_lossy()));
                }
                Ok(real)
            }
            _ => Ok(dir.to_path_buf()),
        }
    }
}

fn outside(root: &str) -> Status {
    Status::permission_denied(format!(
        "repository_root {} is outside the directory this server writes to (ServerBuilder::confine_writes_to); a relative root is taken from that directory",
        quote(root)
    ))
}

/// `root` inside the canonical directory `base`: relative roots are taken from it;
/// the deepest part of the path that exists must resolve inside it, and the rest can
/// only descend.
fn confine(base: &Path, root: &str) -> Result<PathBuf, Status> {
    let requested = Path::new(root);
    if requested
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(outside(root));
    }
    let path = base.join(requested);
    for existing in path.ancestors() {
        let Ok(real) = existing.canonicalize() else {
            continue;
        };
        if !real.starts_with(base) {
            return Err(outside(root));
        }
        let rest = path.strip_prefix(existing).map_err(|_| outside(root))?;
        return Ok(real.join(rest));
    }
    Err(outside(root))
}

fn cannot_write(dir: &Path, e: &io::Error) -> Status {
    // INTERNAL, as JAX's and TensorFlow's servers answer an unwritable root.
    Status::internal(format!(
        "cannot write under {}: {e}",
        quote(&dir.to_string_lossy())
    ))
}

/// Where a capture will be written: checked writable (a temporary file made there)
/// before recording starts.
#[derive(Debug)]
pub(super) struct Output {
    temp: PathBuf,
    file: PathBuf,
    /// Held open until the capture ends, so the temporary stays what it was made as.
    handle: Option<File>,
    /// The session directory, when this capture created it (removed again if empty).
    made_dir: Option<PathBuf>,
    done: bool,
}

/// Distinguishes temporaries within the process.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl Output {
    /// Creates `file`'s directory and a temporary beside it, failing now rather than
    /// after the capture when the place cannot be written.
    pub(super) fn create(file: &Path, writes: &Writes) -> Result<Output, Status> {
        let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
            return Err(Status::internal("no directory to write the capture to"));
        };
        let existed = dir.is_dir();
        fs::create_dir_all(dir).map_err(|e| cannot_write(dir, &e))?;
        let dir = writes.recheck(dir)?;
        let made_dir = (!existed).then(|| dir.clone());
        let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
        // A short fixed name: the final one may already use the whole NAME_MAX.
        let temp = dir.join(format!(".prof-capture-{}-{seq}.tmp", std::process::id()));
        let handle = File::options()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| {
                if let Some(made) = &made_dir {
                    let _ = fs::remove_dir(made);
                }
                cannot_write(&dir, &e)
            })?;
        Ok(Output {
            temp,
            file: dir.join(name),
            handle: Some(handle),
            made_dir,
            done: false,
        })
    }

    /// Writes the profile's files (atomically, each under a temporary name first).
    pub(super) fn commit(mut self, profile: &mut Profile) -> Result<(), Status> {
        drop(self.handle.take());
        let _ = fs::remove_file(&self.temp);
        profiler_export::fit::write_xplane(&self.file, profile, DEFAULT_MAX_XPLANE_BYTES).map_err(
            |e| {
                Status::internal(format!(
                    "cannot write {}: {}",
                    quote(&self.file.to_string_lossy()),
                    report(&e)
                ))
            },
        )?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let _ = fs::remove_file(&self.temp);
        if let Some(dir) = &self.made_dir {
            let _ = fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_writes_anywhere_and_beyond_it_nowhere() {
        use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
        assert_eq!(
            Writes::default_for(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Writes::Anywhere
        );
        assert_eq!(
            Writes::default_for(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            Writes::Anywhere
        );
        assert_eq!(
            Writes::default_for(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            Writes::Nowhere
        );
        assert_eq!(
            Writes::default_for(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
            Writes::Nowhere
        );
        let denied = Writes::Nowhere.resolve("/tmp/x").expect_err("refused");
        assert_eq!(denied.code(), tonic::Code::PermissionDenied);
    }

    #[test]
    fn a_confined_root_stays_inside_its_directory() {
        let dir = tempfile::tempdir().expect("tmp");
        let writes = Writes::Under(dir.path().join("profiles"))
            .prepare()
            .expect("prepare");
        let Writes::Under(base) = &writes else {
            panic!("confined")
        };
        assert_eq!(
            writes.resolve("logs/plugins/profile").expect("relative"),
            base.join("logs/plugins/profile")
        );
        let inside = base.join("a").to_string_lossy().into_owned();
        assert_eq!(
            writes.resolve(&inside).expect("absolute inside"),
            base.join("a")
        );
        for root in ["/etc", "../x", "a/../../x", "/"] {
            let status = writes.resolve(root).expect_err(root);
            assert_eq!(status.code(), tonic::Code::PermissionDenied, "{root}");
        }
    }
}
