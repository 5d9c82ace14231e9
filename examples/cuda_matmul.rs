//! A GPU profile from real CUDA work through cudarc: each step copies two matrices to
//! the GPU, multiplies them with cuBLAS, runs an NVRTC-compiled `bias_relu` kernel on
//! the product and copies it back, every part under a `prof::trace!` annotation.
//! The profile then holds one `/device:GPU:<n>` plane with the kernels and copies,
//! each linked to the host call that launched it and to the annotation around it;
//! the example checks that it does and says what it found.
//!
//! ```text
//! cargo run --features cuda --example cuda_matmul -- [--logdir DIR] [--steps N]
//!     [--option KEY=VALUE]... [--overhead LAUNCHES,...] [--rounds R]
//! ```
//!
//! After the steps, two `spin` kernels run at once on two streams (`two_streams`): the
//! profile must show them on two stream lines, overlapping.
//!
//! `--overhead LAUNCHES` also times a launch-heavy loop (LAUNCHES tiny kernels, each
//! under an annotation) untraced and traced, alternately in the same run, `--rounds`
//! times each, and prints the medians, their spread and the ratio of the medians. The
//! loop is timed inside the session; the session's own start and stop (CUPTI's set-up,
//! collecting the records) are timed apart, as the fixed cost a capture adds once.
//! `examples/cuda_overhead_torch.py` times the same loop under torch.profiler.
//!
//! Without a GPU (no libcuda, no device, no cuBLAS or NVRTC library) it says so and
//! exits 0: it is built and run that way in CI.
#![allow(clippy::print_stdout)]
// cuBLAS calls and kernel launches are foreign calls; each block says why its
// arguments are valid.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm as _, GemmConfig};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg as _};
use prof::xspace::{XPlane, XSpace, XStatValue};
use prof::{schema, trace, ProfileOptions};

mod common;

/// Side of the square matrices.
const N: usize = 512;

/// Adds a per-column bias to a column-major `rows × cols` matrix and clamps at zero.
const KERNELS: &str = r#"
extern "C" __global__ void bias_relu(float *x, const float *bias, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        float v = x[i] + bias[i / rows];
        x[i] = v > 0.0f ? v : 0.0f;
    }
}

// Busy for `cycles` SM clock cycles, so that kernels on two streams overlap in time.
extern "C" __global__ void spin(float *x, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    if (threadIdx.x == 0) x[blockIdx.x] += 1.0f;
}

extern "C" __global__ void scale(float *x, float by, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] *= by;
    }
}
"#;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// cuda_matmul's own flags.
#[derive(clap::Args)]
struct Extra {
    /// Also time this many tiny kernel launches untraced and traced, alternately (a
    /// comma-separated list times each count)
    #[arg(long, value_name = "LAUNCHES", value_delimiter = ',')]
    overhead: Vec<u32>,
    /// Rounds of each (untraced, traced) for --overhead
    #[arg(long, value_name = "R", default_value_t = 5)]
    rounds: usize,
}

fn main() -> Result<()> {
    let (
        args,
        Extra {
            overhead: overhead_launches,
            rounds,
        },
    ) = common::parse::<Extra>(
        "cuda_matmul",
        "Profiles cuBLAS, NVRTC kernels and copies on GPU 0 and checks its own GPU plane.",
        10,
    );
    let gpu = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(why) => {
            println!("cuda_matmul: no GPU to profile here ({why}); nothing to do.");
            return Ok(());
        }
    };
    println!("cuda_matmul: {}", gpu.name);

    let a: Vec<f32> = (0..N * N).map(|i| pseudo_random(i, 1)).collect();
    let b: Vec<f32> = (0..N * N).map(|i| pseudo_random(i, 2)).collect();
    let bias: Vec<f32> = (0..N).map(|j| pseudo_random(j, 3)).collect();

    prof::start(&args.logdir, args.options(ProfileOptions::default()))?;
    let mut result = Vec::new();
    for step in 0..args.steps {
        let _step = trace!("Train", step_num = step);
        result = gpu.step(&a, &b, &bias)?;
    }
    {
        let _t = trace!("two_streams");
        gpu.two_streams()?;
    }
    let profile = prof::stop().inspect_err(|e| eprintln!("{e}"))?;
    check_product(&a, &b, &bias, &result)?;

    let found = DeviceReport::of(profile.xspace());
    common::report(&profile, &args, &found.to_string())?;
    if let Some(missing) = profile
        .warnings()
        .iter()
        .find(|w| w.contains("no GPU trace"))
    {
        // The GPU ran, but CUPTI did not load: the host profile is still there.
        println!("cuda_matmul: the device was not traced: {missing}");
        return Ok(());
    }
    found.check(args.steps)?;

    for &launches in &overhead_launches {
        let rounds = gpu.overhead(launches as usize, rounds.max(1))?;
        println!("{}", rounds.summary(launches as usize));
    }
    Ok(())
}

