//! Synthetic CUPTI records, laid out byte for byte as CUPTI writes them, for testing
//! the conversion (and XProf's reading of it) where there is no GPU.

use crate::layout::{api, external, kernel, kind, marker, marker_flag, memcpy, memory, memset};

/// Record sizes of the kernel struct versions CUPTI 12 and 13 deliver
/// (`CUpti_ActivityKernel9` and `Kernel13`): the reader must take both alike.
pub const KERNEL9_LEN: usize = 208;
/// See [`KERNEL9_LEN`].
pub const KERNEL13_LEN: usize = 248;

/// A kernel launch to encode.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kernel {
    /// Pointer value CUPTI would give for the name (resolved by a `layout::Names`).
    pub name_ptr: u64,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Device ordinal.
    pub device: u32,
    /// Stream id.
    pub stream: u32,
    /// Correlation id.
    pub correlation: u32,
    /// Registers per thread.
    pub registers: u16,
    /// Static shared memory.
    pub static_shared: u32,
    /// Dynamic shared memory.
    pub dynamic_shared: u32,
    /// Grid.
    pub grid: [u32; 3],
    /// Block.
    pub block: [u32; 3],
    /// The CUDA graph it ran in (0: none).
    pub graph_id: u32,
    /// Its node of the executable graph (0: none).
    pub graph_node_id: u64,
}

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A `CONCURRENT_KERNEL` record `len` bytes long (a version's struct size); bytes
/// after the shared prefix are filled with 0xAB, as a newer version's fields would be.
pub fn kernel_record(k: &Kernel, len: usize) -> Vec<u8> {
    let mut b = vec![0xABu8; len.max(kernel::PREFIX)];
    b[..kernel::PREFIX].fill(0);
    put(&mut b, 0, &kind::CONCURRENT_KERNEL.to_le_bytes());
    put(&mut b, kernel::REGISTERS, &k.registers.to_le_bytes());
    put(&mut b, kernel::START, &k.start.to_le_bytes());
    put(&mut b, kernel::END, &k.end.to_le_bytes());
    put(&mut b, kernel::DEVICE, &k.device.to_le_bytes());
    put(&mut b, kernel::CONTEXT, &1u32.to_le_bytes());
    put(&mut b, kernel::STREAM, &k.stream.to_le_bytes());
    for i in 0..3 {
        put(&mut b, kernel::GRID + 4 * i, &k.grid[i].to_le_bytes());
        put(&mut b, kernel::BLOCK + 4 * i, &k.block[i].to_le_bytes());
    }
    put(
        &mut b,
        kernel::STATIC_SHARED,
        &k.static_shared.to_le_bytes(),
    );
    put(
        &mut b,
        kernel::DYNAMIC_SHARED,
        &k.dynamic_shared.to_le_bytes(),
    );
    put(&mut b, kernel::CORRELATION, &k.correlation.to_le_bytes());
    put(&mut b, kernel::NAME, &k.name_ptr.to_le_bytes());
    put(&mut b, kernel::GRAPH_NODE, &k.graph_node_id.to_le_bytes());
    put(&mut b, kernel::GRAPH, &k.graph_id.to_le_bytes());
    b
}

/// A `GRAPH_TRACE` record (`CUpti_ActivityGraphTrace2`, 56 bytes): a whole graph's
/// launch on `stream` of device 0.
pub fn graph_trace_record(
    graph_id: u32,
    start: u64,
    end: u64,
    stream: u32,
    correlation: u32,
) -> Vec<u8> {
    use crate::layout::graph_trace;
    let mut b = vec![0u8; 56];
    put(&mut b, 0, &kind::GRAPH_TRACE.to_le_bytes());
    put(&mut b, graph_trace::CORRELATION, &correlation.to_le_bytes());
    put(&mut b, graph_trace::START, &start.to_le_bytes());
    put(&mut b, graph_trace::END, &end.to_le_bytes());
    put(&mut b, graph_trace::GRAPH, &graph_id.to_le_bytes());
    put(&mut b, graph_trace::CONTEXT, &1u32.to_le_bytes());
    put(&mut b, graph_trace::STREAM, &stream.to_le_bytes());
    b
}

/// A `MEMCPY` record (`Memcpy5` is 88 bytes, `Memcpy7` 112).
#[allow(clippy::too_many_arguments)]
pub fn memcpy_record(
    copy_kind: u8,
    src: u8,
    dst: u8,
    bytes: u64,
    start: u64,
    end: u64,
    stream: u32,
    correlation: u32,
    len: usize,
) -> Vec<u8> {
    let mut b = vec![0u8; len.max(memcpy::PREFIX)];
    put(&mut b, 0, &kind::MEMCPY.to_le_bytes());
    b[memcpy::COPY_KIND] = copy_kind;
    b[memcpy::SRC_KIND] = src;
    b[memcpy::DST_KIND] = dst;
    put(&mut b, memcpy::BYTES, &bytes.to_le_bytes());
    put(&mut b, memcpy::START, &start.to_le_bytes());
    put(&mut b, memcpy::END, &end.to_le_bytes());
    put(&mut b, memcpy::CONTEXT, &1u32.to_le_bytes());
    put(&mut b, memcpy::STREAM, &stream.to_le_bytes());
    put(&mut b, memcpy::CORRELATION, &correlation.to_le_bytes());
    b
}

/// A `MEMSET` record.
pub fn memset_record(bytes: u64, start: u64, end: u64, stream: u32, correlation: u32) -> Vec<u8> {
    let mut b = vec![0u8; 80];
    put(&mut b, 0, &kind::MEMSET.to_le_bytes());
    put(&mut b, memset::BYTES, &bytes.to_le_bytes());
    put(&mut b, memset::START, &start.to_le_bytes());
    put(&mut b, memset::END, &end.to_le_bytes());
    put(&mut b, memset::CONTEXT, &1u32.to_le_bytes());
    put(&mut b, memset::STREAM, &stream.to_le_bytes());
    put(&mut b, memset::CORRELATION, &correlation.to_le_bytes());
    b
}

/// Record sizes of `CUpti_ActivityMemory3` and `Memory4` (`MEMORY2` records).
pub const MEMORY3_LEN: usize = 120;
/// See [`MEMORY3_LEN`].
pub const MEMORY4_LEN: usize = 128;

/// A `MEMORY2` record `len` bytes long, of memory not from a pool, made by the API
/// call with correlation id 7: `operation` is a `CUpti_ActivityMemoryOperationType`,
/// `memory_kind` a `CUpti_ActivityMemoryKind` (3 = device). Bytes after the shared
/// prefix are filled with 0xAB.
pub fn memory_record(
    operation: u32,
    memory_kind: u32,
    address: u64,
    bytes: u64,
    timestamp: u64,
    device: u32,
    len: usize,
) -> Vec<u8> {
    let mut b = vec![0xABu8; len.max(memory::PREFIX)];
    b[..memory::PREFIX].fill(0);
    put(&mut b, 0, &kind::MEMORY2.to_le_bytes());
    put(&mut b, memory::OPERATION, &operation.to_le_bytes());
    put(&mut b, memory::MEMORY_KIND, &memory_kind.to_le_bytes());
    put(&mut b, memory::CORRELATION, &7u32.to_le_bytes());
    put(&mut b, memory::ADDRESS, &address.to_le_bytes());
    put(&mut b, memory::BYTES, &bytes.to_le_bytes());
    put(&mut b, memory::TIMESTAMP, &timestamp.to_le_bytes());
    put(&mut b, memory::DEVICE, &device.to_le_bytes());
    put(&mut b, memory::CONTEXT, &1u32.to_le_bytes());
    put(&mut b, memory::STREAM, &13u32.to_le_bytes());
    b
}

/// A `MEMORY2` record (`Memory3`'s length) of device memory from `pool`, made by the
/// API call `correlation`: `operation` is a `CUpti_ActivityMemoryOperationType`.
pub fn pool_memory_record(
    operation: u32,
    address: u64,
    bytes: u64,
    timestamp: u64,
    device: u32,
    pool: &crate::activity::MemoryPool,
    correlation: u32,
) -> Vec<u8> {
    let mut b = memory_record(operation, 3, address, bytes, timestamp, device, MEMORY3_LEN);
    put(&mut b, memory::CORRELATION, &correlation.to_le_bytes());
    put(&mut b, memory::POOL_TYPE, &pool.pool_type.to_le_bytes());
    put(&mut b, memory::POOL_ADDRESS, &pool.address.to_le_bytes());
    put(
        &mut b,
        memory::POOL_RELEASE_THRESHOLD,
        &pool.release_threshold.to_le_bytes(),
    );
    put(&mut b, memory::POOL_SIZE, &pool.size.to_le_bytes());
    put(&mut b, memory::POOL_UTILIZED, &pool.utilized.to_le_bytes());
    b
}

/// A `DRIVER` (or `RUNTIME`) API record.
pub fn api_record(
    record_kind: u32,
    cbid: u32,
    start: u64,
    end: u64,
    thread: u32,
    correlation: u32,
) -> Vec<u8> {
    let mut b = vec![0u8; api::PREFIX];
    put(&mut b, 0, &record_kind.to_le_bytes());
    put(&mut b, api::CBID, &cbid.to_le_bytes());
    put(&mut b, api::START, &start.to_le_bytes());
    put(&mut b, api::END, &end.to_le_bytes());
    put(&mut b, api::THREAD, &thread.to_le_bytes());
    put(&mut b, api::CORRELATION, &correlation.to_le_bytes());
    b
}

/// An `EXTERNAL_CORRELATION` record.
pub fn external_record(correlation: u32, external_id: u64) -> Vec<u8> {
    let mut b = vec![0u8; external::PREFIX];
    put(&mut b, 0, &kind::EXTERNAL_CORRELATION.to_le_bytes());
    put(&mut b, 4, &1u32.to_le_bytes());
    put(&mut b, external::EXTERNAL_ID, &external_id.to_le_bytes());
    put(&mut b, external::CORRELATION, &correlation.to_le_bytes());
    b
}

/// Record size of `CUpti_ActivityMarker2`.
pub const MARKER2_LEN: usize = 56;

/// A `MARKER` record: `flags` is a `layout::marker_flag` (or another
/// `CUpti_ActivityFlag`), the object the thread `thread` of process 1; `name_ptr` and
/// `domain_ptr` are resolved by a `layout::Names` (0: null).
pub fn marker_record(
    flags: u32,
    id: u32,
    timestamp: u64,
    thread: u32,
    name_ptr: u64,
    domain_ptr: u64,
) -> Vec<u8> {
    let mut b = vec![0u8; MARKER2_LEN];
    put(&mut b, 0, &kind::MARKER.to_le_bytes());
    put(&mut b, marker::FLAGS, &flags.to_le_bytes());
    put(&mut b, marker::TIMESTAMP, &timestamp.to_le_bytes());
    put(&mut b, marker::ID, &id.to_le_bytes());
    put(
        &mut b,
        marker::OBJECT_KIND,
        &crate::layout::OBJECT_THREAD.to_le_bytes(),
    );
    put(&mut b, marker::THREAD - 4, &1u32.to_le_bytes());
    put(&mut b, marker::THREAD, &thread.to_le_bytes());
    put(&mut b, marker::NAME, &name_ptr.to_le_bytes());
    put(&mut b, marker::DOMAIN, &domain_ptr.to_le_bytes());
    b
}

/// CUPTI callback ids of the API functions synthetic records name: the driver and
/// runtime ids of `CUpti_driver_api_trace_cbid` / `CUpti_runtime_api_trace_cbid`
/// (stable across CUDA versions; checked against cudarc's enums in the tests).
pub mod cbid {
    /// `cuLaunchKernel` (driver).
    pub const CU_LAUNCH_KERNEL: u32 = 307;
    /// `cuMemcpyHtoDAsync_v2` (driver).
    pub const CU_MEMCPY_HTOD_ASYNC: u32 = 277;
    /// `cuMemcpyDtoHAsync_v2` (driver).
    pub const CU_MEMCPY_DTOH_ASYNC: u32 = 279;
    /// `cuStreamSynchronize` (driver).
    pub const CU_STREAM_SYNCHRONIZE: u32 = 126;
    /// `cuMemAlloc_v2` (driver).
    pub const CU_MEM_ALLOC: u32 = 243;
    /// `cuMemAllocAsync` (driver): a block from the stream's memory pool.
    pub const CU_MEM_ALLOC_ASYNC: u32 = 598;
    /// `cuMemFreeAsync` (driver).
    pub const CU_MEM_FREE_ASYNC: u32 = 600;
    /// `cuCtxGetCurrent` (driver): launches nothing.
    pub const CU_CTX_GET_CURRENT: u32 = 304;
    /// `cuEventCreate` (driver): launches nothing.
    pub const CU_EVENT_CREATE: u32 = 118;
    /// `cuEventRecord` (driver): launches nothing.
    pub const CU_EVENT_RECORD: u32 = 119;
    /// `cuEventDestroy_v2` (driver): launches nothing.
    pub const CU_EVENT_DESTROY: u32 = 325;
    /// `cuStreamGetCaptureInfo_v2` (driver): launches nothing.
    pub const CU_STREAM_GET_CAPTURE_INFO: u32 = 629;
    /// `cudaLaunchKernel_v7000` (runtime).
    pub const CUDA_LAUNCH_KERNEL: u32 = 211;
    /// `cudaGetLastError_v3020` (runtime): launches nothing.
    pub const CUDA_GET_LAST_ERROR: u32 = 10;
    /// `cuGraphLaunch` (driver).
    pub const CU_GRAPH_LAUNCH: u32 = 514;

    /// (driver domain?, id, the name CUPTI gives it).
    pub(crate) const NAMES: [(bool, u32, &str); 15] = [
        (true, CU_LAUNCH_KERNEL, "cuLaunchKernel"),
        (true, CU_MEM_ALLOC_ASYNC, "cuMemAllocAsync"),
        (true, CU_MEM_FREE_ASYNC, "cuMemFreeAsync"),
        (true, CU_MEMCPY_HTOD_ASYNC, "cuMemcpyHtoDAsync_v2"),
        (true, CU_MEMCPY_DTOH_ASYNC, "cuMemcpyDtoHAsync_v2"),
        (true, CU_STREAM_SYNCHRONIZE, "cuStreamSynchronize"),
        (true, CU_MEM_ALLOC, "cuMemAlloc_v2"),
        (true, CU_CTX_GET_CURRENT, "cuCtxGetCurrent"),
        (true, CU_EVENT_CREATE, "cuEventCreate"),
        (true, CU_EVENT_RECORD, "cuEventRecord"),
        (true, CU_EVENT_DESTROY, "cuEventDestroy_v2"),
        (
            true,
            CU_STREAM_GET_CAPTURE_INFO,
            "cuStreamGetCaptureInfo_v2",
        ),
        (false, CUDA_LAUNCH_KERNEL, "cudaLaunchKernel_v7000"),
        (false, CUDA_GET_LAST_ERROR, "cudaGetLastError_v3020"),
        (true, CU_GRAPH_LAUNCH, "cuGraphLaunch"),
    ];
}

/// Names for synthetic records: kernel name pointers index `kernels`, and a marker's
/// name or domain pointer `p` (0 being null) is entry `p - 1`; API callback ids are
/// named as CUPTI names the ids in [`cbid`], and otherwise, as a shorthand,
/// `cuLaunchKernel` (driver) / `cudaLaunchKernel` (runtime) for 1 and
/// `cuMemcpyAsync` / `cudaMemcpyAsync` for any other id.
#[derive(Debug)]
pub struct Names(pub Vec<&'static str>);

impl crate::layout::Names for Names {
    fn kernel(&self, name_ptr: u64) -> String {
        self.0
            .get(name_ptr as usize)
            .copied()
            .unwrap_or("?")
            .to_owned()
    }
    fn api(&self, domain_kind: u32, cbid: u32) -> String {
        let driver = domain_kind == kind::DRIVER;
        if let Some((_, _, name)) = cbid::NAMES
            .iter()
            .find(|(d, id, _)| *d == driver && *id == cbid)
        {
            return (*name).to_owned();
        }
        match (driver, cbid) {
            (true, 1) => "cuLaunchKernel",
            (false, 1) => "cudaLaunchKernel",
            (true, _) => "cuMemcpyAsync",
            (false, _) => "cudaMemcpyAsync",
        }
        .to_owned()
    }
    fn string(&self, ptr: u64) -> Option<String> {
        let index = usize::try_from(ptr.checked_sub(1)?).ok()?;
        self.0.get(index).map(|s| (*s).to_owned())
    }
}

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

#[cfg(test)]
mod tests {
    use cudarc::cupti::sys;

    use super::cbid::*;

    // The callback ids against cudarc's generated enums.
    #[test]
    fn callback_ids_match_cuptis_enums() {
        use sys::CUpti_driver_api_trace_cbid as D;
        use sys::CUpti_runtime_api_trace_cbid as R;
        for (ours, theirs) in [
            (
                CU_LAUNCH_KERNEL,
                D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32,
            ),
            (
                CU_MEMCPY_HTOD_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 as u32,
            ),
            (
                CU_MEMCPY_DTOH_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 as u32,
            ),
            (
                CU_STREAM_SYNCHRONIZE,
                D::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize as u32,
            ),
            (
                CU_MEM_ALLOC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 as u32,
            ),
            (
                CU_MEM_ALLOC_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync as u32,
            ),
            (
                CU_MEM_FREE_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync as u32,
            ),
            (
                CU_CTX_GET_CURRENT,
                D::CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent as u32,
            ),
            (
                CU_EVENT_CREATE,
                D::CUPTI_DRIVER_TRACE_CBID_cuEventCreate as u32,
            ),
            (
                CU_EVENT_RECORD,
                D::CUPTI_DRIVER_TRACE_CBID_cuEventRecord as u32,
            ),
            (
                CU_EVENT_DESTROY,
                D::CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2 as u32,
            ),
            (
                CU_STREAM_GET_CAPTURE_INFO,
                D::CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2 as u32,
            ),
            (
                CUDA_LAUNCH_KERNEL,
                R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32,
            ),
            (
                CUDA_GET_LAST_ERROR,
                R::CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020 as u32,
            ),
            (
                CU_GRAPH_LAUNCH,
                D::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch as u32,
            ),
        ] {
            assert_eq!(ours, theirs);
        }
    }
}
