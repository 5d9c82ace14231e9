//! How the collector sleeps between rounds: in `poll(2)` on an eventfd that the stop
//! writes, and on every perf event, whose ring wakes its readers when half full (the
//! events are opened with a watermark) and which reports `POLLHUP` once its thread
//! exited. A busy program at 1 kHz then wakes the collector a few times a second
//! rather than a hundred, and a full ring or the stop never waits out an interval.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Why [`Wake::wait`] returned.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// The session stops.
    Stop,
    /// Threads exited: their ids were written out.
    Exited,
    /// A ring is half full.
    Data,
    /// The interval passed.
    Interval,
}

/// The stop's eventfd.
pub(crate) struct Wake {
    stop: OwnedFd,
}

impl Wake {
    /// A new, unsignalled wake.
    ///
    /// # Errors
    /// The kernel's refusal of an eventfd.
    pub(crate) fn new() -> io::Result<Wake> {
        #[allow(unsafe_code)]
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        #[allow(unsafe_code)]
        // SAFETY: the descriptor was just made, and nothing else owns it.
        let stop = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Wake { stop })
    }

    /// Tells the collector to stop: its `wait` returns [`Woken::Stop`] now and ever
    /// after.
    pub(crate) fn stop(&self) {
        let one = 1u64.to_ne_bytes();
        #[allow(unsafe_code)]
        // SAFETY: writes 8 bytes from a live buffer to our eventfd; a full counter
        // (EAGAIN, never reached by one write a session) leaves it readable anyway.
        unsafe {
            libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), one.len());
        }
    }

    /// Sleeps until the stop, a readable or hung-up event among `events` (thread id,
    /// descriptor), or `interval`. Hung-up events' threads are written to `exited`.
    /// The stop wins over everything else; an interrupted or failed `poll` counts as
    /// the interval passing.
    pub(crate) fn wait(
        &self,
        events: &[(u32, RawFd)],
        interval: Duration,
        exited: &mut Vec<u32>,
    ) -> Woken {
        let mut fds = Vec::with_capacity(events.len() + 1);
        fds.push(pollfd(self.stop.as_raw_fd()));
        fds.extend(events.iter().map(|&(_, fd)| pollfd(fd)));
        let timeout = interval.as_millis().min(i32::MAX as u128) as libc::c_int;
        #[allow(unsafe_code)]
        // SAFETY: `fds` is a live array of `fds.len()` pollfds, written back in place.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if ready <= 0 {
            return Woken::Interval;
        }
        if fds[0].revents != 0 {
            return Woken::Stop;
        }
        exited.clear();
        let mut data = false;
        for (&(tid, _), fd) in events.iter().zip(&fds[1..]) {
            if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                exited.push(tid);
            } else if fd.revents & libc::POLLIN != 0 {
                data = true;
            }
        }
        if !exited.is_empty() {
            Woken::Exited
        } else if data {
            Woken::Data
        } else {
            Woken::Interval
        }
    }
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_interval_passes_then_the_stop_wins_at_once_and_stays() {
        let wake = Wake::new().expect("eventfd");
        let mut exited = vec![9];
        let t0 = Instant::now();
        assert_eq!(
            wake.wait(&[], Duration::from_millis(20), &mut exited),
            Woken::Interval
        );
        assert!(t0.elapsed() >= Duration::from_millis(19));
        wake.stop();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(
                wake.wait(&[], Duration::from_secs(10), &mut exited),
                Woken::Stop
            );
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_readable_event_is_data_and_a_hung_up_one_names_its_thread() {
        let wake = Wake::new().expect("eventfd");
        // A pipe stands in for a perf event: readable once written, hung up once
        // its writer is closed.
        let mut ends = [0; 2];
        #[allow(unsafe_code)]
        // SAFETY: pipe writes two new descriptors into `ends`.
        let rc = unsafe { libc::pipe(ends.as_mut_ptr()) };
        assert_eq!(rc, 0);
        #[allow(unsafe_code)]
        // SAFETY: both descriptors were just made, and each is owned once.
        let (read, write) =
            unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
        let events = [(41, read.as_raw_fd())];
        let mut exited = Vec::new();
        #[allow(unsafe_code)]
        // SAFETY: one byte from a live buffer to the pipe's write end.
        unsafe {
            libc::write(write.as_raw_fd(), [1u8].as_ptr().cast(), 1);
        }
        assert_eq!(
            wake.wait(&events, Duration::from_secs(10), &mut exited),
            Woken::Data
        );
        drop(write);
        let mut byte = [0u8; 1];
        #[allow(unsafe_code)]
        // SAFETY: reads one byte into a live buffer.
        unsafe {
            libc::read(read.as_raw_fd(), byte.as_mut_ptr().cast(), 1);
        }
        assert_eq!(
            wake.wait(&events, Duration::from_secs(10), &mut exited),
            Woken::Exited
        );
        assert_eq!(exited, [41]);
    }
}
