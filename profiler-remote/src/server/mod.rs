//! The `tensorflow.ProfilerService` server: on-demand captures of this process by
//! TensorBoard/XProf's Capture button, `python -m jax.collect_profile`, or
//! `capture-profile`.
//!
//! ```no_run
//! let server = profiler_remote::server::start(6009)?; // 127.0.0.1:6009
//! // ... a plain synchronous training loop; captures happen on the server's threads ...
//! server.stop();
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! It behaves as the JAX and TensorFlow servers do: a `Profile` call records for
//! `opts.duration_ms` from `opts.start_timestamp_ns` with the tracer levels and
//! `advanced_configuration` it carries, then writes
//! `repository_root/session_id/<host>.xplane.pb` (or, with `emit_xspace`, returns the
//! XSpace and writes nothing); one capture runs at a time, and `Terminate(session_id)`
//! ends one early, keeping what it recorded. Where they are unsafe it is stricter: it
//! binds 127.0.0.1 unless told otherwise, refuses session ids and host names that
//! would leave `repository_root`, and a client that hangs up mid-capture ends the
//! capture instead of leaving the process recording.
//!
//! # Limits and safety
//!
//! The server runs inside the training process, so whatever a client can make it hold
//! or do is done to the training. It therefore bounds everything a client controls
//! ([`Limits`] has the numbers and their defaults):
//!
//! - **Messages**: requests are decoded up to 64 KiB (real ones are under 2 KiB),
//!   HTTP/2 headers up to 16 KiB, 8 concurrent calls per connection.
//! - **Strings**: session ids (also `Terminate`'s) and file names up to 255 bytes,
//!   `repository_root` up to 4096, `advanced_configuration` up to 64 entries with
//!   keys up to 64 bytes and strings up to 1 KiB. Error messages quote at most 64
//!   bytes of what was sent, with its length.
//! - **Captures**: a delay (`opts.start_timestamp_ns`) up to 60 s, since the one
//!   capture slot is held while waiting (clients send 0 to a few seconds); a duration
//!   up to 10 min; `max_events` up to 8 Mi records (256 MiB). Every check, including
//!   that the target directory can be written (the file is created first), runs
//!   before recording starts, so a refusal never costs a profile.
//! - **Flight recorder** (`StartContinuousProfiling`): rings of at most 1 Mi records
//!   (32 MiB) per thread.
//! - **Early `Terminate`s** (one that arrives before its `Profile`, which then ends at
//!   once, as in TSL): at most 64 remembered, each for 10 s.
//! - **Connections**: at most 32 open; one whose peer sends nothing for 30 s while
//!   no call of it runs is closed. At the limit a new connection closes the one idle
//!   longest, so idle connections cannot lock the Capture button out; one idle for
//!   less than 0.5 s is left to send its call, and the newcomer waits for room (2 s
//!   at most, later arrivals queued by the kernel). It is refused at once only when
//!   every connection has a call running. Fewer are kept where the process's file
//!   descriptors run out first (its limit less those open, less 4 spare, learnt again
//!   whenever `accept` fails for want of one): then the one idle longest closes at
//!   once. When none can close, the accept loop backs off (10 ms to 1 s) instead of
//!   spinning.
//! - **Live views** (`prof.live.v1.Live/Watch` streams and `Monitor` calls): at most
//!   4 at once; each watcher's channel holds one frame (a slow one misses frames,
//!   counted), and the background flight recorder behind them keeps 16 Ki records
//!   (512 KiB) per recording thread, only while someone watches. A capture replaces
//!   that recorder at once: watching never makes one busy.
//! - **Stopping** waits at most about a second for calls in flight; a capture cut
//!   short stops its session.
//!
//! **Where it writes.** [`Writes`] decides what a client's `repository_root` may be.
//! On a loopback address the default is [`Writes::Anywhere`], TSL's behaviour: XProf
//! sends `LOGDIR/plugins/profile` with TensorBoard's own logdir (often relative to
//! TensorBoard's working directory), which the training process cannot know, and
//! every client is a user of this machine. Bound beyond loopback, the default is
//! [`Writes::Nowhere`]: such requests get PERMISSION_DENIED, and only `emit_xspace`
//! captures (`capture-profile`'s) work, unless the server is given a directory with
//! [`ServerBuilder::confine_writes_to`], inside which all files then go (relative
//! roots are taken from it; `..` and symbolic links out of it are refused). Even on
//! loopback, on a shared machine any local user can reach the port: confine writes
//! there too.
//!
//! **Beyond loopback**, anyone who reaches the port can profile the process. Give the
//! server a [`bearer_token`](ServerBuilder::bearer_token) (calls without
//! `authorization: Bearer <token>` get UNAUTHENTICATED) and, with the `tls` feature,
//! a certificate (`ServerBuilder::tls`) so the token and the profiles are not sent
//! in clear; [`crate::client::Connection`] carries both on the client side.
//!
//! ```no_run
//! # #[cfg(feature = "tls")] {
//! use profiler_remote::server::ServerBuilder;
//! let server = ServerBuilder::new(6009)
//!     .address("0.0.0.0".parse().expect("address"))
//!     .bearer_token(std::env::var("PROF_TOKEN").expect("a token"))
//!     .tls(std::fs::read("cert.pem")?, std::fs::read("key.pem")?)
//!     .confine_writes_to("/srv/profiles")
//!     .start()?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod auth;
mod conn;
mod gpus;
mod kernels;
mod limits;
mod live;
mod output;
mod quote;
mod request;
mod service;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use profiler_core::{Error, ErrorKind};
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;

