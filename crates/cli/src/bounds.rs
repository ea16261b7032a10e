//! Range checks for numeric flags, at the clap level: a value outside its
//! range (or not finite) is a usage error with a clear message, never a
//! panic or an allocation abort further in.

/// An integer flag within `lo..=hi`.
pub fn usize_in(
    lo: usize,
    hi: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: usize = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number"))?;
        if v < lo || v > hi {
            return Err(format!("{v} is outside {lo}..={hi}"));
        }
        Ok(v)
    }
}

/// A finite number within `lo..=hi` (`lo` excluded when `open_low`).
pub fn f64_in(
    lo: f64,
    hi: f64,
    open_low: bool,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number"))?;
        let low_ok = if open_low { v > lo } else { v >= lo };
        if !v.is_finite() || !low_ok || v > hi {
            return Err(format!(
                "{s} must be a finite number in {}{lo}, {hi}]",
                if open_low { "(" } else { "[" }
            ));
        }
        Ok(v)
    }
}

/// [`f64_in`] as f32.
pub fn f32_in(
    lo: f64,
    hi: f64,
    open_low: bool,
) -> impl Fn(&str) -> Result<f32, String> + Clone + Send + Sync + 'static {
    let f = f64_in(lo, hi, open_low);
    move |s: &str| f(s).map(|v| v as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_and_non_finite_values_are_refused() {
        let k = usize_in(1, 100_000);
        assert_eq!(k("5"), Ok(5));
        assert!(k("0").is_err() && k("4294967295").is_err() && k("-1").is_err() && k("x").is_err());
        let t = f64_in(0.0, 86_400.0, true);
        assert_eq!(t("1.5"), Ok(1.5));
        for bad in ["-1", "0", "nan", "NaN", "inf", "1e300"] {
            assert!(t(bad).is_err(), "{bad}");
        }
    }
}
