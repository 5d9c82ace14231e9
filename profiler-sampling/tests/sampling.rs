//! The sampler's proof, read back by `go tool pprof` where Go is installed (CI): CPU
//! attributed to the functions that burnt it, samples joined to steps and annotations,
//! threads that started late and never annotate, and the fallback to timers, forced
//! by an option or by a kernel that refuses perf.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use profiler_core::options::HOST_SAMPLING_BACKEND;
use profiler_core::schema;
use profiler_core::ProfileOptions;
use support::*;

#[inline(never)]
fn heavy(x: u64) -> u64 {
    let mut x = x;
    // Long enough that the CPU-clock read between two calls is noise.
    for _ in 0..200_000 {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

#[inline(never)]
fn light(x: u64) -> u64 {
    let mut x = x;
    for _ in 0..200_000 {
        x = std::hint::black_box(x.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(3));
    }
    x
}

/// Self samples of the functions whose names contain `heavy` and `light`.
fn shares(p: &profiler_export::pprof::Profile) -> (i64, i64, i64) {
    let name_of_leaf = |s: &profiler_export::pprof::proto::Sample| -> String {
        let Some(&loc) = s.location_id.first() else {
            return String::new();
        };
        let loc = &p.location[loc as usize - 1];
        loc.line
            .last()
            .map(|l| {
                p.string(p.function[l.function_id as usize - 1].name)
                    .to_owned()
            })
            .unwrap_or_default()
    };
    let (mut h, mut l, mut all) = (0, 0, 0);
    for s in &p.sample {
        let name = name_of_leaf(s);
        all += s.value[0];
        if name.ends_with("heavy") {
            h += s.value[0];
        } else if name.ends_with("light") {
            l += s.value[0];
        }
    }
    (h, l, all)
}

#[test]
fn cpu_is_attributed_3_to_1_to_the_functions_that_burnt_it() {
    let _one = one_session();
    let dir = tempfile::tempdir().expect("tmp");
    let options = ProfileOptions::default().host_sampling_hz(1000);
    let mut cpu = Duration::ZERO;
    let profile = session(dir.path(), options, || {
        let a = std::thread::spawn(|| {
            let t = thread_cpu();
            burn_for(Duration::from_millis(1500), heavy);
            thread_cpu() - t
        });
        let b = std::thread::spawn(|| {
            let t = thread_cpu();
            burn_for(Duration::from_millis(500), light);
            thread_cpu() - t
        });
        cpu = a.join().expect("heavy") + b.join().expect("light");
    });
    let samples = samples(&profile);
    let file = pprof_file(&profile);
    let p = read_pprof(&file);
    assert_eq!(p, samples.profile, "the file is the plane's profile");
    let (h, l, all) = shares(&p);
    let expected = 1000.0 * cpu.as_secs_f64();
    eprintln!(
        "backend {}: {all} samples ({h} heavy, {l} light) over {cpu:?} of CPU; {:?}",
        samples.backend,
        profile.xspace().warnings
    );
    if samples.backend.starts_with("perf_event") {
        assert!(
            (h + l) as f64 >= 0.8 * expected,
            "{} samples of heavy and light for {expected:.0} expected",
            h + l
        );
    }
    let heavy_share = 100.0 * h as f64 / (h + l) as f64;
    assert!(
        (65.0..=85.0).contains(&heavy_share),
        "heavy has {heavy_share:.1}% of their samples, 75% burnt"
    );
    // The real consumer agrees: each function's cumulative share (what was inlined
    // into it, `black_box` and the arithmetic, is in its own rows).
    if let Some(top) = go_pprof(&["-top", "-sample_index=samples", "-nodecount=30"], &file) {
        let rows = top_rows(&top);
        let pct = |f: &str| {
            rows.iter()
                .find(|r| r.3 == f)
                .map(|r| r.2)
                .unwrap_or_else(|| panic!("no {f} in:\n{top}"))
        };
        let (hp, lp) = (pct("heavy"), pct("light"));
        let of_both = 100.0 * hp / (hp + lp);
        assert!(
            (65.0..=85.0).contains(&of_both),
            "go tool pprof gives heavy {hp}% and light {lp}%:\n{top}"
        );
    }
}

/// The summary's hot functions and prof-diff's function shares, from real samples:
/// heavy (under `forward`) and light (a thread that never annotates) swap shares
/// between two runs.
#[test]
fn the_summary_ranks_the_hot_functions_and_prof_diff_sees_their_shares_move() {
    use profiler_analysis::diff::{self, RenderOptions, Verdict};
    use profiler_analysis::functions::FunctionTable;
    use profiler_analysis::summary::SummaryOptions;
    use profiler_analysis::ProfileAnalysis;

    let _one = one_session();
    let dir = tempfile::tempdir().expect("tmp");
    let run = |heavy_ms: u64, light_ms: u64| {
        let options = ProfileOptions::default().host_sampling_hz(1000);
        session(dir.path(), options, move || {
            let loader = std::thread::spawn(move || {
                burn_for(Duration::from_millis(light_ms), light);
            });
            for step in 0..3 {
                let _s = profiler_core::trace!("Train", step_num = step);
                let _f = profiler_core::trace!("forward");
                burn_for(Duration::from_millis(heavy_ms / 3), heavy);
            }
            loader.join().expect("loader");
        })
    };
    let base = run(600, 200);
    let new = run(200, 600);

    // Every function of these short stacks fits in 100 rows.
    let summary = base.summary(&SummaryOptions::default().limit(100));
    let f = summary.functions().expect("hot functions");
    let total = |t: &FunctionTable, name: &str| {
        t.by_total
            .iter()
            .find(|r| r.name.ends_with(name))
            .map_or(0.0, |r| t.share(r.total_samples))
    };
    let (h, l) = (total(&f.overall, "heavy"), total(&f.overall, "light"));
    assert!(
        (0.65..=0.85).contains(&(h / (h + l))),
        "heavy {h:.3}, light {l:.3} of all samples; 3:1 burnt"
    );
    let forward = f
        .by_op
        .iter()
        .find(|t| t.op.as_deref() == Some("forward:forward"))
        .unwrap_or_else(|| panic!("no table for forward: {:?}", f.by_op));
    assert!(total(forward, "heavy") >= 0.9, "{forward:?}");
    assert_eq!(
        total(forward, "light"),
        0.0,
        "light never ran under forward"
    );
    let text = summary.table();
    assert!(
        text.contains("Hot functions") && text.contains("Under forward:forward"),
        "{text}"
    );
    assert!(summary.to_json().contains(r#""by_total""#));

    let d = diff::diff(&base, &new).expect("diff");
    let row = |name: &str| {
        d.functions
            .iter()
            .find(|r| r.name.ends_with(name))
            .unwrap_or_else(|| panic!("no {name} in {:?}", d.functions))
    };
    assert_eq!(
        row("heavy").verdict,
        Verdict::Decrease,
        "{:?}",
        row("heavy")
    );
    assert_eq!(
        row("light").verdict,
        Verdict::Increase,
        "{:?}",
        row("light")
    );
    let shown = d.table(&RenderOptions::default().top(5));
    assert!(
        shown.contains("Functions' share of the stack samples"),
        "{shown}"
    );
}

#[inline(never)]
fn forward_work(x: u64) -> u64 {
    heavy(x)
}

#[inline(never)]
fn loader_work(x: u64) -> u64 {
    light(x)
}

#[test]
fn samples_carry_their_step_and_annotations_and_late_silent_threads_are_sampled() {
    let _one = one_session();
    let dir = tempfile::tempdir().expect("tmp");
    let options = ProfileOptions::default().host_sampling_hz(1000);
    let profile = session(dir.path(), options, || {
        // Started after the session, never annotates.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let loader = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("late-loader".into())
                .spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        burn_for(Duration::from_millis(5), loader_work);
                    }
                })
                .expect("spawn")
        };
        for step in 0..6u64 {
            let _step = profiler_core::trace!("Train", step_num = step);
            let _f = profiler_core::trace!("forward");
            burn_for(Duration::from_millis(80), forward_work);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        loader.join().expect("loader");
    });
    let samples = samples(&profile);
    let p = &samples.profile;
    let space = profile.xspace();
    // Step 3's span on the host plane.
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let step_id = host.stat_id(schema::STEP_NUM);
    let (start, end) = host
        .lines
        .iter()
        .flat_map(|l| l.events.iter().map(move |e| (l, e)))
        .find(|(_, e)| e.stat(step_id).and_then(|v| v.as_i64()) == Some(3))
        .map(|(l, e)| l.event_span_ps(e))
        .expect("step 3");
    let mut in_step_3 = 0;
    let mut by_thread: HashMap<String, (u64, u64)> = HashMap::new();
    for t in &samples.times {
        let s = &p.sample[t.sample as usize];
        let thread = str_label(p, s, "thread").unwrap_or_default().to_owned();
        let entry = by_thread.entry(thread.clone()).or_default();
        entry.0 += 1;
        let step = num_label(p, s, "step_num");
        if step.is_some() {
            entry.1 += 1;
        }
        if step == Some(3) {
            in_step_3 += 1;
            let at = profiler_core::xspace::ps(t.ns);
            assert!(
                (start..=end).contains(&at),
                "a sample labelled step 3 at {at} ps, step 3 is {start}..{end}"
            );
            if thread != "late-loader" {
                assert_eq!(
                    str_label(p, s, "tf_op"),
                    Some("forward:forward"),
                    "thread {thread} at {at} ps; {:?}",
                    samples.threads
                );
            }
        }
    }
    assert!(in_step_3 > 10, "{in_step_3} samples in step 3");
    let (loader, loader_in_steps) = by_thread.get("late-loader").copied().unwrap_or_default();
    assert!(
        loader > 20,
        "the late thread has {loader} samples: {by_thread:?}"
    );
    assert!(
        loader_in_steps > 0,
        "the late thread's samples carry the steps open elsewhere"
    );
    let thread = samples
        .threads
        .iter()
        .find(|t| t.name == "late-loader")
        .expect("the late thread is listed");
    assert_eq!(thread.host_line, None, "it never annotated");
    // Perfetto: PerfSample packets, checked against Perfetto's own schema where the
    // checker's Python is given (CI: PROF_PERFETTO_PYTHON=target/ci-venv/bin/python).
    let trace = dir.path().join("samples.pftrace");
    profiler_export::perfetto::write(space, &trace).expect("pftrace");
    if let Ok(python) = std::env::var("PROF_PERFETTO_PYTHON") {
        let checker = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/interop/perfetto_check.py"
        );
        let session_ns = (profile_duration_ns(space) + 1_000_000).to_string();
        let out = std::process::Command::new(python)
            .arg(checker)
            .arg(&trace)
            .args(["--min-perf-samples", &in_step_3.to_string()])
            .args(["--session-ns", &session_ns])
            .args(["--thread", "late-loader", "--min-slices", "12"])
            .output()
            .expect("run perfetto_check.py");
        assert!(
            out.status.success(),
            "perfetto_check.py: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(summary.contains("late-loader"), "{summary}");
    }
    // go tool pprof keeps exactly those samples.
    let file = pprof_file(&profile);
    if let Ok(keep) = std::env::var("PROF_SAMPLING_KEEP") {
        std::fs::copy(&file, keep).expect("keep the pprof file");
    }
    let focused = dir.path().join("step3.pb.gz");
    let out = focused.to_string_lossy().into_owned();
    if go_pprof(&["-tagfocus=step_num=3", "-proto", "-output", &out], &file).is_some() {
        let f = read_pprof(&focused);
        let kept: i64 = f.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(kept, in_step_3, "go tool pprof -tagfocus=step_num=3");
        for s in &f.sample {
            assert_eq!(num_label(&f, s, "step_num"), Some(3));
        }
    }
}

fn profile_duration_ns(space: &profiler_core::xspace::XSpace) -> u64 {
    let env = space
        .plane(schema::TASK_ENV_PLANE)
        .expect("task environment");
    let at = |name| match env.find_stat(&env.stats, name) {
        Some(profiler_core::xspace::XStatValue::Uint64(ns)) => *ns,
        other => panic!("{name}: {other:?}"),
    };
    at(schema::PROFILE_STOP_TIME) - at(schema::PROFILE_START_TIME)
}

#[test]
fn the_timer_backend_forced_by_option_samples_and_says_why() {
    let _one = one_session();
    let dir = tempfile::tempdir().expect("tmp");
    let options = ProfileOptions::default()
        .host_sampling_hz(1000)
        .advanced(HOST_SAMPLING_BACKEND, "timer");
    let profile = session(dir.path(), options, || {
        let t = std::thread::spawn(|| burn_for(Duration::from_millis(600), heavy));
        burn_for(Duration::from_millis(300), light);
        t.join().expect("join");
    });
    let samples = samples(&profile);
    assert!(samples.backend.starts_with("timer"), "{}", samples.backend);
    let (h, l, _) = shares(&samples.profile);
    // The kernel's tick caps the rate (250 Hz here, 225 samples for these 900 ms of
    // CPU). A thread's CPU-clock timer is checked only at ticks that find it running,
    // and expirations between two checks come as one signal, so on a machine loaded
    // by other work (a load of 7 once gave under 40%) fewer arrive: at least a quarter.
    assert!(h + l >= 56, "{h} + {l} timer samples");
    assert!(h > l, "heavy {h}, light {l}");
    let warnings = &profile.xspace().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("timers") && w.contains("host_sampling_backend")),
        "{warnings:?}"
    );
}

