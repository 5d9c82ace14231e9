//! Hot functions: where the sampled native stacks of a profile spent their time
//! (`host_sampling_hz`, docs/sampling.md), overall and within each of the annotations
//! that held the most samples, as `go tool pprof -top` ranks them.
//!
//! A function's **self** samples are those whose innermost frame is in it (pprof's
//! `flat`; an inlined function is a frame of its own, so `black_box` inlined into
//! `heavy` counts for `black_box`); its **total** samples are those with it anywhere
//! on the stack, each sample once however often the function recurses (pprof's
//! `cum`). Annotations are the samples' `tf_op` label: the annotations open on the
//! sampled thread inside its step, as XProf names ops (`forward/attn:attn`).
//!
//! ```
//! use profiler_analysis::functions::{FunctionOptions, Functions};
//! # let profile = profiler_core::Profile::default();
//! // A profile without stack samples has no table.
//! assert!(Functions::of(&profile, &FunctionOptions::default()).is_none());
//! ```
//!
//! The summary table ([`crate::summary`]) ends with these tables, and `prof-diff`
//! compares each function's share of the samples between two runs
//! ([`crate::diff::FunctionDiff`]).

use std::collections::HashMap;

use profiler_core::Profile;
use profiler_export::pprof::proto::Sample;
use profiler_export::pprof::{self, Profile as Pprof, StackSamples};

/// How many rows and annotations the tables keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionOptions {
    /// Functions in each list (by self, by total).
    pub rows: usize,
    /// Annotations given a table of their own: those with the most samples.
    pub ops: usize,
}

impl Default for FunctionOptions {
    fn default() -> Self {
        FunctionOptions { rows: 10, ops: 3 }
    }
}

/// One function's samples in a scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionRow {
    /// The function, as symbolised (`module+0xoffset` for an address no symbol names).
    pub name: String,
    /// Samples whose innermost frame is in it.
    pub self_samples: u64,
    /// Samples with it anywhere on the stack.
    pub total_samples: u64,
}

/// The functions of the samples of one scope: all of them, or those taken under one
/// annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionTable {
    /// The annotation (`tf_op`) the samples were taken under; `None` for every sample.
    pub op: Option<String>,
    /// Samples in the scope.
    pub samples: u64,
    /// The functions with the most self samples, most first.
    pub by_self: Vec<FunctionRow>,
    /// The functions with the most total samples, most first.
    pub by_total: Vec<FunctionRow>,
}

impl FunctionTable {
    /// `count` as a share of the scope's samples, 0 to 1.
    pub fn share(&self, count: u64) -> f64 {
        share(count, self.samples)
    }
}

/// The hot functions of one profile's stack samples (or several profiles', merged).
#[derive(Clone, Debug, PartialEq)]
pub struct Functions {
    /// What took the samples (`perf_event`, or `timer` and why), each profile's once.
    pub backend: String,
    /// The rate asked for, per second of CPU time (the first profile's).
    pub hz: i64,
    /// Every sample.
    pub overall: FunctionTable,
    /// The annotations with the most samples, most first.
    pub by_op: Vec<FunctionTable>,
}

impl Functions {
    /// The hot functions of `profile`'s stack samples; `None` when it has none.
    pub fn of(profile: &Profile, options: &FunctionOptions) -> Option<Functions> {
        Functions::of_all(&[profile], options, &mut Vec::new())
    }

    /// The hot functions of the samples of every one of `profiles`, merged by
    /// function name; `None` when none has samples. A samples plane that does not
    /// decode is left out, with a line in `notes` naming its host.
    pub fn of_all(
        profiles: &[&Profile],
        options: &FunctionOptions,
        notes: &mut Vec<String>,
    ) -> Option<Functions> {
        let mut counts = Counts::default();
        let mut backends: Vec<String> = Vec::new();
        let mut hz = None;
        for profile in profiles {
            let Some(samples) = read(profile, notes) else {
                continue;
            };
            if !backends.contains(&samples.backend) {
                backends.push(samples.backend.clone());
            }
            hz.get_or_insert(samples.hz);
            counts.add(&samples.profile);
        }
        let hz = hz?;
        let mut ops: Vec<(&String, &Scope)> = counts.by_op.iter().collect();
        ops.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0)));
        Some(Functions {
            backend: backends.join(", "),
            hz,
            overall: counts.overall.table(None, options.rows),
            by_op: ops
                .into_iter()
                .take(options.ops)
                .map(|(op, scope)| scope.table(Some(op.clone()), options.rows))
                .collect(),
        })
    }
}

