//! Device memory: CUPTI's memory records as XProf's Memory Profile reads a TSL
//! allocator's. Every allocation and release of device memory the trace holds
//! (`cuMemAlloc*`, `cuMemAllocAsync` and `cuMemAllocFromPoolAsync` from stream-ordered
//! pools, `cuMemFree*`) becomes a `MemoryAllocation` / `MemoryDeallocation` event on
//! the host line of the thread that called it, with allocator `GPU_<ordinal>`:
//!
//! - `bytes_allocated`: device bytes in use after it, counting the blocks the trace
//!   saw allocated (a block allocated before the session, released during it, is left
//!   out: its size is unknown); `peak_bytes_in_use` their highest so far;
//! - `bytes_reserved`: what the stream-ordered pools hold beyond their bytes in use
//!   (each pool's size less its used bytes, as the latest record of it says; a
//!   released block counts as given back at once), so that XProf's "in use" (reserved
//!   + allocated) is what the process holds of the device;
//! - `bytes_available`: the device's memory less both, where its size is known;
//! - `requested_bytes`, `allocation_bytes`: the block's size; `addr`: its address;
//! - `tf_op` and `region_type`: the op of the annotations open on the thread that made
//!   the call (found as for a launch) and the innermost of them.
//!
//! The same running total is each GPU plane's `device_bytes_in_use` counter, and, once
//! converted, what `profiler_core::memory::gpu` reports for the device.

use super::maps::{HashMap, HashSet};
use std::sync::Mutex;

use profiler_core::memory as core_memory;
use profiler_core::schema;
use profiler_core::tracer::ScopeId;
use profiler_core::xspace::{merge_into_line, ps, Interner, Stats, XEvent, XSpace, XStatValue};

use crate::activity::{Activity, DeviceTrace};
use crate::layout::memory_operation::{ALLOCATION, RELEASE};

use profiler_core::xspace::Enclosing;

/// `CUpti_ActivityMemoryKind`s that live on the device: device, array, device static.
/// Pageable and pinned host memory, and managed memory, are left out.
fn on_device(memory_kind: u32) -> bool {
    matches!(memory_kind, 3 | 4 | 6)
}

/// One allocation or release of device memory, with the device's totals after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Change {
    /// The record's timestamp, ns on the tracer clock.
    pub(super) timestamp: u64,
    pub(super) device: u32,
    pub(super) allocated: bool,
    pub(super) address: u64,
    pub(super) bytes: u64,
    /// The API call that made it.
    pub(super) correlation_id: u32,
    /// Device bytes in use after it (blocks the trace saw allocated).
    pub(super) in_use: u64,
    /// The highest `in_use` so far.
    pub(super) peak: u64,
    /// Bytes the device's pools hold beyond their bytes in use.
    pub(super) reserved: u64,
}

/// One allocation or release of device memory, as the trace recorded it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block<'a> {
    timestamp: u64,
    allocated: bool,
    address: u64,
    bytes: u64,
    at: &'a crate::activity::Placement,
    pool: Option<&'a crate::activity::MemoryPool>,
}

impl Block<'_> {
    /// The API call that made it.
    pub(super) fn correlation_id(&self) -> u32 {
        self.at.correlation_id
    }
}

/// The trace's allocations and releases of device memory, in timestamp order; other
/// operation types and host memory are left out.
pub(super) fn blocks(trace: &DeviceTrace) -> Vec<Block<'_>> {
    let mut blocks: Vec<Block<'_>> = trace
        .activities
        .iter()
        .filter_map(|a| match a {
            Activity::Memory {
                operation,
                memory_kind,
                address,
                bytes,
                timestamp,
                at,
                pool,
            } if on_device(*memory_kind) && (*operation == ALLOCATION || *operation == RELEASE) => {
                Some(Block {
                    timestamp: *timestamp,
                    allocated: *operation == ALLOCATION,
                    address: *address,
                    bytes: *bytes,
                    at,
                    pool: pool.as_ref(),
                })
            }
            _ => None,
        })
        .collect();
    blocks.sort_by_key(|b| b.timestamp);
    blocks
}

