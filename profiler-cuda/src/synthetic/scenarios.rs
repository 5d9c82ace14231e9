//! Whole traces made of synthetic records: launches with their calls, copies and noise
//! inside host annotations, NVTX ranges, allocations, CUDA graphs, PM samples.

use super::cbid;
use super::records::*;
use crate::layout::{kind, marker_flag};

/// The OS thread id synthetic API and NVTX records are made on.
pub const THREAD: u32 = 4242;

/// One launch for [`trace`]: a kernel and a copy made inside the host annotation
/// whose span is `window`.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    /// The enclosing annotation's span (session-relative ns).
    pub window: (u64, u64),
    /// The kernel's name.
    pub kernel: &'static str,
    /// The copy's `CUpti_ActivityMemcpyKind`: 1 host to device, 2 device to host.
    pub copy_kind: u8,
}

/// API calls of a launch that launch nothing, as a framework makes them around each
/// launch (offset from the launch in ns, domain kind, callback id).
const NOISE: [(i64, u32, u32); 6] = [
    (-40_000, kind::DRIVER, cbid::CU_CTX_GET_CURRENT),
    (-30_000, kind::DRIVER, cbid::CU_STREAM_GET_CAPTURE_INFO),
    (-20_000, kind::DRIVER, cbid::CU_EVENT_CREATE),
    (-10_000, kind::RUNTIME, cbid::CUDA_GET_LAST_ERROR),
    (6_000, kind::DRIVER, cbid::CU_EVENT_RECORD),
    (160_000, kind::DRIVER, cbid::CU_EVENT_DESTROY),
];

/// Correlation ids each launch uses: the launch, its copy, a synchronisation and the
/// noise.
const IDS_PER_LAUNCH: u32 = 3 + NOISE.len() as u32;

/// A device trace for a host line: for each launch, on host line `line` inside the
/// annotation whose span is its window (`seq` = its index), a `cuLaunchKernel` a
/// quarter into the window and the kernel it launched 8 µs later on stream 7 (40 µs
/// long); a `cuMemcpyHtoDAsync_v2` (or `DtoH`) 45 µs after the launch and its copy
/// of 4 MiB on stream 8, from 50 to 150 µs; a `cuStreamSynchronize` waiting for it
/// from 52 µs; and six calls that launch nothing (`cuCtxGetCurrent`, `cuStreamGetCaptureInfo_v2`, `cuEventCreate`,
/// `cudaGetLastError`, `cuEventRecord`, `cuEventDestroy_v2`) around them, as
/// frameworks make them. Every call carries the annotation's external correlation.
/// Correlation ids grow with the launches' order. Timestamps are session-relative
/// nanoseconds.
pub fn trace(line: u32, launches: &[Launch]) -> crate::activity::DeviceTrace {
    use crate::activity::{DeviceInfo, DeviceTrace};
    let mut kernel_names: Vec<&'static str> = Vec::new();
    let mut records = Vec::new();
    for (i, l) in launches.iter().enumerate() {
        let (start, end) = l.window;
        let first = IDS_PER_LAUNCH * i as u32 + 1;
        let launch = start + (end - start) / 4;
        let external = profiler_core::tracer::ScopeId {
            line,
            seq: i as u64,
        }
        .to_u64();
        let name_ptr = match kernel_names.iter().position(|&k| k == l.kernel) {
            Some(at) => at,
            None => {
                kernel_names.push(l.kernel);
                kernel_names.len() - 1
            }
        } as u64;
        let mut api = |correlation: u32, domain: u32, id: u32, at: u64, len: u64| {
            records.push(external_record(correlation, external));
            records.push(api_record(domain, id, at, at + len, THREAD, correlation));
        };
        let copy_call = if l.copy_kind == 2 {
            cbid::CU_MEMCPY_DTOH_ASYNC
        } else {
            cbid::CU_MEMCPY_HTOD_ASYNC
        };
        api(first, kind::DRIVER, cbid::CU_LAUNCH_KERNEL, launch, 5_000);
        api(first + 1, kind::DRIVER, copy_call, launch + 45_000, 3_000);
        api(
            first + 2,
            kind::DRIVER,
            cbid::CU_STREAM_SYNCHRONIZE,
            launch + 52_000,
            100_000,
        );
        for (n, (offset, domain, id)) in NOISE.into_iter().enumerate() {
            let at = launch.saturating_add_signed(offset);
            api(first + 3 + n as u32, domain, id, at, 1_000);
        }
        records.push(kernel_record(
            &Kernel {
                name_ptr,
                start: launch + 8_000,
                end: launch + 48_000,
                device: 0,
                stream: 7,
                correlation: first,
                registers: 64,
                static_shared: 1024,
                dynamic_shared: 8192,
                grid: [80, 4, 1],
                block: [128, 2, 1],
                ..Kernel::default()
            },
            if i % 2 == 0 {
                KERNEL9_LEN
            } else {
                KERNEL13_LEN
            },
        ));
        let (src, dst) = if l.copy_kind == 2 { (3, 2) } else { (2, 3) };
        records.push(memcpy_record(
            l.copy_kind,
            src,
            dst,
            4 << 20,
            launch + 50_000,
            launch + 150_000,
            8,
            first + 1,
            88,
        ));
    }
    let names = Names(kernel_names);
    let activities = records
        .iter()
        .filter_map(|r| crate::layout::read(r, &names))
        .collect();
    DeviceTrace {
        devices: vec![DeviceInfo {
            ordinal: 0,
            name: "Synthetic GPU".into(),
            clock_rate_khz: 1_980_000,
            core_count: 132,
            memory_size: 80 << 30,
            memory_bandwidth: 3_350_000_000_000,
            compute_cap_major: 9,
            compute_cap_minor: 0,
            sm: Some(crate::occupancy::SmLimits::H100),
        }],
        activities,
        ..DeviceTrace::default()
    }
}

