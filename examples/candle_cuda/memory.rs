//! What the driver says of the device's memory (`cuMemGetInfo`), beside what prof saw.

use crate::Result;

/// The device memory the driver reports in use (`cuMemGetInfo`, every process and
/// context on the device), before the session, at samples during it and after it.
#[derive(Debug, Default)]
pub(crate) struct DriverMemory {
    pub(crate) before: Option<u64>,
    pub(crate) highest: Option<u64>,
    pub(crate) samples: usize,
    pub(crate) after: Option<u64>,
    /// Why the driver could not be asked, if it could not.
    pub(crate) failed: Option<String>,
}

impl DriverMemory {
    pub(crate) fn used(&mut self) -> Option<u64> {
        match prof::cuda::driver::memory_info() {
            Ok(info) => Some(info.used()),
            Err(why) => {
                self.failed.get_or_insert(why);
                None
            }
        }
    }

    pub(crate) fn before() -> DriverMemory {
        let mut d = DriverMemory::default();
        d.before = d.used();
        d
    }

    pub(crate) fn sample(&mut self) {
        if let Some(used) = self.used() {
            self.samples += 1;
            self.highest = Some(self.highest.map_or(used, |h| h.max(used)));
        }
    }

    pub(crate) fn after(&mut self) {
        self.after = self.used();
    }

    /// Prints prof's GPU_0 peak beside the driver's figures; fails when the driver saw
    /// the device's memory grow during the session and prof saw no allocation at all.
    pub(crate) fn compare(&self, profile: &prof::Profile) -> Result<()> {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let summary =
            prof::ProfileAnalysis::summary(profile, &prof::summary::SummaryOptions::default());
        // XProf's peak: what the pools held beyond their bytes in use, with them.
        let held = summary
            .memory()
            .iter()
            .find(|p| p.allocator == "GPU_0")
            .map(|p| p.peak_bytes);
        let seen = prof::memory::gpu(0);
        match (seen, held) {
            (Some(seen), Some(held)) => println!(
                "candle_cuda: GPU_0 as prof saw it: peak {:.1} MiB allocated, {:.1} MiB with what \
                 the pools held (XProf's peak); {:.1} MiB still allocated",
                mib(seen.peak),
                mib(held),
                mib(seen.in_use)
            ),
            _ => println!("candle_cuda: prof saw no device memory allocated"),
        }
        let (Some(before), Some(highest)) = (self.before, self.highest) else {
            println!(
                "candle_cuda: the driver could not be asked: {}",
                self.failed.as_deref().unwrap_or("no sample")
            );
            return Ok(());
        };
        let grew = highest.saturating_sub(before);
        println!(
            "candle_cuda: the driver (cuMemGetInfo, all of the device): {:.1} MiB used before the \
             session, {:.1} MiB at the highest of {} samples after backward (+{:.1} MiB), {} after",
            mib(before),
            mib(highest),
            self.samples,
            mib(grew),
            self.after
                .map_or_else(|| "?".to_owned(), |a| format!("{:.1} MiB", mib(a))),
        );
        if let Some(held) = held {
            println!(
                "candle_cuda: prof's GPU_0 peak is {:.2}x the driver's growth at its samples",
                held as f64 / grew.max(1) as f64
            );
        }
        if grew > 0 && held.is_none() {
            return Err(format!(
                "the driver saw the device's memory grow by {:.1} MiB during the session, but the \
                 profile holds no GPU_0 memory event",
                mib(grew)
            )
            .into());
        }
        Ok(())
    }
}
