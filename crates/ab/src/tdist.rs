//! Quantiles of Student's t and of the normal distribution, from the
//! regularized incomplete beta and gamma functions, inverted by bisection
//! (slow next to a rational approximation, but exact to the last few bits
//! for every df, integer or not, which Welch–Satterthwaite needs).

use std::f64::consts::PI;

/// Beyond this many degrees of freedom t is the normal to 1e-7 and the
/// incomplete beta loses precision, so the normal is used.
const NORMAL_DF: f64 = 1e7;

/// The `p` quantile of Student's t with `df` degrees of freedom (`df` > 0,
/// any real; `f64::INFINITY` for the normal). NaN when `p` is outside
/// (0, 1) or `df` is not positive.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df > NORMAL_DF {
        return normal_quantile(p);
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    invert_tail(1.0 - p, |t| t_upper_tail(t, df))
}

/// The `p` quantile of the standard normal distribution.
pub fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    if p < 0.5 {
        return -normal_quantile(1.0 - p);
    }
    invert_tail(1.0 - p, normal_upper_tail)
}

/// The x ≥ 0 with `tail(x) == q` for a decreasing `tail` with
/// `tail(0) == 0.5` (`q` ≤ 0.5), to the precision of an f64.
fn invert_tail(q: f64, tail: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while tail(hi) > q {
        lo = hi;
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if tail(mid) > q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(T > t) for t ≥ 0: half the regularized incomplete beta
/// I_{df/(df+t²)}(df/2, 1/2), computed directly so that small tails keep
/// their precision.
fn t_upper_tail(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    0.5 * inc_beta(x, 0.5 * df, 0.5)
}

/// P(Z > z) for z ≥ 0: half the regularized upper incomplete gamma
/// Q(1/2, z²/2) (that is, erfc(z/√2)/2).
fn normal_upper_tail(z: f64) -> f64 {
    0.5 * inc_gamma_upper(0.5, 0.5 * z * z)
}

/// ln Γ(x) for x > 0: shifted up to x ≥ 10, then Stirling's series
/// (its terms past x⁻¹¹ are below 1e-15 there).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    let mut shift = 0.0;
    let mut x = x;
    while x < 10.0 {
        shift += x.ln();
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv
        * (1.0 / 12.0
            - inv2
                * (1.0 / 360.0
                    - inv2
                        * (1.0 / 1260.0
                            - inv2
                                * (1.0 / 1680.0
                                    - inv2 * (1.0 / 1188.0 - inv2 * (691.0 / 360360.0))))));
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * PI).ln() + series - shift
}

/// The regularized incomplete beta I_x(a, b), by its continued fraction
/// (modified Lentz), on the side of the symmetry I_x(a,b) = 1 − I_{1−x}(b,a)
/// where the fraction converges fast.
pub(crate) fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

const TINY: f64 = 1e-300;

/// The continued fraction of I_x(a, b) without its front factor.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        // The even step, then the odd one.
        for coef in [
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ] {
            d = 1.0 + coef * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + coef / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularized upper incomplete gamma Q(a, x): its series below
/// x = a + 1, its continued fraction above.
pub(crate) fn inc_gamma_upper(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            n += 1.0;
            term *= x / n;
            sum += term;
            if term.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        1.0 - sum * ln_front.exp()
    } else {
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < 1e-16 {
                break;
            }
        }
        ln_front.exp() * h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want}");
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95% (p = 0.975), as printed to 7 significant digits.
        for (df, want) in [
            (1.0, 12.70620),
            (2.0, 4.302653),
            (5.0, 2.570582),
            (10.0, 2.228139),
            (30.0, 2.042272),
            (f64::INFINITY, 1.959964),
        ] {
            close(t_quantile(0.975, df), want, 5e-6);
        }
        // Other levels.
        close(t_quantile(0.95, 5.0), 2.015048, 5e-6);
        close(t_quantile(0.995, 10.0), 3.169273, 5e-6);
        close(t_quantile(0.9995, 3.0), 12.92398, 5e-5);
        close(t_quantile(0.90, 120.0), 1.288646, 5e-6);
        close(normal_quantile(0.995), 2.575829, 5e-7);
        close(normal_quantile(0.999_999), 4.753424, 5e-6);
    }

    #[test]
    fn t_quantiles_match_the_closed_forms_of_one_and_two_df() {
        for i in 1..200 {
            let p = i as f64 / 200.0;
            let one = (PI * (p - 0.5)).tan();
            let two = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
            close(t_quantile(p, 1.0), one, 1e-9 * one.abs().max(1.0));
            close(t_quantile(p, 2.0), two, 1e-9 * two.abs().max(1.0));
        }
    }

    #[test]
    fn fractional_df_fall_between_their_neighbours_and_tend_to_the_normal() {
        let q = |df| t_quantile(0.975, df);
        assert!(
            q(2.0) > q(2.5) && q(2.5) > q(3.0),
            "{} {} {}",
            q(2.0),
            q(2.5),
            q(3.0)
        );
        let mut last = q(1.0);
        for df in [1.5, 3.7, 8.2, 50.0, 1e3, 1e5, 1e7, 1e8] {
            assert!(q(df) < last, "decreasing in df at {df}");
            last = q(df);
        }
        close(q(1e6), 1.959964, 1e-5);
        close(t_quantile(0.025, 7.0), -t_quantile(0.975, 7.0), 1e-12);
        close(t_quantile(0.5, 4.0), 0.0, 1e-12);
    }

    #[test]
    fn out_of_range_arguments_give_nan() {
        assert!(t_quantile(0.0, 5.0).is_nan());
        assert!(t_quantile(1.0, 5.0).is_nan());
        assert!(t_quantile(0.9, 0.0).is_nan());
        assert!(t_quantile(0.9, f64::NAN).is_nan());
        assert!(normal_quantile(1.5).is_nan());
    }

    #[test]
    fn special_functions_match_known_values() {
        close(ln_gamma(0.5), 0.5 * PI.ln(), 1e-13);
        close(ln_gamma(1.0), 0.0, 1e-13);
        close(ln_gamma(5.0), 24f64.ln(), 1e-13);
        close(ln_gamma(100.5), 361.435_540_467_777_6, 1e-9);
        // I_x(1, 1) = x; I_x(a, 1) = x^a.
        close(inc_beta(0.3, 1.0, 1.0), 0.3, 1e-14);
        close(inc_beta(0.7, 2.5, 1.0), 0.7f64.powf(2.5), 1e-14);
        // Q(1, x) = e^-x.
        close(inc_gamma_upper(1.0, 0.5), (-0.5f64).exp(), 1e-14);
        close(inc_gamma_upper(1.0, 7.0), (-7.0f64).exp(), 1e-16);
    }
}
