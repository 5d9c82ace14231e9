//! Which event of a line a field names.
//!
//! A field names its event by the event's record number in the thread's buffer, so
//! collection keeps the number of every event of a line until its fields are read.
//! Kept as `u64`s, those numbers were 8 bytes a record of memory newly touched at
//! every stop, a fifth of its page faults, which on a VM cost more than the decoding.
//! Numbers ascend, mostly by one or two (an event, then its fields), so each is kept
//! as its step from the one before in two bytes, with the whole number of every
//! [`BLOCK`]th event to start from.

/// Events between two whole numbers: a lookup adds up at most this many steps.
const BLOCK: usize = 64;

/// The ascending record numbers of a line's events.
pub(super) struct EventSeqs {
    /// Each event's step from the event before (the first's from 0); 0 where the step
    /// does not fit, and the whole number is in `far`.
    steps: Vec<u16>,
    /// The number of events 0, `BLOCK`, 2 × `BLOCK`, ...
    marks: Vec<u64>,
    /// (index, number) of the events whose step did not fit, ascending: those after
    /// long strings, or many samples, or the line's first event in a ring.
    far: Vec<(usize, u64)>,
    last: u64,
}

impl EventSeqs {
    /// Room for `events` numbers; pages reserved but never written cost nothing.
    pub(super) fn with_capacity(events: usize) -> EventSeqs {
        EventSeqs {
            steps: Vec::with_capacity(events),
            marks: Vec::with_capacity(events.div_ceil(BLOCK)),
            far: Vec::new(),
            last: 0,
        }
    }

    /// Adds the next event's number, greater than every one before.
    pub(super) fn push(&mut self, seq: u64) {
        let index = self.steps.len();
        debug_assert!(index == 0 || seq > self.last, "ascending");
        if index.is_multiple_of(BLOCK) {
            self.marks.push(seq);
        }
        // One comparison for "from 1 to u16::MAX": 0 wraps round to the top.
        let step = seq.wrapping_sub(self.last);
        if step.wrapping_sub(1) < u64::from(u16::MAX) {
            self.steps.push(step as u16);
        } else {
            self.steps.push(0);
            self.far.push((index, seq));
        }
        self.last = seq;
    }

    /// The index of the event numbered `seq`, if there is one.
    ///
    /// A field is written while its event is open, so it nearly always names the last
    /// event or one of the last few: the last is checked first, and the block is found
    /// by galloping back from the end. A binary search of a whole line missed the cache
    /// on every field and once took half of collection's time.
    pub(super) fn find(&self, seq: u64) -> Option<usize> {
        let len = self.steps.len();
        if len == 0 || seq > self.last {
            return None;
        }
        if seq == self.last {
            return Some(len - 1);
        }
        let block = last_at_most(&self.marks, seq)?;
        let mut index = block * BLOCK;
        let mut at = self.marks[block];
        let end = len.min(index + BLOCK);
        while at < seq && index + 1 < end {
            index += 1;
            at = self.number(index, at);
        }
        (at == seq).then_some(index)
    }

    /// The number of event `index`, given the one before it.
    fn number(&self, index: usize, before: u64) -> u64 {
        match self.steps[index] {
            0 => {
                let at = self.far.partition_point(|&(i, _)| i < index);
                self.far[at].1
            }
            step => before + u64::from(step),
        }
    }
}

/// The position of the last of the ascending `marks` not above `seq`, found by
/// galloping back from the end.
fn last_at_most(marks: &[u64], seq: u64) -> Option<usize> {
    let mut high = marks.len();
    let mut step = 1;
    while high > 0 && marks[high - 1] > seq {
        let low = high.saturating_sub(step);
        if marks[low] <= seq {
            // In `low..high`: the last not above `seq`.
            return Some(low + marks[low..high].partition_point(|&m| m <= seq) - 1);
        }
        high = low;
        step *= 2;
    }
    high.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(numbers: &[u64]) {
        let mut seqs = EventSeqs::with_capacity(numbers.len());
        for &n in numbers {
            seqs.push(n);
        }
        let top = numbers.last().map_or(10, |&n| n + 10);
        let probes = (0..top.min(5000)).chain(
            numbers
                .iter()
                .flat_map(|&n| [n.saturating_sub(1), n, n + 1]),
        );
        for seq in probes {
            assert_eq!(
                seqs.find(seq),
                numbers.binary_search(&seq).ok(),
                "seq {seq} of {} numbers",
                numbers.len()
            );
        }
    }

    #[test]
    fn finds_what_a_binary_search_finds() {
        check(&[]);
        check(&[0]);
        check(&[4]);
        check(&[0, 1, 2, 3]);
        // Gaps of every size, over many blocks: fields, strings, samples between.
        let numbers: Vec<u64> = (0..1000u64).map(|i| i * 3 + i % 2).collect();
        check(&numbers);
        let mut n = 0;
        let numbers: Vec<u64> = (0..2000u64)
            .map(|i| {
                n += match i % 7 {
                    0 => 70_000,
                    1 => u64::from(u16::MAX),
                    2 => u64::from(u16::MAX) + 1,
                    _ => 1 + i % 3,
                };
                n
            })
            .collect();
        check(&numbers);
    }

    #[test]
    fn a_ring_line_may_start_anywhere() {
        let start = 1 << 40;
        let numbers: Vec<u64> = (0..300u64).map(|i| start + 2 * i).collect();
        check(&numbers);
    }

    #[test]
    fn galloping_finds_the_last_mark_not_above() {
        let marks: Vec<u64> = (0..100u64).map(|i| i * 10).collect();
        for seq in 0..1100 {
            let expected = marks.iter().rposition(|&m| m <= seq);
            assert_eq!(last_at_most(&marks, seq), expected, "seq {seq}");
        }
        assert_eq!(last_at_most(&[], 3), None);
        assert_eq!(last_at_most(&[5], 3), None);
    }
}
