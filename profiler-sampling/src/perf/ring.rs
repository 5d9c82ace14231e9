//! A perf event's ring buffer, mapped into the process and read by the collector: the
//! kernel writes records and advances `data_head`; we read up to it and hand the space
//! back by advancing `data_tail`. Nothing here runs on a sampled thread.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// Offsets in `struct perf_event_mmap_page` (the ring's first page).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// One event's mapped ring.
pub(super) struct Ring {
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping belongs to the ring alone (its fd is kept open beside it), and
// only the collector thread reads it, through `&mut self`.
#[allow(unsafe_code)]
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring of event `fd`: one header page and `data_pages` (a power of two)
    /// of records.
    pub(super) fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        let page = page_size();
        let len = page * (1 + data_pages);
        #[allow(unsafe_code)]
        // SAFETY: a fresh shared mapping of the event's fd, of the size the kernel
        // expects (1 + 2^n pages); nothing else refers to the address returned.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base.cast::<u8>();
        let mut ring = Ring {
            base,
            len,
            data_offset: page,
            data_size: page * data_pages,
        };
        // Kernels since 4.1 say where the data is; older ones put it after the header.
        let (offset, size) = (ring.word(DATA_OFFSET), ring.word(DATA_SIZE));
        if size != 0 && offset as usize + size as usize <= len {
            ring.data_offset = offset as usize;
            ring.data_size = size as usize;
        }
        Ok(ring)
    }

    /// A `u64` field of the header page.
    fn field(&self, at: usize) -> &AtomicU64 {
        #[allow(unsafe_code)]
        // SAFETY: `at` is one of the header's 8-byte aligned fields, inside the first
        // page of a mapping alive as long as `self`; the kernel updates them
        // concurrently, which is what an atomic is for.
        unsafe {
            &*self.base.add(at).cast::<AtomicU64>()
        }
    }

    fn word(&self, at: usize) -> u64 {
        self.field(at).load(Ordering::Acquire)
    }

    /// Copies `out.len()` bytes of the data area from ring position `pos`, wrapping.
    fn copy(&self, pos: u64, out: &mut [u8]) {
        let start = (pos % self.data_size as u64) as usize;
        let first = out.len().min(self.data_size - start);
        #[allow(unsafe_code)]
        // SAFETY: both ranges lie inside the data area (`start + first <= data_size`,
        // and the rest from its beginning is shorter than a record, itself shorter
        // than the area); the kernel does not write between tail and head, which is
        // where `pos` lies, until we advance the tail.
        unsafe {
            let data = self.base.add(self.data_offset);
            std::ptr::copy_nonoverlapping(data.add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, out.as_mut_ptr().add(first), out.len() - first);
        }
    }

    /// Hands every record written since the last call to `on_record` (its type and
    /// its body after the 8-byte header), then frees their space for the kernel.
    pub(super) fn drain(&mut self, scratch: &mut Vec<u8>, mut on_record: impl FnMut(u32, &[u8])) {
        // Acquire: the records before `head` are written.
        let head = self.field(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.field(DATA_TAIL).load(Ordering::Relaxed);
        let mut header = [0u8; 8];
        while tail + 8 <= head {
            self.copy(tail, &mut header);
            let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
            let size = u16::from_ne_bytes([header[6], header[7]]) as usize;
            if size < 8 || size > self.data_size || tail + size as u64 > head {
                // Not a record: give the whole ring back rather than misread it.
                tail = head;
                break;
            }
            scratch.resize(size - 8, 0);
            self.copy(tail + 8, scratch);
            on_record(kind, scratch);
            tail += size as u64;
        }
        // Release: our reads of the records are done before the kernel reuses them.
        self.field(DATA_TAIL).store(tail, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        #[allow(unsafe_code)]
        // SAFETY: the mapping made in `map`, unmapped once; nothing borrows it past
        // `self`.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

fn page_size() -> usize {
    #[allow(unsafe_code)]
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}
