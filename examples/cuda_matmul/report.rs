//! cuda_matmul's reading of its own profile: what the GPU planes hold (kernels, copies,
//! their links to the host's launches, annotations and ops, the API calls on the host
//! lines, the two streams, NVTX ranges), and the check that fails the example when the
//! plane is wrong.

use std::collections::HashMap;

use prof::schema;
use prof::xspace::{XPlane, XSpace, XStatValue};

use crate::Result;

/// What the GPU planes of a profile hold.
#[derive(Debug, Default)]
pub(crate) struct DeviceReport {
    planes: usize,
    pub(crate) kernels: usize,
    kernel_names: Vec<String>,
    copies: usize,
    /// Device events whose `correlation_id` is also on a host launch event.
    linked: usize,
    /// Of those, device events that start before their launch does (clocks disagree).
    before_launch: usize,
    /// Launch → device start, in µs, sorted.
    lags_us: Vec<f64>,
    /// (kernel name, its `annotation` stat) pairs.
    annotated: Vec<(String, String)>,
    /// (kernel name, its `tf_op` stat) pairs: the op XProf files it under.
    ops: Vec<(String, String)>,
    /// CUDA API calls on the host lines, by name.
    api_calls: std::collections::BTreeMap<String, usize>,
    /// Of those, calls prof leaves out by default that launched nothing.
    unwanted_calls: usize,
    /// The `spin` kernels of `two_streams`: (line id, start ps, end ps).
    spins: Vec<(i64, i64, i64)>,
    /// NVTX ranges and marks on the host's NVTX lines (`gpu_enable_nvtx_tracking`).
    nvtx_events: usize,
    /// Their names (with their count), cuBLAS' among them.
    nvtx_names: std::collections::BTreeMap<String, usize>,
    /// Kernels that carry the NVTX range they were launched in (`nvtx_range`).
    nvtx_kernels: usize,
    /// Device work that ran inside a CUDA graph (it carries `cuda_graph_node_id`).
    graph_work: usize,
    /// (name, `tf_op`) of that work.
    graph_ops: Vec<(String, String)>,
    /// Of it, work without a `tf_op`.
    graph_unattributed: usize,
    /// Whole-graph launches (`CudaGraphExec:<id>`, gpu_enable_cupti_activity_graph_trace).
    graph_execs: usize,
    /// Host graph launches carrying `cuda_graph_id`.
    graph_launches: usize,
    /// Counter samples on the GPU planes by counter (PM metrics, device memory).
    gpu_counters: std::collections::BTreeMap<String, usize>,
}

