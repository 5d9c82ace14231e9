//! What `capture-profile` shows: a progress bar while it captures, then for each host
//! the file it wrote, and the summary table.
//!
//! With one host that is a few lines and a table. With many (a multi-node job), one
//! line per host and one table merged over all of them, so 32 hosts do not print 32
//! tables; `--summary-per-host` asks for them anyway.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use profiler_analysis::summary::{Summary, SummaryOptions};
use profiler_analysis::ProfileAnalysis;
use profiler_core::error::report as said;
use profiler_core::Profile;
use profiler_export::link::{LinkOptions, LinkOutcome};
use profiler_export::otlp::OtlpOptions;
use profiler_export::store::{publish_run, Location, ObjectUrl};
use profiler_export::{ProfileExport, RunDir};
use profiler_remote::client::Captured;

use profiler_remote::client::CaptureError;

use super::plan::Plan;

/// What happened to one host.
pub(crate) struct Outcome {
    pub(crate) address: String,
    pub(crate) result: Result<Captured, CaptureError>,
}

/// A bar of the capture's length, in tenths of a second; drawn only on a terminal
/// (indicatif draws nothing when stderr is not one, so logs stay clean).
pub(super) fn progress_bar(total: Duration, hosts: usize) -> ProgressBar {
    let bar = ProgressBar::new(total.as_millis().div_ceil(100) as u64);
    let style = ProgressStyle::with_template("{msg} [{bar:30}] {elapsed} / {len_secs}")
        .map(|s| s.progress_chars("#>-"))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.with_key(
        "len_secs",
        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.1}s", state.len().unwrap_or(0) as f64 / 10.0);
        },
    ));
    bar.set_message(format!("capturing {hosts} host(s)"));
    if bar.is_hidden() {
        eprintln!(
            "capturing {hosts} host(s) for {:.1} s ...",
            total.as_secs_f64()
        );
    }
    bar
}

/// One tick of 100 ms; once the capture's length is reached, the servers are
/// collecting and sending.
pub(super) fn advance(bar: &ProgressBar) {
    bar.inc(1);
    if bar.position() >= bar.length().unwrap_or(0) {
        bar.set_message("collecting");
    }
}

/// Writes and reports every host's outcome; returns the exit status. The run directory
/// is created when the first host has something to write.
pub(super) fn report(plan: &Plan, outcomes: Vec<Outcome>) -> i32 {
    let mut run: Option<RunDir> = None;
    let many = plan.addresses.len() > 1;
    let mut failed = 0usize;
    let mut with_events = 0usize;
    let mut profiles: Vec<(String, Profile)> = Vec::new();
    // Every host's file is written (locally, or staged for a URL logdir) once all
    // captures have returned; a URL logdir's run is then published whole, its files
    // concurrently, so the servers need no credentials of their own.
    let location = Location::of(&plan.logdir);
    let local_logdir = match &location {
        Ok(Location::Object(url)) => url.staging_dir(),
        _ => plan.logdir.clone(),
    };
    let mut written = Vec::with_capacity(outcomes.len());
    for Outcome { address, result } in outcomes {
        let result = result.map(|captured| match captured {
            Captured::Space(space) => {
                let mut profile = Profile::new(*space);
                let ok = write(&mut run, &mut profile, &address, plan, &local_logdir);
                Ok((profile, ok))
            }
            other => Err(other),
        });
        written.push((address, result));
    }
    if let (Ok(Location::Object(url)), Some(run)) = (&location, &run) {
        failed += usize::from(!publish(run, url, &mut written));
    }
    for (address, result) in written {
        match result {
            Ok(Ok((profile, ok))) => {
                if !ok {
                    failed += 1;
                    continue;
                }
                let files: Vec<_> = profile
                    .files()
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect();
                let events = profile.event_count();
                println!(
                    "{address}: {events} events, {} steps -> {}",
                    profile.steps().len(),
                    files.join(", ")
                );
                if events == 0 {
                    println!(
                        "  warning: no events were recorded: is the program annotated \
                         (prof::trace!, tracing spans), and was it working during the capture?"
                    );
                } else {
                    with_events += 1;
                }
                for warning in profile.warnings() {
                    println!("  warning: {warning}");
                }
                if let Some(otlp) = &plan.otlp {
                    failed += usize::from(!send_otlp(&address, &profile, otlp));
                }
                profiles.push((address, profile));
            }
            Ok(Err(Captured::Space(_))) => unreachable!("written above"),
            Ok(Err(Captured::WrittenByServer { empty })) => {
                let root = Path::new(&plan.request.repository_root).join(&plan.request.session_id);
                println!(
                    "{address}: the server wrote its own file under {} on its machine{}",
                    root.display(),
                    if empty {
                        " (it reports an empty trace)"
                    } else {
                        ""
                    }
                );
                with_events += usize::from(!empty);
            }
            Err(e) => {
                eprintln!("capture-profile: {}", failure(&address, &e));
                failed += 1;
            }
        }
    }
    summaries(plan, &profiles, many);
    match &location {
        _ if profiles.is_empty() => {}
        // XProf reads gs:// and local logdirs; s3:// and az:// runs come down first.
        Ok(Location::Object(url)) if !url.xprof_reads() => println!(
            "XProf reads gs:// logdirs only: bring the run down with  prof-convert {url} --out logs  \
             then  xprof --logdir logs"
        ),
        _ => println!(
            "view with:  xprof --logdir {}   (or: tensorboard --logdir {})",
            plan.logdir.display(),
            plan.logdir.display()
        ),
    }
    if let (true, Some((_, profile))) = (plan.perfetto_link, profiles.first()) {
        let announce =
            |url: &str| println!("Perfetto trace link (open it to view; served once): {url}");
        match profile.serve_perfetto_link(&LinkOptions::default(), announce) {
            Ok(LinkOutcome::Fetched) => println!("the Perfetto UI fetched the trace"),
            Ok(LinkOutcome::TimedOut) => println!("nobody opened the Perfetto link in time"),
            Err(e) => {
                eprintln!("capture-profile: {}", said(&e));
                failed += 1;
            }
        }
    }
    if with_events == 0 && failed == 0 {
        eprintln!("capture-profile: no host recorded any event");
    }
    i32::from(failed > 0 || with_events == 0)
}

