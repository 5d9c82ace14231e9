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
    /// A peer refused the credentials sent, or wanted some (a profiler server's
    /// bearer token).
    Unauthenticated,
    /// A peer does not implement what was asked of it (a profiler server without an
    /// RPC).
    Unimplemented,
    /// A peer failed on its side (a profiler server that could not write or collect).
    Internal,
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
            ErrorKind::Unauthenticated => "Unauthenticated",
            ErrorKind::Unimplemented => "Unimplemented",
            ErrorKind::Internal => "Internal",
        })
    }
}

/// A profiler error: what failed and, for files, where; its cause (an I/O error, a
/// transport error) is kept as its [`source`](std::error::Error::source). When it
/// happens after recording (writing the logdir failed), the recorded profile travels
/// inside it: see [`Error::profile`].
///
/// Its `Display` is the message and the path, without the kind (that is for code:
/// [`Error::kind`]) and without the cause, which error reporters (anyhow, eyre, a CLI's
/// [`report`]) print from [`source`](std::error::Error::source) so that it is said
/// once. Its `Debug` is the message followed by its causes, so a
/// `fn main() -> Result<(), prof::Error>` that fails prints a sentence; `{:#?}` shows
/// the fields.
pub struct Error {
    kind: ErrorKind,
    message: String,
    path: Option<PathBuf>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
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

    /// An I/O failure on `path`, caused by `source`. The message says what was being
    /// done ("cannot create the output directory"); Display follows it with the path.
    pub fn io(
        message: impl Into<String>,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Error {
        Error::new(ErrorKind::Io, message)
            .with_path(path)
            .with_source(source)
    }

    /// Keeps `source` as the cause of this error: reporters print it after the
    /// message, and code can reach it through [`std::error::Error::source`].
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Error {
        self.source = Some(source.into());
        self
    }

    /// Names the file or directory involved.
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> Error {
        self.path = Some(path.into());
        self
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

    /// What went wrong, without the path or the cause.
    pub fn message(&self) -> &str {
        &self.message
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
        f.write_str(&self.message)?;
        if let Some(path) = &self.path {
            write!(f, " {}", path.display())?;
        }
        if self.profile.is_some() {
            f.write_str("; the recorded profile is kept in this error (Error::into_profile)")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return f
                .debug_struct("Error")
                .field("kind", &self.kind)
                .field("message", &self.message)
                .field("path", &self.path)
                .field("source", &self.source)
                .field("has_profile", &self.profile.is_some())
                .finish();
        }
        // What `main` prints when it returns this error: a sentence, with its causes.
        fmt::Display::fmt(&report(self), f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

/// An error followed by each of its causes, `: `-separated, each said once: what a
/// program prints for a person (the CLIs do, and [`Error`]'s `Debug`).
///
/// ```
/// use profiler_core::{error::report, Error, ErrorKind};
///
/// let cause = std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use");
/// let e = Error::new(ErrorKind::Io, "cannot listen on 127.0.0.1:6009").with_source(cause);
/// assert_eq!(e.to_string(), "cannot listen on 127.0.0.1:6009");
/// assert_eq!(report(&e).to_string(), "cannot listen on 127.0.0.1:6009: address in use");
/// assert_eq!(format!("{e:?}"), "cannot listen on 127.0.0.1:6009: address in use");
/// ```
pub fn report<'a>(error: &'a (dyn std::error::Error + 'static)) -> Report<'a> {
    Report(error)
}

/// See [`report`].
#[derive(Clone, Copy)]
pub struct Report<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        let mut cause = self.0.source();
        // Bounded: a cause chain is a few links; a cycle would be a bug elsewhere.
        for _ in 0..32 {
            let Some(error) = cause else { break };
            let text = error.to_string();
            // Some errors repeat their cause's words in their own (hyper's do).
            if !text.is_empty() && !said.contains(&text) {
                said.push_str(": ");
                said.push_str(&text);
            }
            cause = error.source();
        }
        f.write_str(&said)
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `Result` with prof's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Each error of the chain, as a chain reporter (anyhow's `{:#}`, eyre's report)
    /// walks it: the error's Display, then its source's, and so on.
    fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
        let mut links = vec![e.to_string()];
        let mut source = e.source();
        while let Some(s) = source {
            assert!(links.len() < 32, "a cycle in the chain: {links:?}");
            links.push(s.to_string());
            source = s.source();
        }
        links
    }

    /// No link repeats what a link under it says: a reporter that prints every link
    /// says each cause once.
    fn assert_said_once(e: &(dyn std::error::Error + 'static)) {
        let links = chain(e);
        for (i, link) in links.iter().enumerate() {
            for below in &links[i + 1..] {
                assert!(
                    !link.contains(below.as_str()),
                    "{link:?} repeats {below:?}: {links:?}"
                );
            }
        }
    }

    fn not_found() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")
    }

    #[test]
    fn the_cause_is_the_source_and_said_once_along_the_chain() {
        let e = Error::io("cannot read the .xplane.pb file", "/x.pb", not_found());
        assert_eq!(
            chain(&e),
            ["cannot read the .xplane.pb file /x.pb", "no such file"]
        );
        assert_said_once(&e);
        // A prof error that wraps another (a server's cause under a capture's).
        let outer = Error::new(ErrorKind::Unavailable, "cannot reach 127.0.0.1:1").with_source(e);
        assert_said_once(&outer);
        assert_eq!(
            report(&outer).to_string(),
            "cannot reach 127.0.0.1:1: cannot read the .xplane.pb file /x.pb: no such file"
        );
        let e = Error::new(ErrorKind::InvalidArgument, "bad").with_source("a plain message");
        assert_eq!(chain(&e), ["bad", "a plain message"]);
    }

    #[test]
    fn display_is_the_message_and_the_path_without_the_kind() {
        for kind in [
            ErrorKind::InvalidArgument,
            ErrorKind::AlreadyExists,
            ErrorKind::FailedPrecondition,
            ErrorKind::Io,
            ErrorKind::Unavailable,
            ErrorKind::DeadlineExceeded,
            ErrorKind::Unauthenticated,
            ErrorKind::Unimplemented,
            ErrorKind::Internal,
        ] {
            let e = Error::new(kind, "cannot create the output directory").with_path("out");
            assert_eq!(e.to_string(), "cannot create the output directory out");
            assert!(!format!("{e:?}").contains(&kind.to_string()), "{e:?}");
        }
    }

    #[test]
    fn debug_reads_as_a_sentence_for_main_and_alternate_shows_the_fields() {
        let busy = std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            "Address already in use (os error 98)",
        );
        let e = Error::new(
            ErrorKind::Io,
            "profiler server cannot listen on 127.0.0.1:6009",
        )
        .with_source(busy);
        // `fn main() -> Result<(), prof::Error>` prints "Error: " and this.
        assert_eq!(
            format!("{e:?}"),
            "profiler server cannot listen on 127.0.0.1:6009: Address already in use (os error 98)"
        );
        let fields = format!("{e:#?}");
        assert!(
            fields.contains("kind: Io") && fields.contains("has_profile: false"),
            "{fields}"
        );
        let kept = Error::new(ErrorKind::Io, "cannot write the run")
            .with_profile(Profile::new(crate::xspace::XSpace::default()));
        assert_eq!(
            format!("{kept:?}"),
            "cannot write the run; the recorded profile is kept in this error (Error::into_profile)"
        );
    }
}
