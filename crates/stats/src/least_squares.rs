//! Bounded nonlinear least squares for three-parameter models: a projected
//! Levenberg-Marquardt, and the 3×3 linear algebra it and the covariance need.
//!
//! Method: Levenberg-Marquardt with Marquardt's diagonal scaling, `(JᵀJ + μ·diag(JᵀJ)) δ = Jᵀr`
//! (Marquardt, "An algorithm for least-squares estimation of nonlinear parameters", *SIAM J.
//! Appl. Math.* 11, 1963; Nocedal & Wright, *Numerical Optimization*, 2nd ed., §10.3). Bounds are
//! kept by projection onto the box after each step, with an active set: a parameter sitting on
//! a bound whose gradient pushes it outwards is held fixed for that step (Kelley, *Iterative
//! Methods for Optimization*, SIAM 1999, §5.5, projected Newton). Covariance is `(JᵀJ)⁻¹·s²`,
//! inverted after scaling to unit diagonal so that parameters of very different magnitude
//! (λ ≈ 10³, κ ≈ 10⁻⁴) do not lose precision.
//!
//! Hand-written: the maintained Rust LM crate (`levenberg-marquardt`, on nalgebra) has no
//! bounds, and a 3-parameter solver is small enough to own.

/// Number of parameters.
pub(crate) const P: usize = 3;

/// A 3×3 matrix, row-major.
pub(crate) type Matrix = [[f64; P]; P];

/// Iteration cap; the USL converges in tens of iterations.
const MAX_ITERATIONS: usize = 2_000;

/// A model `y = f(x; p)`: returns `f` and its gradient `∂f/∂p` at `x`.
pub(crate) trait Model {
    fn eval(&self, x: f64, p: &[f64; P]) -> (f64, [f64; P]);
}

/// Box constraints `lower[j] ≤ p[j] ≤ upper[j]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) lower: [f64; P],
    pub(crate) upper: [f64; P],
}

impl Bounds {
    fn project(&self, p: &mut [f64; P]) {
        for (j, v) in p.iter_mut().enumerate() {
            *v = v.clamp(self.lower[j], self.upper[j]);
        }
    }
}

/// Where a fit ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Solution {
    pub(crate) params: [f64; P],
    pub(crate) sse: f64,
    pub(crate) iterations: usize,
    pub(crate) converged: bool,
}

/// Minimises `Σ (y − f(x; p))²` over the box, starting from `start` (projected first).
///
/// A parameter that ends indistinguishable from a bound (setting it there raises the sum of
/// squares by no more than a relative 1e-12) is set to the bound: when the optimum is on a
/// bound with a zero gradient, LM only creeps towards it (κ = 1e-40 instead of 0).
pub(crate) fn fit(
    model: &impl Model,
    data: &[(f64, f64)],
    start: [f64; P],
    bounds: &Bounds,
) -> Solution {
    let mut solution = descend(model, data, start, bounds);
    for j in 0..P {
        for bound in [bounds.lower[j], bounds.upper[j]] {
            if !bound.is_finite() || solution.params[j] == bound {
                continue;
            }
            let mut snapped = solution.params;
            snapped[j] = bound;
            let sse = sum_of_squares(model, data, &snapped);
            if sse <= solution.sse * (1.0 + 1e-12) {
                solution.params = snapped;
                solution.sse = sse;
            }
        }
    }
    solution
}

