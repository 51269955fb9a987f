//! Change points in a series of results over time (one value per run, oldest first), found
//! deterministically.
//!
//! Method: the split-and-merge of Apache Otava, formerly Hunter (Fleming et al., "Hunter:
//! Using Change Point Detection to Hunt for Performance Regressions", ICPE 2023), built on
//! E-divisive means (Matteson & James, "A Nonparametric Approach for Multiple Change Point
//! Analysis of Multivariate Data", *JASA* 109, 2014):
//!
//! 1. **Split.** Slide a window of [`WINDOW`] values in steps of half a window. Within a window,
//!    repeatedly take the split `τ` (with right end `κ`) that maximises the E-divisive
//!    statistic `Q̂(X, Y) = 2/(n+m)·Σ|Xᵢ−Yⱼ| − 2m/((n+m)(n−1))·Σᵢ<ₖ|Xᵢ−Xₖ| − 2n/((n+m)(m−1))·Σⱼ<ₗ|Yⱼ−Yₗ|`
//!    over all segments between the change points found so far, and keep it while Student's
//!    t-test (pooled variance, sample standard deviations) between the two segments either side
//!    gives `p ≤` a relaxed threshold (10× `max_p` below 0.05, as Otava does), in place of
//!    E-divisive's permutation test: no randomness.
//! 2. **Merge.** Over the union of those "weak" change points, recompute each one's test against
//!    its neighbours (both after a removal), Bonferroni-adjusted for the positions the split
//!    could have taken between them (`hi − lo − 2·min_segment + 1`; Otava does not adjust);
//!    drop the weakest (largest p), and repeat until every one has `p ≤ max_p`. Segments shorter
//!    than `min_segment` are never proposed and get `p = 1`.
//!
//! The series is first standardised (`z = (x/M − m)/s`, `M` the largest `|x|`): both steps are
//! invariant under it, and no sum can under- or overflow. The relative change is
//! `(after − before)/|before|`, keeping a negative series' sign; a change from 0 has none.
//! Why the adjustment, and why not Welch's test: docs/notes/changepoint.md.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Window length of the split step (Otava's default).
pub(crate) const WINDOW: usize = 50;

/// Shortest segment `min_segment` may ask for: a t-test needs a variance on each side.
pub(crate) const MIN_SEGMENT_FLOOR: usize = 2;

/// How strict change-point detection is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePointOptions {
    /// Largest p-value a change point may have (Otava's default 0.001).
    pub max_p: f64,
    /// Fewest values on each side of a change point. Default 3: the fewest for which a t-test
    /// has some power, and enough that one odd run is not called a change; a change in the last
    /// two runs is reported once a third confirms it. Values below 2 are taken as 2.
    pub min_segment: usize,
}

impl ChangePointOptions {
    /// The fewest values a series needs before any change point can be found in it: two
    /// segments of `min_segment` (at least 2 each). A shorter series says nothing either way.
    pub fn fewest_values(&self) -> usize {
        2 * self.min_segment.max(MIN_SEGMENT_FLOOR)
    }
}

impl Default for ChangePointOptions {
    fn default() -> Self {
        ChangePointOptions {
            max_p: 0.001,
            min_segment: 3,
        }
    }
}

/// A change in the series' level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index of the first value of the new segment.
    pub index: usize,
    /// Student's t-test p-value between the segments either side, Bonferroni-adjusted for the
    /// positions the split could have taken between them (see the module doc).
    pub p_value: f64,
    /// Mean of the segment before (from the previous change point).
    pub mean_before: f64,
    /// Mean of the segment after (up to the next change point).
    pub mean_after: f64,
    /// Sample standard deviation before.
    pub sd_before: f64,
    /// Sample standard deviation after.
    pub sd_after: f64,
    /// `(mean_after − mean_before) / |mean_before|`: positive when the level rose, also for a
    /// negative series (Otava's `mean_after / mean_before − 1` flips the sign there); `None`
    /// when `mean_before` is 0, where no relative change exists (the change is "from 0").
    pub relative: Option<f64>,
}

