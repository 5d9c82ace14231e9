//! The stack samples plane ([`schema::STACK_SAMPLES_PLANE`]): how sampled native stacks
//! travel inside an XSpace, which XProf reads past (it shows no plane of that name).
//!
//! It is compact on purpose: the stacks, their frames and labels once, as the gzipped
//! pprof profile that is written beside the `.xplane.pb` unchanged ([`schema::PPROF`]),
//! and then per sample only two varints, its distance in time from the sample before
//! and which pprof sample it is ([`schema::SAMPLE_TIMES`]): about four bytes a
//! sample, where one XEvent per sample would be forty. XProf's own tools keep no
//! Python-tracer-sized volume in the space for the same reason. The times are what the
//! Perfetto trace needs to place each sample on its thread.
//!
//! The plane's lines are the sampled threads, without events: id the OS thread id,
//! display id the thread's line on the host plane when it has one (a thread that
//! never annotated has none), name the thread's name.

use profiler_core::schema;
use profiler_core::xspace::{PlaneBuilder, XLine, XPlane, XSpace, XStatValue};
use profiler_core::{Error, ErrorKind, Result};

use super::proto::Profile;

/// A thread that was sampled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampledThread {
    /// Its OS thread id.
    pub os_tid: u64,
    /// Its name.
    pub name: String,
    /// Its line on the host plane, when it recorded anything.
    pub host_line: Option<u32>,
}

/// When one sample was taken, and which of the profile's samples it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleTime {
    /// Nanoseconds since the session's start.
    pub ns: u64,
    /// Index into [`Profile::sample`].
    pub sample: u32,
}

/// A session's stack samples, as its XSpace carries them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackSamples {
    /// The samples: one per distinct stack and label set, counted.
    pub profile: Profile,
    /// Every sample taken, in time order.
    pub times: Vec<SampleTime>,
    /// The threads sampled.
    pub threads: Vec<SampledThread>,
    /// What took them (`perf_event` or `timer`), and why not the better one.
    pub backend: String,
    /// The rate asked for, per second of CPU time.
    pub hz: i64,
}

impl StackSamples {
    /// The plane carrying these samples.
    pub fn to_plane(&self) -> XPlane {
        let mut plane =
            PlaneBuilder::new(schema::STACK_SAMPLES_PLANE_ID, schema::STACK_SAMPLES_PLANE);
        plane.add_plane_stat(schema::PPROF, XStatValue::Bytes(self.profile.to_gzip()));
        plane.add_plane_stat(
            schema::SAMPLE_TIMES,
            XStatValue::Bytes(encode_times(&self.times)),
        );
        plane.add_plane_stat(
            schema::SAMPLING_BACKEND,
            XStatValue::Str(self.backend.clone()),
        );
        plane.add_plane_stat(schema::SAMPLING_HZ, XStatValue::Int64(self.hz));
        for thread in &self.threads {
            plane.add_line(XLine {
                id: thread.os_tid as i64,
                display_id: thread.host_line.map_or(0, i64::from),
                name: thread.name.clone(),
                ..XLine::default()
            });
        }
        plane.build()
    }

    /// The samples `space` carries: `None` when it has no samples plane.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a samples plane whose profile or times do not
    /// decode, or whose times name samples the profile does not have.
    pub fn from_space(space: &XSpace) -> Option<Result<StackSamples>> {
        let plane = samples_plane(space)?;
        Some(StackSamples::from_plane(plane))
    }

    fn from_plane(plane: &XPlane) -> Result<StackSamples> {
        let stat = |name| plane.find_stat(&plane.stats, name);
        let profile = match stat(schema::PPROF) {
            Some(XStatValue::Bytes(bytes)) => Profile::from_bytes(bytes)?,
            _ => Profile::default(),
        };
        let times = match stat(schema::SAMPLE_TIMES) {
            Some(XStatValue::Bytes(bytes)) => decode_times(bytes, profile.sample.len())?,
            _ => Vec::new(),
        };
        let backend = plane
            .find_text(&plane.stats, schema::SAMPLING_BACKEND)
            .unwrap_or_default()
            .to_owned();
        let hz = stat(schema::SAMPLING_HZ)
            .and_then(XStatValue::as_i64)
            .unwrap_or(0);
        let threads = plane
            .lines
            .iter()
            .map(|line| SampledThread {
                os_tid: line.id as u64,
                name: line.name.clone(),
                host_line: u32::try_from(line.display_id).ok().filter(|&l| l != 0),
            })
            .collect();
        Ok(StackSamples {
            profile,
            times,
            threads,
            backend,
            hz,
        })
    }
}

