//! A logdir's name: a local path, or an object-storage URL and its parts.

use std::fmt;
use std::path::{Path, PathBuf};

use profiler_core::{Error, ErrorKind, Result};

/// A logdir: a local directory or an object-storage URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A local directory (a plain path, or a `file://` URL's path).
    Local(PathBuf),
    /// An object-storage URL.
    Object(ObjectUrl),
}

/// The object stores a logdir URL can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Amazon S3 and S3-compatible stores: `s3://` (or `s3a://`).
    S3,
    /// Google Cloud Storage: `gs://`, the one remote scheme XProf reads.
    Gcs,
    /// Azure Blob Storage: `az://container/...` (or `abfs://`, `abfss://`).
    Azure,
}

impl Scheme {
    /// The scheme as written in URLs prof prints (`s3`, `gs`, `az`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::S3 => "s3",
            Scheme::Gcs => "gs",
            Scheme::Azure => "az",
        }
    }

    fn parse(scheme: &str) -> Option<Scheme> {
        match scheme {
            "s3" | "s3a" => Some(Scheme::S3),
            "gs" => Some(Scheme::Gcs),
            "az" | "abfs" | "abfss" | "azure" => Some(Scheme::Azure),
            _ => None,
        }
    }
}

/// An object-storage location: a scheme, a bucket (an Azure container) and a prefix
/// of `/`-separated segments, none of them empty, `.` or `..`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectUrl {
    scheme: Scheme,
    bucket: String,
    prefix: String,
}

impl ObjectUrl {
    /// The store.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The bucket (an Azure container).
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix within the bucket, without leading or trailing `/`; empty for
    /// the bucket's root.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// This location with `/`-separated `path` appended.
    pub fn join(&self, path: &str) -> ObjectUrl {
        let mut prefix = self.prefix.clone();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
        }
        ObjectUrl {
            prefix,
            ..self.clone()
        }
    }

    /// The object `key` (a full key, from the bucket's root) of this URL's bucket.
    #[cfg(feature = "object-store")]
    pub(crate) fn at_key(&self, key: &str) -> ObjectUrl {
        ObjectUrl {
            prefix: key.trim_matches('/').to_owned(),
            ..self.clone()
        }
    }

    /// Whether XProf 2.x reads this URL as a logdir: `gs://` only (it takes `s3://`
    /// for a local path, openxla/xprof#499). Bring other runs down first, with
    /// `prof-convert URL --out DIR`.
    pub fn xprof_reads(&self) -> bool {
        self.scheme == Scheme::Gcs
    }

    /// Where a run for this URL is written before it is uploaded, and kept when the
    /// upload fails: `<temp>/prof-logdirs/<scheme>/<bucket>/<prefix>` (the system's
    /// temporary directory, `TMPDIR` on Unix), a local logdir laid out as the remote
    /// one.
    pub fn staging_dir(&self) -> PathBuf {
        let mut dir = std::env::temp_dir()
            .join("prof-logdirs")
            .join(self.scheme.as_str())
            .join(&self.bucket);
        for part in self.prefix.split('/').filter(|p| !p.is_empty()) {
            dir.push(part);
        }
        dir
    }
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.bucket)?;
        if !self.prefix.is_empty() {
            write!(f, "/{}", self.prefix)?;
        }
        Ok(())
    }
}