/// NVTX ranges around [`trace`]'s launches, as cuBLAS pushes them (CUPTI's `MARKER`
/// records, as `gpu_enable_nvtx_tracking` records them): on the launching thread
/// ([`THREAD`]), for each launch made at `t` (a quarter into its window, its
/// `cuLaunchKernel` lasting 5 µs), a range `cublasSgemm_v2` of domain `cuBLAS` from
/// `t - 3 µs` to `t + 7 µs`, holding a range `cublasLtMatmul` of domain `cuBLASLt`
/// from `t - 2 µs` to `t + 6 µs`, itself holding a mark `algo_select` (default domain)
/// at `t - 1 µs`. The launch's innermost range is `cublasLtMatmul`.
pub fn nvtx(launches: &[Launch]) -> Vec<crate::activity::Activity> {
    // Pointers 1.. into this table.
    let names = Names(vec![
        "cublasSgemm_v2",
        "cuBLAS",
        "cublasLtMatmul",
        "cuBLASLt",
        "algo_select",
    ]);
    let mut records = Vec::new();
    for (i, l) in launches.iter().enumerate() {
        let (start, end) = l.window;
        let t = start + (end - start) / 4;
        let (outer, inner, mark) = (3 * i as u32 + 1, 3 * i as u32 + 2, 3 * i as u32 + 3);
        records.push(marker_record(
            marker_flag::START,
            outer,
            t.saturating_sub(3_000),
            THREAD,
            1,
            2,
        ));
        records.push(marker_record(
            marker_flag::START,
            inner,
            t.saturating_sub(2_000),
            THREAD,
            3,
            4,
        ));
        records.push(marker_record(
            marker_flag::INSTANTANEOUS,
            mark,
            t.saturating_sub(1_000),
            THREAD,
            5,
            0,
        ));
        records.push(marker_record(
            marker_flag::END,
            inner,
            t + 6_000,
            THREAD,
            0,
            0,
        ));
        records.push(marker_record(
            marker_flag::END,
            outer,
            t + 7_000,
            THREAD,
            0,
            0,
        ));
    }
    records
        .iter()
        .filter_map(|r| crate::layout::read(r, &names))
        .collect()
}

