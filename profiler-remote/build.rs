//! Generates the `tensorflow.ProfilerService` server and client stubs with tonic's
//! manual builder: the messages are written by hand in `src/proto.rs`, so no `.proto`
//! file and no `protoc` are needed.

use tonic_build::manual::{Builder, Method, Service};

fn method(name: &str, route: &str, input: &str, output: &str) -> Method {
    Method::builder()
        .name(name)
        .route_name(route)
        .input_type(format!("crate::proto::{input}"))
        .output_type(format!("crate::proto::{output}"))
        .codec_path("crate::codec::Protobuf")
        .build()
}

/// `prof.live.v1.Live`: prof's own service on the same port, whose messages are in
/// `src/live/proto.rs`.
fn live() -> Service {
    let watch = Method::builder()
        .name("watch")
        .route_name("Watch")
        .input_type("crate::live::proto::WatchRequest")
        .output_type("crate::live::proto::Snapshot")
        .codec_path("crate::codec::Protobuf")
        .server_streaming()
        .build();
    Service::builder()
        .name("Live")
        .package("prof.live.v1")
        .method(watch)
        .build()
}

fn main() {
    let service = Service::builder()
        .name("ProfilerService")
        .package("tensorflow")
        .method(method(
            "profile",
            "Profile",
            "ProfileRequest",
            "ProfileResponse",
        ))
        .method(method(
            "terminate",
            "Terminate",
            "TerminateRequest",
            "TerminateResponse",
        ))
        .method(method(
            "monitor",
            "Monitor",
            "MonitorRequest",
            "MonitorResponse",
        ))
        .method(method(
            "start_continuous_profiling",
            "StartContinuousProfiling",
            "ProfileRequest",
            "ContinuousProfilingResponse",
        ))
        .method(method(
            "stop_continuous_profiling",
            "StopContinuousProfiling",
            "StopContinuousProfilingRequest",
            "StopContinuousProfilingResponse",
        ))
        .method(method(
            "get_snapshot",
            "GetSnapshot",
            "GetSnapshotRequest",
            "ProfileResponse",
        ))
        .build();
    Builder::new().compile(&[service, live()]);
}
