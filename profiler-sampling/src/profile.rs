//! A session's raw samples → the pprof profile and sample times its XSpace carries:
//! symbolised, and joined with what the host plane says each thread was doing.
//!
//! The join is made from timestamps, after the session: a sample at time `t` on thread
//! `tid` carries the annotations open on that thread's host line at `t`, and the step
//! they are in, or, for a thread outside any step (one that never annotates), the step
//! open on any thread at `t`. Both sides are on one clock: perf stamps samples with
//! `CLOCK_MONOTONIC` (`use_clockid`), the handler reads it, and prof's timeline is
//! `std::time::Instant`, which is `CLOCK_MONOTONIC` on Linux. So no sampled thread's
//! annotation stack is read while it runs: a sampler thread reading another thread's
//! stack would race its pushes and pops, and the handler touching a thread-local
//! would break its async-signal safety.

use std::collections::HashMap;
use std::rc::Rc;

use profiler_core::tracer::{HostThread, SessionClock};
use profiler_core::xspace::{HostScopes, XSpace};
use profiler_export::pprof::proto::{Function, Label, Line, Location, Mapping, Sample, ValueType};
use profiler_export::pprof::samples::{SampleTime, SampledThread};
use profiler_export::pprof::{self, Profile, StackSamples, Strings};

use crate::maps::Maps;
use crate::recorded::Recorded;
use crate::symbolize::{self, Resolved};

/// What a session's stack samples add to its profile, and what the user should know.
pub(crate) struct Built {
    pub(crate) samples: StackSamples,
    pub(crate) warnings: Vec<String>,
    /// Distinct addresses symbolised, and how long that took.
    pub(crate) addresses: usize,
    pub(crate) symbolize: std::time::Duration,
}

/// The labels that make samples of one stack distinct.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    stack: u32,
    tid: u32,
    step: Option<i64>,
    tf_op: Option<Rc<str>>,
}

