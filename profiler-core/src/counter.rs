//! Counters: named values over time (MXNet's `profiler.Counter`), shown as counter
//! tracks: on XProf's `_counters_` line, and as counter tracks in Perfetto and Chrome.
//!
//! ```
//! use profiler_core::{session, Counter, ProfileOptions};
//!
//! static QUEUE_DEPTH: Counter = Counter::new("queue_depth");
//!
//! session::start(ProfileOptions::default(), None)?;
//! QUEUE_DEPTH.set(4.0);
//! QUEUE_DEPTH.increment(1.0);
//! QUEUE_DEPTH.decrement(2.0);
//! let profile = session::stop()?;
//! assert_eq!(profile.counter_samples("queue_depth"), [4.0, 5.0, 3.0]);
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! While no session records, an update is one relaxed atomic load and changes nothing,
//! like every other annotation. While one records, an update is one atomic
//! read-modify-write of the value, one clock read and one 32-byte record on the
//! calling thread; no lock, no allocation. Samples taken at the same moment on two
//! threads may be ordered by their timestamps differently from the order their updates
//! reached the value.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::buffer;
use crate::clock;
use crate::gate::{self, USER_LEVEL};

/// A named value recorded each time it changes.
#[derive(Debug)]
pub struct Counter {
    name: &'static str,
    bits: AtomicU64,
}

impl Counter {
    /// A counter starting at 0. Usable in a `static`.
    ///
    /// # Panics
    /// When `name` is empty or starts with `$` (names prof reserves); in a `static`
    /// that is a compile-time error.
    pub const fn new(name: &'static str) -> Counter {
        assert!(
            !name.is_empty() && name.as_bytes()[0] != b'$',
            "a counter needs a name that does not start with '$'"
        );
        Counter {
            name,
            bits: AtomicU64::new(0), // the bits of 0.0
        }
    }

    /// The counter's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }

    /// Sets the value (recorded only while a session records).
    #[inline]
    pub fn set(&self, value: impl Into<f64>) {
        if !gate::is_open(USER_LEVEL) {
            return;
        }
        let value = value.into();
        self.bits.store(value.to_bits(), Ordering::Relaxed);
        self.sample(value);
    }

    /// Adds `by` to the value (recorded only while a session records).
    #[inline]
    pub fn increment(&self, by: impl Into<f64>) {
        if !gate::is_open(USER_LEVEL) {
            return;
        }
        let by = by.into();
        let old = self
            .bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + by).to_bits())
            })
            .unwrap_or_else(|bits| bits);
        self.sample(f64::from_bits(old) + by);
    }

    /// Subtracts `by` from the value (recorded only while a session records).
    #[inline]
    pub fn decrement(&self, by: impl Into<f64>) {
        self.increment(-by.into());
    }

    fn sample(&self, value: f64) {
        buffer::sample(self.name, clock::now(), value.to_bits());
    }
}

/// `counter += by`, as MXNet's `Counter.__iadd__`. A `static` cannot be borrowed
/// mutably, so for one write `let mut c = &COUNTER; c += 1;` or call
/// [`Counter::increment`].
impl<T: Into<f64>> std::ops::AddAssign<T> for &Counter {
    fn add_assign(&mut self, by: T) {
        self.increment(by);
    }
}

/// `counter -= by`, as MXNet's `Counter.__isub__`.
impl<T: Into<f64>> std::ops::SubAssign<T> for &Counter {
    fn sub_assign(&mut self, by: T) {
        self.decrement(by);
    }
}

impl<T: Into<f64>> std::ops::AddAssign<T> for Counter {
    fn add_assign(&mut self, by: T) {
        self.increment(by);
    }
}

impl<T: Into<f64>> std::ops::SubAssign<T> for Counter {
    fn sub_assign(&mut self, by: T) {
        self.decrement(by);
    }
}