/// `blocks` (in timestamp order) with each device's running totals: an allocation
/// adds its size, a release subtracts the size allocated at its address. A release of
/// a block whose allocation was not recorded (made before the session, or dropped)
/// is left out.
pub(super) fn changes(blocks: &[Block<'_>]) -> Vec<Change> {
    let mut live: HashMap<(u32, u64), u64> = HashMap::default();
    let mut in_use: HashMap<u32, (u64, u64)> = HashMap::default();
    // Per device, per pool (its base address): bytes held beyond those in use.
    let mut pools: HashMap<u32, HashMap<u64, u64>> = HashMap::default();
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        let device = b.at.device_id;
        if let Some(pool) = b.pool {
            // A release's record shows the pool before its next synchronisation gives
            // the block back (CUDA's default release threshold is 0): the block counts
            // as gone at once, or XProf's peak (held + in use) would stay at every
            // release of the peak's blocks and its breakdown there would miss them.
            let used = if b.allocated {
                pool.utilized
            } else {
                pool.utilized.saturating_add(b.bytes)
            };
            pools
                .entry(device)
                .or_default()
                .insert(pool.address, pool.size.saturating_sub(used));
        }
        let (total, peak) = in_use.entry(device).or_default();
        if b.allocated {
            *total = total.saturating_add(b.bytes);
            if let Some(old) = live.insert((device, b.address), b.bytes) {
                // Its release was not recorded: the block at this address is the new one.
                *total = total.saturating_sub(old);
            }
        } else {
            let Some(held) = live.remove(&(device, b.address)) else {
                continue;
            };
            *total = total.saturating_sub(held);
        }
        *peak = (*peak).max(*total);
        out.push(Change {
            timestamp: b.timestamp,
            device,
            allocated: b.allocated,
            address: b.address,
            bytes: b.bytes,
            correlation_id: b.at.correlation_id,
            in_use: *total,
            peak: *peak,
            reserved: pools.get(&device).map_or(0, |p| p.values().sum()),
        });
    }
    out
}

