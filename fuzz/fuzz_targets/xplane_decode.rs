//! Arbitrary bytes into the `.xplane.pb` reader. Whatever decodes must encode again,
//! and what we encode must decode to a space that encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profiler_export::xplane;

fuzz_target!(|data: &[u8]| {
    let Ok(space) = xplane::decode(data) else {
        return;
    };
    let bytes = xplane::encode(&space);
    let again = match xplane::decode(&bytes) {
        Ok(again) => again,
        Err(e) => panic!("decoding what xplane::encode wrote failed: {e}"),
    };
    // Compared as bytes: a space holding a NaN stat is not equal to itself.
    assert!(
        xplane::encode(&again) == bytes,
        "decode(encode(space)) encodes differently from space"
    );
});
