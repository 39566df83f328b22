//! What an answer cost (docs/CONTRACT.md §8b) as a JS object: counts as numbers (a token count
//! never nears 2^53), a field the backend did not report absent.

use napi_derive::napi;

use relay_core::usage::Usage;

#[napi(object, object_from_js = false)]
pub struct NativeUsage {
    pub input_tokens: Option<f64>,
    pub output_tokens: Option<f64>,
    pub cached_input_tokens: Option<f64>,
    pub reasoning_tokens: Option<f64>,
    pub cost_usd: Option<f64>,
}

impl From<Usage> for NativeUsage {
    fn from(usage: Usage) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let number = |count: Option<u64>| count.map(|count| count as f64);
        NativeUsage {
            input_tokens: number(usage.input_tokens),
            output_tokens: number(usage.output_tokens),
            cached_input_tokens: number(usage.cached_input_tokens),
            reasoning_tokens: number(usage.reasoning_tokens),
            cost_usd: usage.cost_usd,
        }
    }
}
