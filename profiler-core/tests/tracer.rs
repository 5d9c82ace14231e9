//! Device tracers join sessions through `profiler_core::tracer`: started and stopped
//! with the session, collecting into its XSpace, and told of every recorded annotation
//! through the scope hook. Its own test binary: the registry is process-wide.

use std::sync::atomic::{AtomicBool, Ordering};

use prof_test_support::scope_hook;
use profiler_core::tracer::{self, DeviceTime, SessionClock, Tracer};
use profiler_core::xspace::{PlaneBuilder, XSpace};
use profiler_core::{session, trace, ProfileOptions};

static FAIL_START: AtomicBool = AtomicBool::new(false);

struct FakeDevice {
    started: bool,
    /// Times its device time was read.
    reads: u64,
}

impl Tracer for FakeDevice {
    fn start(&mut self) -> Result<(), profiler_core::Error> {
        if FAIL_START.load(Ordering::Relaxed) {
            // The cause as a source, as a real tracer keeps it: the warning says both.
            let cause = std::io::Error::new(std::io::ErrorKind::NotFound, "looked in /nowhere");
            return Err(profiler_core::Error::new(
                profiler_core::ErrorKind::Unavailable,
                "fake device: libfake.so not found",
            )
            .with_source(cause));
        }
        self.started = true;
        tracer::set_scope_hook(Some(&scope_hook::HOOK));
        Ok(())
    }
    fn stop(&mut self) -> Result<(), profiler_core::Error> {
        tracer::set_scope_hook(None);
        Ok(())
    }
    fn device_time(&mut self) -> Option<Vec<DeviceTime>> {
        self.reads += 1;
        Some(vec![DeviceTime {
            device: 0,
            name: "Fake GPU".into(),
            kernel_ns: 1_000 * self.reads,
            kernels: self.reads,
        }])
    }
    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        assert!(self.started);
        let mut plane = PlaneBuilder::new(100, "/device:GPU:0");
        plane.add_plane_stat("core_count", profiler_core::xspace::XStatValue::Int64(1));
        assert!(session.duration_ns() > 0);
        space.planes.push(plane.build());
    }
}

fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    (options.device_tracer_level >= 1).then(|| {
        Box::new(FakeDevice {
            started: false,
            reads: 0,
        }) as _
    })
}

#[test]
fn a_registered_tracer_runs_with_sessions_and_hears_of_annotations() {
    tracer::register(factory);
    tracer::register(factory);

    // 1. A tracer that starts: its plane is in the profile, and the GPU keys count.
    session::start(
        ProfileOptions::default().advanced("gpu_max_activity_api_events", 10),
        None,
    )
    .expect("start");
    {
        let _outer = trace!("Train", step_num = 1);
        let _inner = trace!("attn");
    }
    // While it runs, its device time is read through the registry, each read fresh.
    let first = tracer::device_time().expect("a running tracer that counts");
    let second = tracer::device_time().expect("a running tracer that counts");
    assert_eq!((first.len(), first[0].name.as_str()), (1, "Fake GPU"));
    assert!(second[0].kernel_ns > first[0].kernel_ns);
    let profile = session::stop().expect("stop");
    assert_eq!(tracer::device_time(), None, "no session, no device time");
    let space = profile.xspace();
    assert_eq!(
        space
            .planes
            .iter()
            .filter(|p| p.name == "/device:GPU:0")
            .count(),
        1,
        "registered twice, ran once"
    );
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
    let scopes = scope_hook::take();
    assert_eq!(scopes.len(), 4, "{scopes:?}");
    let (outer, inner) = (scopes[0].1, scopes[1].1);
    assert_eq!(outer.line, inner.line);
    assert!(inner.seq > outer.seq);
    assert_eq!(
        scopes,
        [(true, outer), (true, inner), (false, inner), (false, outer)]
    );

    // 2. Annotations after stop reach no hook.
    {
        let _t = trace!("after");
    }
    assert!(scope_hook::take().is_empty());

    // 3. device_tracer_level 0: no tracer, and the GPU key is reported as unused.
    session::start(
        ProfileOptions::default()
            .device_tracer_level(0)
            .advanced("gpu_max_activity_api_events", 10),
        None,
    )
    .expect("start");
    assert_eq!(tracer::device_time(), None, "no tracer runs");
    let space = session::stop().expect("stop").xspace().clone();
    assert!(space.plane("/device:GPU:0").is_none());
    assert!(
        space
            .warnings
            .iter()
            .any(|w| w.contains("gpu_max_activity_api_events")),
        "{:?}",
        space.warnings
    );

    // 4. A tracer that cannot start: host tracing goes on, one warning says why.
    FAIL_START.store(true, Ordering::Relaxed);
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let _t = trace!("host work");
    }
    let profile = session::stop().expect("stop");
    assert_eq!(profile.event_count(), 1);
    let warnings = &profile.xspace().warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "fake device: libfake.so not found: looked in /nowhere"
    );
    assert!(scope_hook::take().is_empty());
}
