//! The backends a relay can reach by name: the built-ins, replaced or joined by registered ones.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::backend::Backend;
use crate::errors::RelayError;
use crate::text::js_sorted;

#[derive(Clone, Default)]
pub struct Registry {
    backends: BTreeMap<String, Arc<dyn Backend>>,
}

impl Registry {
    pub fn new(backends: impl IntoIterator<Item = Arc<dyn Backend>>) -> Self {
        let mut registry = Registry::default();
        for backend in backends {
            registry.register(backend);
        }
        registry
    }

    /// Adds a backend; one with the name of an existing backend replaces it.
    pub fn register(&mut self, backend: Arc<dyn Backend>) {
        self.backends.insert(backend.name().to_string(), backend);
    }

    /// The backend called `name`, or `ERR_UNSUPPORTED_BACKEND` listing the names there are.
    /// The backend registered as `name`, if any (no error made: for a quick look).
    pub fn find(&self, name: &str) -> Option<&Arc<dyn Backend>> {
        self.backends.get(name)
    }

    pub fn get(&self, name: &str) -> Result<Arc<dyn Backend>, RelayError> {
        self.backends
            .get(name)
            .cloned()
            .ok_or_else(|| RelayError::UnsupportedBackend {
                name: name.to_string(),
                supported: js_sorted(self.backends.keys().cloned()),
            })
    }
}

/// `ERR_INVALID_SANDBOX` unless `backend` accepts `sandbox`.
pub fn check_sandbox(backend: &dyn Backend, sandbox: &str) -> Result<(), RelayError> {
    let allowed = backend.allowed_sandboxes();
    if allowed.iter().any(|mode| mode == sandbox) {
        return Ok(());
    }
    Err(RelayError::InvalidSandbox {
        mode: sandbox.to_string(),
        allowed: js_sorted(allowed.iter().cloned()),
    })
}
