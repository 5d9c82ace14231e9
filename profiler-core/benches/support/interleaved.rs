//! Cases timed in turn, one batch of each per round, over many rounds.
//!
//! On a shared VM the host's other tenants slow a run by up to 2× for seconds at a
//! time, and criterion times one case for seconds before the next, so two cases of
//! one run can see different machines. Here every case runs within a few
//! milliseconds of the others in each round, so a ratio or difference taken per round
//! compares them on the same machine; its median over rounds is what the goals read.

use std::time::Duration;

/// One case: runs `n` operations and returns the time they took (setup untimed).
pub type Case<'a> = (&'static str, &'a mut dyn FnMut(u64) -> Duration);

/// Nanoseconds per operation, per case, per round.
pub struct Rounds {
    names: Vec<&'static str>,
    ns: Vec<Vec<f64>>,
}

/// Runs every case once per round, `ops` operations each, after one untimed round.
pub fn interleaved(rounds: usize, ops: u64, cases: &mut [Case<'_>]) -> Rounds {
    for (_, run) in cases.iter_mut() {
        run(ops);
    }
    let mut ns = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for (i, (_, run)) in cases.iter_mut().enumerate() {
            ns[i].push(run(ops).as_nanos() as f64 / ops as f64);
        }
    }
    Rounds {
        names: cases.iter().map(|(name, _)| *name).collect(),
        ns,
    }
}

/// How a goal row compares two cases of a round.
#[derive(Clone, Copy)]
pub enum Cmp {
    Ratio,
    Difference,
}

impl Rounds {
    /// Prints each case's fastest round as `interleaved-fastest GROUP CASE ns`: for
    /// absolute targets, what the machine does when nothing beside it slows it.
    pub fn print_fastest(&self, group: &str) {
        for name in &self.names {
            let fastest = self.of(name).iter().copied().fold(f64::INFINITY, f64::min);
            println!("interleaved-fastest {group} {name} {fastest:.3}");
        }
    }

    fn of(&self, name: &str) -> &[f64] {
        let i = self.names.iter().position(|n| *n == name);
        &self.ns[i.unwrap_or_else(|| panic!("no case {name}"))]
    }

    /// Prints, for `group`, each case's median and each comparison's median with its
    /// interquartile range, as lines `report.py` reads:
    /// `interleaved GROUP CASE median q1 q3` and
    /// `interleaved GROUP A÷B|A-B median q1 q3`.
    pub fn print(&self, group: &str, comparisons: &[(&str, &str, Cmp)]) {
        println!(
            "\n{group}: interleaved, {} rounds (median [q1–q3])",
            self.ns[0].len()
        );
        for name in &self.names {
            let (m, q1, q3) = quartiles(self.of(name).to_vec());
            println!("interleaved {group} {name} {m:.3} {q1:.3} {q3:.3}");
        }
        for &(a, b, cmp) in comparisons {
            let (xa, xb) = (self.of(a), self.of(b));
            let (per_round, sign): (Vec<f64>, &str) = match cmp {
                Cmp::Ratio => (xa.iter().zip(xb).map(|(a, b)| a / b).collect(), "÷"),
                Cmp::Difference => (xa.iter().zip(xb).map(|(a, b)| a - b).collect(), "-"),
            };
            let (m, q1, q3) = quartiles(per_round);
            println!("interleaved {group} {a}{sign}{b} {m:.3} {q1:.3} {q3:.3}");
        }
    }
}

fn quartiles(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}
