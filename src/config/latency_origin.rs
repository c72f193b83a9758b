//! Where a run's latency comes from when it was not measured on the run's model: the one
//! phrase every output that uses such a latency prints (`run`'s headline and `--json`, the
//! sweep's closing text, `tune`'s answer, the report's headline and assumptions, `serve`'s
//! answer).
//!
//! A model without a fit of its own borrows another model's (`latency_presets::fit_for`: a
//! Claude sibling, or for the OpenAI and Gemini presets a Claude model of a similar tier). The
//! resolved experiment does not record which preset it started from, so the fit is recognised
//! from its parameters, as the report's assumptions recognise a preset: the latency uses the
//! borrowed fit when one of the fitted terms (overhead, prefill, cached and attention rates)
//! is the fit's, at its point fit or at one of its bootstrap refits (`latency.draw`). A file
//! that sets every one of them (or reads a fit of its own, `latency.from`) borrows nothing.

use super::latency_presets::{self, Fit, LatencyPreset};
use super::{dist_label, ExperimentSpec, LatencyParams, Quantity};

/// A latency fitted on another model than the one it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Borrowed {
    /// The model the experiment runs.
    pub model: String,
    /// The model the fit was made on.
    pub fitted_on: String,
    /// The model's own measured requests, when it has some that do not identify a fit.
    pub own_requests: Option<u32>,
}

impl Borrowed {
    /// `claude-sonnet-4.5's calibrated fit (no measurements of gpt-5.4)`.
    pub fn phrase(&self) -> String {
        let why = match self.own_requests {
            None => format!("no measurements of {}", self.model),
            Some(n) => format!("{}'s own {n} measured requests do not identify a fit", self.model),
        };
        format!("{}'s calibrated fit ({why})", self.fitted_on)
    }

    /// The headline line: `latency: claude-sonnet-4.5's calibrated fit (no measurements of
    /// gpt-5.4)`.
    pub fn line(&self) -> String {
        format!("latency: {}", self.phrase())
    }
}

/// The borrowed fit `exp` runs at, if its model's latency is another model's fit.
pub fn borrowed(exp: &ExperimentSpec) -> Option<Borrowed> {
    borrowed_for(exp, &exp.model.name)
}

/// The borrowed fit `model` runs at in `exp` with `model` set (a sweep's `model` axis): its
/// calibrated fit's, when `exp`'s latency is its own model's calibrated fit (which a swept
/// model replaces by its own) and that fit was made on another model than `model`.
pub fn borrowed_for(exp: &ExperimentSpec, model: &str) -> Option<Borrowed> {
    let base = exp.model.name.as_str();
    let (base_fit, _) = latency_presets::fit_for(base)?;
    let base = super::preset_for_api_id(base).unwrap_or(base);
    if !uses_fit(&exp.latency, base, base_fit) {
        return None;
    }
    let (fit, _) = latency_presets::fit_for(model)?;
    let model = super::preset_for_api_id(model).unwrap_or(model);
    if fit.fitted_on == model {
        return None;
    }
    let own = latency_presets::fits().iter().find(|f| f.fitted_on == model);
    Some(Borrowed {
        model: model.to_string(),
        fitted_on: fit.fitted_on.clone(),
        own_requests: own.map(|f| f.requests),
    })
}

/// `borrowed(exp)`'s phrase, or `None`.
pub fn phrase(exp: &ExperimentSpec) -> Option<String> {
    borrowed(exp).map(|b| b.phrase())
}

/// Whether one of `l`'s fitted terms is `model`'s calibrated fit's (`fit`), at its point fit
/// or one of its refits.
fn uses_fit(l: &LatencyParams, model: &str, fit: &Fit) -> bool {
    let at = |draw: Option<usize>| {
        latency_presets::params_draw(model, LatencyPreset::Calibrated, draw)
            .is_some_and(|p| shares_a_fitted_term(l, &p))
    };
    at(None) || (0..fit.draws.len()).any(|k| at(Some(k)))
}

fn shares_a_fitted_term(a: &LatencyParams, b: &LatencyParams) -> bool {
    let (d, n) = (Quantity::Duration, Quantity::Number);
    // A rate the fit does not identify is none (infinite): a file's own latency has it too.
    let fitted =
        |x: &crate::dist::Dist| !matches!(x, crate::dist::Dist::Const(r) if r.is_infinite());
    let same = |x: &crate::dist::Dist, y: &crate::dist::Dist| dist_label(x, n) == dist_label(y, n);
    dist_label(&a.overhead_us, d) == dist_label(&b.overhead_us, d)
        || same(&a.prefill_rate, &b.prefill_rate)
        || (fitted(&b.cached_rate) && same(&a.cached_rate, &b.cached_rate))
        || (fitted(&b.attention_rate) && same(&a.attention_rate, &b.attention_rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(src: &str) -> ExperimentSpec {
        let t = crate::config::parse_table(src, "<test>").unwrap();
        crate::config::resolve(&t, "<test>").unwrap()
    }

    #[test]
    fn a_borrowed_fit_is_named_and_an_own_fit_or_a_file_of_rates_is_not() {
        let gpt = "model = \"gpt-5.4\"\n[cache]\npolicy = \"openai\"\n";
        let b = borrowed(&exp(gpt)).expect("gpt-5.4 borrows a Claude fit");
        assert_ne!(b.fitted_on, "gpt-5.4");
        assert!(b.line().starts_with(&format!("latency: {}'s calibrated fit", b.fitted_on)));
        assert!(b.phrase().ends_with("(no measurements of gpt-5.4)"), "{}", b.phrase());
        let drawn = exp(&format!("{gpt}[latency]\ndraw = 3\n"));
        assert_eq!(borrowed(&drawn), Some(b));
        assert_eq!(borrowed(&exp("model = \"claude-sonnet-4.5\"\n")), None);
        let own = "[latency]\noverhead = \"const(1s)\"\nprefill_rate = \"const(5000)\"\n\
                   cached_rate = \"const(50000)\"\nattention_rate = \"const(1e12)\"\n";
        assert_eq!(borrowed(&exp(&format!("{gpt}{own}"))), None);
        let opus = borrowed(&exp("model = \"claude-opus-4.1\"\n")).expect("opus 4.1 borrows");
        assert!(opus.phrase().contains("claude-opus-4.1's own 14 measured requests"), "{opus:?}");
    }
}