/// Builds the samples of `recorded` for the session timed by `clock`, whose host
/// plane is in `space` and whose threads' lines are `threads`.
pub(crate) fn build(
    recorded: &Recorded,
    space: &XSpace,
    clock: &SessionClock,
    hz: u32,
    threads: &[HostThread],
    cpu_ns: u64,
) -> Built {
    let mut warnings = Vec::new();
    let lines: HashMap<u64, &HostThread> = threads.iter().map(|t| (t.os_tid, t)).collect();
    let mut scopes = HostScopes::of_space(space);
    // Times on the session's clock; samples outside it (the sampler starts just before
    // the session's clock, and drains after it stops) are left out.
    let mut joined: Vec<(u64, Key)> = Vec::with_capacity(recorded.samples.len());
    for s in &recorded.samples {
        let clock_ns = s.time_ns as i64 - recorded.monotonic_offset;
        let Some(at) = u64::try_from(clock_ns)
            .ok()
            .and_then(|ns| clock.to_session_ns(ns))
        else {
            continue;
        };
        let at_ps = profiler_core::xspace::ps(at);
        let enclosing = lines
            .get(&u64::from(s.tid))
            .and_then(|t| scopes.enclosing(t.line_id, at_ps));
        let (tf_op, step) = match enclosing {
            Some(e) => (e.tf_op, e.step),
            None => (None, None),
        };
        let step = step.or_else(|| scopes.step_at(at_ps));
        joined.push((
            at,
            Key {
                stack: s.stack,
                tid: s.tid,
                step,
                tf_op,
            },
        ));
    }
    joined.sort_by_key(|(at, _)| *at);

    // Each address once: the interrupted one as it is, callers' return addresses less
    // one, inside the call instruction (as perf and pprof do).
    let mut addrs: Vec<u64> = Vec::new();
    let mut addr_ids: HashMap<u64, u64> = HashMap::new();
    let stack_locations: Vec<Vec<u64>> = recorded
        .stacks
        .all
        .iter()
        .map(|stack| {
            stack
                .iter()
                .enumerate()
                .map(|(i, &a)| {
                    let a = if i == 0 { a } else { a.saturating_sub(1) };
                    *addr_ids.entry(a).or_insert_with(|| {
                        addrs.push(a);
                        addrs.len() as u64
                    })
                })
                .collect()
        })
        .collect();
    let maps = Maps {
        all: recorded.mappings.clone(),
    };
    let symbolizing = std::time::Instant::now();
    let resolved = symbolize::resolve(&addrs, &maps);
    let symbolize = symbolizing.elapsed();

    let mut strings = Strings::default();
    let mut profile = Profile::default();
    let (mappings, symbolised) = mappings(&maps, &resolved, &mut strings);
    profile.mapping = mappings;
    let mut functions: HashMap<(String, Option<String>), u64> = HashMap::new();
    for (i, (addr, r)) in addrs.iter().zip(&resolved).enumerate() {
        let lines = r
            .frames
            .iter()
            .map(|f| {
                let next = functions.len() as u64 + 1;
                let id = *functions
                    .entry((f.name.clone(), f.file.clone()))
                    .or_insert_with(|| {
                        profile.function.push(Function {
                            id: next,
                            name: strings.id(&f.name),
                            system_name: strings.id(&f.name),
                            filename: f.file.as_deref().map_or(0, |p| strings.id(p)),
                            start_line: 0,
                        });
                        next
                    });
                Line {
                    function_id: id,
                    line: i64::from(f.line),
                    column: 0,
                }
            })
            .collect();
        profile.location.push(Location {
            id: i as u64 + 1,
            mapping_id: r.mapping.map_or(0, |m| m as u64 + 1),
            address: *addr,
            line: lines,
            is_folded: false,
        });
    }

    let period = 1_000_000_000 / i64::from(hz.max(1));
    let samples_type = ValueType {
        r#type: strings.id("samples"),
        unit: strings.id("count"),
    };
    let cpu_type = ValueType {
        r#type: strings.id("cpu"),
        unit: strings.id("nanoseconds"),
    };
    profile.sample_type = vec![samples_type, cpu_type.clone()];
    profile.period_type = Some(cpu_type);
    profile.period = period;
    let (thread_key, tid_key, step_key, op_key) = (
        strings.id(pprof::THREAD),
        strings.id(pprof::TID),
        strings.id(pprof::STEP_NUM),
        strings.id(pprof::TF_OP),
    );
    let name_of = |tid: u32| -> String {
        lines
            .get(&u64::from(tid))
            .map(|t| t.name.clone())
            .or_else(|| recorded.thread_names.get(&tid).cloned())
            .unwrap_or_else(|| format!("Thread {tid}"))
    };
    let mut index: HashMap<Key, u32> = HashMap::new();
    let mut times = Vec::with_capacity(joined.len());
    let mut sampled: Vec<u32> = Vec::new();
    for (at, key) in joined {
        let next = profile.sample.len() as u32;
        let i = *index.entry(key.clone()).or_insert_with(|| {
            let mut label = vec![
                Label {
                    key: thread_key,
                    str: strings.id(&name_of(key.tid)),
                    ..Label::default()
                },
                Label {
                    key: tid_key,
                    num: i64::from(key.tid),
                    ..Label::default()
                },
            ];
            if let Some(step) = key.step {
                label.push(Label {
                    key: step_key,
                    num: step,
                    ..Label::default()
                });
            }
            if let Some(op) = &key.tf_op {
                label.push(Label {
                    key: op_key,
                    str: strings.id(op),
                    ..Label::default()
                });
            }
            profile.sample.push(Sample {
                location_id: stack_locations[key.stack as usize].clone(),
                value: vec![0, 0],
                label,
            });
            if !sampled.contains(&key.tid) {
                sampled.push(key.tid);
            }
            next
        });
        let sample = &mut profile.sample[i as usize];
        sample.value[0] += 1;
        sample.value[1] += period;
        times.push(SampleTime { ns: at, sample: i });
    }

    let taken = times.len() as u64;
    let reached = if cpu_ns > 0 {
        taken as f64 / (cpu_ns as f64 / 1e9)
    } else {
        0.0
    };
    let mut backend = recorded.backend.name().to_owned();
    let mut comments = vec![format!(
        "prof: {taken} samples of {} threads by {backend}, {hz} Hz of CPU time asked, {reached:.0} reached",
        sampled.len()
    )];
    if let Some(why) = &recorded.fallback_reason {
        backend = format!("{backend} ({why})");
        warnings.push(format!(
            "prof: stacks were sampled by per-thread CPU-time timers, not perf_event_open: \
             {why}; the kernel's tick caps their rate ({reached:.0} samples per CPU second \
             reached of {hz} asked)"
        ));
        comments.push(format!("prof: perf_event_open not used: {why}"));
    }
    if recorded.lost > 0 {
        warnings.push(format!(
            "prof: {} stack samples were lost (the sampler's buffers were full); lower \
             host_sampling_hz",
            recorded.lost
        ));
    }
    if let Some(why) = &recorded.refusal {
        warnings.push(format!(
            "prof: {} threads could not be sampled ({why})",
            recorded.threads_refused
        ));
    }
    if !symbolised && taken > 0 {
        warnings.push(
            "prof: no sampled address could be symbolised (a stripped binary?): the \
             pprof profile keeps addresses, modules and build ids"
                .into(),
        );
    }
    profile.comment = comments.iter().map(|c| strings.id(c)).collect();
    profile.time_nanos = session_start_unix_ns(space);
    profile.duration_nanos = clock.duration_ns() as i64;
    profile.default_sample_type = 0;
    profile.string_table = strings.into_table();

    let threads = sampled
        .into_iter()
        .map(|tid| SampledThread {
            os_tid: u64::from(tid),
            name: name_of(tid),
            host_line: lines.get(&u64::from(tid)).map(|t| t.line_id),
        })
        .collect();
    Built {
        samples: StackSamples {
            profile,
            times,
            threads,
            backend,
            hz: i64::from(hz),
        },
        warnings,
        addresses: addrs.len(),
        symbolize,
    }
}