impl Location {
    /// What `logdir` names, refusing an object-storage URL that this build cannot
    /// write (no `object-store` feature).
    ///
    /// ```
    /// use profiler_export::store::Location;
    /// use std::path::Path;
    ///
    /// let local = Location::parse(Path::new("logs")).unwrap();
    /// assert_eq!(local, Location::Local("logs".into()));
    /// let Location::Object(url) = Location::parse(Path::new("gs://b/team/logs/")).unwrap() else {
    ///     panic!("a URL");
    /// };
    /// assert_eq!((url.bucket(), url.prefix()), ("b", "team/logs"));
    /// assert_eq!(url.to_string(), "gs://b/team/logs");
    /// assert!(Location::parse(Path::new("ftp://host/logs")).is_err());
    /// ```
    ///
    /// # Errors
    /// As [`Location::parse`]; [`ErrorKind::InvalidArgument`] naming the URL and the
    /// feature for a URL in a build without `object-store`.
    pub fn of(logdir: &Path) -> Result<Location> {
        let location = Location::parse(logdir)?;
        if let Location::Object(url) = &location {
            if !cfg!(feature = "object-store") {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "logdir {url} is an object-storage URL, and this build writes local \
                         logdirs only: build prof with the feature `object-store` (the \
                         installed capture-profile, prof-convert and prof-diff have it), or \
                         give a local directory"
                    ),
                ));
            }
        }
        Ok(location)
    }

    /// What `logdir` names, whatever this build can write: a URL when its text starts
    /// with `scheme://` (or is a known scheme followed by `:/`, a URL whose `//` a path
    /// join folded), a local path otherwise.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for an unknown scheme, a URL without a bucket,
    /// a `file://` URL naming another host, a segment that is empty, `.` or `..`, or a
    /// path that is not UTF-8 and looks like a URL.
    pub fn parse(logdir: &Path) -> Result<Location> {
        let bytes = logdir.as_os_str().as_encoded_bytes();
        let Some(colon) = bytes.iter().position(|&b| b == b':') else {
            return Ok(Location::Local(logdir.to_path_buf()));
        };
        let scheme = &bytes[..colon];
        let looks_like_scheme = !scheme.is_empty()
            && scheme[0].is_ascii_alphabetic()
            && scheme
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
        let rest = &bytes[colon + 1..];
        if !looks_like_scheme || !rest.starts_with(b"/") {
            return Ok(Location::Local(logdir.to_path_buf()));
        }
        let Some(text) = logdir.to_str() else {
            return Err(invalid(logdir, "is not UTF-8"));
        };
        let scheme = text[..colon].to_ascii_lowercase();
        let Some(after) = text[colon + 1..].strip_prefix("//") else {
            // `gs:/b/logs`: a URL a path join folded, never a directory named `gs:`.
            return match Scheme::parse(&scheme) {
                Some(_) => Err(invalid(
                    logdir,
                    &format!("has one slash after `{scheme}:`: write {scheme}://bucket/path"),
                )),
                None => Ok(Location::Local(logdir.to_path_buf())),
            };
        };
        if scheme == "file" {
            return match after.split_once('/') {
                Some(("" | "localhost", path)) => {
                    Ok(Location::Local(PathBuf::from(format!("/{path}"))))
                }
                _ => Err(invalid(
                    logdir,
                    "names another host: file:// URLs are local",
                )),
            };
        }
        let Some(parsed) = Scheme::parse(&scheme) else {
            return Err(invalid(
                logdir,
                &format!(
                    "has the scheme `{scheme}`: a logdir is a local path, a file:// URL, or \
                     s3://, gs:// or az:// followed by a bucket"
                ),
            ));
        };
        let (bucket, prefix) = after.split_once('/').unwrap_or((after, ""));
        if bucket.is_empty() {
            return Err(invalid(
                logdir,
                &format!("names no bucket: write {scheme}://bucket/path"),
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        if !prefix.is_empty()
            && prefix
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
        {
            return Err(invalid(logdir, "has an empty, `.` or `..` segment"));
        }
        Ok(Location::Object(ObjectUrl {
            scheme: parsed,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        }))
    }
}

fn invalid(logdir: &Path, what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("logdir {} {what}", logdir.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(s: &str) -> Result<Location> {
        Location::parse(Path::new(s))
    }

    fn url(s: &str) -> ObjectUrl {
        match parse(s).expect(s) {
            Location::Object(u) => u,
            Location::Local(p) => panic!("{s} read as the local path {}", p.display()),
        }
    }

    #[test]
    fn urls_are_never_local_paths() {
        assert_eq!(url("s3://b/logs").scheme(), Scheme::S3);
        assert_eq!(url("s3a://b/logs").scheme(), Scheme::S3);
        assert_eq!(url("GS://b/logs").scheme(), Scheme::Gcs);
        assert_eq!(url("az://c/x/y").scheme(), Scheme::Azure);
        assert_eq!(url("abfss://c/x").scheme(), Scheme::Azure);
        assert_eq!(url("gs://b").prefix(), "");
        assert_eq!(url("gs://b/").prefix(), "");
        assert_eq!(url("s3://b/a/b/c/").prefix(), "a/b/c");
        // Joined as a path would be, the URL stays a URL.
        let joined = Path::new("gs://b/logs").join("plugins/profile");
        assert_eq!(
            url(joined.to_str().expect("UTF-8")).prefix(),
            "logs/plugins/profile"
        );
    }

    #[test]
    fn local_paths_and_file_urls_are_local() {
        for (text, path) in [
            ("logs", "logs"),
            ("/tmp/logs", "/tmp/logs"),
            ("./a:b/logs", "./a:b/logs"),
            ("a:b", "a:b"),
            ("file:///tmp/logs", "/tmp/logs"),
            ("file://localhost/tmp/logs", "/tmp/logs"),
            ("1x://y", "1x://y"),
        ] {
            assert_eq!(
                parse(text).expect(text),
                Location::Local(path.into()),
                "{text}"
            );
        }
    }

    #[test]
    fn malformed_urls_are_refused_with_what_was_wrong() {
        for (text, said) in [
            ("gs:/b/logs", "one slash"),
            ("s3://", "no bucket"),
            ("s3:///logs", "no bucket"),
            ("http://host/logs", "scheme `http`"),
            ("hdfs://nn/logs", "scheme `hdfs`"),
            ("file://other/tmp", "another host"),
            ("s3://b/a//c", "segment"),
            ("s3://b/a/../c", "segment"),
        ] {
            let e = parse(text).expect_err(text);
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{text}");
            assert!(e.to_string().contains(said), "{text}: {e}");
            assert!(e.to_string().contains(text), "{text}: {e}");
        }
    }

    #[test]
    fn staging_mirrors_the_url_without_a_scheme_colon() {
        let dir = url("s3://b/team/logs").staging_dir();
        assert!(
            dir.ends_with("prof-logdirs/s3/b/team/logs"),
            "{}",
            dir.display()
        );
        assert!(!dir.to_string_lossy().contains("s3:"), "{}", dir.display());
        assert_eq!(
            url("s3://b/x").join("plugins/profile/r").prefix(),
            "x/plugins/profile/r"
        );
    }

    #[cfg(not(feature = "object-store"))]
    #[test]
    fn a_build_without_the_feature_refuses_urls() {
        let e = Location::of(Path::new("gs://b/logs")).expect_err("no feature");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("gs://b/logs"), "{e}");
        assert!(e.to_string().contains("object-store"), "{e}");
    }
}
