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
//!     [--serve SECONDS]
//! ```
//!
//! `--serve SECONDS` profiles nothing itself: it serves the profiler port and trains,
//! for the live view to watch (`prof-top ADDR --kernels`: each GPU's kernel time from
//! CUPTI, beside NVML's utilisation).
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

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm as _, GemmConfig};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg as _};
use prof::{trace, ProfileOptions};

#[path = "../common/mod.rs"]
mod common;
mod floor;
mod overhead;
mod report;

use floor::{Floor, FloorSession};
use overhead::Rounds;
use report::DeviceReport;

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
    /// Rounds of each (untraced, traced, CUPTI's floor) for --overhead
    #[arg(long, value_name = "R", default_value_t = 5)]
    rounds: usize,
    /// Also capture a step of kernels and a copy into a CUDA graph (stream capture,
    /// under forward > bias_relu, scale, copy) and replay it in this many more steps;
    /// the replayed kernels must carry their capture's ops
    #[arg(long, value_name = "STEPS", default_value_t = 0)]
    graph: u32,
    /// Push NVTX ranges and marks around each step's GEMM and bias_relu (with
    /// --option gpu_enable_nvtx_tracking=true and NVTX_INJECTION64_PATH naming
    /// libcupti, they must be on the host's NVTX lines and name the kernels inside)
    #[arg(long)]
    nvtx: bool,
    /// Instead of profiling, serve the profiler port (printing `listening on ADDR`)
    /// and train for this many seconds with no session of its own, for `prof-top
    /// --kernels` to watch
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    serve: u64,
}

