//! Arbitrary bytes into the reader, and whatever decodes through every exporter:
//! Perfetto, Chrome JSON, and the summary as a table, JSON and CSV.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profiler_export::xplane;

#[path = "../src/exercise.rs"]
mod exercise;

fuzz_target!(|data: &[u8]| {
    if let Ok(space) = xplane::decode(data) {
        exercise::exporters(space);
    }
});
