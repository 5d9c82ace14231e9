//! prof's diagnostics go through `tracing` (target `prof`), not stderr, and the
//! `ProfilerLayer` does not record them into the profile they warn about. Its own
//! test binary: tracer factories and the default subscriber are process-wide.

use std::sync::{Arc, Mutex};

use profiler_core::tracer::{self, SessionClock, Tracer};
use profiler_core::xspace::{XSpace, XStatValue};
use profiler_core::{log, session, ProfileOptions, ProfilerLayer};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

struct Broken;

impl Tracer for Broken {
    fn start(&mut self) -> Result<(), profiler_core::Error> {
        Err(profiler_core::Error::new(
            profiler_core::ErrorKind::Unavailable,
            "broken device: libbroken.so not found",
        ))
    }
    fn stop(&mut self) -> Result<(), profiler_core::Error> {
        Ok(())
    }
    fn collect(&mut self, _: &mut XSpace, _: &SessionClock) {}
}

fn broken(_: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    Some(Box::new(Broken))
}

/// Keeps (target, level, message) of every event.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, tracing::Level, String)>>>);

impl<S: tracing::Subscriber> Layer<S> for Seen {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0 = format!("{v:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let meta = event.metadata();
        self.0
            .lock()
            .expect("seen")
            .push((meta.target().to_owned(), *meta.level(), message.0));
    }
}

#[test]
fn a_tracer_warning_is_a_tracing_event_the_layer_does_not_record() {
    tracer::register(broken);
    let seen = Seen::default();
    let subscriber = tracing_subscriber::registry()
        .with(ProfilerLayer::new())
        .with(seen.clone());
    let profile = tracing::subscriber::with_default(subscriber, || {
        // Verbose: the layer records `tracing` events as instants.
        session::start(ProfileOptions::default().host_tracer_level(3), None).expect("start");
        tracing::info!("user event");
        // As the server's thread warns while a session records.
        tracing::warn!(target: log::TARGET, "prof's own warning while recording");
        session::stop().expect("stop")
    });
    let seen = seen.0.lock().expect("seen").clone();
    let warning = seen
        .iter()
        .find(|(target, _, _)| target == log::TARGET)
        .expect("the warning reached the subscriber");
    assert_eq!(warning.1, tracing::Level::WARN);
    assert!(warning.2.contains("libbroken.so"), "{warning:?}");
    // In the profile: the warning as a profile warning, the user's event as an
    // instant, and no instant of prof's own warning.
    assert!(profile
        .warnings()
        .iter()
        .any(|w| w.contains("libbroken.so")));
    let messages: Vec<String> = profile
        .xspace()
        .planes
        .iter()
        .flat_map(|p| {
            p.lines.iter().flat_map(|l| &l.events).filter_map(move |e| {
                match p.find_stat(&e.stats, "message") {
                    Some(XStatValue::Str(m)) => Some(m.clone()),
                    _ => None,
                }
            })
        })
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("user event")),
        "the user's event is recorded: {messages:?}"
    );
    assert!(
        !messages.iter().any(|m| m.contains("prof's own warning")),
        "prof's warning was recorded: {messages:?}"
    );
}