/// Runs in a child process (see the test below) whose kernel refuses
/// `perf_event_open`, through a seccomp filter: the sampler falls back to timers;
/// then another SIGPROF handler is installed, which the next session leaves alone.
#[test]
fn perf_refused_child() {
    if std::env::var("PROF_SAMPLING_CHILD").as_deref() != Ok("1") {
        return;
    }
    // Off: no sampler thread, no signal handler.
    let dir = tempfile::tempdir().expect("tmp");
    let profile = session(dir.path(), ProfileOptions::default(), || {
        let names = thread_names();
        assert!(!names.iter().any(|n| n == "prof-sampler"), "{names:?}");
        assert_eq!(sigprof_handler(), libc::SIG_DFL);
    });
    assert!(profiler_export::pprof::StackSamples::from_space(profile.xspace()).is_none());
    refuse_perf_event_open();
    let profile = session(
        dir.path(),
        ProfileOptions::default().host_sampling_hz(1000),
        || {
            burn_for(Duration::from_millis(500), heavy);
        },
    );
    let samples = samples(&profile);
    assert!(samples.backend.starts_with("timer"), "{}", samples.backend);
    assert!(samples.times.len() >= 50, "{} samples", samples.times.len());
    let warnings = &profile.xspace().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("timers") && w.contains("perf_event_open was refused")),
        "{warnings:?}"
    );
    // The handler stays after the session, doing nothing (a signal still queued
    // would otherwise end the process).
    assert_ne!(sigprof_handler(), libc::SIG_DFL);

    // Another profiler takes SIGPROF since: the next session leaves its handler
    // alone, records no samples, and says why; the session itself goes on.
    extern "C" fn theirs(_: libc::c_int) {}
    let theirs = theirs as extern "C" fn(libc::c_int) as libc::sighandler_t;
    set_sigprof_handler(theirs);
    let profile = session(
        dir.path(),
        ProfileOptions::default().host_sampling_hz(99),
        || {
            burn_for(Duration::from_millis(100), heavy);
        },
    );
    assert_eq!(sigprof_handler(), theirs, "taken back");
    assert!(profiler_export::pprof::StackSamples::from_space(profile.xspace()).is_none());
    let warnings = &profile.xspace().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("SIGPROF already has a handler")),
        "{warnings:?}"
    );
    #[allow(clippy::print_stdout)] // the parent reads it
    {
        println!("CHILD OK");
    }
}