use crate::live_rpc::live_server::LiveServer;
use crate::rpc::profiler_service_server::ProfilerServiceServer;
use auth::Auth;
use conn::Conns;
use service::Service;

pub use limits::Limits;
use limits::MAX_RESPONSE_BYTES;
pub use output::Writes;
pub use service::BUSY;

/// Largest request decoded: real requests are under 2 KiB; anything larger is a
/// client trying to make the process hold it.
const MAX_REQUEST_BYTES: usize = 64 << 10;
/// Largest HTTP/2 header block a client may send (the token travels there).
const MAX_HEADER_BYTES: u32 = 16 << 10;
/// Concurrent calls per connection: real clients make one at a time.
const MAX_STREAMS: u32 = 8;
/// How long stopping waits for calls in flight before cancelling them.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Starts a server on 127.0.0.1:`port` (0 picks a free port), on its own threads.
///
/// # Errors
/// [`ErrorKind::Io`] when the port cannot be bound.
pub fn start(port: u16) -> profiler_core::Result<ServerHandle> {
    ServerBuilder::new(port).start()
}

/// Keeps secrets out of `Debug` output.
#[derive(Clone)]
struct Secret<T>(T);

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A certificate chain and its private key, PEM.
#[cfg(feature = "tls")]
#[derive(Clone, Debug)]
struct TlsIdentity {
    cert_pem: Vec<u8>,
    key_pem: Secret<Vec<u8>>,
}

/// Configures a server before starting it.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    addr: SocketAddr,
    limits: Limits,
    writes: Option<Writes>,
    token: Option<Secret<String>>,
    #[cfg(feature = "tls")]
    tls: Option<TlsIdentity>,
}

impl ServerBuilder {
    /// A server for 127.0.0.1:`port`.
    pub fn new(port: u16) -> Self {
        ServerBuilder {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            limits: Limits::default(),
            writes: None,
            token: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Listens on `ip` instead of 127.0.0.1, e.g. `0.0.0.0` to be captured from
    /// another machine. Anyone who can reach the port can then profile the process:
    /// see the [module documentation](self) for a token, TLS and where files go.
    pub fn address(mut self, ip: IpAddr) -> Self {
        self.addr.set_ip(ip);
        self
    }

    /// Replaces the [`Limits`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where the server may write the files clients ask for; the default is
    /// [`Writes::Anywhere`] on loopback and [`Writes::Nowhere`] beyond it.
    pub fn writes(mut self, writes: Writes) -> Self {
        self.writes = Some(writes);
        self
    }

    /// Writes files only inside `dir` (created at start): short for
    /// `writes(Writes::Under(dir))`. Requests for a `repository_root` outside it get
    /// PERMISSION_DENIED; a relative one is taken from `dir`.
    pub fn confine_writes_to(self, dir: impl Into<PathBuf>) -> Self {
        self.writes(Writes::Under(dir.into()))
    }

    /// Refuses, with UNAUTHENTICATED, every call that does not carry
    /// `authorization: Bearer <token>` (as [`crate::client::Connection::bearer_token`]
    /// sends it). Without TLS the token crosses the network in clear.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(Secret(token.into()));
        self
    }

    /// Serves over TLS with this certificate chain and private key, both PEM.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Self {
        self.tls = Some(TlsIdentity {
            cert_pem: cert_pem.into(),
            key_pem: Secret(key_pem.into()),
        });
        self
    }

