//! The lanes of one line: where each slice goes so that slices on a lane nest.
//!
//! The rule is greedy and fixed by the tests: before a slice starts, every lane closes
//! the slices that ended by then (lanes in order); the slice then goes to the first
//! lane whose innermost open slice encloses it, or that is empty, else to a new lane.
//! Found by scanning the lanes, that is quadratic when many slices overlap without
//! nesting (a staircase of n slices makes n lanes). [`TopIndex`] answers both questions
//! in O(log lanes), so a line costs O(n log n) whatever its shape.

use super::model::{Thread, Visitor};

/// (end ps, seq, root seq) of an open slice.
pub(super) type Open = (i64, u64, u64);

/// One lane of a line: its thread and the slices open on it, outermost first.
pub(super) struct Lane<'a> {
    pub(super) thread: Thread<'a>,
    pub(super) open: Vec<Open>,
}

/// A line's lanes, and the index over where their innermost open slices end.
///
/// Most lines have one lane; the index is built only when a second lane is added, so
/// that ordinary profiles pay nothing for it. The small methods are `#[inline]`: the
/// walk is instantiated in the exporters' callers' crates, where they could not be
/// inlined otherwise.
#[derive(Default)]
pub(super) struct Lanes<'a> {
    lanes: Vec<Lane<'a>>,
    /// Kept up to date while there are two lanes or more.
    tops: TopIndex,
    /// Lanes found to close (reused between slices).
    closing: Vec<usize>,
}

impl<'a> Lanes<'a> {
    /// How many lanes there are.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Lane `n`.
    #[inline]
    pub(super) fn get(&self, n: usize) -> &Lane<'a> {
        &self.lanes[n]
    }

    /// Adds a lane shown as `thread`, and returns its index.
    pub(super) fn add(&mut self, thread: Thread<'a>) -> usize {
        self.lanes.push(Lane {
            thread,
            open: Vec::new(),
        });
        if self.lanes.len() == 2 {
            // The first lane's state so far, then the new one's.
            let n = self.tops.push();
            self.tops.set(n, top(&self.lanes[0]));
        }
        if self.lanes.len() >= 2 {
            self.tops.push();
        }
        self.lanes.len() - 1
    }

    /// The first lane where a slice ending at `end` nests inside what is open (or that
    /// has nothing open).
    #[inline]
    pub(super) fn fitting(&self, end: i64) -> Option<usize> {
        match self.lanes.as_slice() {
            [] => None,
            [only] => (end <= top(only)).then_some(0),
            _ => self.tops.first_at_least(end),
        }
    }

    /// Opens a slice on lane `n`; the caller checked that it nests there.
    #[inline]
    pub(super) fn open(&mut self, n: usize, slice: Open) {
        self.lanes[n].open.push(slice);
        if self.lanes.len() >= 2 {
            self.tops.set(n, slice.0);
        }
    }

    /// Ends, innermost first and lane by lane in order, every slice that ended by `t`.
    #[inline]
    pub(super) fn close_until<V: Visitor<'a>>(
        &mut self,
        t: i64,
        visitor: &mut V,
    ) -> Result<(), V::Error> {
        match self.lanes.len() {
            0 => return Ok(()),
            1 => return self.close_lane(0, t, visitor),
            _ if !self.tops.any_at_most(t) => return Ok(()),
            _ => {}
        }
        let mut closing = std::mem::take(&mut self.closing);
        closing.clear();
        self.tops.at_most(t, &mut closing);
        let mut result = Ok(());
        for &n in &closing {
            result = self.close_lane(n, t, visitor);
            if result.is_err() {
                break;
            }
        }
        self.closing = closing;
        result
    }

    #[inline]
    fn close_lane<V: Visitor<'a>>(
        &mut self,
        n: usize,
        t: i64,
        visitor: &mut V,
    ) -> Result<(), V::Error> {
        let lane = &mut self.lanes[n];
        if top(lane) > t {
            return Ok(());
        }
        let mut result = Ok(());
        while let Some(&(end, _, _)) = lane.open.last() {
            if end > t {
                break;
            }
            lane.open.pop();
            result = visitor.slice_end(&lane.thread, end);
            if result.is_err() {
                break;
            }
        }
        if self.lanes.len() >= 2 {
            self.tops.set(n, top(&self.lanes[n]));
        }
        result
    }
}

/// Where the innermost open slice of `lane` ends ([`EMPTY`] for none).
#[inline]
fn top(lane: &Lane<'_>) -> i64 {
    lane.open.last().map_or(EMPTY, |o| o.0)
}

/// The top of a lane with nothing open: every slice fits there, nothing closes.
const EMPTY: i64 = i64::MAX;

