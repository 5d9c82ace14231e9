//! A line's events wherever they are: decoded in an [`XSpace`], or still encoded in a
//! [`LazySpace`] read for conversion, where they are decoded one at a time.

use std::cmp::Reverse;

use profiler_core::xspace::{XEvent, XSpace};

use crate::xplane::{EncodedEvents, LazySpace};

/// The events of one line.
#[derive(Clone, Copy)]
pub(super) enum Events<'a> {
    Decoded(&'a [XEvent]),
    Encoded(&'a EncodedEvents),
}

impl Events<'_> {
    /// Whether the line has no events.
    pub(super) fn is_empty(self) -> bool {
        match self {
            Events::Decoded(events) => events.is_empty(),
            Events::Encoded(events) => events.is_empty(),
        }
    }

    /// Calls `f` with each event, in the file's order or (`sorted`) in XProf's order.
    pub(super) fn for_each<E>(
        self,
        sorted: bool,
        mut f: impl FnMut(&XEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Events::Encoded(events) => events.for_each(sorted, f),
            Events::Decoded(events) => match sorted.then(|| sorted_order(events)).flatten() {
                None => events.iter().try_for_each(f),
                Some(order) => order.into_iter().try_for_each(|i| f(&events[i])),
            },
        }
    }
}

/// `None` when events are already in XProf's order (the usual case, and no
/// allocation); otherwise the order to visit them in.
fn sorted_order(events: &[XEvent]) -> Option<Vec<usize>> {
    let key = |e: &XEvent| (e.offset_ps(), Reverse(e.duration_ps));
    if events.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        return None;
    }
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| key(&events[i]));
    Some(order)
}

/// What a timeline walks: a space, and where its events are when they are not in it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Source<'a> {
    pub(super) space: &'a XSpace,
    lazy: Option<&'a LazySpace>,
}

impl<'a> Source<'a> {
    pub(super) fn decoded(space: &'a XSpace) -> Self {
        Source { space, lazy: None }
    }

    pub(super) fn lazy(space: &'a LazySpace) -> Self {
        Source {
            space: space.space(),
            lazy: Some(space),
        }
    }

    /// The events of line `line` of plane `plane` (positions in the space).
    pub(super) fn events(&self, plane: usize, line: usize) -> Events<'a> {
        let encoded = self.lazy.and_then(|l| l.events(plane, line));
        match encoded {
            Some(events) => Events::Encoded(events),
            None => Events::Decoded(
                self.space
                    .planes
                    .get(plane)
                    .and_then(|p| p.lines.get(line))
                    .map_or(&[][..], |l| &l.events),
            ),
        }
    }

    /// Whether plane `plane` has an event on some line.
    pub(super) fn has_events(&self, plane: usize) -> bool {
        let lines = self.space.planes.get(plane).map_or(0, |p| p.lines.len());
        (0..lines).any(|l| !self.events(plane, l).is_empty())
    }
}
