//! Names and ids with a meaning to XProf, as TSL's `xplane_schema` spells them.

/// The host plane. XProf shows no other host plane name.
pub const HOST_PLANE: &str = "/host:CPU";
/// The host plane's id in TSL.
pub const HOST_PLANE_ID: i64 = 49;
/// The plane holding session-wide facts such as the wall-clock start and stop.
pub const TASK_ENV_PLANE: &str = "Task Environment";
/// Id given to the task environment plane.
pub const TASK_ENV_PLANE_ID: i64 = 50;

/// Task environment stat: wall-clock start, uint64 ns since the Unix epoch.
pub const PROFILE_START_TIME: &str = "profile_start_time";
/// Task environment stat: wall-clock stop, uint64 ns since the Unix epoch.
pub const PROFILE_STOP_TIME: &str = "profile_stop_time";

/// Step number of a training step (int64: any other type numbers every step 0).
pub const STEP_NUM: &str = "step_num";
/// "Is root": marks an event as a step root for XProf's step grouping (int64 1), as
/// JAX's `StepTraceAnnotation` and TF's `trace(..., _r=1)` do.
pub const IS_ROOT: &str = "_r";

/// Producer side of a cross-thread link: the context type (int64), beside
/// [`PRODUCER_ID`]. XProf joins an event carrying `_ct`/`_c` with the same type and id
/// to it (grouping it into the producer's step) and draws a flow arrow between them.
pub const PRODUCER_TYPE: &str = "_pt";
/// Producer side of a cross-thread link: the link's id (uint64).
pub const PRODUCER_ID: &str = "_p";
/// Consumer side of a cross-thread link: the context type (int64).
pub const CONSUMER_TYPE: &str = "_ct";
/// Consumer side of a cross-thread link: the link's id (uint64).
pub const CONSUMER_ID: &str = "_c";

/// The host line of counter samples: one event per sample, named after the counter,
/// with its value as the [`COUNTER_VALUE`] stat. XProf draws it as counter tracks.
pub const COUNTERS_LINE: &str = "_counters_";
/// The stat holding a counter sample's value (double).
pub const COUNTER_VALUE: &str = "value";
/// Line id of [`COUNTERS_LINE`], apart from thread ids and the `Tasks` lanes.
pub const COUNTERS_LINE_ID: u32 = 0x7e00_0000;

/// The host line of the profiler's own state: a [`PAUSED`] event per pause.
pub const PROFILER_LINE: &str = "Profiler";
/// Line id of [`PROFILER_LINE`].
pub const PROFILER_LINE_ID: u32 = 0x7e00_0001;
/// An interval during which the session was paused (`prof::pause` to `prof::resume`).
pub const PAUSED: &str = "Paused";

/// Name of the host lines holding async task lifetimes (`Tasks`, `Tasks 2`, ...).
pub const TASKS_LINE: &str = "Tasks";
/// Id of the first [`TASKS_LINE`]; thread line ids count up from 1 and never get here.
pub const TASKS_LINE_ID: u32 = 0x7f00_0000;

/// Stat of an event the session's edges cut: `"start"` when it began before the
/// session did, `"stop"` when it was still open at stop (or ended after it), `"start
/// and stop"` for both. Its recorded span is the part inside the session, so the
/// summary leaves it out of min, max and mean, and counts it apart.
pub const CUT_BY_SESSION: &str = "cut_by_session";
/// The values of [`CUT_BY_SESSION`].
pub const CUT_AT_START: &str = "start";
/// See [`CUT_BY_SESSION`].
pub const CUT_AT_STOP: &str = "stop";
/// See [`CUT_BY_SESSION`].
pub const CUT_AT_BOTH: &str = "start and stop";

/// Counter of host heap bytes in use, kept by `TrackingAllocator`.
pub const HOST_BYTES_IN_USE: &str = "host_bytes_in_use";
/// Counter of live host heap allocations, kept by `TrackingAllocator`.
pub const HOST_ALLOCATIONS: &str = "host_allocations";

/// Id of the first line of a profiling object's domain (`prof::domain`); each domain
/// line, and each of its lanes, takes the next id.
pub const DOMAIN_LINES_ID: u32 = 0x7d00_0000;
/// Id base of the host lines a device tracer puts the API calls of each launching
/// thread on: this plus the thread id's low 24 bits, below the domain lines.
pub const DEVICE_API_LINES_ID: u32 = 0x7c00_0000;
/// Id base of the host lines a device tracer puts each thread's NVTX ranges on: this
/// plus the thread id's low 24 bits, below the API call lines.
pub const DEVICE_MARKER_LINES_ID: u32 = 0x7b00_0000;
/// Stat of a profiling object's event: `task`, `frame`, `event` or `marker`.
pub const OBJECT: &str = "object";
/// Stat of a marker: `global`, `process` or `thread`.
pub const SCOPE: &str = "scope";
/// Stat of a thread-scoped marker: its domain's name.
pub const DOMAIN: &str = "domain";
/// Stat that links an API call on a host line to the device work it launched (TSL's
/// `correlation_id`); XProf draws the launch → kernel arrow from it.
pub const CORRELATION_ID: &str = "correlation_id";