/// The CUDA objects of the run: a context on GPU 0, its stream, cuBLAS and the
/// compiled kernels.
struct Gpu {
    name: String,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    bias_relu: CudaFunction,
    scale: CudaFunction,
    spin: CudaFunction,
    ctx: Arc<CudaContext>,
}

impl Gpu {
    /// Opens GPU 0, or says why there is none to open.
    fn open() -> std::result::Result<Gpu, String> {
        // SAFETY: these only try to load the libraries by name; no symbol is used.
        let present = unsafe {
            [
                ("libcuda", cudarc::driver::sys::is_culib_present()),
                ("libcublas", cudarc::cublas::sys::is_culib_present()),
                ("libnvrtc", cudarc::nvrtc::sys::is_culib_present()),
            ]
        };
        let missing: Vec<&str> = present
            .iter()
            .filter(|(_, found)| !found)
            .map(|(lib, _)| *lib)
            .collect();
        if !missing.is_empty() {
            return Err(format!("{} not found", missing.join(", ")));
        }
        let ctx = CudaContext::new(0).map_err(|e| format!("no CUDA device 0: {e}"))?;
        let name = ctx.name().map_err(|e| e.to_string())?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e}"))?;
        let ptx = cudarc::nvrtc::compile_ptx(KERNELS).map_err(|e| format!("NVRTC: {e}"))?;
        let module = ctx.load_module(ptx).map_err(|e| e.to_string())?;
        let function = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| format!("{name}: {e}"))
        };
        Ok(Gpu {
            name,
            bias_relu: function("bias_relu")?,
            scale: function("scale")?,
            spin: function("spin")?,
            stream,
            blas,
            ctx,
        })
    }

    /// One step: copies in, `relu(a·b + bias)` on the GPU, the result copied out.
    fn step(&self, a: &[f32], b: &[f32], bias: &[f32]) -> Result<Vec<f32>> {
        let (a, b, bias) = {
            let _t = trace!("h2d", bytes = 4 * (a.len() + b.len() + bias.len()));
            (
                self.stream.clone_htod(a)?,
                self.stream.clone_htod(b)?,
                self.stream.clone_htod(bias)?,
            )
        };
        let mut c = {
            let _t = trace!("alloc_output");
            self.stream.alloc_zeros::<f32>(N * N)?
        };
        {
            let _t = trace!("gemm", m = N, n = N, k = N);
            let n = N as i32;
            let cfg = GemmConfig {
                transa: cublasOperation_t::CUBLAS_OP_N,
                transb: cublasOperation_t::CUBLAS_OP_N,
                m: n,
                n,
                k: n,
                alpha: 1.0f32,
                lda: n,
                ldb: n,
                beta: 0.0f32,
                ldc: n,
            };
            // SAFETY: a, b and c each hold N×N floats, as m, n, k and the leading
            // dimensions say.
            unsafe { self.blas.gemm(cfg, &a, &b, &mut c) }?;
        }
        {
            let _t = trace!("bias_relu");
            let (rows, cols) = (N as i32, N as i32);
            let mut launch = self.stream.launch_builder(&self.bias_relu);
            launch.arg(&mut c).arg(&bias).arg(&rows).arg(&cols);
            // SAFETY: the arguments match `bias_relu`'s parameters (float*, const
            // float*, int, int); c holds rows×cols floats and bias cols; the grid covers
            // rows×cols threads, and the kernel bounds-checks its index.
            unsafe { launch.launch(LaunchConfig::for_num_elems((N * N) as u32)) }?;
        }
        let _t = trace!("d2h");
        Ok(self.stream.clone_dtoh(&c)?)
    }

    /// A `spin` kernel of about a millisecond on each of two new streams, launched
    /// back to back: the GPU runs them at once.
    fn two_streams(&self) -> Result<()> {
        let streams = [self.ctx.new_stream()?, self.ctx.new_stream()?];
        // A buffer per stream: one shared would make the second launch wait for the
        // first (cudarc orders streams that touch the same memory).
        let mut buffers = streams
            .iter()
            .map(|s| s.alloc_zeros::<f32>(1))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let cycles: i64 = 2_000_000; // ~1 ms at H100/H200 clocks
        for (stream, x) in streams.iter().zip(&mut buffers) {
            let mut launch = stream.launch_builder(&self.spin);
            launch.arg(x).arg(&cycles);
            let one = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: `spin(float*, long long)`; x holds one float per block (one block).
            unsafe { launch.launch(one) }?;
        }
        for stream in &streams {
            stream.synchronize()?;
        }
        Ok(())
    }

    /// `rounds` alternated timings of `launches` tiny kernels (each under an
    /// annotation, then one synchronize) with nothing recording and while a session
    /// traces the GPU, and of each traced round's session start and stop.
    fn overhead(&self, launches: usize, rounds: usize) -> Result<Rounds> {
        let mut x = self.stream.alloc_zeros::<f32>(1024)?;
        let mut run = || -> Result<Duration> {
            let start = Instant::now();
            for i in 0..launches {
                let _t = trace!("tiny", i = i);
                let (by, n) = (1.0f32, 1024i32);
                let mut launch = self.stream.launch_builder(&self.scale);
                launch.arg(&mut x).arg(&by).arg(&n);
                // SAFETY: `scale(float*, float, int)`; x holds n floats and the
                // kernel bounds-checks its index.
                unsafe { launch.launch(LaunchConfig::for_num_elems(1024)) }?;
            }
            self.stream.synchronize()?;
            Ok(start.elapsed())
        };
        let mut all = Rounds::default();
        let traced_round =
            |run: &mut dyn FnMut() -> Result<Duration>, all: &mut Rounds| -> Result<()> {
                // In memory only: the overhead runs are not written to the logdir.
                let t0 = Instant::now();
                profiler_cuda_session_start()?;
                let started = t0.elapsed();
                let took = run()?;
                let t1 = Instant::now();
                let profile = profiler_core::session::stop()?;
                let stopped = t1.elapsed();
                let kernels = DeviceReport::of(profile.xspace()).kernels;
                if kernels < launches {
                    return Err(format!("traced round saw {kernels} of {launches} kernels").into());
                }
                all.traced.push(took);
                all.start.push(started);
                all.stop.push(stopped);
                Ok(())
            };
        // One round of each first, not counted: module loading, CUPTI's own start-up.
        run()?;
        traced_round(&mut run, &mut Rounds::default())?;
        for _ in 0..rounds {
            all.untraced.push(run()?);
            traced_round(&mut run, &mut all)?;
        }
        Ok(all)
    }
}

