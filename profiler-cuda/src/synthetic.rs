//! Synthetic CUPTI records, laid out byte for byte as CUPTI writes them, for testing
//! the conversion (and XProf's reading of it) where there is no GPU.

use crate::layout::{api, external, kernel, kind, memcpy, memory, memset};

/// Record sizes of the kernel struct versions CUPTI 12 and 13 deliver
/// (`CUpti_ActivityKernel9` and `Kernel13`): the reader must take both alike.
pub const KERNEL9_LEN: usize = 208;
/// See [`KERNEL9_LEN`].
pub const KERNEL13_LEN: usize = 248;

/// A kernel launch to encode.
#[derive(Clone, Copy, Debug)]
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

/// A `MEMORY2` record `len` bytes long: `operation` is a
/// `CUpti_ActivityMemoryOperationType`, `memory_kind` a `CUpti_ActivityMemoryKind`
/// (3 = device). Bytes after the shared prefix are filled with 0xAB.
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

/// Names for synthetic records: kernel name pointers index `kernels`; API callback
/// ids are named `cuLaunchKernel` (driver) / `cudaLaunchKernel` (runtime) for 1 and
/// `cuMemcpyAsync` / `cudaMemcpyAsync` otherwise.
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
        match (domain_kind == kind::DRIVER, cbid) {
            (true, 1) => "cuLaunchKernel",
            (false, 1) => "cudaLaunchKernel",
            (true, _) => "cuMemcpyAsync",
            (false, _) => "cudaMemcpyAsync",
        }
        .to_owned()
    }
}

/// A device trace for a host line: for each `(start_ns, end_ns)` window (an
/// annotation on host line `line`), a `cuLaunchKernel` inside it carrying the
/// external correlation of that annotation (`seq` = its index), the kernel it launched
/// shortly after on stream 7, and a host-to-device copy on stream 8. Timestamps are
/// session-relative nanoseconds.
pub fn launches(
    line: u32,
    windows: &[(u64, u64)],
    kernel_names: &[&'static str],
) -> crate::activity::DeviceTrace {
    use crate::activity::{DeviceInfo, DeviceTrace};
    let names = Names(kernel_names.to_vec());
    let mut records = Vec::new();
    for (i, &(start, end)) in windows.iter().enumerate() {
        let correlation = 2 * i as u32 + 1;
        let launch = start + (end - start) / 4;
        let scope = profiler_core::tracer::ScopeId {
            line,
            seq: i as u64,
        };
        records.push(external_record(correlation, scope.to_u64()));
        records.push(api_record(
            kind::DRIVER,
            1,
            launch,
            launch + 5_000,
            4242,
            correlation,
        ));
        records.push(kernel_record(
            &Kernel {
                name_ptr: (i % kernel_names.len().max(1)) as u64,
                start: launch + 8_000,
                end: launch + 48_000,
                device: 0,
                stream: 7,
                correlation,
                registers: 64,
                static_shared: 1024,
                dynamic_shared: 8192,
                grid: [80, 4, 1],
                block: [128, 2, 1],
            },
            if i % 2 == 0 {
                KERNEL9_LEN
            } else {
                KERNEL13_LEN
            },
        ));
        records.push(memcpy_record(
            1,
            2,
            3,
            1 << 20,
            launch + 50_000,
            launch + 60_000,
            8,
            correlation + 1,
            88,
        ));
    }
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
