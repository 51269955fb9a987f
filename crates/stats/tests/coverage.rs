//! Do the intervals cover, and does the test hold its size? Seeded simulations (no randomness
//! between runs), with tolerances of about three binomial standard errors.

use stats::{Sample, hodges_lehmann, mann_whitney_u};

const REPS: usize = 2_000;

/// xorshift64* with Box-Muller normals and inverse-CDF exponentials.
struct Rng(u64);

impl Rng {
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

    fn exponential(&mut self) -> f64 {
        -self.uniform().ln()
    }

    fn sample(&mut self, n: usize, mut draw: impl FnMut(&mut Rng) -> f64) -> Sample {
        Sample::new((0..n).map(|_| draw(self)).collect()).unwrap()
    }
}

/// Three binomial standard errors of a proportion `p` over [`REPS`].
fn slack(p: f64) -> f64 {
    3.0 * (p * (1.0 - p) / REPS as f64).sqrt()
}

#[test]
fn median_interval_covers_a_skewed_median() {
    // Exponential(1) has median ln 2; the interval must not care about the skew.
    let mut rng = Rng(0x5EED_0001);
    for n in [10, 20, 51] {
        let covered = (0..REPS)
            .filter(|_| {
                rng.sample(n, Rng::exponential)
                    .median_interval(0.95)
                    .contains(std::f64::consts::LN_2)
            })
            .count() as f64
            / REPS as f64;
        assert!(covered >= 0.95 - slack(0.95), "n = {n}: coverage {covered}");
    }
}

#[test]
fn shift_interval_covers_the_true_shift() {
    let mut rng = Rng(0x5EED_0002);
    // 12 vs 12 reads the exact U distribution, 60 vs 60 its normal approximation.
    for n in [12, 60] {
        let covered = (0..REPS)
            .filter(|_| {
                let a = rng.sample(n, |r| 100.0 + r.normal());
                let b = rng.sample(n, |r| 103.0 + r.normal());
                hodges_lehmann(&a, &b, 0.95).contains(3.0)
            })
            .count() as f64
            / REPS as f64;
        assert!(covered >= 0.95 - slack(0.95), "n = {n}: coverage {covered}");
    }
}

#[test]
fn u_test_holds_its_size_under_no_change() {
    let mut rng = Rng(0x5EED_0003);
    for (n, exact) in [(10, true), (60, false)] {
        let rejected = (0..REPS)
            .filter(|_| {
                let a = rng.sample(n, Rng::exponential);
                let b = rng.sample(n, Rng::exponential);
                let t = mann_whitney_u(&a, &b);
                assert_eq!(t.exact, exact);
                t.p_value < 0.05
            })
            .count() as f64
            / REPS as f64;
        assert!(rejected <= 0.05 + slack(0.05), "n = {n}: size {rejected}");
    }
}

#[test]
fn u_test_has_power_against_a_real_shift() {
    // One standard deviation at 10 vs 10: a t-test has power ≈ 0.56, the U test a bit less.
    let mut rng = Rng(0x5EED_0004);
    let rejected = (0..REPS)
        .filter(|_| {
            let a = rng.sample(10, Rng::normal);
            let b = rng.sample(10, |r| 1.0 + r.normal());
            mann_whitney_u(&a, &b).p_value < 0.05
        })
        .count() as f64
        / REPS as f64;
    assert!((0.45..0.62).contains(&rejected), "power {rejected}");
}
