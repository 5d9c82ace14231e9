//! Stack samples as Perfetto's `PerfSample` packets, from which the Perfetto UI draws a
//! flame graph for any thread and time range.
//!
//! They go out after the timeline, on one sequence of their own: its first packet
//! clears the sequence's state and interns every mapping, path, build id, function
//! name, frame and call stack the samples use (so each id is defined before any
//! sample names it), then one packet per sample, in time order, naming its call
//! stack. Each sample's pid and tid are those of its thread's track: the host
//! line's, for a thread that annotated; for one that never did, a thread track
//! declared here under the host's process (its OS tid, unless a track took it).
//! Inlined functions are frames of their own, at the same address.

use std::collections::{HashMap, HashSet};
use std::io;

use profiler_core::schema;
use profiler_core::xspace::{ps, XSpace};

use super::proto::{
    self, Callstack, Frame, InternedData, InternedString, Mapping, PerfSample, ProcessDescriptor,
    ThreadDescriptor, TracePacket, TrackDescriptor,
};
use crate::pprof::StackSamples;
use crate::timeline::{Process, Thread};

/// What the samples need of the trace writer: a packet sent, a sequence of their
/// own, times converted, and the tracks its walk declared. A trait, so that this
/// module knows nothing of the writer that holds it (`super` implements it).
pub(super) trait Packets {
    /// Sends `packet` as the trace's next.
    fn emit(&mut self, packet: &TracePacket) -> io::Result<()>;
    /// A sequence id no packet has used.
    fn new_sequence(&mut self) -> u32;
    /// The sequence descriptors go out on.
    fn descriptor_sequence(&self) -> u32;
    /// The trace's nanoseconds of a profile's picoseconds.
    fn ns(&self, ps: i64) -> u64;
    /// The tracks written so far.
    fn tracks(&mut self) -> &mut Tracks;
}

/// The tracks a walk wrote that samples are placed on.
#[derive(Default)]
pub(super) struct Tracks {
    host_pid: Option<u32>,
    max_pid: u32,
    /// The (pid, tid) of each host line's first lane, by line id.
    host_lines: HashMap<i64, (u32, u32)>,
    tids: HashSet<u32>,
}

impl Tracks {
    pub(super) fn process(&mut self, process: &Process<'_>) {
        self.max_pid = self.max_pid.max(process.pid);
        if process.name == schema::HOST_PLANE {
            self.host_pid = Some(process.pid);
        }
    }

    pub(super) fn thread(&mut self, thread: &Thread<'_>) {
        self.tids.insert(thread.tid);
        if thread.lane == 0 && Some(thread.pid) == self.host_pid {
            self.host_lines
                .insert(thread.line_id, (thread.pid, thread.tid));
        }
    }
}

/// Writes the stack samples of `space`, if any, after the timeline `writer` walked.
pub(super) fn write(writer: &mut impl Packets, space: &XSpace) -> io::Result<()> {
    let samples = match StackSamples::from_space(space) {
        None => return Ok(()),
        Some(Ok(samples)) if !samples.times.is_empty() => samples,
        Some(Ok(_)) => return Ok(()),
        Some(Err(e)) => {
            tracing::warn!(
                target: profiler_core::log::TARGET,
                "the stack samples are left out of the Perfetto trace: {e}"
            );
            return Ok(());
        }
    };
    let p = &samples.profile;
    let threads = place_threads(writer, &samples)?;

    let sequence = writer.new_sequence();
    let mut interned = InternedData::default();
    // Each kind of string has ids of its own.
    let (mut paths, mut build_ids, mut functions) =
        (Table::default(), Table::default(), Table::default());
    // Mappings: ids are the pprof mapping ids.
    for m in &p.mapping {
        let path = p.string(m.filename);
        let build_id = p.string(m.build_id);
        let mut path_ids = Vec::new();
        for part in path.split('/').filter(|s| !s.is_empty()) {
            path_ids.push(paths.id(&mut interned.mapping_paths, part));
        }
        interned.mappings.push(Mapping {
            iid: Some(m.id),
            build_id: (!build_id.is_empty())
                .then(|| build_ids.id(&mut interned.build_ids, build_id)),
            start_offset: Some(m.file_offset),
            start: Some(m.memory_start),
            end: Some(m.memory_limit),
            path_string_ids: path_ids,
        });
    }
    // Frames: one per location and inlined function; by location, innermost first.
    let mut frames_of: Vec<Vec<u64>> = Vec::with_capacity(p.location.len());
    for loc in &p.location {
        let mapping = p
            .mapping
            .get((loc.mapping_id as usize).wrapping_sub(1))
            .filter(|m| m.id == loc.mapping_id);
        let rel_pc = mapping.map_or(loc.address, |m| {
            loc.address
                .wrapping_sub(m.memory_start)
                .wrapping_add(m.file_offset)
        });
        let names: Vec<String> = if loc.line.is_empty() {
            let module = mapping
                .map(|m| {
                    p.string(m.filename)
                        .rsplit('/')
                        .next()
                        .unwrap_or("")
                        .to_owned()
                })
                .unwrap_or_default();
            vec![format!("{module}+{rel_pc:#x}")]
        } else {
            loc.line
                .iter()
                .map(|l| {
                    p.function
                        .get((l.function_id as usize).wrapping_sub(1))
                        .map_or_else(String::new, |f| p.string(f.name).to_owned())
                })
                .collect()
        };
        let mut ids = Vec::with_capacity(names.len());
        for name in names {
            let function = functions.id(&mut interned.function_names, &name);
            let iid = interned.frames.len() as u64 + 1;
            interned.frames.push(Frame {
                iid: Some(iid),
                function_name_id: Some(function),
                mapping_id: mapping.map(|m| m.id),
                rel_pc: Some(rel_pc),
            });
            ids.push(iid);
        }
        frames_of.push(ids);
    }
    // Call stacks: one per pprof sample, outermost frame first.
    for (i, s) in p.sample.iter().enumerate() {
        let mut frame_ids: Vec<u64> = s
            .location_id
            .iter()
            .filter_map(|&l| frames_of.get((l as usize).wrapping_sub(1)))
            .flatten()
            .copied()
            .collect();
        frame_ids.reverse();
        interned.callstacks.push(Callstack {
            iid: Some(i as u64 + 1),
            frame_ids,
        });
    }

    let first_ts = writer.ns(ps(samples.times[0].ns));
    writer.emit(&TracePacket {
        timestamp: Some(first_ts),
        trusted_packet_sequence_id: Some(sequence),
        sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
        interned_data: Some(interned),
        ..TracePacket::default()
    })?;
    for t in &samples.times {
        let sample = &p.sample[t.sample as usize];
        let tid_label = sample
            .label
            .iter()
            .find(|l| p.string(l.key) == crate::pprof::TID)
            .map_or(0, |l| l.num as u64);
        let Some(&(pid, tid)) = threads.get(&tid_label) else {
            continue;
        };
        writer.emit(&TracePacket {
            timestamp: Some(writer.ns(ps(t.ns))),
            trusted_packet_sequence_id: Some(sequence),
            sequence_flags: Some(proto::SEQ_NEEDS_INCREMENTAL_STATE),
            perf_sample: Some(PerfSample {
                pid: Some(pid),
                tid: Some(tid),
                callstack_iid: Some(u64::from(t.sample) + 1),
                cpu_mode: Some(proto::CPU_MODE_USER),
            }),
            ..TracePacket::default()
        })?;
    }
    Ok(())
}

