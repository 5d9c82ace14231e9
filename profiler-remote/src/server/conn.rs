//! Connections: at most [`Limits::max_connections`](super::Limits::max_connections)
//! open at once, each closed once idle for
//! [`Limits::idle_timeout`](super::Limits::idle_timeout), and an accept loop that
//! backs off when the process runs out of file descriptors.
//!
//! "Idle" means the peer sent nothing and no call of its is running: a client waiting
//! for a minute-long capture sends nothing either, and must keep its connection. A
//! connection that arrives when all places are taken closes the one idle longest to
//! make room, so idle connections (a scan, a client that leaked them) cannot lock the
//! Capture button out. A connection idle for less than [`EVICT_GRACE`] is not closed
//! (it may be a client about to send its call): the newcomer waits for one to qualify
//! (at most [`ADMIT_WAIT`]), holding later arrivals in the kernel's queue, so a burst
//! of connections turns into a queue rather than evictions of each other's callers.
//! Only when every connection has a call running is the newcomer refused at once.
//!
//! Descriptors can run out before the places do (a low `ulimit -n`), and then the
//! places are fewer: as many as the descriptors leave room for, less
//! [`SPARE_DESCRIPTORS`] (for the next arrival, and for the file a capture writes).
//! That room is estimated when the server starts (the limit less the descriptors
//! open), and learnt again each time `accept` fails for want of descriptors (`EMFILE`,
//! `ENFILE`: the connections open then are all there is room for); the connection idle
//! longest is then closed at once and `accept` tried again as soon as its descriptor is
//! free. Where descriptors bind, a newcomer closes the connection idle longest at
//! once, however short a time it has been idle: waiting out [`EVICT_GRACE`] for each
//! of a queue of newcomers would keep a capture behind them waiting for seconds.
//! Otherwise newcomers would queue in the kernel until idle connections timed out, and
//! a capture fail meanwhile. Room learnt is never given back: a process that closes
//! files later holds a few idle connections fewer than it could.
//!
//! tonic's own accept loop retries a failed `accept` at once, which at `EMFILE` (the
//! pending connection stays queued) spins a core and starves every other task. Here a
//! failure that closing an idle connection cannot cure backs off instead.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::Connected;

/// How long a new connection waits for room before it is refused.
const ADMIT_WAIT: Duration = Duration::from_secs(2);
/// A connection idle for less than this is not closed to make room.
const EVICT_GRACE: Duration = Duration::from_millis(500);
/// First and longest pause after an `accept` that failed for want of resources.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How long `accept` waits for an evicted connection's descriptor before trying again.
const EVICTED_WAIT: Duration = Duration::from_millis(100);
/// Descriptors kept free of connections: for the next arrival and for a capture that
/// writes its file.
const SPARE_DESCRIPTORS: usize = 4;

/// The open connections, shared by the accept loop and the connections themselves.
#[derive(Clone, Debug)]
pub(super) struct Conns {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    limit: usize,
    /// How many connections the descriptors leave room for (`usize::MAX`: unknown).
    room: AtomicUsize,
    idle: Duration,
    open: Mutex<Vec<Arc<Link>>>,
    /// Signalled when a connection closes, for an arrival waiting for room.
    closed: Notify,
}

/// What a connection and the calls on it share.
#[derive(Debug)]
pub(super) struct Link {
    epoch: Instant,
    /// When the peer last sent something or a call last began or ended (ms since
    /// `epoch`).
    last_active_ms: AtomicU64,
    in_flight: AtomicUsize,
    evicting: AtomicBool,
    evict: Arc<Notify>,
}

