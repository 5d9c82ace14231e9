//! The statistics of a comparison: a distribution of per-step samples summed up, and
//! the Mann–Whitney U test between two of them, with Holm's adjustment when many rows
//! are tested at once.
//!
//! Mann–Whitney U is the test Go's `benchstat` uses for the same question: it asks
//! whether a value drawn from one side tends to be larger than one drawn from the
//! other, assumes no shape for either distribution (step times are skewed and often
//! bimodal), and is not moved by a single slow step (a warm-up, a checkpoint). The
//! p-value comes from the normal approximation with the tie correction (ops absent
//! from some steps give many zeros) and a continuity correction; with five or more
//! samples a side it is close to the exact one.

/// Summary of one side's samples (per-step values, ns or bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution {
    /// Number of samples (steps, or 1 for a whole session).
    pub n: usize,
    /// Median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Mean.
    pub mean: f64,
}

impl Distribution {
    /// The distribution of `samples` (empty: all zero, `n` 0).
    pub(crate) fn of(samples: &[f64]) -> Distribution {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = if sorted.is_empty() {
            0.0
        } else {
            sorted.iter().sum::<f64>() / sorted.len() as f64
        };
        Distribution {
            n: sorted.len(),
            median: quantile(&sorted, 0.5),
            p10: quantile(&sorted, 0.1),
            p90: quantile(&sorted, 0.9),
            mean,
        }
    }
}

/// The `q` quantile of sorted samples, interpolated linearly between the two nearest
/// ranks (the default of R and NumPy); 0 for no samples.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let at = q * last as f64;
    let below = at.floor() as usize;
    let above = (below + 1).min(last);
    let weight = at - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * weight
}

/// How a row was tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Mann–Whitney U over the steps (each side one run a host).
    MannWhitneyU,
    /// Welch's t over the runs' medians (or means), when each side pools several runs
    /// of a host: steps of one run share its machine state, so only runs tell how much
    /// a run varies.
    WelchT,
    /// The two-proportion z test of a function's share of the stack samples.
    TwoProportionZ,
}

impl Method {
    /// The method as named in JSON: `mann-whitney-u`, `welch-t`, `two-proportion-z`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::MannWhitneyU => "mann-whitney-u",
            Method::WelchT => "welch-t",
            Method::TwoProportionZ => "two-proportion-z",
        }
    }
}

/// The outcome of a test of `new` against `base`.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// The test made.
    pub method: Method,
    /// Mann–Whitney: U of the new side, the number of (base, new) pairs in which the
    /// new sample is the larger, ties counting one half. Welch: t. Two proportions:
    /// the new share minus the base's.
    pub statistic: f64,
    /// The standard score (Mann–Whitney, two proportions) or t (Welch): positive when
    /// the new side tends to be larger.
    pub z: f64,
    /// Two-sided p-value of the hypothesis that the sides do not differ.
    pub p: f64,
    /// `p` adjusted for the other rows tested with it (Holm–Bonferroni); equal to `p`
    /// where a row is tested alone (the step time).
    pub p_adjusted: f64,
}