    /// The token, checked before anything is bound.
    fn auth(&self) -> profiler_core::Result<Auth> {
        let token = self.token.as_ref().map(|t| t.0.as_str());
        if token.is_some_and(|t| !auth::is_valid_token(t)) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "the bearer token must be non-empty visible ASCII (it travels in an HTTP/2 header)",
            ));
        }
        Ok(Auth::new(token))
    }

    /// tonic's server with the limits on messages and streams, and TLS if asked.
    fn transport(&self) -> profiler_core::Result<tonic::transport::Server> {
        let server = tonic::transport::Server::builder()
            .max_concurrent_streams(MAX_STREAMS)
            .http2_max_header_list_size(MAX_HEADER_BYTES);
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let identity = tonic::transport::Identity::from_pem(&tls.cert_pem, &tls.key_pem.0);
            let config = tonic::transport::ServerTlsConfig::new()
                .identity(identity)
                .timeout(self.limits.idle_timeout);
            return server.tls_config(config).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    "the profiler server's TLS certificate or key cannot be used",
                )
                .with_source(e)
            });
        }
        Ok(server)
    }

    /// Binds the port and serves on a thread of its own.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the port cannot be bound, the thread not spawned or the
    /// [`Writes::Under`] directory not created; [`ErrorKind::InvalidArgument`] for a
    /// token that cannot travel in a header, or a TLS certificate or key that cannot
    /// be read.
    pub fn start(self) -> profiler_core::Result<ServerHandle> {
        let io =
            |what: String| move |e: std::io::Error| Error::new(ErrorKind::Io, what).with_source(e);
        let auth = self.auth()?;
        let mut transport = self.transport()?;
        let writes = self
            .writes
            .clone()
            .unwrap_or_else(|| Writes::default_for(self.addr.ip()))
            .prepare()
            .map_err(io("profiler server write directory".into()))?;
        let listener = std::net::TcpListener::bind(self.addr).map_err(io(format!(
            "profiler server cannot listen on {}",
            self.addr
        )))?;
        let local_addr = listener
            .local_addr()
            .map_err(io("profiler server address".into()))?;
        listener
            .set_nonblocking(true)
            .map_err(io("profiler server socket".into()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("prof-server")
            .enable_all()
            .build()
            .map_err(io("profiler server runtime".into()))?;
        let (shutdown, stopped) = watch::channel(false);
        let hub = live::Hub::new(&self.limits);
        let service =
            ProfilerServiceServer::new(Service::new(self.limits.clone(), writes, hub.clone()))
                .max_decoding_message_size(MAX_REQUEST_BYTES)
                .max_encoding_message_size(MAX_RESPONSE_BYTES);
        let live = LiveServer::new(live::LiveService(hub))
            .max_decoding_message_size(MAX_REQUEST_BYTES)
            .max_encoding_message_size(MAX_RESPONSE_BYTES);
        let conns = Conns::new(self.limits.max_connections, self.limits.idle_timeout);
        let router = transport
            .add_service(InterceptedService::new(service, auth.clone()))
            .add_service(InterceptedService::new(live, auth));
        let thread = std::thread::Builder::new()
            .name("prof-server".into())
            .spawn(move || {
                runtime.block_on(serve(router, listener, conns, stopped, local_addr));
                // Calls still running after the grace are cancelled here; a capture
                // among them stops its session.
                runtime.shutdown_timeout(STOP_GRACE);
            })
            .map_err(io("profiler server thread".into()))?;
        Ok(ServerHandle {
            local_addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }
}

/// Waits until the server is asked to stop (or its handle is gone).
async fn stop_requested(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Serves until asked to stop, then gives calls in flight [`STOP_GRACE`].
async fn serve(
    router: tonic::transport::server::Router,
    listener: std::net::TcpListener,
    conns: Conns,
    stopped: watch::Receiver<bool>,
    local_addr: SocketAddr,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(target: profiler_core::log::TARGET, "profiler server on {local_addr} failed: {e}");
            return;
        }
    };
    let (accepted, incoming) = tokio::sync::mpsc::channel(1);
    tokio::spawn(conn::accept_loop(listener, conns.clone(), accepted));
    let signal = {
        let stopped = stopped.clone();
        async move {
            stop_requested(stopped).await;
            conns.close_idle();
        }
    };
    let served = router.serve_with_incoming_shutdown(conn::Incoming(incoming), signal);
    tokio::select! {
        served = served => if let Err(e) = served {
            tracing::error!(target: profiler_core::log::TARGET, "profiler server on {local_addr} stopped: {}", profiler_core::error::report(&e));
        },
        () = async {
            stop_requested(stopped).await;
            tokio::time::sleep(STOP_GRACE).await;
        } => {}
    }
}

/// A running server; stops when dropped.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shutdown: Option<watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on (with the port it picked, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving and waits for the server's threads to end (about a second at
    /// most when calls are in flight).
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shut_down();
    }
}
