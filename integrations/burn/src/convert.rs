//! A session's launches into the profile: each kernel an event on the host line of the
//! thread that issued it (under the annotations open there), and each timed kernel an
//! event on the device's plane, `/device:GPU:<n>`, linked to its launch by a
//! `correlation_id` flow and carrying the `tf_op`, `annotation` and `host_step_num` of
//! the annotations it was issued under: the same planes and stats the CUPTI tracer
//! writes (`profiler_core::xspace::device`), so XProf's trace viewer and Kernel Stats,
//! and prof's exporters, read them alike.

use std::collections::BTreeMap;

use profiler_core::schema;
use profiler_core::tracer::SessionClock;
use profiler_core::xspace::device::{
    gpu_plane, push_launch_stats, share_one_timestamp, text_stat, StreamLines,
};
use profiler_core::xspace::{
    merge_into_line, ps, HostScopes, Interner, Stats, XEvent, XSpace, XStatValue,
};

use crate::device::DeviceName;
use crate::log::Launch;
use crate::timing::{align, Timed, Window};

/// cubecl's span around each launch, recorded through prof's tracing layer when burn's
/// `tracing` feature is on: not an annotation the work ran under.
pub const CUBECL_LAUNCH_SPAN: &str = "launch_inner";

/// What one issuing thread launched in a session, its measurements read back.
#[derive(Debug, Default)]
pub(crate) struct Issued {
    /// The thread's index among issuing threads (from 1) and its name.
    pub thread: (u32, String),
    /// Its launches, in issue order.
    pub launches: Vec<Launch>,
    /// The device window of each launch that has one, by index into `launches`.
    pub windows: Vec<(usize, Window)>,
    /// The length of each launch cubecl read itself (its profiling logger was on), by
    /// index into `launches`: placed as ending when the reading came back.
    pub lengths: Vec<(usize, Length)>,
}

/// A kernel's length as cubecl read it, blocking the issuing thread until the kernel
/// had run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Length {
    /// The length, ns.
    pub ns: u64,
    /// How it was measured.
    pub method: cubecl_runtime::logging::TimingMethod,
    /// When the reading reached the issuing thread, raw ticks.
    pub read: u64,
}

/// What the conversion made, for the profile's warnings and the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Converted {
    /// Kernels put on host lines.
    pub launches: u64,
    /// Kernels put on the device plane.
    pub kernels: u64,
    /// Of those, kernels issued under an annotation (with a `tf_op` or `annotation`).
    pub attributed: u64,
    /// Of the device plane's kernel time, ns, the part attributed.
    pub kernel_ns: u64,
    /// See [`Converted::kernel_ns`].
    pub attributed_ns: u64,
    /// Kernels timed by the host's timer around a blocking submit (wgpu without
    /// timestamp queries, or past their budget), which includes more than the kernel.
    pub host_timed: u64,
}

/// The short name of a cubecl kernel: its type's path and generic arguments dropped
/// (`burn_cubecl::kernel::binary::KernelBinop<f32, Add>` → `KernelBinop`), as
/// cubecl's own profiling log shortens them.
pub fn kernel_name(type_name: &str) -> &str {
    let before_generics = type_name.split('<').next().unwrap_or(type_name);
    before_generics
        .rsplit("::")
        .next()
        .unwrap_or(before_generics)
        .trim()
}