/// One host's failure as a line: the address once (the error names it when it is the
/// address that failed), what went wrong with its causes, and what to try.
fn failure(address: &str, e: &CaptureError) -> String {
    let what = said(e).to_string();
    let what = if what.contains(address) {
        what
    } else {
        format!("{address}: {what}")
    };
    let hint = match e {
        CaptureError::Unreachable(_) => {
            "; check that the program there serves a profiler \
             (prof::server::start, jax.profiler.start_server) on that port"
        }
        CaptureError::Busy(_) => "; capture again once its capture has ended",
        CaptureError::Deadline(_) => "; the server may be overloaded: try a shorter --duration-ms",
        _ => "",
    };
    format!("{what}{hint}")
}

/// Writes one host's files into the run (creating it for the first host, named as
/// the capture's session); when that fails, into a run under the system's temporary
/// directory, so a capture that cannot be replayed is not lost.
fn write(
    run: &mut Option<RunDir>,
    profile: &mut Profile,
    address: &str,
    plan: &Plan,
    logdir: &Path,
) -> bool {
    let made = match run {
        Some(run) => Ok(&*run),
        None => {
            RunDir::create_named(logdir, &plan.request.session_id).map(|made| &*run.insert(made))
        }
    };
    let Err(e) = made.and_then(|run| run.write(profile, address, &plan.formats)) else {
        return true;
    };
    eprintln!(
        "capture-profile: {address}: captured, but writing failed: {}",
        said(&e)
    );
    let fallback = std::env::temp_dir().join("prof-captures");
    match RunDir::create(&fallback).and_then(|r| r.write(profile, address, &plan.formats)) {
        Ok(()) => {
            let at = profile.run_dir().unwrap_or(&fallback).display().to_string();
            eprintln!("capture-profile: {address}: the capture is kept in {at}");
            true
        }
        Err(e) => {
            eprintln!(
                "capture-profile: {address}: and keeping it in {} failed too: {}; the capture is lost",
                fallback.display(),
                said(&e)
            );
            false
        }
    }
}

/// One host's profile as written: the profile and whether its files were written, or
/// what the server did instead.
type Written = Result<Result<(Profile, bool), Captured>, CaptureError>;

/// Publishes the staged run to `url`, every host's files in one run; on success each
/// profile's files name the objects. On failure says why, naming the URL and the
/// local run that keeps the captures, and returns false.
fn publish(run: &RunDir, url: &ObjectUrl, written: &mut [(String, Written)]) -> bool {
    let mut files = Vec::new();
    let mut hosts = Vec::new();
    for (i, (_, result)) in written.iter().enumerate() {
        if let Ok(Ok((profile, true))) = result {
            if profile.run_dir() == Some(run.path()) {
                hosts.push((i, profile.files().len()));
                files.extend(profile.files().iter().cloned());
            }
        }
    }
    // `.xplane.pb` files first: the first one claims the run.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| !files[i].to_string_lossy().ends_with(".xplane.pb"));
    let sorted: Vec<PathBuf> = order.iter().map(|&i| files[i].clone()).collect();
    let runs = url.join(profiler_export::logdir::PROFILE_PLUGIN_DIR);
    match publish_run(run.path(), &sorted, &runs) {
        Ok(published) => {
            let mut urls = vec![PathBuf::new(); files.len()];
            for (k, &i) in order.iter().enumerate() {
                urls[i] = PathBuf::from(published.files[k].to_string());
            }
            let mut next = urls.into_iter();
            for (i, count) in hosts {
                if let (_, Ok(Ok((profile, _)))) = &mut written[i] {
                    profile.take_files();
                    for file in next.by_ref().take(count) {
                        profile.add_file(file);
                    }
                }
            }
            // Published: the staged copy has done its work.
            drop(std::fs::remove_dir_all(run.path()));
            true
        }
        Err(e) => {
            eprintln!("capture-profile: {}", said(&e));
            false
        }
    }
}

fn summaries(plan: &Plan, profiles: &[(String, Profile)], many: bool) {
    if plan.summary_rows == 0 || profiles.is_empty() {
        return;
    }
    let options = SummaryOptions::default().limit(plan.summary_rows);
    if many && !plan.summary_per_host {
        let all: Vec<&Profile> = profiles.iter().map(|(_, p)| p).collect();
        println!("summary of {} hosts:", all.len());
        println!("{}", Summary::of_all(&all, &options));
        return;
    }
    for (address, profile) in profiles {
        if many {
            println!("{address}:");
        }
        println!("{}", profile.summary(&options));
    }
}

/// Sends one host's profile to the collector; false when that failed.
fn send_otlp(address: &str, profile: &Profile, options: &OtlpOptions) -> bool {
    match profile.export_otlp(options) {
        Ok(sent) => {
            println!(
                "  sent {} spans in {} traces to {} ({})",
                sent.spans, sent.traces, options.endpoint, options.protocol
            );
            true
        }
        Err(e) => {
            eprintln!("capture-profile: {address}: captured, but {}", said(&e));
            false
        }
    }
}
