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

mod request;
mod service;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use profiler_core::{Error, ErrorKind};

use crate::rpc::profiler_service_server::ProfilerServiceServer;
use service::Service;

pub use service::BUSY;

/// Starts a server on 127.0.0.1:`port` (0 picks a free port), on its own threads.
///
/// # Errors
/// [`ErrorKind::Io`] when the port cannot be bound.
pub fn start(port: u16) -> profiler_core::Result<ServerHandle> {
    ServerBuilder::new(port).start()
}

/// Configures a server before starting it.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    addr: SocketAddr,
}

impl ServerBuilder {
    /// A server for 127.0.0.1:`port`.
    pub fn new(port: u16) -> Self {
        ServerBuilder {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        }
    }

    /// Listens on `ip` instead of 127.0.0.1, e.g. `0.0.0.0` to be captured from
    /// another machine. Anyone who can reach the port can then profile the process
    /// and have it write under any `repository_root` it can write to.
    pub fn address(mut self, ip: IpAddr) -> Self {
        self.addr.set_ip(ip);
        self
    }

    /// Binds the port and serves on a thread of its own.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the port cannot be bound or the thread not spawned.
    pub fn start(self) -> profiler_core::Result<ServerHandle> {
        let io = |what: String| {
            move |e: std::io::Error| Error::new(ErrorKind::Io, format!("{what}: {e}"))
        };
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
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let service = ProfilerServiceServer::new(Service::default())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(1 << 30);
        let thread = std::thread::Builder::new()
            .name("prof-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!(
                                target: profiler_core::log::TARGET,
                                "profiler server on {local_addr} failed: {e}"
                            );
                            return;
                        }
                    };
                    let incoming = tonic::transport::server::TcpIncoming::from(listener);
                    let served = tonic::transport::Server::builder()
                        .add_service(service)
                        .serve_with_incoming_shutdown(incoming, async {
                            let _ = shutdown_rx.await;
                        })
                        .await;
                    if let Err(e) = served {
                        tracing::error!(
                            target: profiler_core::log::TARGET,
                            "profiler server on {local_addr} stopped: {e}"
                        );
                    }
                });
                // In-flight captures are cancelled, which stops their sessions.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(io("profiler server thread".into()))?;
        Ok(ServerHandle {
            local_addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }
}

/// A running server; stops when dropped.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on (with the port it picked, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving and waits for the server's threads to end.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
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
