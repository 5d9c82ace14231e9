//! CUPTI activity records laid out byte for byte as CUPTI writes them (each struct
//! version's size where versions differ), and the names their pointers and ids resolve to.

use crate::layout::{api, external, kernel, kind, marker, memcpy, memory, memset};

use super::cbid;

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
