//! `#[prof::instrument]` on sync, generic, method and async functions.

use std::path::Path;

use prof::xspace::{XEvent, XPlane, XStatValue};
use prof::{schema, ProfileOptions};
use prof_test_support::serial;

fn record(f: impl FnOnce()) -> prof::Profile {
    profiler_core::session::start(ProfileOptions::default(), None).expect("start");
    f();
    profiler_core::session::stop().expect("stop")
}

fn events(profile: &prof::Profile) -> Vec<(String, String, XEvent)> {
    let plane = profile.xspace().plane(schema::HOST_PLANE).expect("host");
    plane
        .lines
        .iter()
        .flat_map(|l| l.events.iter().map(move |e| (l.name.clone(), e)))
        .map(|(line, e)| {
            (
                line,
                plane.event_name(e.metadata_id).expect("name").to_owned(),
                e.clone(),
            )
        })
        .collect()
}

fn stat(profile: &prof::Profile, e: &XEvent, key: &str) -> Option<XStatValue> {
    let plane: &XPlane = profile.xspace().plane(schema::HOST_PLANE).expect("host");
    plane.find_stat(&e.stats, key).cloned()
}

#[prof::instrument]
fn load(shard: u32, label: &str, owner: String, path: &Path) -> usize {
    let _ = (path, &owner);
    label.len() + shard as usize
}

#[prof::instrument(name = "Train", fields(step_num = step * 10), skip(lr))]
fn train_step(step: i64, lr: f64) -> f64 {
    lr * step as f64
}

#[prof::instrument(skip_all)]
fn generic<T: Clone>(value: T, n: usize) -> Vec<T> {
    vec![value; n]
}

struct Model {
    layers: usize,
}

impl Model {
    #[prof::instrument(fields(layers = self.layers))]
    fn forward(&self, batch: usize) -> usize {
        inner_matmul(batch) * self.layers
    }

    #[prof::instrument(name = "grow", fields(from = self.layers, how = "double"))]
    fn double(&mut self) -> usize {
        self.layers *= 2;
        self.layers
    }
}

#[prof::instrument(name = "matmul")]
fn inner_matmul(batch: usize) -> usize {
    batch * 2
}

#[test]
fn sync_functions_record_their_calls_and_arguments() {
    let _s = serial();
    let profile = record(|| {
        assert_eq!(load(3, "abc", "me".into(), Path::new("/data")), 6);
        assert_eq!(train_step(2, 0.5), 1.0);
        assert_eq!(generic("x", 2), ["x", "x"]);
        let mut model = Model { layers: 4 };
        assert_eq!(model.forward(8), 64);
        assert_eq!(model.double(), 8);
    });
    let events = events(&profile);
    let names: Vec<_> = events.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["load", "Train", "generic", "forward", "matmul", "grow"]
    );

    let load = &events[0].2;
    assert_eq!(stat(&profile, load, "shard"), Some(XStatValue::Int64(3)));
    assert_eq!(
        stat(&profile, load, "label"),
        Some(XStatValue::Str("abc".into()))
    );
    assert_eq!(
        stat(&profile, load, "owner"),
        Some(XStatValue::Str("me".into()))
    );
    assert_eq!(
        stat(&profile, load, "path"),
        None,
        "a &Path is not recorded"
    );

    let train = &events[1].2;
    assert_eq!(stat(&profile, train, "step"), Some(XStatValue::Int64(2)));
    assert_eq!(
        stat(&profile, train, "step_num"),
        Some(XStatValue::Int64(20))
    );
    assert_eq!(stat(&profile, train, "lr"), None, "skipped");
    assert_eq!(profile.steps(), [20]);

    assert!(events[2].2.stats.is_empty(), "skip_all");
    let forward = &events[3].2;
    assert_eq!(
        stat(&profile, forward, "layers"),
        Some(XStatValue::Int64(4))
    );
    assert_eq!(stat(&profile, forward, "batch"), Some(XStatValue::Int64(8)));
    let grow = &events[5].2;
    assert_eq!(stat(&profile, grow, "from"), Some(XStatValue::Int64(4)));
    assert_eq!(
        stat(&profile, grow, "how"),
        Some(XStatValue::Str("double".into()))
    );
}

static EVALUATED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn costly() -> u64 {
    EVALUATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    1
}

#[prof::instrument(fields(cost = costly()))]
fn lazily() {}

#[test]
fn fields_are_not_evaluated_while_off() {
    let _s = serial();
    lazily();
    assert_eq!(EVALUATED.load(std::sync::atomic::Ordering::Relaxed), 0);
    let profile = record(lazily);
    assert_eq!(EVALUATED.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(profile.event_count(), 1);
}

#[prof::instrument(fields(kind = "fetch"))]
async fn fetch(id: u64, hops: u32) -> u64 {
    for _ in 0..hops {
        tokio::task::yield_now().await;
    }
    id * 2
}

#[prof::instrument(skip_all)]
async fn quietly(id: u64) -> u64 {
    tokio::task::yield_now().await;
    id
}

#[test]
fn async_functions_record_each_poll_with_fields_on_the_first() {
    let _s = serial();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tokio-worker")
        .enable_all()
        .build()
        .expect("runtime");
    let profile = record(|| {
        let out = runtime.block_on(async { tokio::spawn(fetch(21, 3)).await.expect("join") });
        assert_eq!(out, 42);
        assert_eq!(runtime.block_on(quietly(5)), 5);
    });
    let quiet: Vec<_> = events(&profile)
        .into_iter()
        .filter(|(line, n, _)| n == "quietly" && line != "Tasks")
        .collect();
    assert_eq!(quiet.len(), 2, "a yield = 2 polls");
    assert!(
        quiet.iter().all(|(_, _, e)| e.stats.is_empty()),
        "skip_all: {quiet:?}"
    );
    let (lifetimes, polls): (Vec<_>, Vec<_>) = events(&profile)
        .into_iter()
        .filter(|(_, n, _)| n == "fetch")
        .partition(|(line, _, _)| line == "Tasks");
    assert_eq!(polls.len(), 4, "3 yields = 4 polls");
    assert!(polls.iter().all(|(line, _, _)| line == "tokio-worker"));
    assert_eq!(lifetimes.len(), 1, "and one task");
    assert_eq!(
        stat(&profile, &lifetimes[0].2, "polls"),
        Some(XStatValue::Int64(4))
    );
    assert_eq!(
        stat(&profile, &lifetimes[0].2, "id"),
        Some(XStatValue::Int64(21)),
        "the task carries the function's fields"
    );
    let with_fields: Vec<_> = polls
        .iter()
        .filter(|(_, _, e)| stat(&profile, e, "id").is_some())
        .collect();
    assert_eq!(with_fields.len(), 1, "fields on one poll");
    let first = &with_fields[0].2;
    assert_eq!(stat(&profile, first, "id"), Some(XStatValue::Int64(21)));
    assert_eq!(stat(&profile, first, "hops"), Some(XStatValue::Int64(3)));
    assert_eq!(
        stat(&profile, first, "kind"),
        Some(XStatValue::Str("fetch".into()))
    );
}
