//! A Perfetto link, as `jax.profiler.trace(create_perfetto_link=True)` makes one: the
//! trace is served once on 127.0.0.1, and ui.perfetto.dev opens it from there.
//!
//! The page is served over HTTPS from a public origin and fetches the trace from
//! loopback, so the server answers with the CORS header that allows that origin, and
//! answers Chrome's private-network preflight (`OPTIONS` with
//! `Access-Control-Request-Private-Network`). It serves only the trace's own path,
//! returns as soon as the trace has been sent once, and gives up after a timeout.
//!
//! ```no_run
//! use profiler_export::link::{serve_perfetto_link, LinkOptions, LinkOutcome};
//! let outcome = serve_perfetto_link(
//!     "logs/run/host.pftrace".as_ref(),
//!     &LinkOptions::default(),
//!     |url| eprintln!("open {url}"),
//! )?;
//! assert_eq!(outcome, LinkOutcome::Fetched);
//! # Ok::<(), profiler_core::Error>(())
//! ```

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use profiler_core::{Error, ErrorKind, Result};

/// The origin of the Perfetto UI.
pub const PERFETTO_UI: &str = "https://ui.perfetto.dev";

/// Port and patience of the link server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkOptions {
    /// Port on 127.0.0.1; 9001 as JAX uses (the Perfetto UI's documented port). 0 picks
    /// a free one.
    pub port: u16,
    /// Give up when nobody fetched the trace in this time.
    pub timeout: Duration,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            port: 9001,
            timeout: Duration::from_secs(300),
        }
    }
}

/// How the link server ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkOutcome {
    /// The trace was sent once.
    Fetched,
    /// Nobody fetched it within the timeout.
    TimedOut,
}

/// The ui.perfetto.dev link that opens a trace served at `trace_url`.
pub fn perfetto_url(trace_url: &str) -> String {
    format!("{PERFETTO_UI}/#!/?url={trace_url}")
}

/// Serves the file at `path` on 127.0.0.1 until it has been fetched once or
/// `options.timeout` passes. `announce` gets the ui.perfetto.dev link once the server
/// listens (print it for the user).
///
/// # Errors
/// [`ErrorKind::Io`] when the file cannot be read; [`ErrorKind::Unavailable`] when the
/// port cannot be bound (in use: pass another port, or 0).
pub fn serve_perfetto_link(
    path: &Path,
    options: &LinkOptions,
    announce: impl FnOnce(&str),
) -> Result<LinkOutcome> {
    let body =
        std::fs::read(path).map_err(|e| Error::io("cannot read the trace to serve", path, e))?;
    let name = path
        .file_name()
        .map(|n| encode_path(&n.to_string_lossy()))
        .unwrap_or_else(|| "trace".to_owned());
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, options.port)).map_err(|e| {
        Error::new(
            ErrorKind::Unavailable,
            format!(
                "cannot listen on 127.0.0.1:{} for the Perfetto link",
                options.port
            ),
        )
        .with_source(e)
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| io_error(options.port, e))?
        .port();
    listener
        .set_nonblocking(true)
        .map_err(|e| io_error(port, e))?;
    let route = format!("/{name}");
    announce(&perfetto_url(&format!("http://127.0.0.1:{port}{route}")));
    let deadline = Instant::now() + options.timeout;
    while Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, _)) => {
                // A broken connection is the browser's problem, not the end of serving.
                if let Ok(true) = answer(stream, &route, &body) {
                    return Ok(LinkOutcome::Fetched);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io_error(port, e)),
        }
    }
    Ok(LinkOutcome::TimedOut)
}

fn io_error(port: u16, e: io::Error) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("the Perfetto link server on 127.0.0.1:{port} failed"),
    )
    .with_source(e)
}

/// Answers one request and closes the connection; `Ok(true)` when it sent the trace.
/// One request per connection: a browser keeping an idle connection open must not hold
/// up the accept loop.
fn answer(stream: TcpStream, route: &str, body: &[u8]) -> io::Result<bool> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line)? == 0 {
        return Ok(false);
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut header = String::new();
    let mut bytes = 0;
    loop {
        header.clear();
        let n = reader.read_line(&mut header)?;
        bytes += n;
        if n == 0 || header.trim().is_empty() || bytes > 64 * 1024 {
            break;
        }
    }
    let path = target.split('?').next().unwrap_or("");
    let out = reader.get_mut();
    let common = "Access-Control-Allow-Origin: https://ui.perfetto.dev\r\nConnection: close\r\n";
    let sent = match (method, path == route) {
        ("OPTIONS", _) => {
            write!(
                out,
                "HTTP/1.1 204 No Content\r\n{common}Access-Control-Allow-Methods: GET, OPTIONS\r\n\
                 Access-Control-Allow-Headers: *\r\nAccess-Control-Allow-Private-Network: true\r\n\
                 Content-Length: 0\r\n\r\n"
            )?;
            false
        }
        ("GET", true) => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\n{common}Content-Type: application/octet-stream\r\n\
                 Content-Length: {}\r\n\r\n",
                body.len()
            )?;
            out.write_all(body)?;
            true
        }
        _ => {
            write!(
                out,
                "HTTP/1.1 404 Not Found\r\n{common}Content-Length: 0\r\n\r\n"
            )?;
            false
        }
    };
    out.flush()?;
    Ok(sent)
}

/// Percent-encodes what may not appear raw in a URL path segment.
fn encode_path(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_percent_encoded() {
        assert_eq!(encode_path("host:0 a.pftrace"), "host%3A0%20a.pftrace");
        assert_eq!(
            perfetto_url("http://127.0.0.1:9001/a.pftrace"),
            "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/a.pftrace"
        );
    }
}