/// Device memory allocated around [`trace`]'s launches, as a framework allocating
/// from a stream-ordered pool makes it (CUPTI's `MEMORY2` records and the
/// `cuMemAllocAsync` / `cuMemFreeAsync` calls behind them, each with the external
/// correlation of launch `i`'s annotation on host line `line`, as [`trace`] gives its
/// launches): for each launch, an activation of `bytes[i]` allocated an eighth into
/// its window and released half a window's length after it ends (so a layer's
/// activation is still held while the next layer allocates), and a 4 MiB workspace
/// allocated a quarter in and released three quarters in. Every block
/// comes from one pool on device 0 with CUDA's default release threshold (0): it
/// grows in 2 MiB steps to hold what is in use, and gives back what it holds beyond
/// that at the synchronisation after each release. Addresses are distinct;
/// correlation ids start at 1,000,000, clear of [`trace`]'s.
pub fn allocations(
    line: u32,
    launches: &[Launch],
    bytes: &[u64],
) -> Vec<crate::activity::Activity> {
    use crate::activity::MemoryPool;
    use crate::layout::memory_operation::{ALLOCATION, RELEASE};
    const WORKSPACE: u64 = 4 << 20;
    const POOL_STEP: u64 = 2 << 20;
    // (timestamp, allocate?, address, bytes, launch index), replayed in time order so
    // each record carries the pool as it stood then.
    let mut ops = Vec::new();
    for (i, l) in launches.iter().enumerate() {
        let (start, end) = l.window;
        let len = end - start;
        let size = bytes.get(i).copied().unwrap_or(WORKSPACE);
        let activation = 0x7f10_0000_0000 + (i as u64) * (1 << 28);
        let workspace = activation + (1 << 27);
        ops.push((start + len / 8, true, activation, size, i));
        ops.push((end + len / 2, false, activation, size, i));
        ops.push((start + len / 4, true, workspace, WORKSPACE, i));
        ops.push((start + 3 * len / 4, false, workspace, WORKSPACE, i));
    }
    ops.sort_by_key(|op| op.0);
    let mut pool = MemoryPool {
        pool_type: crate::layout::memory_pool_type::LOCAL,
        address: 0x7f10_0000_0000,
        release_threshold: 0,
        size: 0,
        utilized: 0,
    };
    let mut records = Vec::new();
    for (n, (at, allocate, address, size, i)) in ops.into_iter().enumerate() {
        let correlation = 1_000_000 + n as u32;
        if allocate {
            pool.utilized += size;
            pool.size = pool.size.max(pool.utilized.div_ceil(POOL_STEP) * POOL_STEP);
        } else {
            // The record shows the pool before the next synchronisation trims it.
            pool.utilized -= size;
        }
        let external = profiler_core::tracer::ScopeId {
            line,
            seq: i as u64,
        }
        .to_u64();
        let (call, operation) = if allocate {
            (cbid::CU_MEM_ALLOC_ASYNC, ALLOCATION)
        } else {
            (cbid::CU_MEM_FREE_ASYNC, RELEASE)
        };
        records.push(external_record(correlation, external));
        records.push(api_record(
            kind::DRIVER,
            call,
            at.saturating_sub(2_000),
            at + 3_000,
            THREAD,
            correlation,
        ));
        records.push(pool_memory_record(
            operation,
            address,
            size,
            at,
            0,
            &pool,
            correlation,
        ));
        if !allocate {
            pool.size = pool.utilized.div_ceil(POOL_STEP) * POOL_STEP;
        }
    }
    let names = Names(Vec::new());
    records
        .iter()
        .filter_map(|r| crate::layout::read(r, &names))
        .collect()
}

/// A kernel for each API call among `activities`, as if each call launched one (the
/// calls prof's callback recorded, fed synthetic callback data): on stream 7 of GPU 0,
/// with the call's correlation id, named and placed by `kernel(correlation id, call
/// start, call end)` → (name, start, end).
pub fn kernels_for_calls(
    activities: &[crate::activity::Activity],
    kernel: impl Fn(u32, u64, u64) -> (String, u64, u64),
) -> Vec<crate::activity::Activity> {
    use crate::activity::{Activity, Placement};
    activities
        .iter()
        .filter_map(|a| match *a {
            Activity::Api {
                start,
                end,
                correlation_id,
                ..
            } => {
                let (name, start, end) = kernel(correlation_id, start, end);
                Some(Activity::Kernel {
                    name,
                    start,
                    end,
                    at: Placement {
                        context_id: 1,
                        stream_id: 7,
                        correlation_id,
                        ..Placement::default()
                    },
                    details: Default::default(),
                })
            }
            _ => None,
        })
        .collect()
}