impl DeviceReport {
    pub(crate) fn of(space: &XSpace) -> DeviceReport {
        let mut report = DeviceReport::default();
        // Correlation id → launch start, from the host plane's API events.
        let launches: HashMap<u64, i64> = space
            .plane(schema::HOST_PLANE)
            .map(correlated_events)
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.correlation, e.start_ps))
            .collect();
        if let Some(host) = space.plane(schema::HOST_PLANE) {
            for line in host.lines.iter().filter(|l| l.name.starts_with("NVTX")) {
                report.nvtx_events += line.events.len();
                for e in &line.events {
                    let name = host.event_name(e.metadata_id).unwrap_or("?");
                    *report.nvtx_names.entry(name.to_owned()).or_default() += 1;
                }
            }
            let correlation = host.stat_id("correlation_id");
            let graph_id = host.stat_id("cuda_graph_id");
            for e in host.lines.iter().flat_map(|l| &l.events) {
                let Some(name) = host.event_name(e.metadata_id) else {
                    continue;
                };
                if name.starts_with("cuGraphLaunch") && e.stat(graph_id).is_some() {
                    report.graph_launches += 1;
                }
                if !(name.starts_with("cu") && name.contains(|c: char| c.is_ascii_uppercase())) {
                    continue; // not a CUDA API call
                }
                *report.api_calls.entry(name.to_owned()).or_default() += 1;
                if !prof::cuda::convert::api_recorded_by_default(name)
                    && e.stat(correlation).is_none()
                {
                    report.unwanted_calls += 1;
                }
            }
        }
        for plane in space
            .planes
            .iter()
            .filter(|p| p.name.starts_with("/device:GPU:"))
        {
            report.planes += 1;
            for line in plane
                .lines
                .iter()
                .filter(|l| l.name == schema::COUNTERS_LINE)
            {
                for e in &line.events {
                    let name = plane.event_name(e.metadata_id).unwrap_or("?");
                    *report.gpu_counters.entry(name.to_owned()).or_default() += 1;
                }
            }
            for e in correlated_events(plane) {
                if e.name.starts_with("CudaGraphExec:") {
                    report.graph_execs += 1;
                }
                if e.in_graph {
                    report.graph_work += 1;
                    match &e.tf_op {
                        Some(op) => {
                            let pair = (e.name.clone(), op.clone());
                            if !report.graph_ops.contains(&pair) {
                                report.graph_ops.push(pair);
                            }
                        }
                        None => report.graph_unattributed += 1,
                    }
                }
                if e.is_kernel {
                    report.kernels += 1;
                    report.nvtx_kernels += usize::from(e.nvtx_range.is_some());
                    if e.name == "spin" {
                        report
                            .spins
                            .push((e.line, e.start_ps, e.start_ps + e.duration_ps));
                    }
                    if !report.kernel_names.contains(&e.name) {
                        report.kernel_names.push(e.name.clone());
                    }
                } else if e.name.starts_with("Memcpy") {
                    report.copies += 1;
                }
                if let Some(launch_ps) = launches.get(&e.correlation) {
                    report.linked += 1;
                    let lag = e.start_ps - launch_ps;
                    if lag < 0 {
                        report.before_launch += 1;
                    }
                    report.lags_us.push(lag as f64 / 1e6);
                }
                if let (true, Some(tf_op)) = (e.is_kernel, e.tf_op) {
                    let pair = (e.name.clone(), tf_op);
                    if !report.ops.contains(&pair) {
                        report.ops.push(pair);
                    }
                }
                if let (true, Some(annotation)) = (e.is_kernel, e.annotation) {
                    let pair = (e.name, annotation);
                    if !report.annotated.contains(&pair) {
                        report.annotated.push(pair);
                    }
                }
            }
        }
        report.lags_us.sort_by(f64::total_cmp);
        report
    }

    /// Errors unless the `steps` graph replays are there: each replay's two kernels and
    /// copy carrying the ops of their capture (`forward/bias_relu:bias_relu`, ...) and
    /// the graph's launch on the host carrying the graph's id; or, with `whole` (graph
    /// trace), one `CudaGraphExec` event per replay.
    pub(crate) fn check_graph(&self, steps: u32, whole: bool) -> Result<()> {
        let steps = steps as usize;
        let has_op =
            |name: &str, op: &str| self.graph_ops.iter().any(|(n, o)| n == name && o == op);
        let problems: Vec<String> = [
            (self.graph_launches < steps).then(|| {
                format!(
                    "{} of {steps} graph launches carry cuda_graph_id",
                    self.graph_launches
                )
            }),
            (whole && self.graph_execs < steps).then(|| {
                format!(
                    "{} CudaGraphExec events for {steps} replays",
                    self.graph_execs
                )
            }),
            (!whole && self.graph_work < 3 * steps).then(|| {
                format!(
                    "{} graph nodes' work for {steps} replays of 3 nodes",
                    self.graph_work
                )
            }),
            (!whole && self.graph_unattributed > 0).then(|| {
                format!(
                    "{} graph nodes' work without the op of its capture",
                    self.graph_unattributed
                )
            }),
            (!whole && !has_op("bias_relu", "forward/bias_relu:bias_relu")).then(|| {
                format!(
                    "no replayed bias_relu under forward/bias_relu: {:?}",
                    self.graph_ops
                )
            }),
            (!whole && !has_op("scale", "forward/scale:scale")).then(|| {
                format!(
                    "no replayed scale under forward/scale: {:?}",
                    self.graph_ops
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the CUDA graph's replays are not right: {}",
                problems.join("; ")
            )
            .into())
        }
    }

    /// Errors unless the NVTX ranges this example pushes (`--nvtx`) are on the host's
    /// NVTX lines and name the kernels launched inside them.
    pub(crate) fn check_nvtx(&self, steps: u32) -> Result<()> {
        let steps = steps as usize;
        let ranges = |name: &str| self.nvtx_names.get(name).copied().unwrap_or(0);
        let problems: Vec<String> = [
            (ranges("matmul_nvtx") < steps).then(|| {
                format!(
                    "{} matmul_nvtx ranges for {steps} steps",
                    ranges("matmul_nvtx")
                )
            }),
            (ranges("gemm_nvtx") < steps)
                .then(|| format!("{} gemm_nvtx ranges for {steps} steps", ranges("gemm_nvtx"))),
            (self.nvtx_kernels < 2 * steps).then(|| {
                format!(
                    "{} kernels carry nvtx_range for {steps} steps",
                    self.nvtx_kernels
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the NVTX ranges are not right: {} (seen: {:?})",
                problems.join("; "),
                self.nvtx_names
            )
            .into())
        }
    }

    /// Errors unless the planes hold what `steps` steps launched, linked and aligned.
    pub(crate) fn check(&self, steps: u32) -> Result<()> {
        let steps = steps as usize;
        let annotated_as = |kernel: &dyn Fn(&str) -> bool, want: &str| {
            self.annotated
                .iter()
                .any(|(name, annotation)| kernel(name) && annotation == want)
        };
        let problems: Vec<String> = [
            (self.planes == 0).then(|| "no /device:GPU plane".to_owned()),
            (self.kernels < 2 * steps)
                .then(|| format!("{} kernels for {steps} steps", self.kernels)),
            (!self.kernel_names.iter().any(|n| n == "bias_relu"))
                .then(|| "no bias_relu kernel".to_owned()),
            (self.copies < steps).then(|| format!("{} copies for {steps} steps", self.copies)),
            (self.linked < self.kernels).then(|| {
                format!(
                    "{} of {} kernels linked to launches",
                    self.linked, self.kernels
                )
            }),
            (self.before_launch > 0).then(|| {
                format!(
                    "{} device events start before their launch",
                    self.before_launch
                )
            }),
            (!annotated_as(&|n| n == "bias_relu", "bias_relu"))
                .then(|| "bias_relu not annotated as bias_relu".to_owned()),
            (!annotated_as(&|n| n.to_lowercase().contains("gemm"), "gemm"))
                .then(|| "no gemm kernel annotated as gemm".to_owned()),
            // The step is not part of the op: each layer is one op in every step.
            (!self
                .ops
                .iter()
                .any(|(n, op)| n == "bias_relu" && op == "bias_relu:bias_relu"))
            .then(|| "bias_relu's tf_op is not bias_relu:bias_relu".to_owned()),
            (!self
                .ops
                .iter()
                .any(|(n, op)| n.to_lowercase().contains("gemm") && op == "gemm:gemm"))
            .then(|| "no gemm kernel with tf_op gemm:gemm".to_owned()),
            (self.unwanted_calls > 0).then(|| {
                format!(
                    "{} host API calls that launch nothing (not left out by default): {:?}",
                    self.unwanted_calls, self.api_calls
                )
            }),
            (!self.spins.is_empty() && !overlapping_on_two_lines(&self.spins)).then(|| {
                format!(
                    "the two streams' spin kernels are not on two lines at once: {:?}",
                    self.spins
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("the GPU profile is not right: {}", problems.join("; ")).into())
        }
    }
}

impl std::fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lag = |q: f64| {
            self.lags_us
                .get(((self.lags_us.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        write!(
            f,
            "{} GPU plane(s): {} kernels ({}), {} copies; {} linked to their launch, \
             launch -> start min {:.1} us, median {:.1} us; annotations {:?}; ops {:?}; \
             host API calls {:?}; two streams {} ({:?}); NVTX: {} events {:?}, {} kernels \
             with nvtx_range; graphs: {} launches with cuda_graph_id, {} nodes' work \
             ({} without an op) {:?}, {} whole-graph events; GPU counters {:?}",
            self.planes,
            self.kernels,
            self.kernel_names.join(", "),
            self.copies,
            self.linked,
            lag(0.0),
            lag(0.5),
            self.annotated,
            self.ops,
            self.api_calls,
            if overlapping_on_two_lines(&self.spins) {
                "overlap"
            } else {
                "do not overlap"
            },
            self.spins,
            self.nvtx_events,
            self.nvtx_names,
            self.nvtx_kernels,
            self.graph_launches,
            self.graph_work,
            self.graph_unattributed,
            self.graph_ops,
            self.graph_execs,
            self.gpu_counters,
        )
    }
}

/// Whether two of `spans` (line, start, end) on different lines overlap in time.
fn overlapping_on_two_lines(spans: &[(i64, i64, i64)]) -> bool {
    spans.iter().enumerate().any(|(i, a)| {
        spans[i + 1..]
            .iter()
            .any(|b| a.0 != b.0 && a.1 < b.2 && b.1 < a.2)
    })
}

/// An event that carries a `correlation_id`.
struct Correlated {
    name: String,
    /// The id of its line (a stream, on a GPU plane).
    line: i64,
    duration_ps: i64,
    /// Its `nvtx_range` stat.
    nvtx_range: Option<String>,
    /// Picoseconds since the plane's epoch.
    start_ps: i64,
    correlation: u64,
    /// Whether it has `kernel_details`.
    is_kernel: bool,
    /// Its `annotation` stat.
    annotation: Option<String>,
    /// Its `tf_op` stat.
    tf_op: Option<String>,
    /// Whether it ran as a node of a CUDA graph (`cuda_graph_node_id`).
    in_graph: bool,
}

/// Every event of `plane` that carries a `correlation_id`.
fn correlated_events(plane: &XPlane) -> Vec<Correlated> {
    plane
        .lines
        .iter()
        .flat_map(|line| {
            line.events.iter().filter_map(move |e| {
                let correlation = match plane.find_stat(&e.stats, "correlation_id")? {
                    XStatValue::Uint64(v) => *v,
                    XStatValue::Int64(v) => *v as u64,
                    _ => return None,
                };
                let text = |name| plane.find_text(&e.stats, name).map(str::to_owned);
                let (annotation, tf_op) = (text("annotation"), text("tf_op"));
                Some(Correlated {
                    name: plane.event_name(e.metadata_id)?.to_owned(),
                    line: line.id,
                    duration_ps: e.duration_ps,
                    nvtx_range: text("nvtx_range"),
                    start_ps: line.timestamp_ns * 1000 + e.offset_ps(),
                    correlation,
                    is_kernel: plane.find_stat(&e.stats, "kernel_details").is_some(),
                    annotation,
                    tf_op,
                    in_graph: plane.find_stat(&e.stats, "cuda_graph_node_id").is_some(),
                })
            })
        })
        .collect()
}

/// The report's reading of a profile, on a host session shaped like this example's
/// steps plus synthetic device records (launches inside `gemm` and `bias_relu`): the
/// part of this example that runs without a GPU.
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prof::{trace, ProfileOptions};

    use super::*;

    /// Sessions are process-wide: one test records at a time.
    static SESSION: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn shaped_like_the_example(steps: u32) -> XSpace {
        shaped_like_the_example_with(steps, false)
    }

    /// The same, with every CUDA API call kept (`gpu_trace_all_api_calls`) when
    /// `all_api_calls`.
    fn shaped_like_the_example_with(steps: u32, all_api_calls: bool) -> XSpace {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        prof::start_in_memory(ProfileOptions::default().device_tracer_level(0)).expect("start");
        for step in 0..steps {
            let _step = trace!("Train", step_num = step);
            for name in ["h2d", "gemm", "bias_relu", "d2h"] {
                let _t = prof::Trace::new(name);
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        let mut space = prof::stop().expect("stop").into_xspace();
        let host = space.plane(schema::HOST_PLANE).expect("host plane");
        let (line, windows) = host
            .lines
            .iter()
            .find_map(|line| {
                let windows: Vec<(u64, u64)> = line
                    .events
                    .iter()
                    .filter(|e| {
                        matches!(host.event_name(e.metadata_id), Some("gemm" | "bias_relu"))
                    })
                    .map(|e| {
                        let at = line.timestamp_ns * 1000 + e.offset_ps();
                        ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64)
                    })
                    .collect();
                (!windows.is_empty()).then_some((line.id as u32, windows))
            })
            .expect("a line with the steps");
        let mut trace = prof::cuda::synthetic::launches(
            line,
            &windows,
            &["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "bias_relu"],
        );
        trace.all_api_calls = all_api_calls;
        prof::cuda::convert::add_to_space(&trace, &mut space, &Some);
        space
    }

    #[test]
    fn reads_kernels_links_alignment_and_annotations() {
        let space = shaped_like_the_example(3);
        let report = DeviceReport::of(&space);
        assert_eq!(report.planes, 1);
        assert_eq!(report.kernels, 6, "{report}");
        assert_eq!(report.copies, 6, "{report}");
        assert_eq!(
            report.kernel_names,
            ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "bias_relu"]
        );
        // Each kernel is linked to its launch, 8 µs later, and each copy to its call,
        // 5 µs later.
        assert_eq!((report.linked, report.before_launch), (12, 0), "{report}");
        assert!(
            report
                .lags_us
                .iter()
                .all(|&l| (l - 8.0).abs() < 0.01 || (l - 5.0).abs() < 0.01),
            "{report}"
        );
        assert_eq!(
            report.annotated,
            [
                (
                    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n".to_owned(),
                    "gemm".to_owned()
                ),
                ("bias_relu".to_owned(), "bias_relu".to_owned())
            ]
        );
        assert_eq!(
            report.ops,
            [
                (
                    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n".to_owned(),
                    "gemm:gemm".to_owned()
                ),
                ("bias_relu".to_owned(), "bias_relu:bias_relu".to_owned())
            ]
        );
        // The launches, copies and synchronisations; none of the calls around them.
        assert_eq!(
            report.api_calls,
            [
                ("cuLaunchKernel".to_owned(), 6),
                ("cuMemcpyHtoDAsync_v2".to_owned(), 6),
                ("cuStreamSynchronize".to_owned(), 6)
            ]
            .into()
        );
        assert_eq!(report.unwanted_calls, 0);
        report.check(3).expect("a right profile passes");
        let err = report.check(4).expect_err("4 steps need 8 kernels");
        assert!(err.to_string().contains("6 kernels for 4 steps"), "{err}");
    }

    #[test]
    fn calls_that_launch_nothing_fail_the_check() {
        let report = DeviceReport::of(&shaped_like_the_example_with(3, true));
        // Six per launch: cuCtxGetCurrent, cuStreamGetCaptureInfo_v2, cuEventCreate,
        // cudaGetLastError, cuEventRecord, cuEventDestroy_v2.
        assert_eq!(report.unwanted_calls, 36, "{report}");
        let err = report.check(3).expect_err("noise on the host");
        assert!(err.to_string().contains("36 host API calls"), "{err}");
    }

    #[test]
    fn two_streams_overlap_only_on_two_lines_at_once() {
        // Two lines, overlapping: what two streams running at once give.
        assert!(overlapping_on_two_lines(&[(1, 0, 100), (2, 50, 150)]));
        // One after the other, or touching only at an end: serialised.
        assert!(!overlapping_on_two_lines(&[(1, 0, 100), (2, 100, 200)]));
        // Overlapping but on one line: not two streams.
        assert!(!overlapping_on_two_lines(&[(1, 0, 100), (1, 50, 150)]));
        assert!(!overlapping_on_two_lines(&[]));
        let report = DeviceReport {
            spins: vec![(1, 0, 100), (2, 100, 200)],
            ..DeviceReport::of(&shaped_like_the_example(1))
        };
        let err = report.check(1).expect_err("serialised streams");
        assert!(
            err.to_string().contains("not on two lines at once"),
            "{err}"
        );
    }

    #[test]
    fn a_host_only_profile_fails_the_check() {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        prof::start_in_memory(ProfileOptions::default().device_tracer_level(0)).expect("start");
        drop(trace!("Train", step_num = 0));
        let space = prof::stop().expect("stop").into_xspace();
        let err = DeviceReport::of(&space).check(1).expect_err("no GPU plane");
        assert!(err.to_string().contains("no /device:GPU plane"), "{err}");
    }

    /// A graph captured under `forward` > `bias_relu`, `scale`, `copy` and replayed in
    /// `replays` steps, as `Gpu::graph` makes it, with synthetic records; `notes` keeps
    /// the tracer's notes of the capture.
    fn graph_profile(replays: u32, notes: bool, whole: bool) -> XSpace {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        prof::start_in_memory(ProfileOptions::default().device_tracer_level(0)).expect("start");
        {
            let _f = trace!("forward");
            for layer in ["bias_relu", "scale", "copy"] {
                let _t = prof::Trace::new(layer);
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        for step in 0..replays {
            let _s = trace!("Train", step_num = step);
            let _r = trace!("replay");
            std::thread::sleep(Duration::from_micros(300));
        }
        let mut space = prof::stop().expect("stop").into_xspace();
        let host = space.plane(schema::HOST_PLANE).expect("host plane");
        let line = host
            .lines
            .iter()
            .find(|l| !l.events.is_empty())
            .expect("a line");
        let window = |name: &str| -> Vec<(u64, u64)> {
            line.events
                .iter()
                .filter(|e| host.event_name(e.metadata_id) == Some(name))
                .map(|e| {
                    let at = line.timestamp_ns * 1000 + e.offset_ps();
                    ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64)
                })
                .collect()
        };
        let nodes: Vec<_> = [
            ("bias_relu", "bias_relu"),
            ("scale", "scale"),
            ("copy", "copy_kernel"),
        ]
        .into_iter()
        .map(|(layer, kernel)| {
            let (start, end) = window(layer)[0];
            prof::cuda::synthetic::CapturedNode {
                at: (start + end) / 2,
                seq: 0,
                kernel,
            }
        })
        .collect();
        let mut trace =
            prof::cuda::synthetic::graph(line.id as u32, &nodes, &window("replay"), 900, whole);
        if !notes {
            trace.graph_notes.clear();
        }
        prof::cuda::convert::add_to_space(&trace, &mut space, &Some);
        space
    }

    #[test]
    fn replayed_graph_kernels_must_carry_their_capture_ops() {
        let report = DeviceReport::of(&graph_profile(3, true, false));
        assert_eq!(
            (report.graph_launches, report.graph_work),
            (3, 9),
            "{report}"
        );
        report.check_graph(3, false).expect("a right graph passes");
        let err = report.check_graph(4, false).expect_err("4 replays");
        assert!(err.to_string().contains("3 of 4 graph launches"), "{err}");
        // Without the capture's notes the kernels take the replay's op: caught.
        let report = DeviceReport::of(&graph_profile(2, false, false));
        let err = report.check_graph(2, false).expect_err("wrong ops");
        assert!(
            err.to_string()
                .contains("no replayed bias_relu under forward/bias_relu"),
            "{err}"
        );
        // Whole-graph launches: one event per replay.
        let report = DeviceReport::of(&graph_profile(2, true, true));
        assert_eq!(report.graph_execs, 2, "{report}");
        report.check_graph(2, true).expect("whole launches pass");
    }

    #[test]
    fn nvtx_ranges_must_be_there_and_name_the_kernels() {
        let mut report = DeviceReport::default();
        let err = report.check_nvtx(2).expect_err("no ranges");
        assert!(
            err.to_string().contains("0 matmul_nvtx ranges for 2 steps"),
            "{err}"
        );
        report.nvtx_names = [("matmul_nvtx".to_owned(), 2), ("gemm_nvtx".to_owned(), 2)].into();
        report.nvtx_kernels = 4;
        report.check_nvtx(2).expect("ranges and kernels");
    }
}