/// What [`Gpu::overhead`] timed, a value per round.
#[derive(Debug, Default)]
struct Rounds {
    untraced: Vec<Duration>,
    traced: Vec<Duration>,
    /// The traced rounds' `start` (CUPTI's set-up).
    start: Vec<Duration>,
    /// The traced rounds' `stop` (flushing and collecting the records).
    stop: Vec<Duration>,
}

impl Rounds {
    /// One line: medians with their range, the ratio of the medians with the range of
    /// the rounds' own ratios, the added time per launch, and the session's fixed cost.
    fn summary(&self, launches: usize) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let spread = |times: &[Duration]| {
            let (median, lo, hi) = spread_of(times);
            format!("{:.2} ms [{:.2}-{:.2}]", ms(median), ms(lo), ms(hi))
        };
        let (untraced, ..) = spread_of(&self.untraced);
        let (traced, ..) = spread_of(&self.traced);
        let ratios: Vec<f64> = self
            .traced
            .iter()
            .zip(&self.untraced)
            .map(|(t, u)| t.as_secs_f64() / u.as_secs_f64())
            .collect();
        let (ratio_lo, ratio_hi) = ratios
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
                (lo.min(r), hi.max(r))
            });
        let per_launch_ns = (traced.as_secs_f64() - untraced.as_secs_f64()) * 1e9 / launches as f64;
        format!(
            "overhead on {launches} launches, {} alternated rounds: untraced {}, traced {}: \
             {:.3}x (rounds {:.3}-{:.3}), {per_launch_ns:+.0} ns per launch; \
             once per session: start {}, stop {}",
            self.traced.len(),
            spread(&self.untraced),
            spread(&self.traced),
            traced.as_secs_f64() / untraced.as_secs_f64(),
            ratio_lo,
            ratio_hi,
            spread(&self.start),
            spread(&self.stop),
        )
    }
}