#[test]
fn where_perf_is_refused_timers_take_over() {
    let exe = std::env::current_exe().expect("exe");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "perf_refused_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PROF_SAMPLING_CHILD", "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("CHILD OK"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .filter_map(|e| {
            let path = e.ok()?.path().join("comm");
            Some(std::fs::read_to_string(path).ok()?.trim().to_owned())
        })
        .collect()
}

fn sigprof_handler() -> libc::sighandler_t {
    // SAFETY: reading the current action into a zeroed struct.
    #[allow(unsafe_code)]
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGPROF, std::ptr::null(), &mut old);
        old.sa_sigaction
    }
}

fn set_sigprof_handler(handler: libc::sighandler_t) {
    // SAFETY: a zeroed action with a plain handler: `handler` is an `extern "C"`
    // function alive for the whole program.
    #[allow(unsafe_code)]
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// Installs a seccomp filter on this thread (and the threads it starts) making
/// `perf_event_open` fail with `EACCES`, as a container's profile or
/// `perf_event_paranoid` 3 refuses it.
fn refuse_perf_event_open() {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let filter = [
        // seccomp_data.nr is at offset 0.
        libc::sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: JEQ_K,
            jt: 0,
            jf: 1,
            k: libc::SYS_perf_event_open as u32,
        },
        libc::sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: RET_ERRNO | libc::EACCES as u32,
        },
        libc::sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: RET_ALLOW,
        },
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: prctl with a valid filter program alive for the call.
    #[allow(unsafe_code)]
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog
            ),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}
