//! Without libcuda or libcupti (this machine, CI), a session with the CUPTI tracer
//! registered records the host as usual and carries one warning saying what was
//! missing and which names were tried; nothing panics.

use profiler_core::{session, trace, ProfileOptions};

#[test]
fn missing_cuda_is_one_warning_and_host_tracing_goes_on() {
    profiler_cuda::register();
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0..2 {
        let _t = trace!("Train", step_num = step);
    }
    let profile = session::stop().expect("stop");
    assert_eq!(profile.steps(), [0, 1]);
    // On a machine with CUDA the tracer ran; no claim here about what it saw.
    if let Some(why) = profiler_cuda::missing_libraries() {
        {
            let warnings = profile.warnings();
            assert_eq!(
                warnings,
                std::slice::from_ref(&why),
                "exactly the one warning"
            );
            assert!(why.contains("libcu"), "{why}");
            assert!(
                why.contains("tried") && why.contains(".so"),
                "names where it looked: {why}"
            );
            assert!(profile
                .xspace()
                .planes
                .iter()
                .all(|p| !p.name.starts_with("/device:GPU")));
        }
    }
    // device_tracer_level 0: the tracer is not even made, so no warning.
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    let profile = session::stop().expect("stop");
    assert!(profile.warnings().is_empty(), "{:?}", profile.warnings());
}