/// The stack samples of `profile`, if it has some; a plane that does not decode is a
/// note.
fn read(profile: &Profile, notes: &mut Vec<String>) -> Option<StackSamples> {
    match StackSamples::from_space(profile.xspace())? {
        Ok(samples) => Some(samples),
        Err(e) => {
            notes.push(format!(
                "{}: its stack samples are left out: {e}",
                profile.host_name()
            ));
            None
        }
    }
}

/// Self and total samples by function, of one scope.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    pub(crate) samples: u64,
    pub(crate) functions: HashMap<String, (u64, u64)>,
}

impl Scope {
    /// The first `rows` functions by self samples and by total samples.
    fn table(&self, op: Option<String>, rows: usize) -> FunctionTable {
        let mut all: Vec<FunctionRow> = self
            .functions
            .iter()
            .map(|(name, &(own, total))| FunctionRow {
                name: name.clone(),
                self_samples: own,
                total_samples: total,
            })
            .collect();
        let first = |all: &mut Vec<FunctionRow>, key: fn(&FunctionRow) -> (u64, u64)| {
            all.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
            all.iter()
                .filter(|r| key(r).0 > 0)
                .take(rows)
                .cloned()
                .collect::<Vec<_>>()
        };
        let by_self = first(&mut all, |r| (r.self_samples, r.total_samples));
        let by_total = first(&mut all, |r| (r.total_samples, r.self_samples));
        FunctionTable {
            op,
            samples: self.samples,
            by_self,
            by_total,
        }
    }

    fn add(&mut self, count: u64, leaf: Option<&str>, on_stack: &[&str]) {
        self.samples += count;
        if let Some(leaf) = leaf {
            self.functions.entry(leaf.to_owned()).or_default().0 += count;
        }
        for name in on_stack {
            self.functions.entry((*name).to_owned()).or_default().1 += count;
        }
    }
}

/// Samples counted by function, overall and under each annotation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) overall: Scope,
    pub(crate) by_op: HashMap<String, Scope>,
}

impl Counts {
    /// Adds `profile`'s stack samples; false when it has none (a samples plane that
    /// does not decode is a line in `notes`).
    pub(crate) fn add_profile(&mut self, profile: &Profile, notes: &mut Vec<String>) -> bool {
        let Some(samples) = read(profile, notes) else {
            return false;
        };
        self.add(&samples.profile);
        true
    }