impl Link {
    fn new() -> Link {
        Link {
            epoch: Instant::now(),
            last_active_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            evicting: AtomicBool::new(false),
            evict: Arc::new(Notify::new()),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_active_ms.store(ms, Ordering::Relaxed);
    }

    fn last_active(&self) -> Instant {
        self.epoch + Duration::from_millis(self.last_active_ms.load(Ordering::Relaxed))
    }

    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// Until when the connection may stay idle; `None` once that has passed.
    fn idle_until(&self, idle: Duration) -> Option<Instant> {
        let now = Instant::now();
        if self.busy() {
            return Some(now + idle);
        }
        let until = self.last_active() + idle;
        (until > now).then_some(until)
    }

    /// Asks the connection to close (it does on its next poll).
    fn evict(&self) {
        self.evicting.store(true, Ordering::Relaxed);
        // `notify_one` keeps a permit, so an eviction before the first poll counts.
        self.evict.notify_one();
    }
}

/// The connection a call came on, as tonic hands it to every request (the
/// `Connected::ConnectInfo` of [`Conn`]).
#[derive(Clone, Debug)]
pub(super) struct ConnInfo(Arc<Link>);

/// Marks a call running on its connection while alive, so the connection is not idle.
#[derive(Debug)]
pub(super) struct InFlight(Arc<Link>);

impl InFlight {
    /// The mark for a request, when it came through [`Conns`] (tonic hands the
    /// connection's info to requests over TLS too).
    pub(super) fn of<T>(request: &tonic::Request<T>) -> Option<InFlight> {
        let link = Arc::clone(&request.extensions().get::<ConnInfo>()?.0);
        link.in_flight.fetch_add(1, Ordering::AcqRel);
        link.touch();
        Some(InFlight(link))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

enum Admit {
    Opened(Arc<Link>),
    /// A connection is closing to make room, or (with a time) one will be idle long
    /// enough to close then.
    Wait(Option<Instant>),
    /// Every connection has a call running.
    Full,
}

impl Conns {
    pub(super) fn new(limit: usize, idle: Duration) -> Conns {
        Conns {
            shared: Arc::new(Shared {
                limit: limit.max(1),
                room: AtomicUsize::new(descriptor_room().unwrap_or(usize::MAX)),
                idle,
                open: Mutex::new(Vec::new()),
                closed: Notify::new(),
            }),
        }
    }

    fn open(&self) -> MutexGuard<'_, Vec<Arc<Link>>> {
        self.shared.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes every connection with no call running (the server is stopping).
    pub(super) fn close_idle(&self) {
        for link in self.open().iter().filter(|l| !l.busy()) {
            link.evict();
        }
    }

    /// How many connections may be open: the limit, or fewer where descriptors are.
    fn places(&self) -> usize {
        let room = self.shared.room.load(Ordering::Relaxed);
        self.shared.limit.min(room).max(1)
    }

    fn try_open(&self) -> Admit {
        let mut open = self.open();
        if open.len() < self.places() {
            let link = Arc::new(Link::new());
            open.push(Arc::clone(&link));
            return Admit::Opened(link);
        }
        if open.iter().any(|l| l.evicting.load(Ordering::Relaxed)) {
            return Admit::Wait(None);
        }
        let Some(idlest) = open
            .iter()
            .filter(|l| !l.busy())
            .min_by_key(|l| l.last_active())
        else {
            return Admit::Full;
        };
        // Where descriptors, not places, ran out, the newcomer cannot wait for them
        // (nothing behind it is accepted meanwhile): the idlest closes at once.
        let grace = if open.len() >= self.shared.limit {
            EVICT_GRACE
        } else {
            Duration::ZERO
        };
        let evictable_at = idlest.last_active() + grace;
        if evictable_at > Instant::now() {
            return Admit::Wait(Some(evictable_at));
        }
        idlest.evict();
        Admit::Wait(None)
    }

    /// Makes room for `stream` if need be; `None` (and the stream closed) when none
    /// can be made in time.
    async fn admit(&self, stream: TcpStream) -> Option<Conn> {
        let deadline = Instant::now() + ADMIT_WAIT;
        loop {
            let closed = self.shared.closed.notified();
            tokio::pin!(closed);
            // Registered before looking, so a close in between is not missed.
            closed.as_mut().enable();
            match self.try_open() {
                Admit::Opened(link) => return Some(Conn::new(stream, link, self.clone())),
                Admit::Full => return None,
                Admit::Wait(until) => {
                    if Instant::now() >= deadline {
                        return None;
                    }
                    let until = until.map_or(deadline, |t| t.min(deadline));
                    // Either a connection closed or one became old enough to close.
                    let _ = tokio::time::timeout_at(until, closed).await;
                }
            }
        }
    }

    /// `accept` failed for want of descriptors: the connections open now are all the
    /// descriptors leave room for, less the spare ones from now on, and the one idle
    /// longest closes at once to free its descriptor. Whether one was closing or now
    /// is (if not, every connection has a call running).
    fn out_of_descriptors(&self) -> bool {
        let open = self.open();
        let room = open.len().saturating_sub(SPARE_DESCRIPTORS).max(1);
        if self.shared.room.swap(room, Ordering::Relaxed) != room {
            tracing::warn!(
                target: profiler_core::log::TARGET,
                "profiler server: out of file descriptors with {} connections open; from now \
                 on it keeps at most {room}, closing the one idle longest for a newcomer \
                 (raise `ulimit -n` to keep more)",
                open.len()
            );
        }
        if open.iter().any(|l| l.evicting.load(Ordering::Relaxed)) {
            return true;
        }
        let idlest = open
            .iter()
            .filter(|l| !l.busy())
            .min_by_key(|l| l.last_active());
        match idlest {
            Some(link) => {
                link.evict();
                true
            }
            None => false,
        }
    }

    fn remove(&self, link: &Arc<Link>) {
        self.open().retain(|l| !Arc::ptr_eq(l, link));
        self.shared.closed.notify_waiters();
    }
}

/// Whether `accept` failed because the process (`EMFILE`) or the system (`ENFILE`)
/// has no descriptor left: closing a connection cures the first, and may the second.
fn out_of_descriptors(e: &io::Error) -> bool {
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    cfg!(unix) && matches!(e.raw_os_error(), Some(EMFILE | ENFILE))
}

/// How many connections the process's descriptors leave room for now: its limit less
/// those open and the spare ones. `None` where unknown (no limit, or no list of the
/// open ones: Linux's `/proc/self/fd`, macOS's `/dev/fd`).
fn descriptor_room() -> Option<usize> {
    let limit = usize::try_from(descriptor_limit()?).ok()?;
    // The listing's own descriptor is counted too: one more spare.
    let open = ["/proc/self/fd", "/dev/fd"]
        .iter()
        .find_map(|dir| std::fs::read_dir(dir).ok())?
        .count();
    Some(limit.saturating_sub(open + SPARE_DESCRIPTORS))
}

/// The process's soft limit on open descriptors (`ulimit -n`); `None` when unlimited
/// or unknown.
#[cfg(not(unix))]
fn descriptor_limit() -> Option<usize> {
    None
}

/// The process's soft limit on open descriptors (`ulimit -n`); `None` when unlimited
/// or unknown.
#[cfg(unix)]
#[allow(unsafe_code)]
fn descriptor_limit() -> Option<libc::rlim_t> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the call to fill; nothing else
    // is read or kept.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// Whether an `accept` error concerns only the connection being accepted (try the
/// next at once) rather than the process (out of descriptors or memory: back off).
fn only_that_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Accepts connections into `incoming` until its receiver is dropped (the server
/// stopping), which also closes the listening socket.
pub(super) async fn accept_loop(listener: TcpListener, conns: Conns, incoming: mpsc::Sender<Conn>) {
    let mut backoff = BACKOFF_MIN;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = incoming.closed() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff = BACKOFF_MIN;
                // Small messages both ways: Nagle would only add latency.
                let _ = stream.set_nodelay(true);
                let Some(conn) = conns.admit(stream).await else {
                    continue;
                };
                if incoming.send(conn).await.is_err() {
                    return;
                }
            }
            Err(e) if only_that_connection(&e) => {}
            Err(e) if out_of_descriptors(&e) && conns.out_of_descriptors() => {
                // The idle connection closing frees a descriptor: accept again once it
                // has, rather than after a back-off that idle ones would fill again.
                let closed = conns.shared.closed.notified();
                tokio::select! {
                    _ = tokio::time::timeout(EVICTED_WAIT, closed) => {}
                    () = incoming.closed() => return,
                }
            }
            Err(e) => {
                if backoff == BACKOFF_MIN {
                    tracing::warn!(
                        target: profiler_core::log::TARGET,
                        "profiler server cannot accept connections ({e}); retrying with back-off"
                    );
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = incoming.closed() => return,
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// An accepted connection: the socket, its place among the open ones, and its idle
/// clock.
#[derive(Debug)]
pub(super) struct Conn {
    // Fields drop in order: the socket's descriptor is closed before the place is
    // given up, so an `accept` woken by that finds the descriptor free.
    stream: TcpStream,
    idle_timer: Pin<Box<Sleep>>,
    evicted: Pin<Box<tokio::sync::futures::OwnedNotified>>,
    place: Place,
}

/// A connection's place among the open ones, given up when dropped.
#[derive(Debug)]
struct Place {
    link: Arc<Link>,
    conns: Conns,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.conns.remove(&self.link);
    }
}

impl Conn {
    fn new(stream: TcpStream, link: Arc<Link>, conns: Conns) -> Conn {
        link.touch();
        let idle = conns.shared.idle;
        let evicted = Box::pin(Arc::clone(&link.evict).notified_owned());
        Conn {
            stream,
            idle_timer: Box::pin(tokio::time::sleep(idle)),
            evicted,
            place: Place { link, conns },
        }
    }

    /// Ready with the reason to close once the connection is idle too long or was
    /// evicted; registers for a wake-up otherwise.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if self.evicted.as_mut().poll(cx).is_ready() {
            return Poll::Ready(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room for a new connection",
            ));
        }
        loop {
            if self.idle_timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            match self.place.link.idle_until(self.place.conns.shared.idle) {
                Some(until) => self.idle_timer.as_mut().reset(until),
                None => {
                    return Poll::Ready(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "idle connection closed",
                    ))
                }
            }
        }
    }
}

impl Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo(Arc::clone(&self.place.link))
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.place.link.touch();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            // The server always has a read pending, so this is where the clock runs.
            Poll::Pending => this.poll_close(cx).map(Err),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The accepted connections as the stream tonic serves.
pub(super) struct Incoming(pub(super) mpsc::Receiver<Conn>);

impl tokio_stream::Stream for Incoming {
    type Item = Result<Conn, std::convert::Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_recv(cx).map(|conn| conn.map(Ok))
    }
}
