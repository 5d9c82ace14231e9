//! A kernel launch's geometry and resources, as CUPTI's kernel records carry them and
//! XProf's Kernel Stats reads them: what the activity records and the occupancy
//! calculation both need, so it sits below both.

/// Launch geometry and resources of one kernel, as XProf's `kernel_details` says them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelDetails {
    /// Registers per thread.
    pub registers_per_thread: u16,
    /// Static shared memory per block, bytes.
    pub static_shared_memory: u32,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared_memory: u32,
    /// Grid dimensions (x, y, z).
    pub grid: [u32; 3],
    /// Block dimensions (x, y, z).
    pub block: [u32; 3],
}

impl KernelDetails {
    /// The `kernel_details` stat in the format XProf's kernel_stats parses
    /// (space-separated `key:value` tokens; dimensions comma-separated), with the
    /// theoretical occupancy as `occ_pct` when it is known (CUPTI's records do not
    /// carry it: see [`crate::occupancy`]; XProf reads a missing token as 0).
    pub fn to_stat(&self, occupancy_pct: Option<f64>) -> String {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        let mut stat = format!(
            "regs:{} static_shared:{} dynamic_shared:{} grid:{gx},{gy},{gz} block:{bx},{by},{bz}",
            self.registers_per_thread, self.static_shared_memory, self.dynamic_shared_memory
        );
        if let Some(pct) = occupancy_pct {
            stat.push_str(&format!(" occ_pct:{pct:.1}"));
        }
        stat
    }
}