/// Mann–Whitney U of `new` against `base`, both non-empty.
pub(crate) fn mann_whitney(base: &[f64], new: &[f64]) -> Test {
    let (n1, n2) = (base.len() as f64, new.len() as f64);
    let mut all: Vec<(f64, bool)> = base
        .iter()
        .map(|&v| (v, false))
        .chain(new.iter().map(|&v| (v, true)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Ranks from 1, tied values sharing the mean of the ranks they span.
    let mut rank_sum_new = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_sum_new += rank * all[i..=j].iter().filter(|(_, is_new)| *is_new).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_new - n2 * (n2 + 1.0) / 2.0;
    let pairs = n1 * n2;
    let n = n1 + n2;
    let variance = pairs / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    let (z, p) = if variance > 0.0 {
        let d = u - pairs / 2.0;
        // Continuity correction: U moves in steps of one half at least.
        let z = d.signum() * (d.abs() - 0.5).max(0.0) / variance.sqrt();
        (z, libm::erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0))
    } else {
        // Every sample equal: nothing tells the sides apart.
        (0.0, 1.0)
    };
    Test {
        method: Method::MannWhitneyU,
        statistic: u,
        z,
        p,
        p_adjusted: p,
    }
}

/// Welch's t test of `new` against `base`, two or more values each.
pub(crate) fn welch(base: &[f64], new: &[f64]) -> Test {
    let moments = |v: &[f64]| {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        (n, mean, var)
    };
    let ((n1, m1, v1), (n2, m2, v2)) = (moments(base), moments(new));
    let (e1, e2) = (v1 / n1, v2 / n2);
    let se = (e1 + e2).sqrt();
    let (t, p) = if se > 0.0 {
        let t = (m2 - m1) / se;
        let df = (e1 + e2) * (e1 + e2) / (e1 * e1 / (n1 - 1.0) + e2 * e2 / (n2 - 1.0));
        // P(|T| > |t|) for Student's t with df degrees of freedom.
        let p = regularized_beta(df / (df + t * t), df / 2.0, 0.5);
        (t, p.clamp(0.0, 1.0))
    } else if m1 == m2 {
        (0.0, 1.0)
    } else {
        // No spread on either side, and the means differ: nothing but the change.
        ((m2 - m1).signum() * f64::INFINITY, 0.0)
    };
    Test {
        method: Method::WelchT,
        statistic: t,
        z: t,
        p,
        p_adjusted: p,
    }
}

/// The regularized incomplete beta function I_x(a, b), from its continued fraction
/// (DLMF 8.17.22), evaluated by the modified Lentz method where it converges fast
/// (x below the mean of the distribution) and through I_x(a, b) = 1 - I_{1-x}(b, a)
/// above it.
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - regularized_beta(1.0 - x, b, a);
    }
    let ln_front = a * x.ln() + b * (1.0 - x).ln()
        - (libm::lgamma(a) + libm::lgamma(b) - libm::lgamma(a + b))
        - a.ln();
    // 1 / (1 + d1 / (1 + d2 / (1 + ...))), d_{2m+1} and d_{2m} as in DLMF 8.17.22:
    // the first term (k = 0) is the 1 over the first 1; f starts at TINY for the
    // missing leading term, and the first step brings it to 1.
    const TINY: f64 = 1e-300;
    let mut f = TINY;
    let (mut c, mut d) = (f, 0.0);
    for k in 0..400 {
        let coefficient = if k == 0 {
            1.0
        } else {
            let m = (k / 2) as f64;
            if k % 2 == 0 {
                m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
            } else {
                -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
            }
        };
        d = 1.0 + coefficient * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + coefficient / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let step = c * d;
        f *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    (ln_front.exp() * f).clamp(0.0, 1.0)
}