fn main() -> Result<()> {
    let (
        args,
        Extra {
            overhead: overhead_launches,
            rounds,
            graph: graph_steps,
            nvtx,
            serve,
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

    if serve > 0 {
        return serve_for(&gpu, &a, &b, &bias, Duration::from_secs(serve));
    }

    let options = args.options(ProfileOptions::default());
    let nvtx_tracked = nvtx && options.advanced_bool("gpu_enable_nvtx_tracking") == Some(true);
    let graph_trace = options.advanced_bool("gpu_enable_cupti_activity_graph_trace") == Some(true);
    prof::start(&args.logdir, options)?;
    let mut result = Vec::new();
    for step in 0..args.steps {
        let _step = trace!("Train", step_num = step);
        result = gpu.step(&a, &b, &bias, nvtx)?;
    }
    {
        let _t = trace!("two_streams");
        gpu.two_streams()?;
    }
    if graph_steps > 0 {
        gpu.graph(args.steps, graph_steps)?;
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
    if graph_steps > 0 {
        found.check_graph(graph_steps, graph_trace)?;
    }
    if nvtx_tracked {
        found.check_nvtx(args.steps)?;
    }

    for &launches in &overhead_launches {
        let rounds = gpu.overhead(launches as usize, rounds.max(1))?;
        println!("{}", rounds.summary(launches as usize));
    }
    Ok(())
}

/// Trains for `duration` behind a profiler port, recording nothing unless someone
/// watches or captures: what `prof-top --kernels` watches on a GPU machine
/// (`examples/gpu_checks.sh`).
fn serve_for(gpu: &Gpu, a: &[f32], b: &[f32], bias: &[f32], duration: Duration) -> Result<()> {
    let server = prof::server::start(0)?;
    println!("listening on {}", server.local_addr());
    std::io::Write::flush(&mut std::io::stdout())?;
    let until = Instant::now() + duration;
    let mut step = 0u64;
    while Instant::now() < until {
        let _step = trace!("Train", step_num = step);
        gpu.step(a, b, bias, false)?;
        step += 1;
    }
    server.stop();
    println!(
        "cuda_matmul: served {step} steps in {} s",
        duration.as_secs()
    );
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

    /// One step: copies in, `relu(a·b + bias)` on the GPU, the result copied out. With
    /// `nvtx`, the GEMM and bias_relu are inside NVTX ranges, and a mark is made.
    fn step(&self, a: &[f32], b: &[f32], bias: &[f32], nvtx: bool) -> Result<Vec<f32>> {
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
        let nvtx_step = nvtx.then(|| nvtx::range!("matmul_nvtx"));
        if nvtx {
            nvtx::mark!("gemm_next");
        }
        {
            let _t = trace!("gemm", m = N, n = N, k = N);
            let _r = nvtx.then(|| nvtx::range!("gemm_nvtx"));
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
        drop(nvtx_step);
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

    /// Captures a step into a CUDA graph once, on a stream of its own (under
    /// `forward`, then `bias_relu`, `scale` and `copy`: two kernel nodes and a copy
    /// node), then replays it in `steps` steps (`Train` holding `replay`), numbered
    /// after `first` ones.
    fn graph(&self, first: u32, steps: u32) -> Result<()> {
        use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        let stream = self.ctx.new_stream()?;
        // Everything below runs on this one stream: no cross-stream ordering is needed,
        // and event records would not be allowed inside the capture.
        // SAFETY: no buffer made here is used on another stream.
        unsafe { self.ctx.disable_event_tracking() };
        let mut x = stream.alloc_zeros::<f32>(N * N)?;
        let bias = stream.alloc_zeros::<f32>(N)?;
        let mut copy = stream.alloc_zeros::<f32>(N * N)?;
        stream.synchronize()?;
        let (rows, cols, by, n) = (N as i32, N as i32, 0.5f32, (N * N) as i32);
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        {
            let _f = trace!("forward");
            {
                let _t = trace!("bias_relu");
                let mut launch = stream.launch_builder(&self.bias_relu);
                launch.arg(&mut x).arg(&bias).arg(&rows).arg(&cols);
                // SAFETY: `bias_relu(float*, const float*, int, int)`; x holds rows×cols
                // floats and bias cols, and the kernel bounds-checks its index.
                unsafe { launch.launch(LaunchConfig::for_num_elems((N * N) as u32)) }?;
            }
            {
                let _t = trace!("scale");
                let mut launch = stream.launch_builder(&self.scale);
                launch.arg(&mut x).arg(&by).arg(&n);
                // SAFETY: `scale(float*, float, int)`; x holds n floats, bounds-checked.
                unsafe { launch.launch(LaunchConfig::for_num_elems((N * N) as u32)) }?;
            }
            let _t = trace!("copy");
            stream.memcpy_dtod(&x, &mut copy)?;
        }
        let graph = stream
            .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?
            .ok_or("the capture recorded nothing")?;
        for step in first..first + steps {
            let _step = trace!("Train", step_num = step);
            let _r = trace!("replay");
            graph.launch()?;
            stream.synchronize()?;
        }
        // SAFETY: back to the default, now that the graph's stream is done.
        unsafe { self.ctx.enable_event_tracking() };
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
                prof::start_in_memory(ProfileOptions::default())?;
                let started = t0.elapsed();
                let took = run()?;
                let t1 = Instant::now();
                let profile = prof::stop()?;
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
        // CUPTI alone on the same loop (no prof session: its annotations cost their
        // atomic load, as they do untraced).
        let floor_round =
            |run: &mut dyn FnMut() -> Result<Duration>, floor: Floor| -> Result<Duration> {
                let session = FloorSession::start(floor)?;
                let took = run()?;
                let records = session.stop()?;
                if records < launches as u64 {
                    return Err(format!(
                        "CUPTI's floor ({floor:?}) saw {records} of {launches} kernels"
                    )
                    .into());
                }
                Ok(took)
            };
        // One round of each first, not counted: module loading, CUPTI's own start-up.
        run()?;
        traced_round(&mut run, &mut Rounds::default())?;
        floor_round(&mut run, Floor::LaunchCallbacks)?;
        for _ in 0..rounds {
            all.untraced.push(run()?);
            traced_round(&mut run, &mut all)?;
            all.floor_activity
                .push(floor_round(&mut run, Floor::KernelActivity)?);
            all.floor_callbacks
                .push(floor_round(&mut run, Floor::LaunchCallbacks)?);
        }
        Ok(all)
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

#[cfg(test)]
mod tests {
    use super::*;

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
