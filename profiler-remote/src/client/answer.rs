//! The connection a capture is made over, watched until the server first answers, so
//! that an address where something other than a gRPC server listens fails in seconds
//! and says what it found.
//!
//! tonic's connect finishes once TCP is up and the client's HTTP/2 preface is sent;
//! it does not wait for the server's. A server that accepts and says nothing (a
//! stopped process, a port forward to nowhere, a service waiting for its own protocol
//! to start) then held the capture until its whole deadline (the capture's length plus
//! 30 s); an HTTP/1 server's refusal surfaced as "h2 protocol error". Here the stream
//! under HTTP/2 (and under TLS, when the capture uses it) is watched until its first
//! bytes:
//!
//! - none within the connect timeout: the read fails, and the capture with it;
//! - anything but the start of an HTTP/2 `SETTINGS` frame (the first frame a server
//!   sends, RFC 9113 §3.4): an HTTP/1 server's answer (a status line, or Python's
//!   bare HTML error page), a TLS record where plaintext was spoken (the server
//!   wants TLS), or anything else;
//! - the end of the stream: the server hung up without answering.
//!
//! Under TLS only silence and a first byte that cannot start a TLS record are
//! judged: the HTTP/2 inside is encrypted.
//!
//! What was found is kept for [`super::capture`] to report, since the error that
//! reaches it through hyper and tonic is only "transport error". Once the server has
//! answered, the stream is passed through untouched: a capture may then be silent for
//! as long as it records.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tonic::codegen::http::Uri;
use tonic::codegen::Service;

/// What the server did instead of answering in HTTP/2, once found.
pub(super) type Finding = Arc<Mutex<Option<String>>>;

/// Takes what was found, if anything.
pub(super) fn take(finding: &Finding) -> Option<String> {
    finding.lock().unwrap_or_else(|e| e.into_inner()).take()
}

fn found(finding: &Finding, what: String) {
    let mut slot = finding.lock().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(what);
}

/// Connects over TCP (resolving the host), the stream watched until the server's
/// first bytes; what it finds goes to `finding`.
#[derive(Clone)]
pub(super) struct Connector {
    /// How long the server has to answer once connected.
    pub(super) answer_within: Duration,
    /// Whether the capture speaks TLS over this stream.
    pub(super) tls: bool,
    pub(super) finding: Finding,
}

impl Service<Uri> for Connector {
    type Response = TokioIo<Watched>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Watched>>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connector = self.clone();
        Box::pin(async move {
            let host = uri.host().unwrap_or_default();
            // An IPv6 literal comes bracketed in a URI, and without brackets to connect.
            let host = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().unwrap_or(80);
            let stream = TcpStream::connect((host.as_str(), port)).await?;
            stream.set_nodelay(true)?;
            Ok(TokioIo::new(Watched {
                stream,
                head: Vec::new(),
                silence: Some(Box::pin(tokio::time::sleep(connector.answer_within))),
                answer_within: connector.answer_within,
                tls: connector.tls,
                finding: connector.finding,
            }))
        })
    }
}

/// A TCP stream whose first bytes from the server are checked.
pub(super) struct Watched {
    stream: TcpStream,
    /// The server's first bytes, until there are enough to judge.
    head: Vec<u8>,
    /// Until the server first answers: when its silence becomes an error.
    silence: Option<Pin<Box<Sleep>>>,
    answer_within: Duration,
    tls: bool,
    finding: Finding,
}

impl Watched {
    /// Fails the stream with what was found.
    fn fail(&mut self, kind: io::ErrorKind, what: String) -> Poll<io::Result<()>> {
        self.silence = None;
        found(&self.finding, what.clone());
        Poll::Ready(Err(io::Error::new(kind, what)))
    }

    /// Judges the server's first bytes, once there are enough of them: `Some` with
    /// the failure when they are not what a gRPC server sends.
    fn judge(&mut self, bytes: &[u8]) -> Option<Poll<io::Result<()>>> {
        let wanted = HEAD - self.head.len().min(HEAD);
        self.head
            .extend_from_slice(&bytes[..bytes.len().min(wanted)]);
        let verdict = verdict(&self.head, self.tls)?;
        self.silence = None;
        let what = verdict.err()?;
        Some(self.fail(io::ErrorKind::InvalidData, what))
    }
}

/// Bytes of the server's answer judged: an HTTP/2 frame header's length and type.
const HEAD: usize = 4;

/// What `head`, a server's first bytes, says: `None` while more are needed, `Ok`
/// for an answer a gRPC server gives.
fn verdict(head: &[u8], tls: bool) -> Option<Result<(), String>> {
    let text = || {
        let shown: String = String::from_utf8_lossy(head).chars().take(HEAD).collect();
        format!("{shown:?}")
    };
    let tls_record = matches!(head, [0x15 | 0x16, ..]);
    if tls {
        return Some(if tls_record {
            Ok(())
        } else {
            Err(format!(
                "it did not answer in TLS (its first bytes: {}): it may speak plaintext \
                 (capture without --tls-ca)",
                text()
            ))
        });
    }
    if head.starts_with(b"HTTP")
        || (head.first().is_some_and(u8::is_ascii_graphic) && head.len() >= HEAD)
    {
        return Some(Err(format!(
            "not a gRPC server: it answered in text, not HTTP/2 (its first bytes: {}), as an \
             HTTP/1 server does",
            text()
        )));
    }
    if matches!(head, [0x15 | 0x16, 0x03, ..]) {
        return Some(Err(
            "it answered in TLS: connect with TLS (capture-profile --tls-ca)".into(),
        ));
    }
    match head.get(3) {
        None => None,
        // A frame header: 3 bytes of length, then the type, SETTINGS being 4.
        Some(4) => Some(Ok(())),
        Some(_) => Some(Err(
            "not a gRPC server: it answered, but not with HTTP/2".into()
        )),
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if this.silence.is_none() {
            return read;
        }
        match read {
            Poll::Ready(Ok(())) if buf.filled().len() == before => {
                let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
                this.fail(io::ErrorKind::UnexpectedEof, closed(&eof))
            }
            Poll::Ready(Ok(())) => {
                let bytes = buf.filled()[before..].to_vec();
                match this.judge(&bytes) {
                    Some(failed) => failed,
                    None => Poll::Ready(Ok(())),
                }
            }
            Poll::Ready(Err(e)) => {
                let what = closed(&e);
                this.fail(e.kind(), what)
            }
            Poll::Pending => match this.silence.as_mut().map(|s| s.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => {
                    let secs = this.answer_within.as_secs_f64();
                    this.fail(
                        io::ErrorKind::TimedOut,
                        format!(
                            "it accepted the connection but did not answer within {secs} s \
                             (Connection::connect_timeout, capture-profile \
                             --connect-timeout-ms): not a gRPC server, or one too busy to \
                             answer"
                        ),
                    )
                }
                _ => Poll::Pending,
            },
        }
    }
}

impl Watched {
    /// Notes a write that failed before the server first answered: it hung up.
    fn wrote<T>(&mut self, result: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let (Poll::Ready(Err(e)), Some(_)) = (&result, &self.silence) {
            found(&self.finding, closed(e));
        }
        result
    }
}

/// What an I/O error before the server's first answer means.
fn closed(e: &io::Error) -> String {
    format!(
        "it closed the connection without answering ({e}): not a gRPC server, or one \
         refusing this client"
    )
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.wrote(written)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.stream).poll_flush(cx);
        this.wrote(flushed)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.wrote(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
