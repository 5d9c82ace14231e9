//! Each host's feed: watch its `prof.live.v1` stream, fall back to TensorFlow's
//! `Monitor` where the server has no live view, and reconnect, with back-off, when
//! the connection is lost.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use profiler_core::error::report;
use profiler_core::ErrorKind;
use profiler_remote::client::Connection;
use profiler_remote::live::proto::WatchRequest;
use profiler_remote::live::{self, Source};

use crate::top::state::{Link, Update};

/// First wait before reconnecting; it doubles up to [`MOST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MOST_BACKOFF: Duration = Duration::from_secs(5);

/// Follows host `index` at `address`, asking what `request` asks, until `updates` is
/// dropped.
pub async fn follow(
    index: usize,
    address: String,
    connection: Connection,
    request: WatchRequest,
    updates: Sender<Update>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let why = match live::watch_with(&address, &connection, request.clone()).await {
            Ok(Source::Live(mut stream)) => {
                backoff = FIRST_BACKOFF;
                if updates.send(Update::Link(index, Link::Connected)).is_err() {
                    return;
                }
                loop {
                    match stream.message().await {
                        Ok(Some(snapshot)) => {
                            if updates
                                .send(Update::Snapshot(index, Box::new(snapshot)))
                                .is_err()
                            {
                                return;
                            }
                        }
                        Ok(None) => break "the server ended the stream".to_owned(),
                        Err(status) => break report(&live::error(status)).to_string(),
                    }
                }
            }
            Ok(Source::MonitorOnly) => {
                if updates
                    .send(Update::Link(index, Link::MonitorOnly))
                    .is_err()
                {
                    return;
                }
                match monitor(index, &address, &connection, &updates).await {
                    Some(why) => why,
                    None => return,
                }
            }
            Err(e) => report(&e).to_string(),
        };
        let at = Instant::now() + backoff;
        if updates
            .send(Update::Link(index, Link::Reconnecting { at, why }))
            .is_err()
        {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MOST_BACKOFF);
    }
}

/// Monitor's text once a second; why it stopped, or `None` when there is nothing
/// more to do (no Monitor either, or the view is gone).
async fn monitor(
    index: usize,
    address: &str,
    connection: &Connection,
    updates: &Sender<Update>,
) -> Option<String> {
    loop {
        match live::monitor(address, connection, 1000, 2).await {
            Ok(response) => {
                updates.send(Update::Monitor(index, response.data)).ok()?;
            }
            Err(e) if e.kind() == ErrorKind::Unimplemented => {
                let line = format!(
                    "{address} has no live view: it answers neither prof.live.v1 nor Monitor \
                     (JAX's and TensorFlow's servers only capture; use capture-profile)"
                );
                let _ = updates.send(Update::Link(index, Link::NoLiveView(line)));
                return None;
            }
            Err(e) => return Some(report(&e).to_string()),
        }
    }
}