/// A segment tree over the lanes' innermost open ends, holding both the minimum (which
/// lanes have something to close) and the maximum (the first lane a slice fits in) of
/// each range, side by side so that an update touches one cache line per level. Slots
/// past the last lane hold values neither query can match.
#[derive(Default)]
pub(super) struct TopIndex {
    lanes: usize,
    /// Leaves start at `capacity`; node `i` covers its children `2i` and `2i + 1`.
    capacity: usize,
    /// (min, max) of each node.
    nodes: Vec<(i64, i64)>,
}

/// A slot with no lane.
const UNUSED: (i64, i64) = (i64::MAX, i64::MIN);

fn join(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0.min(b.0), a.1.max(b.1))
}

impl TopIndex {
    /// Adds an empty lane and returns its index.
    fn push(&mut self) -> usize {
        if self.lanes == self.capacity {
            self.grow();
        }
        let n = self.lanes;
        self.lanes += 1;
        self.set(n, EMPTY);
        n
    }

    /// Doubles the leaves and rebuilds the nodes: O(1) amortised per lane.
    fn grow(&mut self) {
        let old = self.capacity;
        let capacity = (old * 2).max(1);
        let mut nodes = vec![UNUSED; 2 * capacity];
        nodes[capacity..capacity + old].copy_from_slice(&self.nodes[old..2 * old]);
        for i in (1..capacity).rev() {
            nodes[i] = join(nodes[2 * i], nodes[2 * i + 1]);
        }
        (self.capacity, self.nodes) = (capacity, nodes);
    }

    /// Lane `n`'s innermost open slice now ends at `top` ([`EMPTY`] for none).
    fn set(&mut self, n: usize, top: i64) {
        let mut i = self.capacity + n;
        self.nodes[i] = (top, top);
        while i > 1 {
            i /= 2;
            let node = join(self.nodes[2 * i], self.nodes[2 * i + 1]);
            if self.nodes[i] == node {
                break; // nothing above changes either
            }
            self.nodes[i] = node;
        }
    }

    /// The first lane whose top is at least `end`.
    #[inline]
    fn first_at_least(&self, end: i64) -> Option<usize> {
        if self.lanes == 0 || self.nodes[1].1 < end {
            return None;
        }
        let mut i = 1;
        while i < self.capacity {
            i = if self.nodes[2 * i].1 >= end {
                2 * i
            } else {
                2 * i + 1
            };
        }
        Some(i - self.capacity)
    }

    /// Whether some lane's top is at most `t`.
    #[inline]
    fn any_at_most(&self, t: i64) -> bool {
        self.lanes > 0 && self.nodes[1].0 <= t
    }

    /// Appends to `out`, in order, every lane whose top is at most `t`.
    fn at_most(&self, t: i64, out: &mut Vec<usize>) {
        if self.lanes == 0 {
            return;
        }
        self.collect(1, t, out);
    }

    fn collect(&self, i: usize, t: i64, out: &mut Vec<usize>) {
        if self.nodes[i].0 > t {
            return;
        }
        if i >= self.capacity {
            // Slots past the last lane match only `t == i64::MAX`, the final close.
            if i - self.capacity < self.lanes {
                out.push(i - self.capacity);
            }
            return;
        }
        // Depth is log2(lanes): the recursion is bounded.
        self.collect(2 * i, t, out);
        self.collect(2 * i + 1, t, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index against a plain scan, over lanes added and tops moved at random.
    #[test]
    fn queries_agree_with_a_scan() {
        let mut index = TopIndex::default();
        let mut tops: Vec<i64> = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..5000 {
            let r = next();
            if tops.is_empty() || r % 5 == 0 {
                tops.push(EMPTY);
                assert_eq!(index.push(), tops.len() - 1);
            } else {
                let n = (r >> 8) as usize % tops.len();
                let top = if r % 7 == 0 {
                    EMPTY
                } else {
                    (r >> 20) as i64 % 100
                };
                tops[n] = top;
                index.set(n, top);
            }
            let q = match next() % 50 {
                0 => i64::MAX,
                r => (r * 3) as i64 % 110,
            };
            assert_eq!(
                index.first_at_least(q),
                tops.iter().position(|&t| t >= q),
                "{tops:?} >= {q}"
            );
            let mut found = Vec::new();
            index.at_most(q, &mut found);
            let want: Vec<usize> = (0..tops.len()).filter(|&n| tops[n] <= q).collect();
            assert_eq!(found, want, "{tops:?} <= {q}");
        }
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let index = TopIndex::default();
        assert_eq!(index.first_at_least(i64::MIN), None);
        let mut found = Vec::new();
        index.at_most(i64::MAX, &mut found);
        assert!(found.is_empty());
    }
}