/// Change points of `series`, in index order.
///
/// Returns none for a series too short to hold two segments of `min_segment`, all one value,
/// or holding a NaN or infinite value (leave failed runs out of the series). The series is
/// standardised first, so its scale and sign change nothing (1e-170 or 1e306 a value alike).
pub fn change_points(series: &[f64], opts: &ChangePointOptions) -> Vec<ChangePoint> {
    let min_segment = opts.min_segment.max(MIN_SEGMENT_FLOOR);
    let n = series.len();
    if n < opts.fewest_values() {
        return Vec::new();
    }
    let Some(standard) = Standardised::of(series) else {
        return Vec::new();
    };
    let series = &standard.values[..];
    let weak = weak_threshold(opts.max_p);
    let mut indices: Vec<usize> = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + WINDOW).min(n);
        let found = split_window(&series[start..end], weak, min_segment);
        let last = found.last().map_or(0, |&i| start + i);
        indices.extend(found.iter().map(|&i| start + i));
        start = last.max(start + WINDOW / 2);
    }
    indices.sort_unstable();
    indices.dedup();
    merge(&standard, indices, opts.max_p, min_segment)
}

/// The series standardised, `z = (x/M − m)/s` with `M = max |x|` and `m`, `s` the mean and
/// sample standard deviation of `x/M`, so that no sum of values, distances or squares under- or
/// overflows whatever the series' scale (1e-170 or near `f64::MAX`). E-divisive's split and the
/// t-test are invariant under this affine map.
struct Standardised {
    values: Vec<f64>,
    /// The series as given: segment means and spreads are read from it, not mapped back from
    /// `values` (mapping back would cancel a mean of 1 to 0 beside values of 1e308).
    raw: Vec<f64>,
}

impl Standardised {
    /// `None` for a series holding a NaN or an infinite value, or all one value.
    fn of(series: &[f64]) -> Option<Standardised> {
        if series.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let peak = series.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if peak == 0.0 {
            return None;
        }
        let unit: Vec<f64> = series.iter().map(|v| v / peak).collect();
        let (mean, sd) = mean_sd(&unit);
        if sd.is_nan() || sd <= 0.0 {
            return None;
        }
        Some(Standardised {
            values: unit.iter().map(|u| (u - mean) / sd).collect(),
            raw: series.to_vec(),
        })
    }

    /// Mean and sample standard deviation of `raw[range]`, in the series' units, each computed
    /// on values scaled by the segment's largest magnitude so no sum overflows.
    fn level(&self, range: std::ops::Range<usize>) -> (f64, f64) {
        let segment = &self.raw[range];
        let peak = segment.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if peak == 0.0 {
            return (0.0, 0.0);
        }
        let unit: Vec<f64> = segment.iter().map(|v| v / peak).collect();
        let (mean, sd) = mean_sd(&unit);
        (mean * peak, sd * peak)
    }
}

/// `(after − before) / |before|`, `None` when `before` is 0; computed as
/// `after/|before| − sign(before)` so that it overflows only where the ratio itself does.
fn relative(before: f64, after: f64) -> Option<f64> {
    (before != 0.0).then(|| after / before.abs() - before.signum())
}

/// Otava's relaxed first-pass threshold for "weak" change points.
fn weak_threshold(max_p: f64) -> f64 {
    if max_p < 0.05 {
        max_p * 10.0
    } else if max_p < 0.5 {
        max_p * 2.0
    } else {
        max_p
    }
}

/// E-divisive split of one window with t-test significance: indices (into `window`) of the
/// change points found, ascending.
fn split_window(window: &[f64], threshold: f64, min_segment: usize) -> Vec<usize> {
    let distances = Distances::new(window);
    let mut found: Vec<usize> = Vec::new();
    loop {
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(found.iter().copied())
            .chain(std::iter::once(window.len()))
            .collect();
        let best = bounds
            .windows(2)
            .filter_map(|seg| {
                let (tau, q) = distances.best_split(seg[0], seg[1], min_segment)?;
                Some((q, tau, seg[0], seg[1]))
            })
            // Largest Q̂; the earliest segment on ties.
            .fold(
                None,
                |best: Option<(f64, usize, usize, usize)>, c| match best {
                    Some(b) if b.0 >= c.0 => Some(b),
                    _ => Some(c),
                },
            );
        let Some((_, tau, lo, hi)) = best else { break };
        if student_p(&window[lo..tau], &window[tau..hi]) > threshold {
            break;
        }
        let at = found.partition_point(|&i| i < tau);
        found.insert(at, tau);
    }
    found
}

/// Row prefix sums of the distance matrix of a window: `prefix[j][i] = Σ_{k<i} |x_k − x_j|`,
/// so any `Σ_{k∈[a,b)} |x_k − x_j|` costs O(1).
struct Distances {
    prefix: Vec<Vec<f64>>,
}

