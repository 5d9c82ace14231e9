//! What the view shows, apart from how it is drawn: each host's connection and last
//! snapshot, and the keys' effects (pause, sort, filter, help, capture).

use std::time::Instant;

use profiler_remote::live::proto::{Op, Recording, Snapshot};

/// A host's connection.
#[derive(Clone, Debug, PartialEq)]
pub enum Link {
    /// Connecting for the first time.
    Connecting,
    /// Watching: snapshots arrive.
    Connected,
    /// Lost; trying again at `at`.
    Reconnecting {
        /// When the next try is.
        at: Instant,
        /// Why the last one ended.
        why: String,
    },
    /// The server has no `prof.live.v1` but answers TensorFlow's `Monitor`.
    MonitorOnly,
    /// Neither: the one line that says so.
    NoLiveView(String),
}

/// What a host's feed reports.
#[derive(Debug)]
pub enum Update {
    /// A snapshot from host `.0`.
    Snapshot(usize, Box<Snapshot>),
    /// Host `.0`'s connection changed.
    Link(usize, Link),
    /// Monitor's text from host `.0` (a server without the live stream).
    Monitor(usize, String),
}

/// One watched host.
#[derive(Clone, Debug)]
pub struct Host {
    /// `HOST:PORT` as given.
    pub address: String,
    /// Its connection.
    pub link: Link,
    /// Its last snapshot.
    pub last: Option<Snapshot>,
    /// Its last Monitor text, for a server without the live stream.
    pub monitor: Option<String>,
}

/// How the op table is sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Most self time first.
    SelfTime,
    /// Most events first.
    Count,
    /// By name.
    Name,
}

impl SortKey {
    /// The column's title.
    pub fn title(self) -> &'static str {
        match self {
            SortKey::SelfTime => "self",
            SortKey::Count => "count",
            SortKey::Name => "name",
        }
    }
}

/// A capture started with `c`: the `capture-profile` run and its progress.
#[derive(Debug)]
pub struct CaptureRun {
    /// When it started.
    pub started: Instant,
    /// How long it records, ms.
    pub duration_ms: u64,
    /// How it ended: `None` while it runs.
    pub outcome: Option<String>,
}

/// What a key asks of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond the state change.
    None,
    /// Quit.
    Quit,
    /// Start a capture.
    Capture,
}

/// A key, as the view reads it (apart from the terminal library's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A character.
    Char(char),
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Up arrow.
    Up,
    /// Down arrow.
    Down,
}

/// The whole view's state.
#[derive(Debug)]
pub struct App {
    /// The hosts, in the order given.
    pub hosts: Vec<Host>,
    /// The host whose details show.
    pub selected: usize,
    /// Updates are not applied while paused.
    pub paused: bool,
    /// The op table's order.
    pub sort: SortKey,
    /// Only ops whose name contains this show.
    pub filter: String,
    /// Typing the filter (after `/`).
    pub filtering: bool,
    /// The help shows.
    pub help: bool,
    /// The last capture started with `c`.
    pub capture: Option<CaptureRun>,
}

impl App {
    /// A view of `addresses`, none connected yet.
    pub fn new(addresses: &[String]) -> App {
        App {
            hosts: addresses
                .iter()
                .map(|a| Host {
                    address: a.clone(),
                    link: Link::Connecting,
                    last: None,
                    monitor: None,
                })
                .collect(),
            selected: 0,
            paused: false,
            sort: SortKey::SelfTime,
            filter: String::new(),
            filtering: false,
            help: false,
            capture: None,
        }
    }

    /// Applies a feed's update (snapshots wait while paused; connection changes
    /// never do).
    pub fn apply(&mut self, update: Update) {
        match update {
            Update::Snapshot(i, snapshot) if !self.paused => {
                if let Some(h) = self.hosts.get_mut(i) {
                    h.last = Some(*snapshot);
                }
            }
            Update::Snapshot(..) => {}
            Update::Link(i, link) => {
                if let Some(h) = self.hosts.get_mut(i) {
                    h.link = link;
                }
            }
            Update::Monitor(i, text) => {
                if let Some(h) = self.hosts.get_mut(i) {
                    if !self.paused {
                        h.monitor = Some(text);
                    }
                }
            }
        }
    }

