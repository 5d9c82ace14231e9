//! [`ProfileAnalysis`]: the analyses as methods of a finished [`Profile`].

use profiler_core::Profile;

use crate::summary::{Summary, SummaryOptions};

/// Sums up a [`Profile`], as [`ProfileExport`] writes it: an extension trait, so that
/// `profile.summary(..)` reads as a method of the profile the core records.
///
/// ```
/// use profiler_analysis::summary::SummaryOptions;
/// use profiler_analysis::ProfileAnalysis;
/// # let profile = profiler_core::Profile::default();
/// let table = profile.summary(&SummaryOptions::default());
/// assert!(table.rows().is_empty());
/// ```
///
/// [`ProfileExport`]: profiler_export::ProfileExport
pub trait ProfileAnalysis {
    /// Per-name aggregates: count, total, self, min, max, mean and share of the step;
    /// see [`Summary`].
    fn summary(&self, options: &SummaryOptions) -> Summary;
}

impl ProfileAnalysis for Profile {
    fn summary(&self, options: &SummaryOptions) -> Summary {
        Summary::of(self, options)
    }
}