/// The projected Levenberg-Marquardt iteration itself.
fn descend(model: &impl Model, data: &[(f64, f64)], start: [f64; P], bounds: &Bounds) -> Solution {
    let mut p = start;
    bounds.project(&mut p);
    let mut sse = sum_of_squares(model, data, &p);
    let mut mu = 1e-3;
    for iteration in 1..=MAX_ITERATIONS {
        let (jtj, jtr) = normal_equations(model, data, &p);
        // Active set: on a bound with the descent direction (Jᵀr) pointing out of the box.
        let mut free = [true; P];
        for j in 0..P {
            let at_lower = p[j] <= bounds.lower[j] && jtr[j] <= 0.0;
            let at_upper = p[j] >= bounds.upper[j] && jtr[j] >= 0.0;
            free[j] = !(at_lower || at_upper);
        }
        if free.iter().zip(jtr).all(|(&f, g)| !f || g == 0.0) {
            return Solution {
                params: p,
                sse,
                iterations: iteration,
                converged: true,
            };
        }
        // Inner loop: raise the damping until a step lowers the sum of squares.
        loop {
            let mut damped = jtj;
            for (j, row) in damped.iter_mut().enumerate() {
                row[j] += mu * jtj[j][j].max(f64::MIN_POSITIVE);
            }
            let step = solve(&damped, &jtr, &free);
            let mut trial = p;
            if let Some(step) = step {
                for j in 0..P {
                    trial[j] += step[j];
                }
                bounds.project(&mut trial);
            }
            let trial_sse = sum_of_squares(model, data, &trial);
            if step.is_some() && trial_sse < sse {
                let small_step = (0..P).all(|j| {
                    (trial[j] - p[j]).abs() <= 1e-12 * (p[j].abs() + 1e-12 * bounds.scale(j))
                });
                let small_gain = sse - trial_sse <= 1e-15 * sse;
                p = trial;
                sse = trial_sse;
                mu = (mu / 10.0).max(1e-15);
                if small_step || small_gain {
                    return Solution {
                        params: p,
                        sse,
                        iterations: iteration,
                        converged: true,
                    };
                }
                break;
            }
            mu *= 10.0;
            if mu > 1e20 {
                // No step in any direction lowers the sum: a (bounded) minimum.
                return Solution {
                    params: p,
                    sse,
                    iterations: iteration,
                    converged: true,
                };
            }
        }
    }
    Solution {
        params: p,
        sse,
        iterations: MAX_ITERATIONS,
        converged: false,
    }
}

impl Bounds {
    /// A magnitude for parameter `j` to judge absolute steps against when it sits at 0.
    fn scale(&self, j: usize) -> f64 {
        let span = self.upper[j] - self.lower[j];
        if span.is_finite() { span } else { 1.0 }
    }
}

/// `Σ (y − f(x; p))²`.
pub(crate) fn sum_of_squares(model: &impl Model, data: &[(f64, f64)], p: &[f64; P]) -> f64 {
    data.iter()
        .map(|&(x, y)| {
            let r = y - model.eval(x, p).0;
            r * r
        })
        .sum()
}

/// `JᵀJ` and `Jᵀr` at `p`, with `J` the Jacobian of `f` and `r = y − f`.
pub(crate) fn normal_equations(
    model: &impl Model,
    data: &[(f64, f64)],
    p: &[f64; P],
) -> (Matrix, [f64; P]) {
    let mut jtj = [[0.0; P]; P];
    let mut jtr = [0.0; P];
    for &(x, y) in data {
        let (f, g) = model.eval(x, p);
        let r = y - f;
        for i in 0..P {
            jtr[i] += g[i] * r;
            for j in 0..P {
                jtj[i][j] += g[i] * g[j];
            }
        }
    }
    (jtj, jtr)
}