    /// Handles a key.
    pub fn key(&mut self, key: Key) -> Action {
        if self.filtering {
            match key {
                Key::Enter | Key::Esc => self.filtering = false,
                Key::Backspace => {
                    self.filter.pop();
                }
                Key::Char(c) => self.filter.push(c),
                _ => {}
            }
            return Action::None;
        }
        match key {
            Key::Char('q') => return Action::Quit,
            Key::Esc if self.help => self.help = false,
            Key::Esc => self.filter.clear(),
            Key::Char('p') => self.paused = !self.paused,
            Key::Char('?') | Key::Char('h') => self.help = !self.help,
            Key::Char('/') => {
                self.filtering = true;
                self.filter.clear();
            }
            Key::Char('s') => {
                self.sort = match self.sort {
                    SortKey::SelfTime => SortKey::Count,
                    SortKey::Count => SortKey::Name,
                    SortKey::Name => SortKey::SelfTime,
                }
            }
            Key::Char('c') => return Action::Capture,
            Key::Down | Key::Char('j') if !self.hosts.is_empty() => {
                self.selected = (self.selected + 1) % self.hosts.len();
            }
            Key::Up | Key::Char('k') if !self.hosts.is_empty() => {
                self.selected = (self.selected + self.hosts.len() - 1) % self.hosts.len();
            }
            _ => {}
        }
        Action::None
    }

    /// The selected host.
    pub fn host(&self) -> &Host {
        &self.hosts[self.selected.min(self.hosts.len() - 1)]
    }

    /// The selected host's ops, filtered and sorted as asked.
    pub fn ops(&self) -> Vec<&Op> {
        let Some(snapshot) = &self.host().last else {
            return Vec::new();
        };
        let filter = self.filter.to_lowercase();
        let mut ops: Vec<&Op> = snapshot
            .ops
            .iter()
            .filter(|o| filter.is_empty() || o.name.to_lowercase().contains(&filter))
            .collect();
        match self.sort {
            SortKey::SelfTime => ops.sort_by_key(|o| std::cmp::Reverse(o.self_ns)),
            SortKey::Count => ops.sort_by_key(|o| std::cmp::Reverse(o.count)),
            SortKey::Name => ops.sort_by(|a, b| a.name.cmp(&b.name)),
        }
        ops
    }

    /// The host that holds the others back: with two hosts or more, the one whose
    /// median step time is over 10% above the median of the others'.
    pub fn straggler(&self) -> Option<usize> {
        let p50: Vec<(usize, f64)> = self
            .hosts
            .iter()
            .enumerate()
            .filter_map(|(i, h)| Some((i, h.last.as_ref()?.step_times?.p50_ns as f64)))
            .collect();
        if p50.len() < 2 {
            return None;
        }
        let (slowest, worst) = p50.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
        let mut others: Vec<f64> = p50
            .iter()
            .filter(|(i, _)| *i != slowest)
            .map(|(_, v)| *v)
            .collect();
        others.sort_by(f64::total_cmp);
        let median = others[others.len() / 2];
        (worst > median * 1.1).then_some(slowest)
    }
}

/// What a host's recording state reads as.
pub fn recording_text(snapshot: &Snapshot) -> String {
    match Recording::try_from(snapshot.recording).unwrap_or(Recording::Unspecified) {
        Recording::Capture => match &snapshot.capture {
            Some(c) => format!(
                "capture running ({:.1}/{:.1} s)",
                c.elapsed_ms as f64 / 1000.0,
                c.duration_ms as f64 / 1000.0
            ),
            None => "capture running".into(),
        },
        Recording::Session => "the program's own session records".into(),
        Recording::Live | Recording::Unspecified => "no capture".into(),
    }
}

/// A duration in ns as the view writes it.
pub fn ms(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.0}µs", ns / 1e3)
    }
}

/// Bytes as the view writes them.
pub fn bytes(b: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (MIB * 1024.0))
    } else {
        format!("{:.1} MiB", b as f64 / MIB)
    }
}
