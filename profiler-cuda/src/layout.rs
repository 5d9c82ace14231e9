//! Reading CUPTI activity records whatever their version.
//!
//! CUPTI versions its record structs (`CUpti_ActivityKernel4` … `Kernel13`,
//! `Memcpy5`/`6`/`7`, `Memset4`/`5`), and the libcupti loaded at run time, not the
//! headers prof was built against, decides which one arrives. Every version keeps the
//! fields prof reads at the same offsets, a shared prefix; only later fields move or
//! appear. So records are read as bytes, by those offsets, never through a versioned
//! struct: a newer CUPTI's longer records read the same, and a build against one CUDA
//! version runs with another's libcupti. The offsets are checked against cudarc's
//! generated structs in the tests.

use crate::activity::{Activity, KernelDetails, MarkerPhase, MemoryPool, Placement};

/// `CUpti_ActivityKind` values prof reads.
pub mod kind {
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    pub const MEMCPY: u32 = 1;
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    pub const MEMSET: u32 = 2;
    /// `CUPTI_ACTIVITY_KIND_KERNEL` (serialised kernels).
    pub const KERNEL: u32 = 3;
    /// `CUPTI_ACTIVITY_KIND_DRIVER`.
    pub const DRIVER: u32 = 4;
    /// `CUPTI_ACTIVITY_KIND_RUNTIME`.
    pub const RUNTIME: u32 = 5;
    /// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
    pub const CONCURRENT_KERNEL: u32 = 10;
    /// `CUPTI_ACTIVITY_KIND_MARKER` (NVTX ranges and marks).
    pub const MARKER: u32 = 12;
    /// `CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION`.
    pub const EXTERNAL_CORRELATION: u32 = 39;
    /// `CUPTI_ACTIVITY_KIND_MEMORY2` (device memory allocations and releases).
    pub const MEMORY2: u32 = 49;
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` (one record per whole-graph launch).
    pub const GRAPH_TRACE: u32 = 51;
}

/// `CUpti_ActivityMemoryOperationType` values.
pub mod memory_operation {
    /// `CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION`.
    pub const ALLOCATION: u32 = 1;
    /// `CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE`.
    pub const RELEASE: u32 = 2;
}

/// `CUpti_ActivityFlag` bits of marker records.
pub mod marker_flag {
    /// `CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS`: a mark.
    pub const INSTANTANEOUS: u32 = 1;
    /// `CUPTI_ACTIVITY_FLAG_MARKER_START`: a range opens.
    pub const START: u32 = 2;
    /// `CUPTI_ACTIVITY_FLAG_MARKER_END`: a range closes.
    pub const END: u32 = 4;
}

/// `CUPTI_ACTIVITY_OBJECT_THREAD`: the marker's object is a thread.
pub const OBJECT_THREAD: u32 = 2;

/// Offsets of the shared prefix of `CUpti_ActivityKernel4` … `Kernel13`.
pub(crate) mod kernel {
    pub(crate) const REGISTERS: usize = 6;
    pub(crate) const START: usize = 16;
    pub(crate) const END: usize = 24;
    pub(crate) const DEVICE: usize = 40;
    pub(crate) const CONTEXT: usize = 44;
    pub(crate) const STREAM: usize = 48;
    pub(crate) const GRID: usize = 52;
    pub(crate) const BLOCK: usize = 64;
    pub(crate) const STATIC_SHARED: usize = 76;
    pub(crate) const DYNAMIC_SHARED: usize = 80;
    pub(crate) const CORRELATION: usize = 92;
    pub(crate) const NAME: usize = 104;
    pub(crate) const GRAPH_NODE: usize = 144;
    pub(crate) const GRAPH: usize = 156;
    pub(crate) const PREFIX: usize = 160;
    pub(super) const PLACEMENT: super::PlacementAt = super::PlacementAt {
        device: DEVICE,
        context: CONTEXT,
        stream: STREAM,
        correlation: CORRELATION,
        graph: Some(GRAPH),
        graph_node: Some(GRAPH_NODE),
    };
}

/// Offsets of the shared prefix of `CUpti_ActivityMemcpy5` … `Memcpy7`.
pub(crate) mod memcpy {
    pub(crate) const COPY_KIND: usize = 4;
    pub(crate) const SRC_KIND: usize = 5;
    pub(crate) const DST_KIND: usize = 6;
    pub(crate) const BYTES: usize = 8;
    pub(crate) const START: usize = 16;
    pub(crate) const END: usize = 24;
    pub(crate) const DEVICE: usize = 32;
    pub(crate) const CONTEXT: usize = 36;
    pub(crate) const STREAM: usize = 40;
    pub(crate) const CORRELATION: usize = 44;
    pub(crate) const GRAPH_NODE: usize = 64;
    pub(crate) const GRAPH: usize = 72;
    pub(crate) const PREFIX: usize = 76;
    pub(super) const PLACEMENT: super::PlacementAt = super::PlacementAt {
        device: DEVICE,
        context: CONTEXT,
        stream: STREAM,
        correlation: CORRELATION,
        graph: Some(GRAPH),
        graph_node: Some(GRAPH_NODE),
    };
}

/// Offsets of the shared prefix of `CUpti_ActivityMemset4` and `Memset5`.
pub(crate) mod memset {
    pub(crate) const BYTES: usize = 8;
    pub(crate) const START: usize = 16;
    pub(crate) const END: usize = 24;
    pub(crate) const DEVICE: usize = 32;
    pub(crate) const CONTEXT: usize = 36;
    pub(crate) const STREAM: usize = 40;
    pub(crate) const CORRELATION: usize = 44;
    pub(crate) const GRAPH_NODE: usize = 64;
    pub(crate) const GRAPH: usize = 72;
    pub(crate) const PREFIX: usize = 76;
    pub(super) const PLACEMENT: super::PlacementAt = super::PlacementAt {
        device: DEVICE,
        context: CONTEXT,
        stream: STREAM,
        correlation: CORRELATION,
        graph: Some(GRAPH),
        graph_node: Some(GRAPH_NODE),
    };
}

/// Offsets of `CUpti_ActivityGraphTrace` and `GraphTrace2` (the shared prefix).
pub(crate) mod graph_trace {
    pub(crate) const CORRELATION: usize = 4;
    pub(crate) const START: usize = 8;
    pub(crate) const END: usize = 16;
    pub(crate) const DEVICE: usize = 24;
    pub(crate) const GRAPH: usize = 28;
    pub(crate) const CONTEXT: usize = 32;
    pub(crate) const STREAM: usize = 36;
    pub(crate) const PREFIX: usize = 40;
    /// A whole-graph launch runs as no node.
    pub(super) const PLACEMENT: super::PlacementAt = super::PlacementAt {
        device: DEVICE,
        context: CONTEXT,
        stream: STREAM,
        correlation: CORRELATION,
        graph: Some(GRAPH),
        graph_node: None,
    };
}

/// Offsets of the shared prefix of `CUpti_ActivityMemory3` and `Memory4` (`MEMORY2`
/// records of every CUDA 12 and 13 build), up to the end of their memory pool
/// configuration (`Memory4` adds a source pointer after it).
pub(crate) mod memory {
    pub(crate) const OPERATION: usize = 4;
    pub(crate) const MEMORY_KIND: usize = 8;
    pub(crate) const CORRELATION: usize = 12;
    pub(crate) const ADDRESS: usize = 16;
    pub(crate) const BYTES: usize = 24;
    pub(crate) const TIMESTAMP: usize = 32;
    pub(crate) const DEVICE: usize = 52;
    pub(crate) const CONTEXT: usize = 56;
    pub(crate) const STREAM: usize = 60;
    /// `memoryPoolConfig.memoryPoolType`: 0 for memory not from a pool.
    pub(crate) const POOL_TYPE: usize = 80;
    /// `memoryPoolConfig.address`: the pool's base.
    pub(crate) const POOL_ADDRESS: usize = 88;
    /// `memoryPoolConfig.releaseThreshold`.
    pub(crate) const POOL_RELEASE_THRESHOLD: usize = 96;
    /// `memoryPoolConfig.pool.size`: the bytes the pool holds (local pools).
    pub(crate) const POOL_SIZE: usize = 104;
    /// `memoryPoolConfig.utilizedSize`: the pool's bytes in use.
    pub(crate) const POOL_UTILIZED: usize = 112;
    pub(crate) const PREFIX: usize = 120;
    /// Memory records name no graph.
    pub(super) const PLACEMENT: super::PlacementAt = super::PlacementAt {
        device: DEVICE,
        context: CONTEXT,
        stream: STREAM,
        correlation: CORRELATION,
        graph: None,
        graph_node: None,
    };
}

/// `CUpti_ActivityMemoryPoolType` values.
pub mod memory_pool_type {
    /// `CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID`: the memory is not from a pool.
    pub const NONE: u32 = 0;
    /// `CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL`: a pool of this process
    /// (`cuMemAllocAsync`'s default pool, or one made with `cuMemPoolCreate`).
    pub const LOCAL: u32 = 1;
    /// `CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED`: a pool another process exported.
    pub const IMPORTED: u32 = 2;
}

/// Offsets of `CUpti_ActivityAPI` (driver and runtime records; unversioned).
pub(crate) mod api {
    pub(crate) const CBID: usize = 4;
    pub(crate) const START: usize = 8;
    pub(crate) const END: usize = 16;
    pub(crate) const THREAD: usize = 28;
    pub(crate) const CORRELATION: usize = 32;
    pub(crate) const PREFIX: usize = 40;
}

/// Offsets of `CUpti_ActivityMarker2` (CUPTI's marker record since CUDA 8).
pub(crate) mod marker {
    pub(crate) const FLAGS: usize = 4;
    pub(crate) const TIMESTAMP: usize = 8;
    pub(crate) const ID: usize = 16;
    pub(crate) const OBJECT_KIND: usize = 20;
    /// `objectId.pt.threadId` (`pt.processId` is at 24).
    pub(crate) const THREAD: usize = 28;
    pub(crate) const NAME: usize = 40;
    pub(crate) const DOMAIN: usize = 48;
    pub(crate) const PREFIX: usize = 56;
}

/// Offsets of `CUpti_ActivityExternalCorrelation` (unversioned).
pub(crate) mod external {
    pub(crate) const EXTERNAL_ID: usize = 8;
    pub(crate) const CORRELATION: usize = 16;
    pub(crate) const PREFIX: usize = 24;
}

/// How many leading bytes of a record of `kind` are read; `None` for kinds prof
/// does not read. Every version of the record is at least this long.
pub fn prefix_len(kind: u32) -> Option<usize> {
    Some(match kind {
        kind::KERNEL | kind::CONCURRENT_KERNEL => kernel::PREFIX,
        kind::MEMCPY => memcpy::PREFIX,
        kind::MEMSET => memset::PREFIX,
        kind::DRIVER | kind::RUNTIME => api::PREFIX,
        kind::EXTERNAL_CORRELATION => external::PREFIX,
        kind::MEMORY2 => memory::PREFIX,
        kind::MARKER => marker::PREFIX,
        kind::GRAPH_TRACE => graph_trace::PREFIX,
        _ => return None,
    })
}

/// Names the record fields that are pointers or ids: a kernel's name pointer, an
/// API call's callback id with its domain (`DRIVER` or `RUNTIME`), and a marker's
/// name and domain pointers.
pub trait Names {
    /// The kernel name behind CUPTI's name pointer.
    fn kernel(&self, name_ptr: u64) -> String;
    /// The function name of API callback `cbid` in `domain_kind`.
    fn api(&self, domain_kind: u32, cbid: u32) -> String;
    /// The string behind a marker's name or domain pointer; `None` for a null one.
    fn string(&self, ptr: u64) -> Option<String>;
}

/// Reads one record. `None` when its kind is not one prof reads or `bytes` is shorter
/// than that kind's prefix (a truncated record is skipped, never misread).
pub fn read(bytes: &[u8], names: &dyn Names) -> Option<Activity> {
    let kind = u32_at(bytes, 0)?;
    if bytes.len() < prefix_len(kind)? {
        return None;
    }
    let r = Record(bytes);
    match kind {
        kind::KERNEL | kind::CONCURRENT_KERNEL => Some(r.kernel(names)),
        kind::MEMCPY => Some(r.memcpy()),
        kind::MEMSET => Some(r.memset()),
        kind::DRIVER | kind::RUNTIME => Some(r.api(kind, names)),
        kind::MARKER => r.marker(names),
        kind::EXTERNAL_CORRELATION => Some(r.external_correlation()),
        kind::MEMORY2 => Some(r.memory()),
        kind::GRAPH_TRACE => Some(r.graph_trace()),
        _ => None,
    }
}

/// Where a record kind keeps the fields of its [`Placement`]; one it lacks reads 0.
struct PlacementAt {
    device: usize,
    context: usize,
    stream: usize,
    correlation: usize,
    graph: Option<usize>,
    graph_node: Option<usize>,
}

/// A record at least as long as its kind's prefix, read field by field. A field past
/// the end reads 0, though the prefix check leaves none there.
#[derive(Clone, Copy)]
struct Record<'a>(&'a [u8]);

impl Record<'_> {
    fn u8(self, at: usize) -> u8 {
        self.0.get(at).copied().unwrap_or(0)
    }

    fn u16(self, at: usize) -> u16 {
        u16::from_le_bytes([self.u8(at), self.u8(at + 1)])
    }

    fn u32(self, at: usize) -> u32 {
        u32_at(self.0, at).unwrap_or(0)
    }

    fn u64(self, at: usize) -> u64 {
        u64_at(self.0, at).unwrap_or(0)
    }

    /// Three `u32`s: a grid's or a block's x, y and z.
    fn dims(self, at: usize) -> [u32; 3] {
        [self.u32(at), self.u32(at + 4), self.u32(at + 8)]
    }

    fn placement(self, at: &PlacementAt) -> Placement {
        Placement {
            device_id: self.u32(at.device),
            context_id: self.u32(at.context),
            stream_id: self.u32(at.stream),
            correlation_id: self.u32(at.correlation),
            graph_id: at.graph.map_or(0, |g| self.u32(g)),
            graph_node_id: at.graph_node.map_or(0, |n| self.u64(n)),
        }
    }

    fn kernel(self, names: &dyn Names) -> Activity {
        Activity::Kernel {
            name: names.kernel(self.u64(kernel::NAME)),
            start: self.u64(kernel::START),
            end: self.u64(kernel::END),
            at: self.placement(&kernel::PLACEMENT),
            details: KernelDetails {
                registers_per_thread: self.u16(kernel::REGISTERS),
                static_shared_memory: self.u32(kernel::STATIC_SHARED),
                dynamic_shared_memory: self.u32(kernel::DYNAMIC_SHARED),
                grid: self.dims(kernel::GRID),
                block: self.dims(kernel::BLOCK),
            },
        }
    }

    fn memcpy(self) -> Activity {
        Activity::Memcpy {
            copy_kind: self.u8(memcpy::COPY_KIND),
            src_kind: self.u8(memcpy::SRC_KIND),
            dst_kind: self.u8(memcpy::DST_KIND),
            bytes: self.u64(memcpy::BYTES),
            start: self.u64(memcpy::START),
            end: self.u64(memcpy::END),
            at: self.placement(&memcpy::PLACEMENT),
        }
    }

    fn memset(self) -> Activity {
        Activity::Memset {
            bytes: self.u64(memset::BYTES),
            start: self.u64(memset::START),
            end: self.u64(memset::END),
            at: self.placement(&memset::PLACEMENT),
        }
    }

    /// A driver or runtime call (`kind`).
    fn api(self, kind: u32, names: &dyn Names) -> Activity {
        Activity::Api {
            name: names.api(kind, self.u32(api::CBID)),
            start: self.u64(api::START),
            end: self.u64(api::END),
            thread_id: self.u32(api::THREAD),
            correlation_id: self.u32(api::CORRELATION),
        }
    }

    /// An NVTX range's start or end, or a mark; `None` for a synchronisation marker
    /// (`nvtxDomainSync*`), which is no range.
    fn marker(self, names: &dyn Names) -> Option<Activity> {
        let flags = self.u32(marker::FLAGS);
        let phase = if flags & marker_flag::START != 0 {
            MarkerPhase::Start
        } else if flags & marker_flag::END != 0 {
            MarkerPhase::End
        } else if flags & marker_flag::INSTANTANEOUS != 0 {
            MarkerPhase::Instant
        } else {
            return None;
        };
        let thread = self.u32(marker::OBJECT_KIND) == OBJECT_THREAD;
        let named = phase != MarkerPhase::End;
        Some(Activity::Marker {
            phase,
            id: self.u32(marker::ID),
            timestamp: self.u64(marker::TIMESTAMP),
            thread_id: if thread { self.u32(marker::THREAD) } else { 0 },
            name: named
                .then(|| names.string(self.u64(marker::NAME)))
                .flatten(),
            domain: named
                .then(|| names.string(self.u64(marker::DOMAIN)))
                .flatten(),
        })
    }

    fn external_correlation(self) -> Activity {
        Activity::ExternalCorrelation {
            correlation_id: self.u32(external::CORRELATION),
            external_id: self.u64(external::EXTERNAL_ID),
        }
    }

    /// A device memory allocation or release, with its pool when it came from one.
    fn memory(self) -> Activity {
        Activity::Memory {
            operation: self.u32(memory::OPERATION),
            memory_kind: self.u32(memory::MEMORY_KIND),
            address: self.u64(memory::ADDRESS),
            bytes: self.u64(memory::BYTES),
            timestamp: self.u64(memory::TIMESTAMP),
            at: self.placement(&memory::PLACEMENT),
            pool: match self.u32(memory::POOL_TYPE) {
                memory_pool_type::NONE => None,
                pool_type => Some(MemoryPool {
                    pool_type,
                    address: self.u64(memory::POOL_ADDRESS),
                    release_threshold: self.u64(memory::POOL_RELEASE_THRESHOLD),
                    size: self.u64(memory::POOL_SIZE),
                    utilized: self.u64(memory::POOL_UTILIZED),
                }),
            },
        }
    }

    fn graph_trace(self) -> Activity {
        Activity::GraphTrace(crate::activity::GraphTrace {
            graph_id: self.u32(graph_trace::GRAPH),
            start: self.u64(graph_trace::START),
            end: self.u64(graph_trace::END),
            at: self.placement(&graph_trace::PLACEMENT),
        })
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;

    use cudarc::cupti::sys;

    use super::*;
    use crate::synthetic::{self, Names};

    // The offsets above against the structs cudarc generates from CUPTI's headers, for
    // the versions every supported CUDA 12 and 13 build has.
    #[test]
    fn offsets_match_cuptis_structs() {
        type K = sys::CUpti_ActivityKernel9;
        assert_eq!(offset_of!(K, registersPerThread), kernel::REGISTERS);
        assert_eq!(offset_of!(K, start), kernel::START);
        assert_eq!(offset_of!(K, end), kernel::END);
        assert_eq!(offset_of!(K, deviceId), kernel::DEVICE);
        assert_eq!(offset_of!(K, contextId), kernel::CONTEXT);
        assert_eq!(offset_of!(K, streamId), kernel::STREAM);
        assert_eq!(offset_of!(K, gridX), kernel::GRID);
        assert_eq!(offset_of!(K, blockX), kernel::BLOCK);
        assert_eq!(offset_of!(K, staticSharedMemory), kernel::STATIC_SHARED);
        assert_eq!(offset_of!(K, dynamicSharedMemory), kernel::DYNAMIC_SHARED);
        assert_eq!(offset_of!(K, correlationId), kernel::CORRELATION);
        assert_eq!(offset_of!(K, name), kernel::NAME);
        assert_eq!(offset_of!(K, graphNodeId), kernel::GRAPH_NODE);
        assert_eq!(offset_of!(K, graphId), kernel::GRAPH);
        assert_eq!(std::mem::size_of::<K>(), synthetic::KERNEL9_LEN);
        type K13 = sys::CUpti_ActivityKernel13;
        assert_eq!(offset_of!(K13, correlationId), kernel::CORRELATION);
        assert_eq!(offset_of!(K13, graphNodeId), kernel::GRAPH_NODE);
        assert_eq!(offset_of!(K13, graphId), kernel::GRAPH);
        assert_eq!(std::mem::size_of::<K13>(), synthetic::KERNEL13_LEN);

        type M = sys::CUpti_ActivityMemcpy5;
        assert_eq!(offset_of!(M, copyKind), memcpy::COPY_KIND);
        assert_eq!(offset_of!(M, srcKind), memcpy::SRC_KIND);
        assert_eq!(offset_of!(M, dstKind), memcpy::DST_KIND);
        assert_eq!(offset_of!(M, bytes), memcpy::BYTES);
        assert_eq!(offset_of!(M, start), memcpy::START);
        assert_eq!(offset_of!(M, end), memcpy::END);
        assert_eq!(offset_of!(M, deviceId), memcpy::DEVICE);
        assert_eq!(offset_of!(M, contextId), memcpy::CONTEXT);
        assert_eq!(offset_of!(M, streamId), memcpy::STREAM);
        assert_eq!(offset_of!(M, correlationId), memcpy::CORRELATION);
        assert_eq!(offset_of!(M, graphNodeId), memcpy::GRAPH_NODE);
        assert_eq!(offset_of!(M, graphId), memcpy::GRAPH);
        type S = sys::CUpti_ActivityMemset4;
        assert_eq!(offset_of!(S, bytes), memset::BYTES);
        assert_eq!(offset_of!(S, start), memset::START);
        assert_eq!(offset_of!(S, streamId), memset::STREAM);
        assert_eq!(offset_of!(S, correlationId), memset::CORRELATION);
        assert_eq!(offset_of!(S, graphNodeId), memset::GRAPH_NODE);
        assert_eq!(offset_of!(S, graphId), memset::GRAPH);
        type G = sys::CUpti_ActivityGraphTrace2;
        assert_eq!(offset_of!(G, correlationId), graph_trace::CORRELATION);
        assert_eq!(offset_of!(G, start), graph_trace::START);
        assert_eq!(offset_of!(G, end), graph_trace::END);
        assert_eq!(offset_of!(G, deviceId), graph_trace::DEVICE);
        assert_eq!(offset_of!(G, graphId), graph_trace::GRAPH);
        assert_eq!(offset_of!(G, contextId), graph_trace::CONTEXT);
        assert_eq!(offset_of!(G, streamId), graph_trace::STREAM);
        assert_eq!(
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_GRAPH_TRACE as u32,
            kind::GRAPH_TRACE
        );

        type A = sys::CUpti_ActivityAPI;
        assert_eq!(offset_of!(A, cbid), api::CBID);
        assert_eq!(offset_of!(A, start), api::START);
        assert_eq!(offset_of!(A, end), api::END);
        assert_eq!(offset_of!(A, threadId), api::THREAD);
        assert_eq!(offset_of!(A, correlationId), api::CORRELATION);

        type E = sys::CUpti_ActivityExternalCorrelation;
        assert_eq!(offset_of!(E, externalId), external::EXTERNAL_ID);
        assert_eq!(offset_of!(E, correlationId), external::CORRELATION);

        type Mk = sys::CUpti_ActivityMarker2;
        assert_eq!(offset_of!(Mk, flags), marker::FLAGS);
        assert_eq!(offset_of!(Mk, timestamp), marker::TIMESTAMP);
        assert_eq!(offset_of!(Mk, id), marker::ID);
        assert_eq!(offset_of!(Mk, objectKind), marker::OBJECT_KIND);
        assert_eq!(
            offset_of!(Mk, objectId)
                + offset_of!(sys::CUpti_ActivityObjectKindId__bindgen_ty_1, threadId),
            marker::THREAD
        );
        assert_eq!(offset_of!(Mk, name), marker::NAME);
        assert_eq!(offset_of!(Mk, domain), marker::DOMAIN);
        assert_eq!(std::mem::size_of::<Mk>(), marker::PREFIX);
        assert_eq!(std::mem::size_of::<Mk>(), synthetic::MARKER2_LEN);
        assert_eq!(
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MARKER as u32,
            kind::MARKER
        );
        use sys::CUpti_ActivityFlag as F;
        assert_eq!(
            F::CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS as u32,
            marker_flag::INSTANTANEOUS
        );
        assert_eq!(
            F::CUPTI_ACTIVITY_FLAG_MARKER_START as u32,
            marker_flag::START
        );
        assert_eq!(F::CUPTI_ACTIVITY_FLAG_MARKER_END as u32, marker_flag::END);
        assert_eq!(
            sys::CUpti_ActivityObjectKind::CUPTI_ACTIVITY_OBJECT_THREAD as u32,
            OBJECT_THREAD
        );

        type Mem = sys::CUpti_ActivityMemory3;
        assert_eq!(offset_of!(Mem, memoryOperationType), memory::OPERATION);
        assert_eq!(offset_of!(Mem, memoryKind), memory::MEMORY_KIND);
        assert_eq!(offset_of!(Mem, correlationId), memory::CORRELATION);
        assert_eq!(offset_of!(Mem, address), memory::ADDRESS);
        assert_eq!(offset_of!(Mem, bytes), memory::BYTES);
        assert_eq!(offset_of!(Mem, timestamp), memory::TIMESTAMP);
        assert_eq!(offset_of!(Mem, deviceId), memory::DEVICE);
        assert_eq!(offset_of!(Mem, contextId), memory::CONTEXT);
        assert_eq!(offset_of!(Mem, streamId), memory::STREAM);
        type Pool = sys::CUpti_ActivityMemory3__bindgen_ty_1;
        let pool = offset_of!(Mem, memoryPoolConfig);
        assert_eq!(pool + offset_of!(Pool, memoryPoolType), memory::POOL_TYPE);
        assert_eq!(pool + offset_of!(Pool, address), memory::POOL_ADDRESS);
        assert_eq!(
            pool + offset_of!(Pool, releaseThreshold),
            memory::POOL_RELEASE_THRESHOLD
        );
        assert_eq!(pool + offset_of!(Pool, pool), memory::POOL_SIZE);
        assert_eq!(pool + offset_of!(Pool, utilizedSize), memory::POOL_UTILIZED);
        assert_eq!(std::mem::size_of::<Mem>(), memory::PREFIX);
        assert_eq!(std::mem::size_of::<Mem>(), synthetic::MEMORY3_LEN);
        use sys::CUpti_ActivityMemoryPoolType as PoolType;
        assert_eq!(
            PoolType::CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID as u32,
            memory_pool_type::NONE
        );
        assert_eq!(
            PoolType::CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL as u32,
            memory_pool_type::LOCAL
        );
        assert_eq!(
            PoolType::CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED as u32,
            memory_pool_type::IMPORTED
        );
        assert_eq!(
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMORY2 as u32,
            kind::MEMORY2
        );
        use sys::CUpti_ActivityMemoryOperationType as Op;
        assert_eq!(
            Op::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION as u32,
            memory_operation::ALLOCATION
        );
        assert_eq!(
            Op::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE as u32,
            memory_operation::RELEASE
        );

        assert_eq!(
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32,
            kind::CONCURRENT_KERNEL
        );
        assert_eq!(
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION as u32,
            kind::EXTERNAL_CORRELATION
        );
    }

    fn sample() -> synthetic::Kernel {
        synthetic::Kernel {
            name_ptr: 0,
            start: 1_000,
            end: 3_500,
            device: 1,
            stream: 7,
            correlation: 42,
            registers: 96,
            static_shared: 2048,
            dynamic_shared: 16384,
            grid: [128, 2, 1],
            block: [256, 1, 1],
            graph_id: 3,
            graph_node_id: 1 << 40,
        }
    }

    #[test]
    fn kernel_records_of_cupti_12_and_13_read_the_same() {
        let names = Names(vec!["ampere_sgemm_128x64_nn"]);
        let k9 = read(
            &synthetic::kernel_record(&sample(), synthetic::KERNEL9_LEN),
            &names,
        );
        let k13 = read(
            &synthetic::kernel_record(&sample(), synthetic::KERNEL13_LEN),
            &names,
        );
        assert_eq!(k9, k13);
        let Some(Activity::Kernel {
            name,
            start,
            end,
            at,
            details,
        }) = k9
        else {
            panic!("not a kernel: {k9:?}");
        };
        assert_eq!(name, "ampere_sgemm_128x64_nn");
        assert_eq!((start, end), (1_000, 3_500));
        assert_eq!(
            (at.device_id, at.context_id, at.stream_id, at.correlation_id),
            (1, 1, 7, 42)
        );
        assert_eq!((at.graph_id, at.graph_node_id), (3, 1 << 40));
        assert_eq!(
            details.to_stat(None),
            "regs:96 static_shared:2048 dynamic_shared:16384 grid:128,2,1 block:256,1,1"
        );
        assert_eq!(
            details.to_stat(Some(37.5)),
            "regs:96 static_shared:2048 dynamic_shared:16384 grid:128,2,1 block:256,1,1 occ_pct:37.5"
        );
    }

    #[test]
    fn copies_sets_api_calls_and_correlations_are_read() {
        let names = Names(vec![]);
        // Memcpy5 (88 bytes) and Memcpy7 (112, CUPTI 13.4) share the prefix.
        for len in [88, 112] {
            let r = read(
                &synthetic::memcpy_record(1, 2, 3, 4096, 10, 20, 7, 5, len),
                &names,
            );
            assert_eq!(
                r,
                Some(Activity::Memcpy {
                    copy_kind: 1,
                    src_kind: 2,
                    dst_kind: 3,
                    bytes: 4096,
                    start: 10,
                    end: 20,
                    at: Placement {
                        device_id: 0,
                        context_id: 1,
                        stream_id: 7,
                        correlation_id: 5,
                        ..Placement::default()
                    },
                })
            );
        }
        let r = read(&synthetic::memset_record(64, 30, 31, 9, 6), &names);
        assert!(
            matches!(r, Some(Activity::Memset { bytes: 64, start: 30, end: 31, at }) if at.stream_id == 9 && at.correlation_id == 6)
        );
        let r = read(
            &synthetic::api_record(kind::DRIVER, 1, 5, 9, 1234, 42),
            &names,
        );
        assert_eq!(
            r,
            Some(Activity::Api {
                name: "cuLaunchKernel".into(),
                start: 5,
                end: 9,
                thread_id: 1234,
                correlation_id: 42
            })
        );
        let r = read(&synthetic::external_record(42, 7 << 32 | 3), &names);
        assert_eq!(
            r,
            Some(Activity::ExternalCorrelation {
                correlation_id: 42,
                external_id: 7 << 32 | 3
            })
        );
    }

    #[test]
    fn whole_graph_launches_are_read() {
        let names = Names(vec![]);
        let r = read(&synthetic::graph_trace_record(4, 100, 200, 9, 77), &names);
        assert_eq!(
            r,
            Some(Activity::GraphTrace(crate::activity::GraphTrace {
                graph_id: 4,
                start: 100,
                end: 200,
                at: Placement {
                    device_id: 0,
                    context_id: 1,
                    stream_id: 9,
                    correlation_id: 77,
                    graph_id: 4,
                    graph_node_id: 0,
                },
            }))
        );
    }

    #[test]
    fn memory_records_of_both_versions_read_the_same() {
        let names = Names(vec![]);
        let want = Some(Activity::Memory {
            operation: memory_operation::RELEASE,
            memory_kind: 3,
            address: 0x7f00_0000_1000,
            bytes: 1 << 20,
            timestamp: 5_000,
            at: Placement {
                device_id: 2,
                context_id: 1,
                stream_id: 13,
                correlation_id: 7,
                ..Placement::default()
            },
            pool: None,
        });
        for len in [synthetic::MEMORY3_LEN, synthetic::MEMORY4_LEN] {
            let r = synthetic::memory_record(2, 3, 0x7f00_0000_1000, 1 << 20, 5_000, 2, len);
            assert_eq!(read(&r, &names), want, "{len}");
            assert_eq!(read(&r[..memory::PREFIX - 1], &names), None);
        }
        // From a stream-ordered pool: its configuration comes with the block.
        let pool = MemoryPool {
            pool_type: memory_pool_type::LOCAL,
            address: 0x7f00_0000_0000,
            release_threshold: 0,
            size: 32 << 20,
            utilized: 3 << 20,
        };
        let r = synthetic::pool_memory_record(1, 0x7f00_0020_0000, 1 << 20, 6_000, 0, &pool, 9);
        assert_eq!(
            read(&r, &names),
            Some(Activity::Memory {
                operation: memory_operation::ALLOCATION,
                memory_kind: 3,
                address: 0x7f00_0020_0000,
                bytes: 1 << 20,
                timestamp: 6_000,
                at: Placement {
                    device_id: 0,
                    context_id: 1,
                    stream_id: 13,
                    correlation_id: 9,
                    ..Placement::default()
                },
                pool: Some(pool),
            })
        );
    }

    #[test]
    fn marker_records_read_as_range_ends_and_marks() {
        use crate::layout::marker_flag::{END, INSTANTANEOUS, START};
        let names = Names(vec!["cublasSgemm_v2", "cuBLAS"]);
        let r = read(&synthetic::marker_record(START, 9, 1_000, 77, 1, 2), &names);
        assert_eq!(
            r,
            Some(Activity::Marker {
                phase: MarkerPhase::Start,
                id: 9,
                timestamp: 1_000,
                thread_id: 77,
                name: Some("cublasSgemm_v2".into()),
                domain: Some("cuBLAS".into()),
            })
        );
        // An end names nothing, whatever its pointers say; a mark of the default domain.
        let r = read(&synthetic::marker_record(END, 9, 2_000, 77, 1, 2), &names);
        assert!(matches!(
            r,
            Some(Activity::Marker {
                phase: MarkerPhase::End,
                id: 9,
                name: None,
                domain: None,
                ..
            })
        ));
        let r = read(
            &synthetic::marker_record(INSTANTANEOUS, 3, 5, 77, 1, 0),
            &names,
        );
        assert!(
            matches!(r, Some(Activity::Marker { phase: MarkerPhase::Instant, domain: None, name: Some(ref n), .. }) if n == "cublasSgemm_v2")
        );
        // A synchronisation marker is no range; a process object has no thread.
        let sync_acquire = 8;
        assert_eq!(
            read(
                &synthetic::marker_record(sync_acquire, 1, 5, 77, 1, 0),
                &names
            ),
            None
        );
        let mut process = synthetic::marker_record(START, 1, 5, 77, 1, 0);
        process[marker::OBJECT_KIND] = 1;
        assert!(matches!(
            read(&process, &names),
            Some(Activity::Marker { thread_id: 0, .. })
        ));
        let r = synthetic::marker_record(START, 1, 5, 77, 1, 0);
        assert_eq!(read(&r[..marker::PREFIX - 1], &names), None);
    }

    #[test]
    fn unknown_kinds_and_truncated_records_are_skipped() {
        let names = Names(vec!["k"]);
        let mut other = vec![0u8; 64];
        other[0] = 8; // CUPTI_ACTIVITY_KIND_DEVICE: not read here
        assert_eq!(read(&other, &names), None);
        let k = synthetic::kernel_record(&sample(), synthetic::KERNEL9_LEN);
        assert_eq!(read(&k[..kernel::PREFIX - 1], &names), None);
        assert_eq!(read(&[], &names), None);
    }
}