/// Solves `a·x = b` for the free components, holding the others at 0 (Gaussian elimination
/// with partial pivoting). `None` when singular.
fn solve(a: &Matrix, b: &[f64; P], free: &[bool; P]) -> Option<[f64; P]> {
    let mut m = *a;
    let mut rhs = *b;
    for j in 0..P {
        if !free[j] {
            for row in m.iter_mut() {
                row[j] = 0.0;
            }
            m[j] = [0.0; P];
            m[j][j] = 1.0;
            rhs[j] = 0.0;
        }
    }
    for col in 0..P {
        let pivot = (col..P).max_by(|&i, &k| m[i][col].abs().total_cmp(&m[k][col].abs()))?;
        if m[pivot][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, pivot);
        rhs.swap(col, pivot);
        let pivot_row = m[col];
        for row in col + 1..P {
            let factor = m[row][col] / pivot_row[col];
            for (v, p) in m[row][col..].iter_mut().zip(&pivot_row[col..]) {
                *v -= factor * p;
            }
            rhs[row] -= factor * rhs[col];
        }
    }
    let mut x = [0.0; P];
    for row in (0..P).rev() {
        let tail: f64 = (row + 1..P).map(|k| m[row][k] * x[k]).sum();
        x[row] = (rhs[row] - tail) / m[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Inverse of a symmetric positive-definite matrix, computed on its unit-diagonal scaling.
/// `None` when it is singular or nearly so (reciprocal condition below 1e-13).
pub(crate) fn invert_spd(a: &Matrix) -> Option<Matrix> {
    let d: Vec<f64> = (0..P).map(|i| a[i][i].sqrt()).collect();
    if d.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
        return None;
    }
    let mut scaled = [[0.0; P]; P];
    for i in 0..P {
        for j in 0..P {
            scaled[i][j] = a[i][j] / (d[i] * d[j]);
        }
    }
    let mut inverse = [[0.0; P]; P];
    for col in 0..P {
        let mut unit = [0.0; P];
        unit[col] = 1.0;
        let x = solve(&scaled, &unit, &[true; P])?;
        for row in 0..P {
            inverse[row][col] = x[row];
        }
    }
    // A unit-diagonal SPD matrix has eigenvalues in (0, 3]; a huge inverse means singular.
    let largest = inverse.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest >= 1e13 {
        return None;
    }
    for i in 0..P {
        for j in 0..P {
            inverse[i][j] /= d[i] * d[j];
        }
    }
    Some(inverse)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `y = a + b·x + c·x²`: linear in its parameters, so LM must land on the exact answer.
    struct Quadratic;

    impl Model for Quadratic {
        fn eval(&self, x: f64, p: &[f64; P]) -> (f64, [f64; P]) {
            (p[0] + p[1] * x + p[2] * x * x, [1.0, x, x * x])
        }
    }

    const OPEN: Bounds = Bounds {
        lower: [f64::NEG_INFINITY; P],
        upper: [f64::INFINITY; P],
    };

    #[test]
    fn recovers_exact_parameters() {
        let data: Vec<(f64, f64)> = (0..10)
            .map(|i| {
                let x = f64::from(i);
                (x, 2.0 - 3.0 * x + 0.5 * x * x)
            })
            .collect();
        let s = fit(&Quadratic, &data, [0.0, 0.0, 0.0], &OPEN);
        assert!(s.converged);
        for (got, want) in s.params.iter().zip([2.0, -3.0, 0.5]) {
            assert!((got - want).abs() < 1e-8, "{:?}", s.params);
        }
    }

    #[test]
    fn holds_a_parameter_at_its_bound() {
        // The unconstrained optimum has c = -1; bounded at c >= 0 it must stop at 0, and then
        // (a, b) are the least-squares line through the data.
        let data: Vec<(f64, f64)> = (0..5)
            .map(|i| {
                let x = f64::from(i);
                (x, 1.0 + x - x * x)
            })
            .collect();
        let bounds = Bounds {
            lower: [f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0],
            upper: [f64::INFINITY; P],
        };
        let s = fit(&Quadratic, &data, [0.0, 0.0, 1.0], &bounds);
        assert_eq!(s.params[2], 0.0);
        // Least-squares line through (0,1) (1,1) (2,-1) (3,-5) (4,-11): b = -3, a = 3.
        assert!((s.params[1] + 3.0).abs() < 1e-8, "{:?}", s.params);
        assert!((s.params[0] - 3.0).abs() < 1e-8, "{:?}", s.params);
    }

    #[test]
    fn inverts_and_refuses_singular() {
        let a = [[4.0, 2.0, 0.0], [2.0, 3.0, 1.0], [0.0, 1.0, 2.0]];
        let inv = invert_spd(&a).unwrap();
        for (i, row) in a.iter().enumerate() {
            for j in 0..P {
                let product: f64 = row.iter().zip(&inv).map(|(x, col)| x * col[j]).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((product - want).abs() < 1e-12);
            }
        }
        let singular = [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        assert_eq!(invert_spd(&singular), None);
    }
}