/// A core session with the CUPTI tracer (what `prof::start` does, without a logdir).
fn profiler_cuda_session_start() -> Result<()> {
    prof::cuda::register();
    profiler_core::session::start(ProfileOptions::default(), None)?;
    Ok(())
}

/// (median, min, max) of `times`; zeros for none.
fn spread_of(times: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = times.to_vec();
    sorted.sort();
    match (sorted.first(), sorted.last()) {
        (Some(&lo), Some(&hi)) => (sorted[sorted.len() / 2], lo, hi),
        _ => Default::default(),
    }
}

/// A value in [-0.5, 0.5) from an index and a seed, the same on every run.
fn pseudo_random(i: usize, seed: usize) -> f32 {
    let x = (i.wrapping_mul(2_654_435_761).wrapping_add(seed * 40_503)) % 1000;
    x as f32 / 1000.0 - 0.5
}

/// Checks entries of the GPU's `relu(a·b + bias)` (column-major) against the CPU.
fn check_product(a: &[f32], b: &[f32], bias: &[f32], c: &[f32]) -> Result<()> {
    if c.len() != N * N {
        return Err(format!("result has {} values, not {}", c.len(), N * N).into());
    }
    for (i, j) in [(0, 0), (1, 7), (N / 2, N / 3), (N - 1, N - 1), (17, N - 2)] {
        let dot: f32 = (0..N).map(|k| a[i + k * N] * b[k + j * N]).sum();
        let want = (dot + bias[j]).max(0.0);
        let got = c[i + j * N];
        if (got - want).abs() > 1e-3 * (1.0 + want.abs()) {
            return Err(format!("c[{i},{j}] = {got}, the CPU says {want}").into());
        }
    }
    Ok(())
}

/// What the GPU planes of a profile hold.
#[derive(Debug, Default)]
struct DeviceReport {
    planes: usize,
    kernels: usize,
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
}

impl DeviceReport {
    fn of(space: &XSpace) -> DeviceReport {
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
            for e in host.lines.iter().flat_map(|l| &l.events) {
                let Some(name) = host.event_name(e.metadata_id) else {
                    continue;
                };
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
            for e in correlated_events(plane) {
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

    /// Errors unless the planes hold what `steps` steps launched, linked and aligned.
    fn check(&self, steps: u32) -> Result<()> {
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
             with nvtx_range",
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
                let text = |name| match plane.find_stat(&e.stats, name) {
                    Some(XStatValue::Str(s)) => Some(s.clone()),
                    _ => None,
                };
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
        profiler_core::session::start(ProfileOptions::default().device_tracer_level(0), None)
            .expect("start");
        for step in 0..steps {
            let _step = trace!("Train", step_num = step);
            for name in ["h2d", "gemm", "bias_relu", "d2h"] {
                let _t = prof::Trace::new(name);
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        let mut space = profiler_core::session::stop().expect("stop").into_xspace();
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
        profiler_core::session::start(ProfileOptions::default().device_tracer_level(0), None)
            .expect("start");
        drop(trace!("Train", step_num = 0));
        let space = profiler_core::session::stop().expect("stop").into_xspace();
        let err = DeviceReport::of(&space).check(1).expect_err("no GPU plane");
        assert!(err.to_string().contains("no /device:GPU plane"), "{err}");
    }

    #[test]
    fn the_product_check_catches_a_wrong_entry() {
        let a: Vec<f32> = (0..N * N).map(|i| pseudo_random(i, 1)).collect();
        let b: Vec<f32> = (0..N * N).map(|i| pseudo_random(i, 2)).collect();
        let bias: Vec<f32> = (0..N).map(|j| pseudo_random(j, 3)).collect();
        let mut c = vec![0.0f32; N * N];
        for j in [0, 7, N / 3, N - 1, N - 2] {
            for i in [0, 1, N / 2, N - 1, 17] {
                let dot: f32 = (0..N).map(|k| a[i + k * N] * b[k + j * N]).sum();
                c[i + j * N] = (dot + bias[j]).max(0.0);
            }
        }
        check_product(&a, &b, &bias, &c).expect("the CPU's own product");
        c[1 + 7 * N] += 1.0;
        let err = check_product(&a, &b, &bias, &c).expect_err("a wrong entry");
        assert!(err.to_string().contains("c[1,7]"), "{err}");
    }
}
