use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::backend::{Backend, BackendFailure, BackendFuture, Plan, RunRequest};
use crate::env::Env;
use crate::errors::{BackendFailureKind, RelayError};
use crate::limits::SANDBOX_MODES;
use crate::relay::{RelayRequest, Warn};
use crate::stream::ChunkSink;

/// Answers (or fails) after `delay`, recording the prompts it got.
struct Sleepy {
    name: String,
    allowed: Vec<String>,
    delay: Duration,
    fail: bool,
    prompts: Mutex<Vec<String>>,
    /// The cancellation token each run was given.
    tokens: Mutex<Vec<CancellationToken>>,
}

fn sleepy(name: &str, delay_ms: u64, fail: bool) -> Arc<Sleepy> {
    Arc::new(Sleepy {
        name: name.into(),
        allowed: SANDBOX_MODES.iter().map(|m| m.to_string()).collect(),
        delay: Duration::from_millis(delay_ms),
        fail,
        prompts: Mutex::default(),
        tokens: Mutex::default(),
    })
}

impl Backend for Sleepy {
    fn name(&self) -> &str {
        &self.name
    }
    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed
    }
    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        self.prompts.lock().expect("lock").push(request.prompt);
        self.tokens.lock().expect("lock").push(cancel.clone());
        Box::pin(async move {
            tokio::select! {
                () = cancel.cancelled() => Err(BackendFailure::Cancelled),
                () = tokio::time::sleep(self.delay) => {
                    if self.fail {
                        Err(BackendFailure::reported(BackendFailureKind::Failed, "boom"))
                    } else {
                        Ok(format!("{} says hi", self.name))
                    }
                }
            }
        })
    }
    fn plan(&self, _: &RunRequest) -> Plan {
        Plan::JsRun
    }
}

struct NoWarnings;

impl Warn for NoWarnings {
    fn warn(&self, _: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }
}

fn call(cancel: CancellationToken) -> CallContext {
    CallContext {
        chunks: ChunkSink::discard(),
        activity: crate::activity::Activity::unwatched(),
        env: Env::from([(
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        )]),
        cwd: "/".into(),
        cancel,
        warn: Arc::new(NoWarnings),
        link: crate::backend::CallLink::default(),
    }
}

fn options(prompt: &str) -> RelayRequest {
    RelayRequest {
        prompt: Some(prompt.into()),
        repo_path: "/tmp".into(),
        ..RelayRequest::default()
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn backends_run_at_once_and_settle_on_their_own() {
    let (a, b, c) = (
        sleepy("a", 1000, false),
        sleepy("b", 1000, false),
        sleepy("c", 500, true),
    );
    let registry = Registry::new([a.clone() as Arc<dyn Backend>, b.clone(), c.clone()]);
    let started = tokio::time::Instant::now();
    let outcomes = relay_all(
        registry,
        options("Check this"),
        names(&["a", "c", "b"]),
        call(CancellationToken::new()),
    )
    .await
    .expect("settled");
    // Concurrently: one second, not two and a half.
    assert!(started.elapsed() < Duration::from_millis(1100));
    let settled: Vec<_> = outcomes
        .iter()
        .map(|o| (o.backend.as_str(), o.outcome.as_ref().map(String::as_str)))
        .collect();
    assert_eq!(settled[0], ("a", Ok("a says hi")));
    assert_eq!(settled[2], ("b", Ok("b says hi")));
    match &outcomes[1].outcome {
        Err(RelayFailure::Relay(e)) => {
            assert_eq!(
                (e.code().as_str(), e.backend()),
                ("ERR_BACKEND_FAILED", Some("c"))
            )
        }
        other => panic!("expected c to fail, got {other:?}"),
    }
    // One envelope for all.
    let prompts = [
        a.prompts.lock().expect("lock")[0].clone(),
        b.prompts.lock().expect("lock")[0].clone(),
    ];
    assert_eq!(prompts[0], prompts[1]);
    assert!(prompts[0].contains("Check this"));
}

#[tokio::test(start_paused = true)]
async fn a_refused_backend_fails_alone_and_the_others_run() {
    let a = sleepy("a", 10, false);
    let registry = Registry::new([a.clone() as Arc<dyn Backend>]);
    let outcomes = relay_all(
        registry,
        options("p"),
        names(&["nope", "a"]),
        call(CancellationToken::new()),
    )
    .await
    .expect("settled");
    match &outcomes[0].outcome {
        Err(RelayFailure::Relay(RelayError::UnsupportedBackend { name, .. })) => {
            assert_eq!(name, "nope")
        }
        other => panic!("expected ERR_UNSUPPORTED_BACKEND, got {other:?}"),
    }
    assert_eq!(outcomes[1].outcome, Ok("a says hi".to_string()));
}

#[tokio::test(start_paused = true)]
async fn what_does_not_depend_on_the_backend_rejects_the_whole_call() {
    let a = sleepy("a", 10, false);
    let registry = Registry::new([a.clone() as Arc<dyn Backend>]);
    let blank = relay_all(
        registry.clone(),
        options(" "),
        names(&["a", "nope"]),
        call(CancellationToken::new()),
    )
    .await;
    assert!(matches!(
        blank,
        Err(RelayFailure::Relay(RelayError::PromptRequired))
    ));
    let mut conflict = options("p");
    conflict.context_file = Some("/etc/hostname".into());
    conflict.context_text = Some("x".into());
    let conflict = relay_all(
        registry,
        conflict,
        names(&["nope"]),
        call(CancellationToken::new()),
    )
    .await;
    assert!(matches!(
        conflict,
        Err(RelayFailure::Relay(RelayError::ContextConflict))
    ));
    assert!(a.prompts.lock().expect("lock").is_empty());
}

#[tokio::test(start_paused = true)]
async fn one_abort_stops_every_backend() {
    let (a, b) = (sleepy("a", 60_000, false), sleepy("b", 60_000, false));
    let registry = Registry::new([a.clone() as Arc<dyn Backend>, b.clone()]);
    let cancel = CancellationToken::new();
    let run = tokio::spawn(relay_all(
        registry,
        options("p"),
        names(&["a", "b"]),
        call(cancel.clone()),
    ));
    // The clock is paused: it moves on only once every task waits, so both backends run by then.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let given: Vec<CancellationToken> = [&a, &b]
        .iter()
        .flat_map(|backend| backend.tokens.lock().expect("lock").clone())
        .collect();
    assert_eq!(given.len(), 2, "both backends started");
    assert!(given.iter().all(|token| !token.is_cancelled()));
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .expect("settled at once")
        .expect("task");
    assert_eq!(result, Err(RelayFailure::Aborted));
    assert!(
        given.iter().all(CancellationToken::is_cancelled),
        "each was told"
    );
}