/// Adds `issued` to `space`: launches on the host plane, timed kernels on `device`'s
/// plane. `collected` is the tracer clock when the measurements were read (the latest
/// a kernel can have ended).
pub(crate) fn add_to_space(
    issued: &[Issued],
    device: &DeviceName,
    space: &mut XSpace,
    session: &SessionClock,
    collected: u64,
) -> Converted {
    let mut out = Converted::default();
    let to_ns = |ticks: u64| session.ticks_to_clock_ns(ticks);
    let session_start = session.start_clock_ns();
    // What the launches ran under, before the launches join the host lines.
    let mut scopes = HostScopes::of_space_without(space, &[CUBECL_LAUNCH_SPAN]);
    let Some(host_index) = space
        .planes
        .iter()
        .position(|p| p.name == schema::HOST_PLANE)
    else {
        return out;
    };
    let mut host = std::mem::take(&mut space.planes[host_index]);
    let mut names = Interner::new(&host);
    let mut gpu = gpu_plane(device.ordinal);
    gpu.add_plane_stat(
        schema::DEVICE_VENDOR,
        XStatValue::Str(device.runtime.clone()),
    );
    if let Some(name) = &device.name {
        gpu.add_plane_stat(schema::DEVICE_NAME, XStatValue::Str(name.clone()));
    }
    // XProf takes an event of a GPU plane for a kernel (Kernel Stats, the derived
    // "Framework Ops" lines) when it has `kernel_details`. cubecl's observer gives a
    // kernel's name only: registers, shared memory, grid and block are unknown, so the
    // details name the runtime and nothing XProf would read as a measured zero.
    let details = format!("runtime:{}", device.runtime);
    let mut streams = StreamLines::new();
    let mut host_lines: BTreeMap<(i64, String), Vec<XEvent>> = BTreeMap::new();
    let mut correlation: u64 = 0;
    for (stream, thread) in issued.iter().enumerate() {
        let stream = stream as u32;
        let mut windows: BTreeMap<usize, Window> = thread.windows.iter().copied().collect();
        for &(index, length) in &thread.lengths {
            let end = i128::from(to_ns(length.read));
            windows.insert(
                index,
                Window {
                    start: end - i128::from(length.ns),
                    end,
                    method: length.method,
                },
            );
        }
        let timed: Vec<Timed> = windows
            .iter()
            .map(|(&i, &window)| Timed {
                issued: to_ns(thread.launches[i].issued),
                window,
            })
            .collect();
        let shift = align(&timed, session_start, collected);
        for (index, launch) in thread.launches.iter().enumerate() {
            let name = kernel_name(launch.kernel);
            let Some(issued_at) = session.to_session_ns(to_ns(launch.issued)) else {
                continue;
            };
            let returned_at = (launch.returned != 0)
                .then(|| session.to_session_ns(to_ns(launch.returned)))
                .flatten()
                .unwrap_or(issued_at);
            // A kernel issued inside the session is kept whole, even one that ran after
            // it stopped (the session waited for its measurement).
            let device_window = windows.get(&index).and_then(|w| {
                let start = u64::try_from(w.start + shift - i128::from(session_start)).ok()?;
                let length = u64::try_from(w.end - w.start).unwrap_or(0);
                Some((start, start + length, w.method))
            });
            let line = match launch.scope {
                Some(s) => (i64::from(s.line), String::new()),
                None => (
                    i64::from(LAUNCH_LINES_ID + (thread.thread.0 & 0xff_ffff)),
                    format!("cubecl launches ({})", thread.thread.1),
                ),
            };
            let mut stats = Stats::new();
            if device_window.is_some() {
                correlation += 1;
                stats.push(names.stat(
                    &mut host,
                    schema::CORRELATION_ID,
                    XStatValue::Uint64(correlation),
                ));
            }
            out.launches += 1;
            host_lines.entry(line).or_default().push(
                XEvent::new(
                    names.event(&mut host, name),
                    ps(issued_at),
                    ps(returned_at.saturating_sub(issued_at)),
                )
                .with_stats(stats),
            );
            let Some((start, end, method)) = device_window else {
                continue;
            };
            let launched_in = launch
                .scope
                .and_then(|s| scopes.enclosing(s.line, ps(issued_at)));
            let mut stats = Stats::with_capacity(8);
            stats.push(gpu.stat(schema::CORRELATION_ID, XStatValue::Uint64(correlation)));
            stats.push(gpu.stat(
                schema::DEVICE_ID,
                XStatValue::Uint64(u64::from(device.ordinal)),
            ));
            stats.push(gpu.stat(schema::STREAM, XStatValue::Uint64(u64::from(stream))));
            stats.push(text_stat(&mut gpu, schema::KERNEL_DETAILS, &details));
            if let Some(launched) = &launched_in {
                push_launch_stats(&mut gpu, &mut stats, launched);
            }
            let length = end - start;
            out.kernels += 1;
            out.kernel_ns += length;
            if launched_in.is_some() {
                out.attributed += 1;
                out.attributed_ns += length;
            }
            if method == cubecl_runtime::logging::TimingMethod::System {
                out.host_timed += 1;
            }
            streams.push(
                stream,
                "Kernel",
                XEvent::new(gpu.event_metadata_id(name), ps(start), ps(length)).with_stats(stats),
            );
        }
    }
    for ((id, name), events) in host_lines {
        merge_into_line(&mut host, id, &name, events);
    }
    space.planes[host_index] = host;
    if !streams.is_empty() {
        let mut plane = gpu.build();
        streams.add_to(&mut plane);
        share_one_timestamp(&mut plane);
        space.planes.push(plane);
    }
    out
}

/// Id base of the host lines holding the launches a thread issued outside every
/// annotation (cubecl's fusion server, for one): this plus the thread's index, below
/// the CUDA API lines.
pub const LAUNCH_LINES_ID: u32 = schema::DEVICE_MARKER_LINES_ID - 0x0100_0000;

#[cfg(test)]
mod tests {
    use super::kernel_name;

    #[test]
    fn kernel_names_lose_their_path_and_generics() {
        assert_eq!(
            kernel_name("burn_cubecl::kernel::binary::KernelBinop<f32, burn::Add>"),
            "KernelBinop"
        );
        assert_eq!(kernel_name("matmul"), "matmul");
    }
}
