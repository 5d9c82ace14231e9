//! The lanes of one line: where each slice goes so that slices on a lane nest.
//!
//! The rule is greedy and fixed by the tests: before a slice starts, every lane closes
//! the slices that ended by then (lanes in order); the slice then goes to the first
//! lane whose innermost open slice encloses it, or that is empty, else to a new lane.
//! Found by scanning the lanes, that is quadratic when many slices overlap without
//! nesting (a staircase of n slices makes n lanes). [`TopIndex`] answers both questions
//! in O(log lanes), so a line costs O(n log n) whatever its shape.

use std::borrow::Cow;

use super::model::{Thread, Visitor};

/// (end ps, seq, root seq) of an open slice.
pub(super) type Open = (i64, u64, u64);

/// One lane of a line: its thread id, and where its innermost open slice is in
/// [`Lanes::opens`] ([`NONE`] when nothing is open on it).
#[derive(Clone, Copy)]
struct Lane {
    tid: u32,
    top: u32,
}

/// No open slice.
const NONE: u32 = u32::MAX;

/// An open slice on some lane, and the one it is nested in there.
#[derive(Clone, Copy)]
struct Entry {
    open: Open,
    below: u32,
}

/// A line's lanes, and the index over where their innermost open slices end.
///
/// A line can overlap itself a million times (a million lanes, each with a slice
/// open), so a lane is 8 bytes: its thread id, and its stack of open slices threaded
/// through one vector shared by all lanes (each entry naming the one below it, freed
/// entries reused), 32 bytes an open slice. The [`Thread`] a visitor is handed is
/// made when asked for: a lane's name is the line's with ` (n)` after it, and a
/// `String` and a vector kept for each lane were most of the memory of converting such
/// a line. The last extra lane's thread is kept, so a line that alternates between
/// two lanes names the second once.
///
/// Most lines have one lane; the index is built only when a second lane is added, so
/// that ordinary profiles pay nothing for it. The small methods are `#[inline]`: the
/// walk is instantiated in the exporters' callers' crates, where they could not be
/// inlined otherwise.
pub(super) struct Lanes<'a> {
    /// The line's process.
    pid: u32,
    /// The line's id in its plane.
    line_id: i64,
    /// The line's name, which its first lane's thread has.
    base: Cow<'a, str>,
    /// The first lane's thread, once it has one.
    first: Option<Thread<'a>>,
    /// The extra lane's thread made last.
    extra: Option<Thread<'a>>,
    lanes: Vec<Lane>,
    /// Every lane's open slices.
    opens: Vec<Entry>,
    /// Entries of `opens` free for reuse, chained through `below` from this one.
    free: u32,
    /// Kept up to date while there are two lanes or more.
    tops: TopIndex,
    /// Lanes found to close (reused between slices).
    closing: Vec<usize>,
}

impl<'a> Lanes<'a> {
    /// The lanes of line `line_id`, named `base`, in process `pid`: none yet.
    pub(super) fn new(pid: u32, line_id: i64, base: Cow<'a, str>) -> Self {
        Lanes {
            pid,
            line_id,
            base,
            first: None,
            extra: None,
            lanes: Vec::new(),
            opens: Vec::new(),
            free: NONE,
            tops: TopIndex::default(),
            closing: Vec::new(),
        }
    }

