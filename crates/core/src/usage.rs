//! What an answer cost, as far as its backend says (docs/CONTRACT.md §8b): tokens and dollars
//! from the CLIs' own events and Ollama's counts, and the model that answered. A backend records
//! them on its run's [`RunReport`] as it reads them; the relay hands them to the caller with the
//! answer.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Serialize;

/// Tokens and cost of one answer; a field the backend did not report is `None` (left out of JSON). Input tokens
/// include the cached ones (`cachedInputTokens` is part of `inputTokens`, as the AI SDK counts
/// them), whichever way the vendor reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_numbers::optional_count")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_numbers::optional_count")]
    pub output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_numbers::optional_count")]
    pub cached_input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_numbers::optional_count")]
    pub reasoning_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_numbers::optional_amount")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Whether the backend reported nothing at all.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }

    /// This usage and `more` together (a CLI that reports each step of a turn): a field is
    /// known when either knows it.
    pub fn plus(self, more: Usage) -> Usage {
        fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        Usage {
            input_tokens: sum(self.input_tokens, more.input_tokens),
            output_tokens: sum(self.output_tokens, more.output_tokens),
            cached_input_tokens: sum(self.cached_input_tokens, more.cached_input_tokens),
            reasoning_tokens: sum(self.reasoning_tokens, more.reasoning_tokens),
            cost_usd: sum(self.cost_usd, more.cost_usd),
        }
    }
}

/// A count from a JSON event: a non-negative integer, else unknown.
pub fn count(value: Option<&serde_json::Value>) -> Option<u64> {
    value.and_then(serde_json::Value::as_u64)
}

/// What a run said about itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reported {
    /// `None` when the backend reported no usage.
    pub usage: Option<Usage>,
    /// The model that answered, when the backend named it.
    pub model: Option<String>,
}

/// Where a run records what it said about itself; cheap to clone (clones share it). Each run of
/// a call has its own (`relay::run_backend`).
#[derive(Debug, Clone, Default)]
pub struct RunReport(Arc<Mutex<Reported>>);

impl RunReport {
    /// What the run said, replacing what was recorded.
    pub fn record(&self, reported: Reported) {
        self.with(|recorded| *recorded = reported);
    }

    /// The usage of the whole run so far, replacing what was recorded (a CLI's total).
    pub fn usage(&self, usage: Usage) {
        self.with(|reported| reported.usage = Some(usage));
    }

    /// Usage of one more step of the run, added to what was recorded.
    pub fn add_usage(&self, usage: Usage) {
        self.with(|reported| {
            reported.usage = Some(reported.usage.unwrap_or_default().plus(usage));
        });
    }

    pub fn model(&self, model: &str) {
        if !model.is_empty() {
            self.with(|reported| reported.model = Some(model.to_string()));
        }
    }

    /// What was recorded.
    pub fn reported(&self) -> Reported {
        let mut reported = Reported::default();
        self.with(|recorded| reported = recorded.clone());
        reported.usage = reported.usage.filter(|usage| !usage.is_empty());
        reported
    }

    fn with(&self, change: impl FnOnce(&mut Reported)) {
        // A panic elsewhere while it was held leaves plain data behind: still usable.
        let mut reported = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut reported);
    }
}

/// The same report (clones of one), so requests stay comparable.
impl PartialEq for RunReport {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_add_up_field_by_field_and_unknowns_stay_unknown() {
        let report = RunReport::default();
        let step = Usage {
            input_tokens: Some(10),
            output_tokens: Some(5),
            cost_usd: Some(0.25),
            ..Usage::default()
        };
        report.add_usage(step);
        report.add_usage(Usage {
            reasoning_tokens: Some(3),
            ..step
        });
        report.model("m1");
        report.model("");
        let reported = report.reported();
        assert_eq!(reported.model.as_deref(), Some("m1"));
        assert_eq!(
            reported.usage,
            Some(Usage {
                input_tokens: Some(20),
                output_tokens: Some(10),
                cached_input_tokens: None,
                reasoning_tokens: Some(3),
                cost_usd: Some(0.5),
            })
        );
    }

    #[test]
    fn a_total_replaces_the_steps_and_nothing_reported_is_none() {
        let report = RunReport::default();
        assert_eq!(report.reported(), Reported::default());
        report.add_usage(Usage::default());
        assert_eq!(report.reported().usage, None);
        let total = Usage {
            output_tokens: Some(7),
            ..Usage::default()
        };
        report.add_usage(total);
        report.usage(total);
        assert_eq!(report.reported().usage, Some(total));
    }
}
