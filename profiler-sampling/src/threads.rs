//! The process's threads, as `/proc/self/task` lists them: the sampler reads it every
//! poll, so that threads started after the session began (a runtime's workers, a data
//! loader, threads that never annotate) are sampled too. A per-thread perf event or
//! timer does not follow the threads its thread creates.

use std::io;

/// The OS ids of the process's threads now.
///
/// # Errors
/// The error reading `/proc/self/task`.
pub(crate) fn list(into: &mut Vec<u32>) -> io::Result<()> {
    into.clear();
    for entry in std::fs::read_dir("/proc/self/task")? {
        if let Some(tid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            into.push(tid);
        }
    }
    Ok(())
}

/// Thread `tid`'s name as the kernel knows it (`comm`, 15 bytes at most), or
/// `Thread <tid>` as prof names unnamed threads.
pub(crate) fn name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("Thread {tid}"))
}

/// The calling thread's OS id.
pub(crate) fn current() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let tid = unsafe { libc::gettid() };
    tid as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_thread_is_listed_with_its_name() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name("listed-thread".into())
            .spawn(move || {
                tx.send(current()).expect("send");
                done_rx.recv().ok();
            })
            .expect("spawn");
        let tid = rx.recv().expect("tid");
        let mut tids = Vec::new();
        list(&mut tids).expect("list");
        assert!(tids.contains(&tid) && tids.contains(&current()), "{tids:?}");
        assert_eq!(name(tid), "listed-thread");
        done_tx.send(()).expect("send");
        t.join().expect("join");
        assert_eq!(name(u32::MAX), format!("Thread {}", u32::MAX));
    }
}
