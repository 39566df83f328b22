//! A model's context window, as its backend reported it while a fitted call was prepared
//! (docs/CONTRACT.md §6a, "Budgets"): the envelope is fitted to what the window holds, and a
//! backend that sizes its context per request (Ollama's `num_ctx`) asks for one the prompt fits.
//!
//! Tokens are counted from bytes at [`BYTES_PER_TOKEN`]: no tokenizer is at hand, and an
//! estimate too high would let the server cut the prompt silently (Ollama does), so it is a
//! floor, well under the 3.5 to 4 bytes a token that code and English prose take.

/// Bytes a token is assumed to hold at the least.
pub const BYTES_PER_TOKEN: u64 = 2;

/// Tokens left for the answer: this many, or a quarter of a smaller window.
const ANSWER_TOKENS: u64 = 4096;

/// The context a server gives a model whose request and Modelfile name none: Ollama's
/// documented default (its FAQ, "How can I specify the context window size?").
pub const DEFAULT_CONTEXT_TOKENS: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelWindow {
    /// The most tokens the model takes (Ollama: `model_info`'s `<architecture>.context_length`).
    pub tokens: u64,
    /// The context the model is configured with when a request names none (Ollama: the
    /// Modelfile's `num_ctx`), when it has one.
    pub configured: Option<u64>,
}

impl ModelWindow {
    /// The tokens kept for the answer.
    fn answer_tokens(self) -> u64 {
        ANSWER_TOKENS.min(self.tokens / 4)
    }

    /// The most envelope bytes the window holds beside the answer.
    pub fn prompt_bytes(self) -> usize {
        let tokens = self.tokens.saturating_sub(self.answer_tokens());
        usize::try_from(tokens.saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX)
    }

    /// The context to ask for a prompt of `prompt_bytes` (its session's replayed turns
    /// included) when what the model gets by default would not hold it with a quarter left for
    /// the answer: the prompt and the answer's tokens, to the next power of two (few distinct
    /// sizes, so a server reloads the model rarely), within the window. `None` when the default
    /// holds it: nothing is asked, and a server's larger default stays.
    pub fn context_for(self, prompt_bytes: usize) -> Option<u64> {
        let prompt = u64::try_from(prompt_bytes)
            .unwrap_or(u64::MAX)
            .div_ceil(BYTES_PER_TOKEN);
        let default = self.configured.unwrap_or(DEFAULT_CONTEXT_TOKENS);
        if prompt.saturating_add(default / 4) <= default {
            return None;
        }
        let needed = prompt.saturating_add(self.answer_tokens());
        Some(needed.next_power_of_two().min(self.tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LLAMA: ModelWindow = ModelWindow {
        tokens: 131_072,
        configured: None,
    };

    #[test]
    fn the_envelope_gets_the_window_less_the_answer_at_two_bytes_a_token() {
        assert_eq!(LLAMA.prompt_bytes(), (131_072 - 4096) * 2);
        let small = ModelWindow {
            tokens: 8192,
            configured: None,
        };
        assert_eq!(small.prompt_bytes(), (8192 - 2048) * 2);
        let none = ModelWindow {
            tokens: 0,
            configured: None,
        };
        assert_eq!(none.prompt_bytes(), 0);
    }

    #[test]
    fn a_context_is_asked_only_past_the_default_as_a_power_of_two_within_the_window() {
        assert_eq!(LLAMA.context_for(100), None);
        // 4,000 tokens leave the default 4,096 no quarter for the answer.
        assert_eq!(LLAMA.context_for(8000), Some(8192));
        let configured = ModelWindow {
            configured: Some(32_768),
            ..LLAMA
        };
        assert_eq!(configured.context_for(20_000), None);
        assert_eq!(configured.context_for(100_000), Some(65_536));
        assert_eq!(LLAMA.context_for(LLAMA.prompt_bytes()), Some(131_072));
        let odd = ModelWindow {
            tokens: 40_000,
            configured: None,
        };
        assert_eq!(odd.context_for(odd.prompt_bytes()), Some(40_000));
    }
}