impl Distances {
    fn new(x: &[f64]) -> Distances {
        let prefix = x
            .iter()
            .map(|&xj| {
                let mut row = Vec::with_capacity(x.len() + 1);
                let mut sum = 0.0;
                row.push(0.0);
                for &xk in x {
                    sum += (xk - xj).abs();
                    row.push(sum);
                }
                row
            })
            .collect();
        Distances { prefix }
    }

    /// `Σ_{k∈[a,b)} |x_k − x_j|`.
    fn sum(&self, j: usize, a: usize, b: usize) -> f64 {
        self.prefix[j][b] - self.prefix[j][a]
    }

    /// The split `τ` of `[lo, hi)` maximising `Q̂(x[lo..τ], x[τ..κ])` over `τ` and `κ ≤ hi`,
    /// both pieces at least `min_segment` long, with that maximum. O((hi − lo)²).
    fn best_split(&self, lo: usize, hi: usize, min_segment: usize) -> Option<(usize, f64)> {
        if hi - lo < 2 * min_segment {
            return None;
        }
        let mut best: Option<(usize, f64)> = None;
        for tau in lo + min_segment..=hi - min_segment {
            // Within-X sum of distances, Σ_{lo≤i<k<τ} |x_i − x_k|.
            let within_x: f64 = (lo..tau).map(|k| self.sum(k, lo, k)).sum();
            let nx = (tau - lo) as f64;
            let (mut cross, mut within_y) = (0.0, 0.0);
            for kappa in tau + 1..=hi {
                let j = kappa - 1; // the value Y gains
                cross += self.sum(j, lo, tau);
                within_y += self.sum(j, tau, j);
                if kappa - tau < min_segment {
                    continue;
                }
                let ny = (kappa - tau) as f64;
                let total = nx + ny;
                let q = 2.0 / total * cross
                    - 2.0 * ny / (total * (nx - 1.0)) * within_x
                    - 2.0 * nx / (total * (ny - 1.0)) * within_y;
                if best.is_none_or(|(_, b)| q > b) {
                    best = Some((tau, q));
                }
            }
        }
        best
    }
}

/// Describes every change point against its neighbours, then drops the weakest and
/// re-describes the two it separated, until all have `p ≤ max_p`.
fn merge(
    series: &Standardised,
    mut indices: Vec<usize>,
    max_p: f64,
    min_segment: usize,
) -> Vec<ChangePoint> {
    let around = |indices: &[usize], k: usize| {
        let lo = if k == 0 { 0 } else { indices[k - 1] };
        let hi = indices.get(k + 1).copied().unwrap_or(series.values.len());
        describe(series, lo, indices[k], hi, min_segment)
    };
    let mut points: Vec<ChangePoint> = (0..indices.len()).map(|k| around(&indices, k)).collect();
    loop {
        // The weakest: largest p, the earliest on ties.
        let weakest = points
            .iter()
            .enumerate()
            .fold(None, |w: Option<(usize, f64)>, (k, cp)| match w {
                Some((_, p)) if p >= cp.p_value => w,
                _ => Some((k, cp.p_value)),
            });
        match weakest {
            Some((k, p)) if p > max_p || max_p.is_nan() => {
                indices.remove(k);
                points.remove(k);
                if k > 0 {
                    points[k - 1] = around(&indices, k - 1);
                }
                if k < indices.len() {
                    points[k] = around(&indices, k);
                }
            }
            _ => return points,
        }
    }
}

/// The change point at `index` between segments `[lo, index)` and `[index, hi)`, in the
/// series' units.
fn describe(
    series: &Standardised,
    lo: usize,
    index: usize,
    hi: usize,
    min_segment: usize,
) -> ChangePoint {
    let (before, after) = (&series.values[lo..index], &series.values[index..hi]);
    let (mean_before, sd_before) = series.level(lo..index);
    let (mean_after, sd_after) = series.level(index..hi);
    let p_value = if before.len() < min_segment || after.len() < min_segment {
        1.0
    } else {
        let positions = (hi - lo + 1 - 2 * min_segment) as f64;
        (student_p(before, after) * positions).min(1.0)
    };
    ChangePoint {
        index,
        p_value,
        mean_before,
        mean_after,
        sd_before,
        sd_after,
        relative: relative(mean_before, mean_after),
    }
}

/// Mean and sample standard deviation (0 for fewer than 2 values) of a non-empty slice.
fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    if x.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