/// The ids of one kind of interned string.
#[derive(Default)]
struct Table {
    ids: HashMap<String, u64>,
}

impl Table {
    /// The id of `text`, defined in `out` the first time.
    fn id(&mut self, out: &mut Vec<InternedString>, text: &str) -> u64 {
        if let Some(&iid) = self.ids.get(text) {
            return iid;
        }
        let iid = self.ids.len() as u64 + 1;
        self.ids.insert(text.to_owned(), iid);
        out.push(InternedString {
            iid: Some(iid),
            str: Some(text.as_bytes().to_vec()),
        });
        iid
    }
}

/// The (pid, tid) each sampled thread's samples carry, by OS thread id: its host
/// line's track, or a track declared here.
fn place_threads(
    writer: &mut impl Packets,
    samples: &StackSamples,
) -> io::Result<HashMap<u64, (u32, u32)>> {
    let mut placed = HashMap::new();
    let descriptors = writer.descriptor_sequence();
    let pid = match writer.tracks().host_pid {
        Some(pid) => pid,
        None => {
            // No host events: a process of its own for the samples' threads.
            let tracks = writer.tracks();
            let pid = tracks.max_pid + 1;
            tracks.max_pid = pid;
            tracks.host_pid = Some(pid);
            writer.emit(&TracePacket {
                trusted_packet_sequence_id: Some(descriptors),
                track_descriptor: Some(TrackDescriptor {
                    uuid: Some(u64::from(pid)),
                    process: Some(ProcessDescriptor {
                        pid: Some(pid as i32),
                        process_name: Some(schema::HOST_PLANE.to_owned()),
                    }),
                    ..TrackDescriptor::default()
                }),
                ..TracePacket::default()
            })?;
            pid
        }
    };
    for thread in &samples.threads {
        let tracks = writer.tracks();
        let on_line = thread
            .host_line
            .and_then(|line| tracks.host_lines.get(&i64::from(line)).copied());
        if let Some(track) = on_line {
            placed.insert(thread.os_tid, track);
            continue;
        }
        let mut tid = thread.os_tid as u32;
        while tracks.tids.contains(&tid) || tid == 0 {
            tid = tid.wrapping_add(0x1000_0000);
        }
        tracks.tids.insert(tid);
        writer.emit(&TracePacket {
            trusted_packet_sequence_id: Some(descriptors),
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u64::from(pid) << 32 | u64::from(tid)),
                parent_uuid: Some(u64::from(pid)),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid as i32),
                    tid: Some(i64::from(tid)),
                    thread_name: Some(thread.name.clone()),
                }),
                ..TrackDescriptor::default()
            }),
            ..TracePacket::default()
        })?;
        placed.insert(thread.os_tid, (pid, tid));
    }
    Ok(placed)
}
