//! Errors, with the status codes TensorFlow and JAX users know.

use std::fmt;
use std::path::PathBuf;

use crate::profile::Profile;

/// What kind of failure an [`Error`] is; the names are those of TensorFlow's status
/// codes, which `tf.profiler` and `jax.profiler` raise in the same situations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An option, a key or a value is not valid.
    InvalidArgument,
    /// A profiling session is already running.
    AlreadyExists,
    /// The call is not valid in the profiler's current state (stop without start).
    FailedPrecondition,
    /// Reading or writing files failed.
    Io,
    /// A peer (an OTLP collector, a profiler server) could not be reached.
    Unavailable,
    /// A peer did not answer within the stated timeout.
    DeadlineExceeded,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::AlreadyExists => "AlreadyExists",
            ErrorKind::FailedPrecondition => "FailedPrecondition",
            ErrorKind::Io => "Io",
            ErrorKind::Unavailable => "Unavailable",
            ErrorKind::DeadlineExceeded => "DeadlineExceeded",
        })
    }
}

/// A profiler error. When it happens after recording (writing the logdir failed),
/// the recorded profile travels inside it: see [`Error::profile`].
pub struct Error {
    kind: ErrorKind,
    message: String,
    path: Option<PathBuf>,
    source: Option<std::io::Error>,
    profile: Option<Box<Profile>>,
}

impl Error {
    /// An error of `kind` with a message that says what was wrong.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            path: None,
            source: None,
            profile: None,
        }
    }

    /// An I/O failure on `path`.
    pub fn io(
        message: impl Into<String>,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Error {
        Error {
            kind: ErrorKind::Io,
            message: message.into(),
            path: Some(path.into()),
            source: Some(source),
            profile: None,
        }
    }

    /// Attaches the profile that was recorded before this error happened.
    pub fn with_profile(mut self, profile: Profile) -> Error {
        self.profile = Some(Box::new(profile));
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file or directory involved, for I/O errors.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// The profile recorded before the error, when there was one: a failed write loses
    /// no data.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_deref()
    }

    /// Takes the profile recorded before the error, when there was one.
    pub fn into_profile(self) -> Option<Profile> {
        self.profile.map(|p| *p)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(path) = &self.path {
            write!(f, " ({})", path.display())?;
        }
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        if self.profile.is_some() {
            f.write_str("; the recorded profile is kept in this error (Error::into_profile)")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("path", &self.path)
            .field("source", &self.source)
            .field("has_profile", &self.profile.is_some())
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

/// `Result` with prof's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