    /// Adds the samples of a pprof profile as prof writes them.
    fn add(&mut self, p: &Pprof) {
        let names = Names::of(p);
        let value = p
            .sample_type
            .iter()
            .position(|t| p.string(t.r#type) == "samples")
            .unwrap_or(0);
        let tf_op = p
            .string_table
            .iter()
            .position(|s| s == pprof::TF_OP)
            .map(|i| i as i64);
        let mut on_stack: Vec<&str> = Vec::new();
        for s in &p.sample {
            let count = s
                .value
                .get(value)
                .and_then(|&v| u64::try_from(v).ok())
                .unwrap_or(0);
            if count == 0 {
                continue;
            }
            let leaf = names.leaf(s);
            on_stack.clear();
            for name in names.stack(s) {
                if !on_stack.contains(&name) {
                    on_stack.push(name);
                }
            }
            self.overall.add(count, leaf, &on_stack);
            let op = tf_op.and_then(|key| s.label.iter().find(|l| l.key == key));
            if let Some(op) = op.map(|l| p.string(l.str)).filter(|op| !op.is_empty()) {
                self.by_op
                    .entry(op.to_owned())
                    .or_default()
                    .add(count, leaf, &on_stack);
            }
        }
    }
}

/// Each location's function names, innermost first (inlined functions, then the one
/// they were inlined into), or its module and offset when it has no symbol.
struct Names {
    locations: HashMap<u64, Vec<String>>,
}

impl Names {
    fn of(p: &Pprof) -> Names {
        let functions: HashMap<u64, &str> = p
            .function
            .iter()
            .map(|f| (f.id, p.string(f.name)))
            .collect();
        let mappings: HashMap<u64, (&str, u64, u64)> = p
            .mapping
            .iter()
            .map(|m| {
                let file = p.string(m.filename);
                let module = file.rsplit('/').next().unwrap_or(file);
                (m.id, (module, m.memory_start, m.file_offset))
            })
            .collect();
        let locations = p
            .location
            .iter()
            .map(|loc| {
                let mut names: Vec<String> = loc
                    .line
                    .iter()
                    .filter_map(|l| functions.get(&l.function_id))
                    .filter(|n| !n.is_empty())
                    .map(|n| (*n).to_owned())
                    .collect();
                if names.is_empty() {
                    names.push(match mappings.get(&loc.mapping_id) {
                        Some(&(module, start, offset)) => format!(
                            "{module}+{:#x}",
                            loc.address.wrapping_sub(start).wrapping_add(offset)
                        ),
                        None => format!("{:#x}", loc.address),
                    });
                }
                (loc.id, names)
            })
            .collect();
        Names { locations }
    }

    /// The function the sample was in: its innermost frame's.
    fn leaf(&self, s: &Sample) -> Option<&str> {
        let first = s.location_id.first()?;
        self.locations.get(first)?.first().map(String::as_str)
    }

    /// Every function on the sample's stack, innermost first (repeats included).
    fn stack<'a>(&'a self, s: &'a Sample) -> impl Iterator<Item = &'a str> + 'a {
        s.location_id
            .iter()
            .filter_map(|id| self.locations.get(id))
            .flatten()
            .map(String::as_str)
    }
}

/// A function's name as the text tables show it: a name longer than 72 characters
/// (a generic's, a closure's: `<core::panic::unwind_safe::AssertUnwindSafe<..>>::..`)
/// keeps its start and its end around `…`, so a table stays readable in a terminal.
/// JSON keeps the whole name.
pub(crate) fn short_name(name: &str) -> String {
    const MAX: usize = 72;
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= MAX {
        return name.to_owned();
    }
    let (head, tail) = (30, MAX - 31);
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// `count` of `of`, 0 to 1 (0 of nothing).
pub(crate) fn share(count: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        count as f64 / of as f64
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use profiler_export::pprof::proto::{Function, Label, Line, Location, Mapping, ValueType};
    use profiler_export::pprof::samples::SampleTime;
    use profiler_export::pprof::Strings;

    /// A profile carrying stack samples: each `(stack, tf_op, count)` is a stack of
    /// function names, innermost first (`a+b` is `a` inlined into `b` at one address;
    /// `?` an address of a mapping with no symbol).
    pub(crate) fn sampled(stacks: &[(&[&str], Option<&str>, i64)]) -> Profile {
        let mut strings = Strings::default();
        let mut p = Pprof {
            sample_type: vec![ValueType {
                r#type: strings.id("samples"),
                unit: strings.id("count"),
            }],
            mapping: vec![Mapping {
                id: 1,
                memory_start: 0x1000,
                memory_limit: 0x9000,
                file_offset: 0x200,
                filename: strings.id("/usr/lib/libthing.so"),
                ..Mapping::default()
            }],
            ..Pprof::default()
        };
        let mut function_ids: HashMap<String, u64> = HashMap::new();
        let mut times = Vec::new();
        for (i, (stack, op, count)) in stacks.iter().enumerate() {
            let mut location_id = Vec::new();
            for frame in *stack {
                let id = p.location.len() as u64 + 1;
                let line = if *frame == "?" {
                    Vec::new()
                } else {
                    frame
                        .split('+')
                        .map(|name| {
                            let next = function_ids.len() as u64 + 1;
                            let function_id = *function_ids.entry(name.to_owned()).or_insert(next);
                            if function_id == next {
                                p.function.push(Function {
                                    id: next,
                                    name: strings.id(name),
                                    ..Function::default()
                                });
                            }
                            Line {
                                function_id,
                                ..Line::default()
                            }
                        })
                        .collect()
                };
                p.location.push(Location {
                    id,
                    mapping_id: 1,
                    address: 0x1000 + 0x10 * id,
                    line,
                    ..Location::default()
                });
                location_id.push(id);
            }
            let mut label = Vec::new();
            if let Some(op) = op {
                label.push(Label {
                    key: strings.id(pprof::TF_OP),
                    str: strings.id(op),
                    ..Label::default()
                });
            }
            p.sample.push(Sample {
                location_id,
                value: vec![*count],
                label,
            });
            for _ in 0..*count {
                times.push(SampleTime {
                    ns: times.len() as u64,
                    sample: i as u32,
                });
            }
        }
        p.string_table = strings.into_table();
        let samples = StackSamples {
            profile: p,
            times,
            backend: "perf_event".into(),
            hz: 99,
            ..StackSamples::default()
        };
        let mut profile = Profile::default();
        profile.xspace_mut().planes.push(samples.to_plane());
        profile
    }

    fn row(name: &str, own: u64, total: u64) -> FunctionRow {
        FunctionRow {
            name: name.into(),
            self_samples: own,
            total_samples: total,
        }
    }

    #[test]
    fn self_and_total_overall_and_by_annotation() {
        let profile = sampled(&[
            // main -> forward -> matmul (matmul has black_box inlined)
            (&["black_box+matmul", "forward", "main"], Some("forward"), 6),
            (&["forward", "main"], Some("forward"), 2),
            // main -> load, twice on the stack (recursion counts once)
            (&["load", "load", "main"], None, 3),
            (&["?", "main"], Some("backward"), 1),
        ]);
        let f = Functions::of(&profile, &FunctionOptions { rows: 3, ops: 1 }).expect("sampled");
        assert_eq!(f.backend, "perf_event");
        assert_eq!(f.hz, 99);
        assert_eq!(f.overall.samples, 12);
        assert_eq!(
            f.overall.by_self,
            [
                row("black_box", 6, 6),
                row("load", 3, 3),
                row("forward", 2, 8)
            ]
        );
        assert_eq!(
            f.overall.by_total,
            [
                row("main", 0, 12),
                row("forward", 2, 8),
                row("black_box", 6, 6)
            ]
        );
        // Only the annotation with the most samples; `matmul` has no self samples.
        assert_eq!(f.by_op.len(), 1);
        let forward = &f.by_op[0];
        assert_eq!(forward.op.as_deref(), Some("forward"));
        assert_eq!(forward.samples, 8);
        assert_eq!(
            forward.by_self,
            [row("black_box", 6, 6), row("forward", 2, 8)]
        );
        assert!((forward.share(6) - 0.75).abs() < 1e-9);
        // An address without a symbol is named by its module and file offset: the
        // ninth location, at 0x1090 in a mapping of offset 0x200 from 0x1000.
        let all = Functions::of(&profile, &FunctionOptions { rows: 10, ops: 5 }).expect("sampled");
        let backward = all
            .by_op
            .iter()
            .find(|t| t.op.as_deref() == Some("backward"))
            .expect("backward");
        assert_eq!(backward.by_self, [row("libthing.so+0x290", 1, 1)]);
    }

    #[test]
    fn long_names_keep_their_start_and_end() {
        assert_eq!(short_name("prof_diff::matmul"), "prof_diff::matmul");
        let long = format!("<core::panic::{}>::call_once", "x".repeat(100));
        let short = short_name(&long);
        assert_eq!(short.chars().count(), 72);
        assert!(short.starts_with("<core::panic::xx"), "{short}");
        assert!(
            short.ends_with("xx>::call_once") && short.contains('…'),
            "{short}"
        );
    }

    #[test]
    fn several_profiles_merge_by_function_and_a_bad_plane_is_a_note() {
        let a = sampled(&[(&["work", "main"], None, 2)]);
        let b = sampled(&[(&["work", "main"], None, 3), (&["idle"], None, 1)]);
        let mut notes = Vec::new();
        let f =
            Functions::of_all(&[&a, &b], &FunctionOptions::default(), &mut notes).expect("sampled");
        assert_eq!(f.overall.samples, 6);
        assert_eq!(f.overall.by_self[0], row("work", 5, 5));
        assert!(notes.is_empty());

        let mut bad = Profile::default();
        let mut plane = StackSamples::default().to_plane();
        for stat in &mut plane.stats {
            if let Some(profiler_core::xspace::XStatValue::Bytes(b)) = &mut stat.value {
                *b = vec![0xff, 0xff];
            }
        }
        bad.xspace_mut().planes.push(plane);
        let f = Functions::of_all(&[&bad, &a], &FunctionOptions::default(), &mut notes);
        assert_eq!(f.map(|f| f.overall.samples), Some(2));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("stack samples are left out"), "{notes:?}");
        assert!(Functions::of(&Profile::default(), &FunctionOptions::default()).is_none());
    }
}
