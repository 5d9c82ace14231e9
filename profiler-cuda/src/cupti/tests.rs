//! The tracer's start, stop and collection against a fake CUPTI: the order of the
//! steps, and what each refusal leaves behind.

use std::sync::{Arc, Mutex};

use cudarc::cupti::sys as cupti;

use super::pm::PmSettings;
use super::*;
use crate::calls::ApiDomain;

/// What the tracer asked of a fake CUPTI.
#[derive(Default)]
struct Fake {
    log: Arc<Mutex<Vec<String>>>,
    refuse_subscribe: Option<String>,
    refuse: Vec<Records>,
}

impl Fake {
    fn say(&self, what: impl Into<String>) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(what.into());
    }
}

impl Cupti for Fake {
    fn missing_libraries(&self) -> Option<String> {
        None
    }
    fn devices(&mut self) -> Result<Vec<DeviceInfo>, String> {
        self.say("devices");
        Ok(vec![DeviceInfo::default()])
    }
    fn prepare(&mut self) -> Result<(), String> {
        self.say("prepare");
        Ok(())
    }
    fn subscribe(&mut self, all: bool) -> Result<(), String> {
        self.say(format!("subscribe all={all}"));
        match &self.refuse_subscribe {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }
    fn unsubscribe(&mut self) {
        self.say("unsubscribe");
    }
    fn enable(&mut self, records: Records) -> Result<(), String> {
        self.say(format!("enable {records:?}"));
        if self.refuse.contains(&records) {
            return Err(format!("refused {records:?}"));
        }
        Ok(())
    }
    fn disable_all(&mut self) {
        self.say("disable_all");
    }
    fn flush(&mut self) -> Result<(), String> {
        self.say("flush");
        Ok(())
    }
    fn deliver(&mut self) -> Result<(), String> {
        self.say("deliver");
        Ok(())
    }
    fn api_name(&self, _: ApiDomain, cbid: u32) -> String {
        format!("api{cbid}")
    }
    fn start_pm(&mut self, settings: &PmSettings, devices: &[u32]) -> Vec<String> {
        self.say(format!(
            "start_pm {} on {devices:?}",
            settings.metrics.len()
        ));
        Vec::new()
    }
    fn stop_pm(&mut self) -> (Vec<PmSample>, Vec<String>) {
        self.say("stop_pm");
        (Vec::new(), Vec::new())
    }
}

fn tracer(fake: Fake, options: ProfileOptions) -> (CuptiTracer, Arc<Mutex<Vec<String>>>) {
    let log = fake.log.clone();
    (
        CuptiTracer::new(Settings::of(&options), Box::new(fake)),
        log,
    )
}

fn said(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    log.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

#[test]
fn a_cupti_held_by_another_profiler_fails_the_tracer_not_the_session() {
    let _one = calls::tests::SESSION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let why = callbacks::subscribe_failure(
        cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
    );
    let fake = Fake {
        refuse_subscribe: Some(why.clone()),
        ..Fake::default()
    };
    let (mut tracer, log) = tracer(fake, ProfileOptions::default());
    // The error is the one warning the session's profile gets (the core turns a
    // tracer's start error into it and goes on recording the host).
    let e = tracer.start().expect_err("subscribing was refused");
    assert_eq!((e.kind(), e.to_string()), (ErrorKind::Unavailable, why));
    // Nothing was turned on, so nothing is left on; no scope hook was installed.
    assert_eq!(said(&log), ["devices", "prepare", "subscribe all=false"]);
    assert!(!tracer.running);
    tracer.stop().expect("nothing to stop");
}

/// A factory whose tracer meets a CUPTI another profiler holds.
fn taken(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    if options.device_tracer_level == 0 {
        return None;
    }
    let fake = Fake {
        refuse_subscribe: Some(callbacks::subscribe_failure(
            cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
        )),
        ..Fake::default()
    };
    Some(Box::new(CuptiTracer::new(
        Settings::of(options),
        Box::new(fake),
    )))
}

#[test]
fn the_session_records_the_host_and_says_why_the_gpu_was_not_traced() {
    let _one = calls::tests::SESSION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    // The only test of this binary that starts sessions: the factory stays.
    profiler_core::tracer::register(taken);
    profiler_core::session::start(ProfileOptions::default(), None).expect("start");
    drop(profiler_core::trace!("step"));
    let profile = profiler_core::session::stop().expect("stop");
    assert_eq!(profile.event_count(), 1);
    let taken: Vec<_> = profile
        .warnings()
        .iter()
        .filter(|w| w.contains("already has a subscriber"))
        .collect();
    assert_eq!(taken.len(), 1, "{:?}", profile.warnings());
}

#[test]
fn a_refused_device_kind_unsubscribes_and_disables_everything() {
    let _one = calls::tests::SESSION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let fake = Fake {
        refuse: vec![Records::Device],
        ..Fake::default()
    };
    let (mut tracer, log) = tracer(fake, ProfileOptions::default());
    let e = tracer.start().expect_err("Device records refused");
    assert_eq!(e.to_string(), "refused Device");
    assert_eq!(
        said(&log)[3..],
        ["enable Device", "unsubscribe", "disable_all"]
    );
}

#[test]
fn a_session_asks_for_what_its_options_name_and_stops_in_order() {
    let _one = calls::tests::SESSION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let fake = Fake {
        refuse: vec![Records::Memory],
        ..Fake::default()
    };
    let options = ProfileOptions::default()
        .advanced("gpu_trace_all_api_calls", true)
        .advanced("gpu_enable_nvtx_tracking", true)
        .advanced("gpu_enable_cupti_activity_graph_trace", true)
        .advanced("gpu_pm_sample_counters", "a.b,c")
        .advanced("gpu_num_chips_to_profile_per_task", 1);
    let (mut tracer, log) = tracer(fake, options);
    tracer.start().expect("start");
    assert_eq!(
        said(&log),
        [
            "devices",
            "prepare",
            "subscribe all=true",
            "enable Device",
            "enable Memory",
            "enable Nvtx",
            "enable GraphTrace",
            "start_pm 2 on [0]",
        ]
    );
    // The refused optional kind is a warning, not a failure.
    assert_eq!(tracer.warnings, ["refused Memory"]);
    tracer.stop().expect("stop");
    assert_eq!(
        said(&log)[8..],
        ["unsubscribe", "stop_pm", "disable_all", "flush"]
    );
}

#[test]
fn a_running_tracer_tells_each_devices_kernel_time_after_asking_cupti_to_deliver() {
    let _one = calls::tests::SESSION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let (mut tracer, log) = tracer(Fake::default(), ProfileOptions::default());
    assert_eq!(tracer.device_time(), None, "not started");
    tracer.start().expect("start");
    // The device the start found comes first, listed before any kernel of this test
    // (other tests' devices may follow: the counts are the process's).
    let first = tracer.device_time().expect("running");
    assert_eq!(first[0].device, 0);
    assert_eq!(said(&log).last().map(String::as_str), Some("deliver"));
    buffers::complete(vec![
        buffers::tests::kernel_on(0, 100, 400),
        buffers::tests::kernel_on(0, 500, 600),
    ]);
    let second = tracer.device_time().expect("running");
    assert_eq!(
        (
            second[0].kernel_ns - first[0].kernel_ns,
            second[0].kernels - first[0].kernels
        ),
        (400, 2)
    );
    tracer.stop().expect("stop");
    assert_eq!(tracer.device_time(), None, "stopped");
    drop(buffers::take());
}