/// Adjusts the p-values of tests made together (Holm–Bonferroni): with m tests, the
/// smallest p is multiplied by m, the next by m - 1, and so on, each at least the one
/// before. The chance that any of them is called significant when no side differs
/// stays under the level chosen, however many rows are compared.
pub(crate) fn holm(tests: &mut [&mut Test]) {
    let m = tests.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| tests[a].p.total_cmp(&tests[b].p));
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * tests[i].p).min(1.0));
        tests[i].p_adjusted = running;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let d = Distribution::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((d.n, d.median, d.mean), (4, 2.5, 2.5));
        assert!((d.p10 - 1.3).abs() < 1e-12, "{}", d.p10);
        assert!((d.p90 - 3.7).abs() < 1e-12, "{}", d.p90);
        let one = Distribution::of(&[7.0]);
        assert_eq!((one.median, one.p10, one.p90), (7.0, 7.0, 7.0));
        assert_eq!(Distribution::of(&[]).n, 0);
    }

    /// Values computed with SciPy 1.17.1:
    /// `mannwhitneyu(new, base, use_continuity=True, method="asymptotic")`.
    #[test]
    fn u_and_p_match_scipy() {
        let base = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let new = [5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        let t = mann_whitney(&base, &new);
        // new 5..8 each beat 4..7 base values and tie one; 9..12 beat all 8.
        assert_eq!(t.statistic, 56.0);
        assert!((t.p - 0.013_313_002_763_816_655).abs() < 1e-12, "{}", t.p);
        assert!(t.z > 0.0);
        // The same samples the other way round: the same p, the opposite direction.
        let back = mann_whitney(&new, &base);
        assert_eq!(back.statistic, 8.0);
        assert!((back.p - t.p).abs() < 1e-12);
        assert!(back.z < 0.0);
        // Many ties (an op absent from some steps): the tie correction.
        let t = mann_whitney(
            &[0.0, 0.0, 1.0, 1.0, 2.0, 4.0, 6.0, 7.0, 9.0],
            &[0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 5.0],
        );
        assert_eq!(t.statistic, 22.5);
        assert!((t.p - 0.199_575_877_579_040_16).abs() < 1e-12, "{}", t.p);
    }

    /// SciPy 1.17.1: `ttest_ind(base, new, equal_var=False)` (its t is base - new)
    /// and `special.betainc`.
    #[test]
    fn welch_and_the_incomplete_beta_match_scipy() {
        for (base, new, t, p) in [
            (
                &[62.0, 41.6, 60.9][..],
                &[34.8, 53.4, 41.3][..],
                -1.360_067_114_584_052_6,
                0.247_875_034_703_625_43,
            ),
            (
                &[14.0, 15.0, 13.0, 16.0, 17.0, 12.0],
                &[10.0, 11.0, 12.0, 13.0, 9.0],
                -3.362_691_229_906_83,
                0.008_367_380_152_792_11,
            ),
            (
                &[5.0, 5.2, 5.1, 4.9],
                &[1.0, 1.1],
                -48.989_794_855_663_575,
                2.483_887_471_020_775_6e-6,
            ),
        ] {
            let got = welch(base, new);
            assert!((got.statistic - t).abs() < 1e-9, "{got:?}");
            assert!((got.p - p).abs() < 1e-9 * p.max(1e-3), "{got:?} vs {p}");
            assert_eq!(got.method, Method::WelchT);
        }
        for (x, a, b, want) in [
            (0.3, 2.5, 0.5, 0.018_927_124_071_945_658),
            (0.9, 0.5, 7.0, 0.999_999_978_070_215_7),
            (0.999, 30.0, 0.5, 0.807_237_306_159_536_9),
        ] {
            let got = regularized_beta(x, a, b);
            assert!(
                (got - want).abs() < 1e-12,
                "I_{x}({a}, {b}) = {got}, not {want}"
            );
        }
        // Runs that do not vary: a change is certain, no change is none.
        assert_eq!(welch(&[2.0, 2.0], &[3.0, 3.0]).p, 0.0);
        assert_eq!(welch(&[2.0, 2.0], &[2.0, 2.0]).p, 1.0);
    }

    #[test]
    fn equal_sides_are_not_told_apart() {
        let same = [3.0; 10];
        let t = mann_whitney(&same, &same);
        assert_eq!((t.p, t.z), (1.0, 0.0));
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let t = mann_whitney(&a, &a);
        assert_eq!(t.p, 1.0);
    }

    #[test]
    fn holm_multiplies_the_smallest_most_and_keeps_order() {
        let mut t: Vec<Test> = [0.01, 0.04, 0.03, 0.5]
            .into_iter()
            .map(|p| Test {
                method: Method::MannWhitneyU,
                statistic: 0.0,
                z: 0.0,
                p,
                p_adjusted: p,
            })
            .collect();
        let mut refs: Vec<&mut Test> = t.iter_mut().collect();
        holm(&mut refs);
        let adjusted: Vec<f64> = t.iter().map(|t| t.p_adjusted).collect();
        // Sorted: 0.01*4 = 0.04, 0.03*3 = 0.09, 0.04*2 = 0.08 -> 0.09, 0.5*1 -> 0.5.
        let want = [0.04, 0.09, 0.09, 0.5];
        for (got, want) in adjusted.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{adjusted:?}");
        }
    }
}
