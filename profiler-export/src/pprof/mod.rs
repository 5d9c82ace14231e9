//! pprof's `profile.proto`: sampled native call stacks, as `go tool pprof`, speedscope,
//! Pyroscope and Grafana read them.
//!
//! A session that sampled stacks (`host_sampling_hz`, `profiler-sampling`) carries
//! them in its XSpace on a plane XProf ignores ([`samples`]): the whole profile as
//! one gzipped pprof, and when each sample was taken. Wherever the XSpace goes (a
//! logdir, a remote capture, `prof-convert`), the pprof file is written beside the
//! `.xplane.pb` as `<host>.pprof.pb.gz` ([`write_beside`]), and the Perfetto trace
//! gets the samples as `PerfSample` packets.
//!
//! Each pprof sample is one distinct stack with one set of labels:
//!
//! | label | value |
//! |---|---|
//! | `thread` | the thread's name (`Thread <tid>` when it has none) |
//! | `tid` | its OS thread id |
//! | `step_num` | the step the sample fell in: its thread's, or the step open on any thread then |
//! | `tf_op` | the annotations open on its thread inside the step, as XProf's `tf_op` (`forward/attn:attn`) |
//!
//! so `go tool pprof -tagfocus=step_num=3` keeps step 3, and `-tagfocus=tf_op=forward`
//! what ran inside `forward`.

pub mod proto;
pub mod samples;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind, Result};
use prost::Message;

pub use proto::Profile;
pub use samples::StackSamples;

/// The file name's ending: `<host>.pprof.pb.gz`, gzipped as `go tool pprof` writes
/// its own profiles.
pub const EXTENSION: &str = "pprof.pb.gz";

/// Label of a sample: its thread's name.
pub const THREAD: &str = "thread";
/// Label of a sample: its OS thread id.
pub const TID: &str = "tid";
/// Label of a sample: the step it fell in.
pub const STEP_NUM: &str = profiler_core::schema::STEP_NUM;
/// Label of a sample: the annotations open on its thread, as a `tf_op`.
pub const TF_OP: &str = profiler_core::schema::TF_OP;

/// Largest pprof profile read back, unzipped: far past what any session samples
/// (a million distinct stacks), and a bound on what a hostile file can make us
/// allocate.
pub const MAX_PROFILE_BYTES: u64 = 1 << 30;

/// A string table under construction: each string once, `""` at index 0.
#[derive(Debug)]
pub struct Strings {
    table: Vec<String>,
    ids: HashMap<String, i64>,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            table: vec![String::new()],
            ids: HashMap::from([(String::new(), 0)]),
        }
    }
}

impl Strings {
    /// The index of `s`, added the first time.
    pub fn id(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.table.len() as i64;
        self.table.push(s.to_owned());
        self.ids.insert(s.to_owned(), id);
        id
    }

    /// The table, for [`Profile::string_table`].
    pub fn into_table(self) -> Vec<String> {
        self.table
    }
}

impl Profile {
    /// String `index` of the table; `""` when out of range.
    pub fn string(&self, index: i64) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// The profile gzipped, as the file holds it.
    pub fn to_gzip(&self) -> Vec<u8> {
        let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        // Writing to a Vec cannot fail.
        let _ = out.write_all(&self.encode_to_vec());
        out.finish().unwrap_or_default()
    }

    /// Reads a profile from gzipped (or plain) `profile.proto` bytes.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for bytes that do not unzip or decode, or that
    /// unzip past [`MAX_PROFILE_BYTES`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Profile> {
        let invalid = |what: String| Error::new(ErrorKind::InvalidArgument, what);
        let plain;
        let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(bytes)
                .take(MAX_PROFILE_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| invalid(format!("the pprof profile does not unzip: {e}")))?;
            if out.len() as u64 > MAX_PROFILE_BYTES {
                return Err(invalid(format!(
                    "the pprof profile unzips past {MAX_PROFILE_BYTES} bytes"
                )));
            }
            plain = out;
            &plain[..]
        } else {
            bytes
        };
        Profile::decode(bytes).map_err(|e| invalid(format!("the pprof profile is not valid: {e}")))
    }
}

/// Where the pprof file of the `.xplane.pb` at `xplane` goes: beside it, its host's
/// name with [`EXTENSION`].
pub fn path_beside(xplane: &Path) -> PathBuf {
    let name = xplane
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".xplane.pb").unwrap_or(&name);
    xplane.with_file_name(format!("{stem}.{EXTENSION}"))
}

/// Writes the stack samples of `space`, if it has any, as a pprof file beside the
/// `.xplane.pb` at `xplane` (atomically), and returns its path.
///
/// # Errors
/// [`ErrorKind::Io`] naming the path.
pub fn write_beside(space: &XSpace, xplane: &Path) -> Result<Option<PathBuf>> {
    let Some(bytes) = samples::pprof_bytes(space) else {
        return Ok(None);
    };
    let path = path_beside(xplane);
    crate::atomic::write_atomic(&path, bytes)
        .map_err(|e| Error::io("cannot write the pprof profile", &path, e))?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_goes_beside_the_xplane_with_the_host_s_name() {
        assert_eq!(
            path_beside(Path::new("/l/plugins/profile/r/worker_0.xplane.pb")),
            Path::new("/l/plugins/profile/r/worker_0.pprof.pb.gz")
        );
    }

    #[test]
    fn profiles_round_trip_gzipped_or_not_and_bad_bytes_are_named() {
        let mut strings = Strings::default();
        let cpu = strings.id("cpu");
        assert_eq!(strings.id("cpu"), cpu);
        let profile = Profile {
            period: 1_000_000,
            period_type: Some(proto::ValueType {
                r#type: cpu,
                unit: strings.id("nanoseconds"),
            }),
            string_table: strings.into_table(),
            ..Profile::default()
        };
        assert_eq!(profile.string(cpu), "cpu");
        assert_eq!(profile.string(99), "");
        let zipped = profile.to_gzip();
        assert_eq!(Profile::from_bytes(&zipped).expect("gz"), profile);
        assert_eq!(
            Profile::from_bytes(&profile.encode_to_vec()).expect("plain"),
            profile
        );
        let err = Profile::from_bytes(&zipped[..zipped.len() / 2]).expect_err("cut");
        assert!(err.to_string().contains("pprof"), "{err}");
        let err = Profile::from_bytes(&[0x0a, 0xff]).expect_err("garbage");
        assert!(err.to_string().contains("not valid"), "{err}");
    }
}