/// [`trace`] of one launch per window, with the kernels named in turn from
/// `kernel_names` and every copy host to device.
pub fn launches(
    line: u32,
    windows: &[(u64, u64)],
    kernel_names: &[&'static str],
) -> crate::activity::DeviceTrace {
    let launches: Vec<Launch> = windows
        .iter()
        .enumerate()
        .map(|(i, &window)| Launch {
            window,
            kernel: kernel_names
                .get(i % kernel_names.len().max(1))
                .copied()
                .unwrap_or("?"),
            copy_kind: 1,
        })
        .collect();
    trace(line, &launches)
}

/// A node of a graph captured by [`graph`]: captured at `at` (session ns) on host line
/// `line`, inside the annotation recorded there as record `seq`.
#[derive(Clone, Copy, Debug)]
pub struct CapturedNode {
    /// When the node was captured.
    pub at: u64,
    /// The annotation open then: its record number (its line is the thread's).
    pub seq: u64,
    /// The kernel the node runs.
    pub kernel: &'static str,
}

/// The graph [`graph`] captures: its id, its executable graph's id, the node ids.
pub const GRAPH_ID: u32 = 1;
/// See [`GRAPH_ID`].
pub const GRAPH_EXEC_ID: u32 = 5;
/// Node `i` of the capture is `CAPTURED_NODE + i`, its clone in the executable graph
/// `EXEC_NODE + i`.
pub const CAPTURED_NODE: u64 = 100;
/// See [`CAPTURED_NODE`].
pub const EXEC_NODE: u64 = 200;

/// A CUDA graph captured once and replayed in each of `replays` (session-relative ns
/// windows of host line `line`'s replay annotations), as the tracer sees it: a node
/// note per captured kernel (with the annotation open at its capture), the clones
/// `cuGraphInstantiate` makes, then per replay a `cuGraphLaunch` (driver) a quarter into
/// the window, inside the replay's annotation, and its kernels on stream 9, 10 µs apart,
/// carrying the graph's id, their executable node and the launch's correlation id.
/// With `whole_launches`, each replay is one `GRAPH_TRACE` record instead of its
/// kernels (`gpu_enable_cupti_activity_graph_trace`). Correlation ids start at
/// `first_correlation`.
pub fn graph(
    line: u32,
    nodes: &[CapturedNode],
    replays: &[(u64, u64)],
    first_correlation: u32,
    whole_launches: bool,
) -> crate::activity::DeviceTrace {
    use crate::graphs::GraphNote;
    use profiler_core::tracer::ScopeId;
    let mut notes = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        notes.push(GraphNote::NodeCreated {
            graph_id: GRAPH_ID,
            node_id: CAPTURED_NODE + i as u64,
            node_type: 0,
            timestamp: n.at,
            thread_id: THREAD,
            scope: Some(ScopeId { line, seq: n.seq }),
        });
    }
    notes.push(GraphNote::ExecCreated {
        exec_id: GRAPH_EXEC_ID,
        graph_id: GRAPH_ID,
    });
    for i in 0..nodes.len() as u64 {
        notes.push(GraphNote::NodeCloned {
            graph_id: GRAPH_ID + 1,
            node_id: EXEC_NODE + i,
            original_node_id: CAPTURED_NODE + i,
        });
    }
    let kernel_names: Vec<&'static str> = nodes.iter().map(|n| n.kernel).collect();
    let mut records = Vec::new();
    let mut launches = Vec::new();
    for (r, &(start, end)) in replays.iter().enumerate() {
        let correlation = first_correlation + r as u32;
        let launch = start + (end - start) / 4;
        records.push(external_record(
            correlation,
            ScopeId {
                line,
                seq: 1_000 + r as u64,
            }
            .to_u64(),
        ));
        records.push(api_record(
            kind::DRIVER,
            cbid::CU_GRAPH_LAUNCH,
            launch,
            launch + 4_000,
            THREAD,
            correlation,
        ));
        launches.push((correlation, GRAPH_EXEC_ID));
        let first = launch + 8_000;
        if whole_launches {
            records.push(graph_trace_record(
                GRAPH_ID,
                first,
                first + 10_000 * nodes.len() as u64,
                9,
                correlation,
            ));
            continue;
        }
        for i in 0..nodes.len() {
            let at = first + 10_000 * i as u64;
            records.push(kernel_record(
                &Kernel {
                    name_ptr: i as u64,
                    start: at,
                    end: at + 8_000,
                    stream: 9,
                    correlation,
                    registers: 32,
                    grid: [64, 1, 1],
                    block: [256, 1, 1],
                    graph_id: GRAPH_ID,
                    graph_node_id: EXEC_NODE + i as u64,
                    ..Kernel::default()
                },
                KERNEL13_LEN,
            ));
        }
    }
    let names = Names(kernel_names);
    crate::activity::DeviceTrace {
        activities: records
            .iter()
            .filter_map(|r| crate::layout::read(r, &names))
            .collect(),
        graph_notes: notes,
        graph_launches: launches,
        ..crate::activity::DeviceTrace::default()
    }
}

/// PM samples of `metrics` on `devices`, every `interval` ns from `start` to `end`
/// (session-relative ns): metric `m` on device `d` reads `10 × (m + 1) + d` plus the
/// sample's index modulo 5.
pub fn pm_samples(
    metrics: &[&str],
    devices: &[u32],
    (start, end): (u64, u64),
    interval: u64,
) -> (Vec<String>, Vec<crate::activity::PmSample>) {
    let mut samples = Vec::new();
    let mut at = start + interval;
    let mut i = 0u64;
    while at <= end && interval > 0 {
        for &d in devices {
            for m in 0..metrics.len() {
                samples.push(crate::activity::PmSample {
                    device_id: d,
                    timestamp: at,
                    metric: m,
                    value: (10 * (m as u64 + 1) + u64::from(d) + i % 5) as f64,
                });
            }
        }
        at += interval;
        i += 1;
    }
    (metrics.iter().map(|m| (*m).to_owned()).collect(), samples)
}