/// Puts a memory event per change on the host plane of `space`, on the line of the
/// thread whose call made it; `annotated` gives the annotations open at each call.
pub(super) fn add_events(
    trace: &DeviceTrace,
    changes: &[Change],
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
    annotated: &HashMap<u32, Enclosing>,
) {
    let Some(host) = space
        .planes
        .iter_mut()
        .find(|p| p.name == schema::HOST_PLANE)
    else {
        return;
    };
    if changes.is_empty() {
        return;
    }
    // Where the calls that allocated or released were made: only theirs are looked
    // up, not every launch's.
    let wanted: HashSet<u32> = changes.iter().map(|c| c.correlation_id).collect();
    let mut scope: HashMap<u32, ScopeId> = HashMap::default();
    let mut thread: HashMap<u32, u32> = HashMap::default();
    for a in &trace.activities {
        match a {
            Activity::ExternalCorrelation {
                correlation_id,
                external_id,
            } if wanted.contains(correlation_id) => {
                scope.insert(*correlation_id, ScopeId::from_u64(*external_id));
            }
            Activity::Api {
                thread_id,
                correlation_id,
                ..
            } if wanted.contains(correlation_id) => {
                thread.insert(*correlation_id, *thread_id);
            }
            _ => {}
        }
    }
    let memory_size: HashMap<u32, u64> = trace
        .devices
        .iter()
        .map(|d| (d.ordinal, d.memory_size))
        .collect();
    let mut names = Interner::new(host);
    let mut lines: HashMap<(i64, String), Vec<XEvent>> = HashMap::default();
    for c in changes {
        let Some(at) = to_session_ns(c.timestamp) else {
            continue;
        };
        // The line the call itself is on (see `host::add_api_calls`).
        let line = match (scope.get(&c.correlation_id), thread.get(&c.correlation_id)) {
            (Some(s), _) => (i64::from(s.line), String::new()),
            (None, Some(&tid)) => (
                i64::from(schema::DEVICE_API_LINES_ID + (tid & 0xff_ffff)),
                format!("CUDA API (thread {tid})"),
            ),
            (None, None) => (
                i64::from(schema::DEVICE_API_LINES_ID + 0xff_ffff),
                "CUDA memory".to_owned(),
            ),
        };
        let allocator = core_memory::gpu_allocator(c.device);
        let allocator = names
            .stat(host, &allocator, XStatValue::Int64(0))
            .metadata_id;
        let int = |v: u64| XStatValue::Int64(i64::try_from(v).unwrap_or(i64::MAX));
        let mut stats = Stats::with_capacity(11);
        for (key, value) in [
            (schema::ALLOCATOR_NAME, XStatValue::Ref(allocator as u64)),
            (schema::BYTES_RESERVED, int(c.reserved)),
            (schema::BYTES_ALLOCATED, int(c.in_use)),
            (schema::PEAK_BYTES_IN_USE, int(c.peak)),
            (schema::REQUESTED_BYTES, int(c.bytes)),
            (schema::ALLOCATION_BYTES, int(c.bytes)),
            // XProf reads the address as an int64, as TSL writes it.
            (schema::ADDRESS, XStatValue::Int64(c.address as i64)),
        ] {
            stats.push(names.stat(host, key, value));
        }
        if let Some(&size) = memory_size.get(&c.device).filter(|&&s| s > 0) {
            let free = size.saturating_sub(c.in_use.saturating_add(c.reserved));
            stats.push(names.stat(host, schema::BYTES_AVAILABLE, int(free)));
        }
        if let Some(found) = annotated.get(&c.correlation_id) {
            if let Some(tf_op) = &found.tf_op {
                let id = names.stat(host, tf_op, XStatValue::Int64(0)).metadata_id;
                stats.push(names.stat(host, schema::TF_OP, XStatValue::Ref(id as u64)));
            }
            let id = names
                .stat(host, &found.annotation, XStatValue::Int64(0))
                .metadata_id;
            stats.push(names.stat(host, schema::REGION_TYPE, XStatValue::Ref(id as u64)));
        }
        let name = if c.allocated {
            schema::MEMORY_ALLOCATION
        } else {
            schema::MEMORY_DEALLOCATION
        };
        lines
            .entry(line)
            .or_default()
            .push(XEvent::new(names.event(host, name), ps(at), 0).with_stats(stats));
    }
    let mut lines: Vec<_> = lines.into_iter().collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    for ((id, name), events) in lines {
        merge_into_line(host, id, &name, events);
    }
}

/// Blocks allocated and not yet released, per (device, address), over every trace
/// converted in this process: a block allocated in one session and released in a later
/// one is matched.
static LIVE: Mutex<Option<HashMap<(u32, u64), u64>>> = Mutex::new(None);

/// Hands what the trace saw (`blocks`, in timestamp order) to
/// `profiler_core::memory`'s GPU allocators, so that `memory::gpu(n)` and memory
/// scopes report it.
pub(super) fn publish(blocks: &[Block<'_>]) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let live = live.get_or_insert_with(HashMap::default);
    let mut devices: HashMap<u32, core_memory::DeviceMemory> = HashMap::default();
    for b in blocks {
        let ordinal = b.at.device_id;
        let device = *devices
            .entry(ordinal)
            .or_insert_with(|| core_memory::device(&core_memory::gpu_allocator(ordinal)));
        if b.allocated {
            if let Some(old) = live.insert((ordinal, b.address), b.bytes) {
                device.released(old);
            }
            device.allocated(b.bytes);
        } else if let Some(held) = live.remove(&(ordinal, b.address)) {
            device.released(held);
        }
    }
}
