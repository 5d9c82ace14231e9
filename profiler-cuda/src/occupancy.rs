//! Theoretical occupancy of a kernel launch: the share of an SM's warp slots its
//! blocks can fill at once, given what each block asks for (threads, registers,
//! shared memory) and what one SM has.
//!
//! CUPTI's activity records carry the kernel's resources but not its occupancy; TSL
//! asks the driver's occupancy API with the launched function, which only the
//! callback API sees. prof computes the same number from the record and the device
//! limits, the way the CUDA occupancy calculator does for compute capability 5.0 and
//! later, so XProf's Kernel Stats shows it (`occ_pct` in `kernel_details`).

use crate::kernel::KernelDetails;

/// What one streaming multiprocessor of a device has, from the driver's device
/// attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmLimits {
    /// Threads per warp (32 on every NVIDIA GPU so far).
    pub warp_size: u32,
    /// Resident threads per SM (2048 on A100 and H100).
    pub max_threads: u32,
    /// Resident blocks per SM (32 on A100 and H100).
    pub max_blocks: u32,
    /// 32-bit registers per SM (65536).
    pub registers: u32,
    /// Shared memory per SM, bytes, at the largest carveout (233472 on H100).
    pub shared_memory: u32,
    /// Shared memory the system reserves per block, bytes (1024 from compute 8.0).
    pub reserved_shared_per_block: u32,
}

impl SmLimits {
    /// An H100 SXM's SM (compute capability 9.0): the synthetic device's, and a
    /// reference for tests.
    pub const H100: SmLimits = SmLimits {
        warp_size: 32,
        max_threads: 2048,
        max_blocks: 32,
        registers: 65536,
        shared_memory: 233_472,
        reserved_shared_per_block: 1024,
    };
}

/// Registers are given to a warp in units of this many.
const REGISTER_UNIT: u32 = 256;
/// An SM's registers are split evenly among this many sub-partitions (schedulers),
/// and a warp's registers come from one of them.
const SUB_PARTITIONS: u32 = 4;
/// Shared memory is given to a block in units of this many bytes.
const SHARED_UNIT: u32 = 128;

/// Percent of `sm`'s warp slots the launch `k` can keep resident, or `None` when the
/// block cannot run at all (no threads, or more registers or shared memory than one
/// SM has).
pub fn theoretical_occupancy(k: &KernelDetails, sm: &SmLimits) -> Option<f64> {
    let threads: u64 = k.block.iter().map(|&d| u64::from(d)).product();
    if threads == 0 || sm.warp_size == 0 || sm.max_threads == 0 {
        return None;
    }
    let warp = u64::from(sm.warp_size);
    let warps_per_block = threads.div_ceil(warp);
    let max_warps = u64::from(sm.max_threads) / warp;

    let by_warps = max_warps / warps_per_block;
    let by_blocks = u64::from(sm.max_blocks);
    let by_registers = match u64::from(k.registers_per_thread) {
        0 => u64::MAX,
        regs => {
            let per_warp = (regs * warp).next_multiple_of(u64::from(REGISTER_UNIT));
            let per_partition = u64::from(sm.registers / SUB_PARTITIONS);
            let warps = (per_partition / per_warp) * u64::from(SUB_PARTITIONS);
            warps / warps_per_block
        }
    };
    let shared = u64::from(k.static_shared_memory)
        + u64::from(k.dynamic_shared_memory)
        + u64::from(sm.reserved_shared_per_block);
    let by_shared = match shared.next_multiple_of(u64::from(SHARED_UNIT)) {
        0 => u64::MAX,
        per_block => u64::from(sm.shared_memory) / per_block,
    };
    let blocks = by_warps.min(by_blocks).min(by_registers).min(by_shared);
    (blocks > 0).then(|| 100.0 * (blocks * warps_per_block) as f64 / max_warps as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: SmLimits = SmLimits::H100;

    fn kernel(block: [u32; 3], regs: u16, shared: u32) -> KernelDetails {
        KernelDetails {
            registers_per_thread: regs,
            static_shared_memory: 0,
            dynamic_shared_memory: shared,
            grid: [1, 1, 1],
            block,
        }
    }

    // Expected values worked out by hand from the calculator's rules.
    #[test]
    fn each_limit_binds_where_it_should() {
        let occ = |k| theoretical_occupancy(&k, &H100);
        // 256 threads × 32 registers: 8 blocks fill all 64 warps.
        assert_eq!(occ(kernel([256, 1, 1], 32, 0)), Some(100.0));
        // 64 registers: 2048 per warp, 8 warps per sub-partition, 32 warps: 50%.
        assert_eq!(occ(kernel([128, 2, 1], 64, 0)), Some(50.0));
        // 255 registers round up to 8192 per warp: 2 warps per sub-partition, 8 in
        // all, one 8-warp block: 12.5%.
        assert_eq!(occ(kernel([256, 1, 1], 255, 0)), Some(12.5));
        // Shared memory: 100 KiB + 1 KiB reserved per block, 2 blocks of 4 warps.
        assert_eq!(occ(kernel([128, 1, 1], 32, 100 << 10)), Some(12.5));
        // The block count: 32-thread blocks stop at 32 blocks, 32 of 64 warps.
        assert_eq!(occ(kernel([32, 1, 1], 16, 0)), Some(50.0));
        // A partial warp still takes a whole warp slot: 48 threads are 2 warps.
        assert_eq!(occ(kernel([48, 1, 1], 0, 0)), Some(100.0));
    }

    #[test]
    fn launches_that_cannot_fit_have_none() {
        assert_eq!(
            theoretical_occupancy(&kernel([0, 1, 1], 32, 0), &H100),
            None
        );
        assert_eq!(
            theoretical_occupancy(&kernel([128, 1, 1], 32, 300 << 10), &H100),
            None
        );
        // 1024 threads × 255 registers is more than an SM's register file.
        assert_eq!(
            theoretical_occupancy(&kernel([1024, 1, 1], 255, 0), &H100),
            None
        );
        let unknown = SmLimits {
            max_threads: 0,
            ..H100
        };
        assert_eq!(
            theoretical_occupancy(&kernel([128, 1, 1], 32, 0), &unknown),
            None
        );
    }
}