    /// How many lanes there are.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Lane `n`'s thread.
    #[inline]
    pub(super) fn thread(&mut self, n: usize) -> &Thread<'a> {
        let Lanes {
            pid,
            line_id,
            base,
            first,
            extra,
            lanes,
            ..
        } = self;
        thread_of((*pid, *line_id), base, first, extra, n, lanes[n].tid)
    }

    /// The innermost slice open on lane `n`.
    #[inline]
    pub(super) fn innermost(&self, n: usize) -> Option<Open> {
        let top = self.lanes[n].top;
        (top != NONE).then(|| self.opens[top as usize].open)
    }

    /// Adds a lane shown as thread `tid`, and returns its index.
    pub(super) fn add(&mut self, tid: u32) -> usize {
        self.lanes.push(Lane { tid, top: NONE });
        if self.lanes.len() == 2 {
            // The first lane's state so far, then the new one's.
            let n = self.tops.push();
            self.tops.set(n, self.top_end(0));
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
        match self.lanes.len() {
            0 => None,
            1 => (end <= self.top_end(0)).then_some(0),
            _ => self.tops.first_at_least(end),
        }
    }

    /// Opens a slice on lane `n`; the caller checked that it nests there.
    #[inline]
    pub(super) fn open(&mut self, n: usize, slice: Open) {
        let entry = Entry {
            open: slice,
            below: self.lanes[n].top,
        };
        let at = if self.free != NONE {
            let at = self.free;
            self.free = self.opens[at as usize].below;
            self.opens[at as usize] = entry;
            at
        } else {
            // Over 4 billion slices open at once cannot be held anyway.
            let at = u32::try_from(self.opens.len()).unwrap_or(NONE - 1);
            self.opens.push(entry);
            at
        };
        self.lanes[n].top = at;
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
        if self.top_end(n) > t {
            return Ok(());
        }
        let Lanes {
            pid,
            line_id,
            base,
            first,
            extra,
            lanes,
            opens,
            free,
            ..
        } = self;
        let thread = thread_of((*pid, *line_id), base, first, extra, n, lanes[n].tid);
        let mut result = Ok(());
        loop {
            let top = lanes[n].top;
            if top == NONE {
                break;
            }
            let Entry {
                open: (end, _, _),
                below,
            } = opens[top as usize];
            if end > t {
                break;
            }
            lanes[n].top = below;
            opens[top as usize].below = *free;
            *free = top;
            result = visitor.slice_end(thread, end);
            if result.is_err() {
                break;
            }
        }
        if self.lanes.len() >= 2 {
            self.tops.set(n, self.top_end(n));
        }
        result
    }

    /// Where the innermost open slice of lane `n` ends ([`EMPTY`] for none).
    #[inline]
    fn top_end(&self, n: usize) -> i64 {
        self.innermost(n).map_or(EMPTY, |o| o.0)
    }
}

/// The thread of lane `n` (thread id `tid`) of a line named `base`: the line's first
/// thread, or the extra lane's kept in `extra`, made anew when it is another lane's.
fn thread_of<'t, 'a>(
    (pid, line_id): (u32, i64),
    base: &Cow<'a, str>,
    first: &'t mut Option<Thread<'a>>,
    extra: &'t mut Option<Thread<'a>>,
    n: usize,
    tid: u32,
) -> &'t Thread<'a> {
    let make = |name| Thread {
        pid,
        line_id,
        tid,
        name,
        key: u64::from(pid) << 32 | u64::from(tid),
        lane: n as u32,
    };
    if n == 0 {
        return first.get_or_insert_with(|| make(base.clone()));
    }
    let thread = match extra.take() {
        Some(thread) if thread.lane as usize == n => thread,
        _ => make(Cow::Owned(format!("{base} ({})", n + 1))),
    };
    extra.insert(thread)
}

/// The top of a lane with nothing open: every slice fits there, nothing closes.
const EMPTY: i64 = i64::MAX;

/// A segment tree over the lanes' innermost open ends, holding both the minimum (which
/// lanes have something to close) and the maximum (the first lane a slice fits in) of
/// each range. It is kept level by level, each level a vector that grows at its end
/// as lanes are added: adding a lane never moves or rebuilds the others (a tree laid
/// out in one array, leaves after the inner nodes, was rebuilt at twice the size
/// whenever it filled, the old one held meanwhile), and a leaf is one end, not a
/// (min, max) pair: 24 bytes a lane in all.
#[derive(Default)]
pub(super) struct TopIndex {
    /// Each lane's innermost open end.
    leaves: Vec<i64>,
    /// `inner[0][i]` is the (min, max) of leaves `2i` and `2i + 1`; `inner[k][i]` of
    /// `inner[k - 1][2i]` and `inner[k - 1][2i + 1]`. The last level has one node, the
    /// root, unless there is at most one leaf (then there are no levels).
    inner: Vec<Vec<(i64, i64)>>,
}

