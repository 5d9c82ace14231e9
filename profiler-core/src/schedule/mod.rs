//! Step schedules, as `torch.profiler.schedule(wait, warmup, active, repeat,
//! skip_first)`: which training steps a [`Profiler`] records.
//!
//! After `skip_first` steps, the schedule cycles through `wait` steps that record
//! nothing, `warmup` steps during which the tracer runs but what it records is
//! discarded (the first recorded step then pays no start-up cost), and `active` steps
//! that are recorded; the last active step of a cycle ends a window, which is handed
//! to the profiler's callback. `repeat` cycles run, or cycles without end when it
//! is 0.
//!
//! ```
//! use profiler_core::schedule::{ProfilerAction::*, Schedule};
//!
//! let s = Schedule::new(1, 1, 2).repeat(1);
//! let actions: Vec<_> = (0..6).map(|step| s.action(step)).collect();
//! assert_eq!(actions, [None, Warmup, Record, RecordAndSave, None, None]);
//! ```

mod plan;
mod profiler;

pub use plan::{ProfilerAction, Schedule};
pub use profiler::{Profiler, TraceReady};