fn samples_plane(space: &XSpace) -> Option<&XPlane> {
    space
        .planes
        .iter()
        .find(|p| p.name == schema::STACK_SAMPLES_PLANE)
}

/// The gzipped pprof profile `space` carries, as it is written to a file.
pub(crate) fn pprof_bytes(space: &XSpace) -> Option<&[u8]> {
    let plane = samples_plane(space)?;
    match plane.find_stat(&plane.stats, schema::PPROF) {
        Some(XStatValue::Bytes(bytes)) if !bytes.is_empty() => Some(bytes),
        _ => None,
    }
}

/// Encodes sample times (in time order) as [`schema::SAMPLE_TIMES`] holds them.
pub fn encode_times(times: &[SampleTime]) -> Vec<u8> {
    let mut out = Vec::with_capacity(times.len() * 4);
    let mut last = 0u64;
    for t in times {
        prost::encoding::encode_varint(t.ns.saturating_sub(last), &mut out);
        prost::encoding::encode_varint(u64::from(t.sample), &mut out);
        last = last.max(t.ns);
    }
    out
}

/// Decodes [`encode_times`]'s bytes, checking each names one of `samples` samples.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for a cut varint or an index out of range.
pub fn decode_times(mut bytes: &[u8], samples: usize) -> Result<Vec<SampleTime>> {
    let invalid = |what: &str| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("the stack samples' {}: {what}", schema::SAMPLE_TIMES),
        )
    };
    let mut times = Vec::with_capacity(bytes.len() / 4);
    let mut at = 0u64;
    while !bytes.is_empty() {
        let delta = prost::encoding::decode_varint(&mut bytes).map_err(|_| invalid("cut"))?;
        let sample = prost::encoding::decode_varint(&mut bytes).map_err(|_| invalid("cut"))?;
        if sample >= samples as u64 {
            return Err(invalid(&format!(
                "a time names sample {sample} of {samples}"
            )));
        }
        at = at.saturating_add(delta);
        times.push(SampleTime {
            ns: at,
            sample: sample as u32,
        });
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::Sample;

    fn samples() -> StackSamples {
        StackSamples {
            profile: Profile {
                sample: vec![Sample::default(), Sample::default()],
                string_table: vec![String::new()],
                ..Profile::default()
            },
            times: vec![
                SampleTime { ns: 5, sample: 1 },
                SampleTime { ns: 5, sample: 0 },
                SampleTime {
                    ns: 1 << 40,
                    sample: 1,
                },
            ],
            threads: vec![
                SampledThread {
                    os_tid: 4242,
                    name: "main".into(),
                    host_line: Some(1),
                },
                SampledThread {
                    os_tid: 4243,
                    name: "loader".into(),
                    host_line: None,
                },
            ],
            backend: "perf_event".into(),
            hz: 99,
        }
    }

    #[test]
    fn samples_travel_in_a_plane_and_come_back_whole() {
        let want = samples();
        let space = XSpace {
            planes: vec![want.to_plane()],
            ..XSpace::default()
        };
        // Through the file format too.
        let bytes = prost::Message::encode_to_vec(&space);
        let space: XSpace = prost::Message::decode(&bytes[..]).expect("decode");
        let got = StackSamples::from_space(&space)
            .expect("a plane")
            .expect("valid");
        assert_eq!(got, want);
        assert!(pprof_bytes(&space).is_some());
        assert!(StackSamples::from_space(&XSpace::default()).is_none());
    }

    #[test]
    fn times_naming_missing_samples_or_cut_are_refused() {
        let bytes = encode_times(&samples().times);
        assert_eq!(bytes.len(), 2 + 2 + 7, "two bytes a close sample");
        let err = decode_times(&bytes, 1).expect_err("sample 1 of 1");
        assert!(err.to_string().contains("sample 1 of 1"), "{err}");
        let err = decode_times(&bytes[..bytes.len() - 1], 2).expect_err("cut");
        assert!(err.to_string().contains("cut"), "{err}");
    }
}