/// Prefix of a GPU's plane name, `/device:GPU:<ordinal>`; XProf reads device work
/// from planes named so (see [`crate::xspace::device`]).
pub const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// Stat of device work: the innermost host annotation enclosing its launch.
pub const ANNOTATION: &str = "annotation";
/// Stat of device work: `step_num` of the step enclosing its launch.
pub const HOST_STEP_NUM: &str = "host_step_num";
/// Stat of device work: the device it ran on (uint64).
pub const DEVICE_ID: &str = "device_id";
/// Stat of device work: the device context it ran in (uint64).
pub const CONTEXT_ID: &str = "context_id";
/// Stat of device work: the stream (queue) it ran on (uint64).
pub const STREAM: &str = "stream";
/// Stat of a kernel: its launch configuration and resources, as XProf's Kernel Stats
/// parses it (`regs:32 static_shared:0 dynamic_shared:0 grid:8,1,1 block:256,1,1`).
pub const KERNEL_DETAILS: &str = "kernel_details";
/// Plane stat of a device: who made it (`Nvidia`, or the runtime that ran it).
pub const DEVICE_VENDOR: &str = "device_vendor";
/// Plane stat of a device: its name, as its driver reports it.
pub const DEVICE_NAME: &str = "device_name";

/// Event of a memory allocation, as TSL's allocators write them and XProf's Memory
/// Profile reads them from `/host:CPU` (with the memory stats below).
pub const MEMORY_ALLOCATION: &str = "MemoryAllocation";
/// Event of a memory release; see [`MEMORY_ALLOCATION`].
pub const MEMORY_DEALLOCATION: &str = "MemoryDeallocation";
/// Memory stat: the allocator, XProf's memory id (a string or a reference to one).
pub const ALLOCATOR_NAME: &str = "allocator_name";
/// Memory stat (int64): bytes the allocator holds beyond those in use; XProf adds them
/// to the bytes in use (its "stack reserved" bytes).
pub const BYTES_RESERVED: &str = "bytes_reserved";
/// Memory stat (int64): bytes in use after the event (XProf's "heap allocated").
pub const BYTES_ALLOCATED: &str = "bytes_allocated";
/// Memory stat (int64): bytes still free to the allocator.
pub const BYTES_AVAILABLE: &str = "bytes_available";
/// Memory stat (int64): highest bytes in use so far.
pub const PEAK_BYTES_IN_USE: &str = "peak_bytes_in_use";
/// Memory stat (int64): bytes the caller asked for.
pub const REQUESTED_BYTES: &str = "requested_bytes";
/// Memory stat (int64): bytes the allocation took.
pub const ALLOCATION_BYTES: &str = "allocation_bytes";
/// Memory stat (int64): the block's address; XProf pairs a release with its
/// allocation by it.
pub const ADDRESS: &str = "addr";
/// Stat: XProf's op of the work an event belongs to, `scope/…/name:type` (see
/// [`crate::xspace::tf_op`]): for device work, the host annotations enclosing its
/// launch inside the step (XProf reads it for Kernel Stats' op name, Framework Op
/// Stats' device rows and the GPU plane's derived lines); for memory events, the
/// annotations open on the thread that allocated.
pub const TF_OP: &str = "tf_op";
/// Memory stat: the innermost annotation open on the thread that allocated.
pub const REGION_TYPE: &str = "region_type";
/// The tracking allocator's allocator name.
pub const HOST_ALLOCATOR: &str = "host";
/// Prefix of a GPU's allocator name: `GPU_<ordinal>`, as TSL names a GPU's allocator
/// before its `_bfc` suffix.
pub const GPU_ALLOCATOR_PREFIX: &str = "GPU_";

/// The plane of sampled native call stacks (`profiler-sampling`): no name XProf knows,
/// so XProf leaves it alone, while it travels inside the XSpace wherever the profile
/// goes (a remote capture brings it back). Its lines are the sampled threads (id: the
/// OS thread id; display id: the thread's host line, when it has one), without events;
/// its plane stats hold the samples.
pub const STACK_SAMPLES_PLANE: &str = "/host:stack-samples";
/// Id given to [`STACK_SAMPLES_PLANE`].
pub const STACK_SAMPLES_PLANE_ID: i64 = 51;
/// Stack samples stat (bytes): the samples as a gzipped pprof `profile.proto`, ready
/// to be written as a file.
pub const PPROF: &str = "pprof";
/// Stack samples stat (bytes): when each sample was taken, in time order: for each, the
/// nanoseconds since the sample before (the first: since the session's start) and the
/// index of its sample in the pprof profile, as two varints.
pub const SAMPLE_TIMES: &str = "sample_times";
/// Stack samples stat (string): what took the samples, `perf_event` or `timer`, and why
/// the better one did not, when it did not.
pub const SAMPLING_BACKEND: &str = "sampling_backend";
/// Stack samples stat (int64): samples per second of CPU time asked for.
pub const SAMPLING_HZ: &str = "sampling_hz";