fn join(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0.min(b.0), a.1.max(b.1))
}

impl TopIndex {
    /// Adds an empty lane and returns its index.
    fn push(&mut self) -> usize {
        let n = self.leaves.len();
        self.leaves.push(EMPTY);
        // Make room for the new leaf's ancestors: each level one node per pair below.
        let mut below = self.leaves.len();
        let mut level = 0;
        while below > 1 {
            let len = below.div_ceil(2);
            if level == self.inner.len() {
                self.inner.push(Vec::new());
            }
            if self.inner[level].len() < len {
                self.inner[level].push((EMPTY, EMPTY));
            }
            below = len;
            level += 1;
        }
        // Its ancestors may be new nodes, and a new root joins the old one: update
        // every level, not only the changed ones.
        self.update(n, EMPTY, true);
        n
    }

    /// Node `i` of level `level` (level 0 being the leaves), as (min, max); `None`
    /// past the level's end.
    #[inline]
    fn node(&self, level: usize, i: usize) -> Option<(i64, i64)> {
        match level {
            0 => self.leaves.get(i).map(|&top| (top, top)),
            _ => self.inner[level - 1].get(i).copied(),
        }
    }

    /// The root: (min, max) over every lane.
    #[inline]
    fn root(&self) -> Option<(i64, i64)> {
        match self.inner.last() {
            Some(top) => top.first().copied(),
            None => self.node(0, 0),
        }
    }

    /// Lane `n`'s innermost open slice now ends at `top` ([`EMPTY`] for none).
    #[inline]
    fn set(&mut self, n: usize, top: i64) {
        self.update(n, top, false);
    }

    /// Sets lane `n`'s top and its ancestors, up to the first that does not change
    /// unless `all`.
    fn update(&mut self, n: usize, top: i64, all: bool) {
        self.leaves[n] = top;
        let mut i = n;
        for level in 1..=self.inner.len() {
            let left = self.node(level - 1, i & !1);
            let right = self.node(level - 1, i | 1);
            let node = match (left, right) {
                (Some(l), Some(r)) => join(l, r),
                (Some(l), None) => l,
                _ => (EMPTY, EMPTY),
            };
            i /= 2;
            let slot = &mut self.inner[level - 1][i];
            if *slot == node && !all {
                break; // nothing above changes either
            }
            *slot = node;
        }
    }

    /// The first lane whose top is at least `end`.
    #[inline]
    fn first_at_least(&self, end: i64) -> Option<usize> {
        if self.root()?.1 < end {
            return None;
        }
        let mut i = 0;
        for level in (0..self.inner.len()).rev() {
            // Node `i` of level `level + 1` qualifies; find its first child that does.
            let left = 2 * i;
            i = match self.node(level, left) {
                Some((_, max)) if max >= end => left,
                _ => left + 1,
            };
        }
        Some(i)
    }

    /// Whether some lane's top is at most `t`.
    #[inline]
    fn any_at_most(&self, t: i64) -> bool {
        self.root().is_some_and(|(min, _)| min <= t)
    }

    /// Appends to `out`, in order, every lane whose top is at most `t`.
    fn at_most(&self, t: i64, out: &mut Vec<usize>) {
        if !self.leaves.is_empty() {
            self.collect(self.inner.len(), 0, t, out);
        }
    }

    fn collect(&self, level: usize, i: usize, t: i64, out: &mut Vec<usize>) {
        match self.node(level, i) {
            Some((min, _)) if min <= t => {}
            _ => return,
        }
        if level == 0 {
            out.push(i);
            return;
        }
        // Depth is log2(lanes): the recursion is bounded.
        self.collect(level - 1, 2 * i, t, out);
        self.collect(level - 1, 2 * i + 1, t, out);
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