/// Two-sided p-value of Student's two-sample t-test (pooled variance) between two slices
/// with at least 3 values in all. Two constant segments give p = 0 when their values differ and
/// p = 1 when equal.
fn student_p(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, sa) = mean_sd(a);
    let (mb, sb) = mean_sd(b);
    let dof = na + nb - 2.0;
    let pooled = ((na - 1.0) * sa * sa + (nb - 1.0) * sb * sb) / dof;
    let se2 = pooled * (1.0 / na + 1.0 / nb);
    if se2 <= 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let t = (mb - ma) / se2.sqrt();
    let dist = StudentsT::new(0.0, 1.0, dof).expect("dof is positive");
    (2.0 * dist.sf(t.abs())).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (xorshift64*) with Box-Muller normals.
    struct Noise(u64);

    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let bits = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
            (bits as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    /// `levels[i]` for `lengths[i]` values each, with 1% Gaussian noise.
    fn steps(seed: u64, levels: &[f64], lengths: &[usize]) -> Vec<f64> {
        let mut noise = Noise(seed);
        levels
            .iter()
            .zip(lengths)
            .flat_map(|(&level, &len)| std::iter::repeat_n(level, len))
            .map(|level| level * (1.0 + 0.01 * noise.normal()))
            .collect()
    }

    fn indices(points: &[ChangePoint]) -> Vec<usize> {
        points.iter().map(|cp| cp.index).collect()
    }

    #[test]
    fn finds_planted_five_percent_steps_at_their_index() {
        for seed in 1..=20 {
            let series = steps(seed, &[100.0, 105.0, 100.0], &[60, 40, 70]);
            let found = change_points(&series, &ChangePointOptions::default());
            assert_eq!(indices(&found), vec![60, 100], "seed {seed}");
            assert!(found.iter().all(|cp| cp.p_value <= 0.001));
            assert!(
                (found[0].relative.unwrap() - 0.05).abs() < 0.01,
                "{:?}",
                found[0]
            );
            assert!(found[1].mean_after < found[1].mean_before);
        }
    }

    #[test]
    fn step_free_series_has_no_change_points() {
        for seed in 1..=50 {
            let series = steps(seed, &[100.0], &[200]);
            let found = change_points(&series, &ChangePointOptions::default());
            assert!(found.is_empty(), "seed {seed}: {found:?}");
        }
    }

    #[test]
    fn three_run_blip_in_noise_is_not_a_change() {
        // Without the split-position adjustment these step-free series gave change points at
        // [147, 150] (a 3-run blip) and [39, 67].
        for seed in [324_679, 110_866] {
            let series = steps(seed, &[100.0], &[200]);
            let found = change_points(&series, &ChangePointOptions::default());
            assert!(found.is_empty(), "seed {seed}: {found:?}");
        }
    }

    #[test]
    fn finds_a_step_in_the_last_runs() {
        let mut series = steps(42, &[100.0], &[40]);
        series.extend([110.0, 110.5, 109.8]);
        let found = change_points(&series, &ChangePointOptions::default());
        assert_eq!(indices(&found), vec![40]);
        // Mapped back from the standardised series: equal up to rounding.
        let mean = (110.0 + 110.5 + 109.8) / 3.0;
        assert!(
            (found[0].mean_after - mean).abs() < 1e-12 * mean,
            "{found:?}"
        );
    }

    #[test]
    fn degenerate_series_give_nothing() {
        let opts = ChangePointOptions::default();
        assert!(change_points(&[], &opts).is_empty());
        assert!(change_points(&[1.0; 5], &opts).is_empty());
        assert!(change_points(&[1.0; 100], &opts).is_empty());
        let mut with_nan = steps(3, &[100.0, 120.0], &[20, 20]);
        with_nan[7] = f64::NAN;
        assert!(change_points(&with_nan, &opts).is_empty());
    }

    #[test]
    fn constant_segments_change_with_p_zero() {
        let mut series = vec![10.0; 10];
        series.extend([12.0; 10]);
        let found = change_points(&series, &ChangePointOptions::default());
        assert_eq!(indices(&found), vec![10]);
        assert_eq!(found[0].p_value, 0.0);
        assert!((found[0].relative.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!((found[0].sd_before, found[0].sd_after), (0.0, 0.0));
    }

    /// Was: a step from 1 to 1e308 read "mean 0 ± 0 → 1e308, +0.0%" (the means were mapped back
    /// from the standardised series, cancelling 1 to 0), and a step from 0 read "+0.0%".
    #[test]
    fn extreme_steps_keep_their_means_and_a_step_from_zero_has_no_relative_change() {
        let mut series = vec![1.0; 10];
        series.extend([1e308; 10]);
        let found = change_points(&series, &ChangePointOptions::default());
        assert_eq!(indices(&found), vec![10]);
        assert_eq!((found[0].mean_before, found[0].mean_after), (1.0, 1e308));
        assert_eq!(found[0].relative, Some(1e308 - 1.0));
        let mut series = vec![0.0; 10];
        series.extend([5.0; 10]);
        let found = change_points(&series, &ChangePointOptions::default());
        assert_eq!(indices(&found), vec![10]);
        assert_eq!((found[0].mean_before, found[0].mean_after), (0.0, 5.0));
        assert_eq!(found[0].relative, None);
    }

    #[test]
    fn relative_change_keeps_its_sign_for_negative_means() {
        // −100 → −90 is a rise of 10%: it was reported as −10% (after/before − 1).
        let series = steps(7, &[-100.0, -90.0], &[20, 20]);
        let found = change_points(&series, &ChangePointOptions::default());
        assert_eq!(indices(&found), vec![20]);
        assert!(
            (found[0].relative.unwrap() - 0.1).abs() < 0.01,
            "{:?}",
            found[0]
        );
        assert!(found[0].mean_after > found[0].mean_before);
    }

    #[test]
    fn scale_of_the_series_changes_no_change_point() {
        // At 1e-170 the variances underflowed (p = 0 change points in step-free noise), at 1e306
        // they overflowed (a 10% step missed), and near f64::MAX the means overflowed (a panic
        // in the beta function).
        let opts = ChangePointOptions::default();
        for seed in 1..=8 {
            for unit in [
                steps(seed, &[1.0, 1.1], &[30, 30]),
                steps(seed, &[1.0], &[60]),
                steps(seed, &[1.0, 0.9, 1.0], &[25, 25, 25]),
            ] {
                let want = change_points(&unit, &opts);
                for scale in [1e-170, 1e-300, 1e306, f64::MAX / 1.2, -1e-170, -1e306] {
                    let scaled: Vec<f64> = unit.iter().map(|x| x * scale).collect();
                    let got = change_points(&scaled, &opts);
                    assert_eq!(
                        indices(&got),
                        indices(&want),
                        "seed {seed}, scale {scale:e}"
                    );
                    for (g, w) in got.iter().zip(&want) {
                        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 + 1e-6 * b.abs();
                        assert!(close(g.p_value, w.p_value), "{g:?} vs {w:?}");
                        // A negative scale turns a rise into a fall.
                        let sign = scale.signum();
                        assert!(
                            close(g.relative.unwrap(), sign * w.relative.unwrap()),
                            "{g:?} vs {w:?}"
                        );
                        assert!(
                            close(g.mean_before / scale, w.mean_before),
                            "{g:?} vs {w:?}"
                        );
                        assert!(
                            close(g.sd_after / scale.abs(), w.sd_after),
                            "{g:?} vs {w:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn student_t_matches_scipy() {
        // scipy.stats.ttest_ind([1,2,3,4], [2,4,6,8,10]).pvalue
        let p = student_p(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0, 8.0, 10.0]);
        assert!((p - 0.078_619_235_058_693_8).abs() < 1e-9, "{p}");
    }

    #[test]
    fn e_divisive_statistic_matches_direct_computation() {
        let x = [1.0, 3.0, 2.0, 8.0, 9.0, 7.5, 8.5];
        let d = Distances::new(&x);
        let (tau, q) = d.best_split(0, x.len(), 2).unwrap();
        assert_eq!(tau, 3);
        // Direct Q̂ for X = x[0..3], Y = x[3..7].
        let (xs, ys) = (&x[..3], &x[3..]);
        let cross: f64 = xs
            .iter()
            .flat_map(|a| ys.iter().map(move |b| (a - b).abs()))
            .sum();
        let pairs = |v: &[f64]| -> f64 {
            let mut s = 0.0;
            for i in 0..v.len() {
                for k in i + 1..v.len() {
                    s += (v[i] - v[k]).abs();
                }
            }
            s
        };
        let (n, m) = (3.0, 4.0);
        let direct = 2.0 / (n + m) * cross
            - 2.0 * m / ((n + m) * (n - 1.0)) * pairs(xs)
            - 2.0 * n / ((n + m) * (m - 1.0)) * pairs(ys);
        assert!((q - direct).abs() < 1e-12, "{q} vs {direct}");
    }
}