/// The pprof mappings of every mapping in `maps` (ids: index + 1), and whether any
/// address was symbolised.
fn mappings(maps: &Maps, resolved: &[Resolved], strings: &mut Strings) -> (Vec<Mapping>, bool) {
    let mut has_functions = vec![false; maps.all.len()];
    let mut inline = vec![false; maps.all.len()];
    for r in resolved {
        if let (Some(m), false) = (r.mapping, r.frames.is_empty()) {
            has_functions[m] = true;
            inline[m] |= r.frames.len() > 1;
        }
    }
    let symbolised = has_functions.iter().any(|&h| h);
    let mappings = maps
        .all
        .iter()
        .enumerate()
        .map(|(i, m)| Mapping {
            id: i as u64 + 1,
            memory_start: m.start,
            memory_limit: m.end,
            file_offset: m.offset,
            filename: strings.id(&m.path.to_string_lossy()),
            build_id: m.build_id.as_ref().map_or(0, |id| strings.id(&hex(id))),
            has_functions: has_functions[i],
            has_filenames: has_functions[i],
            has_line_numbers: has_functions[i],
            has_inline_frames: inline[i],
        })
        .collect();
    (mappings, symbolised)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn session_start_unix_ns(space: &XSpace) -> i64 {
    space
        .planes
        .iter()
        .find(|p| p.name == profiler_core::schema::TASK_ENV_PLANE)
        .and_then(|p| p.find_stat(&p.stats, profiler_core::schema::PROFILE_START_TIME))
        .and_then(|v| match v {
            profiler_core::xspace::XStatValue::Uint64(ns) => i64::try_from(*ns).ok(),
            _ => None,
        })
        .unwrap_or(0)
}
