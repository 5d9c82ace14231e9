//! `perf_event_attr` and `perf_event_open(2)`: the libc crate has neither, so the
//! struct is written out here from `linux/perf_event.h` (its `PERF_ATTR_SIZE_VER5`
//! prefix, 112 bytes, which every kernel since 4.1 takes).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// `PERF_TYPE_SOFTWARE`.
const TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_TASK_CLOCK`: the thread's CPU time, in nanoseconds.
const COUNT_SW_TASK_CLOCK: u64 = 1;

/// `PERF_SAMPLE_TID`, `PERF_SAMPLE_TIME`, `PERF_SAMPLE_CALLCHAIN`: a sample record is
/// then `pid, tid: u32; time: u64; nr: u64; ips: [u64; nr]` after its header.
pub(super) const SAMPLE_TYPE: u64 = 1 << 1 | 1 << 2 | 1 << 5;

// Bits of the flags word.
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const WATERMARK: u64 = 1 << 14;
const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
const USE_CLOCKID: u64 = 1 << 25;

/// `PERF_FLAG_FD_CLOEXEC`.
const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `struct perf_event_attr`, up to `__reserved_2`.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 112);

/// Opens a sampling event on thread `tid`: one sample per `period_ns` of its CPU
/// time in user space, with the user-space call chain the kernel walks by frame
/// pointers, stamped on `CLOCK_MONOTONIC` (the clock of `std::time::Instant`, which
/// prof's timeline is on). The kernel wakes no reader before the ring is half full:
/// the collector polls.
pub(super) fn open(tid: u32, period_ns: u64, ring_bytes: u32) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        kind: TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: COUNT_SW_TASK_CLOCK,
        sample_period: period_ns,
        sample_type: SAMPLE_TYPE,
        flags: EXCLUDE_KERNEL | EXCLUDE_HV | EXCLUDE_CALLCHAIN_KERNEL | USE_CLOCKID | WATERMARK,
        wakeup_watermark: ring_bytes / 2,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    #[allow(unsafe_code)]
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares, alive for
    // the call; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            std::ptr::from_ref(&attr),
            tid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(unsafe_code)]
    // SAFETY: the kernel just returned this descriptor to us, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Why `perf_event_open` was refused, in words a user can act on.
pub(super) fn refusal(err: &io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unreadable".into());
    match err.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "perf_event_open was refused ({err}): kernel.perf_event_paranoid is {paranoid} \
             (above 2, as Debian and Ubuntu set it, unprivileged processes may not sample \
             themselves; `sysctl kernel.perf_event_paranoid=2` allows it), or a seccomp \
             filter (a container's) blocks it"
        ),
        Some(libc::ENOSYS) => format!(
            "perf_event_open is not available ({err}): the kernel lacks it, or a seccomp \
             filter hides it"
        ),
        Some(libc::ENOENT | libc::EINVAL | libc::EOPNOTSUPP) => {
            format!("this kernel cannot sample task-clock with call chains ({err})")
        }
        Some(libc::EMFILE | libc::ENFILE) => {
            format!("perf_event_open needs one file descriptor per thread ({err})")
        }
        _ => format!("perf_event_open failed: {err}"),
    }
}
