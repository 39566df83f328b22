use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::prepare::prepare_relay;
use super::*;
use crate::backend::{
    Backend, BackendFailure, BackendFuture, BackendResult, CallLink, Plan, ReviewRequest,
    RunRequest,
};
use crate::env::Env;
use crate::errors::{BackendFailureKind, ThrownValue};
use crate::errors::{RelayError, RelayFailure};
use crate::git::test_repo::{commit_all, git, repo_with_commit};
use crate::limits::{DEPTH_ENV_VAR, MAX_CONTEXT_FILE_BYTES, SANDBOX_MODES};
use crate::registry::Registry;

/// A call's answer alone: what most of these tests look at.
type Answer = Result<String, RelayFailure>;

async fn relay(registry: Registry, request: RelayRequest, call: CallContext) -> Answer {
    super::relay(registry, request, call)
        .await
        .map(|a| a.answer)
}

async fn review_relay(registry: Registry, request: RelayRequest, call: CallContext) -> Answer {
    super::review_relay(registry, request, call)
        .await
        .map(|a| a.answer)
}

/// A backend that answers from a script and records what it was asked.
struct Scripted {
    name: String,
    allowed: Vec<String>,
    run_result: BackendResult,
    review_result: Option<BackendResult>,
    runs: Mutex<Vec<RunRequest>>,
    reviews: Mutex<Vec<ReviewRequest>>,
    /// The cancellation token each run was given.
    tokens: Mutex<Vec<CancellationToken>>,
    /// Notified when a run's future first runs.
    started: tokio::sync::Notify,
}

impl Scripted {
    fn new(
        name: &str,
        run_result: BackendResult,
        review_result: Option<BackendResult>,
    ) -> Arc<Self> {
        Arc::new(Scripted {
            name: name.into(),
            allowed: SANDBOX_MODES.iter().map(|m| m.to_string()).collect(),
            run_result,
            review_result,
            runs: Mutex::default(),
            reviews: Mutex::default(),
            tokens: Mutex::default(),
            started: tokio::sync::Notify::new(),
        })
    }

    fn runs(&self) -> Vec<RunRequest> {
        self.runs.lock().expect("lock").clone()
    }
}

impl Backend for Scripted {
    fn name(&self) -> &str {
        &self.name
    }
    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed
    }
    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        self.runs.lock().expect("lock").push(request);
        self.tokens.lock().expect("lock").push(cancel.clone());
        Box::pin(async move {
            self.started.notify_one();
            if matches!(self.run_result, Err(BackendFailure::Cancelled)) {
                cancel.cancelled().await;
            }
            self.run_result.clone()
        })
    }
    fn review(
        self: Arc<Self>,
        request: &ReviewRequest,
        _: CancellationToken,
    ) -> Option<BackendFuture> {
        let result = self.review_result.clone()?;
        self.reviews.lock().expect("lock").push(request.clone());
        Some(Box::pin(async move { result }))
    }
    fn plan(&self, _: &RunRequest) -> Plan {
        Plan::JsRun
    }
    fn plan_review(&self, _: &ReviewRequest) -> Option<Plan> {
        self.review_result.is_some().then_some(Plan::JsReview)
    }
}

#[derive(Default)]
struct Warnings(Mutex<Vec<String>>);

impl Warn for Warnings {
    fn warn(&self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.0.lock().expect("lock").push(message);
        Box::pin(async {})
    }
}

fn env() -> Env {
    Env::from([(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_default(),
    )])
}

fn call(warnings: &Arc<Warnings>) -> CallContext {
    CallContext {
        chunks: crate::stream::ChunkSink::discard(),
        activity: crate::activity::Activity::unwatched(),
        env: env(),
        cwd: "/".into(),
        cancel: CancellationToken::new(),
        warn: warnings.clone(),
        link: crate::backend::CallLink::default(),
    }
}

fn registry(backend: &Arc<Scripted>) -> Registry {
    let fake: Arc<dyn Backend> = backend.clone();
    Registry::new([fake])
}

fn options(repo: &str) -> RelayRequest {
    RelayRequest {
        prompt: Some("Check this".into()),
        repo_path: repo.into(),
        backend: Some("fake".into()),
        ..RelayRequest::default()
    }
}

/// The code of what `prepare_relay` says to `options` ("ok" when it is ready to run).
async fn code(registry: &Registry, options: RelayRequest, env: &Env) -> &'static str {
    let (link, cancel) = (CallLink::default(), CancellationToken::new());
    let caller = Caller {
        env,
        cwd: "/",
        link: &link,
        cancel: &cancel,
    };
    match prepare_relay(registry, options, caller).await {
        Ok(_) => "ok",
        Err(RelayFailure::Relay(e)) => e.code().as_str(),
        Err(other) => panic!("expected a RelayError, got {other:?}"),
    }
}

#[tokio::test]
async fn checks_run_in_the_contract_order() {
    let backend = Scripted::new("fake", Ok("ok".into()), None);
    let registry = registry(&backend);
    let all_wrong = RelayRequest {
        prompt: Some(" \n".into()),
        repo_path: "/no/such/repo".into(),
        backend: Some("nope".into()),
        timeout_seconds: Some(0.0),
        sandbox: Some("bad".into()),
        context_file: Some("/x".into()),
        context_text: Some("y".into()),
        ..RelayRequest::default()
    };
    let mut o = all_wrong.clone();
    assert_eq!(
        code(&registry, o.clone(), &env()).await,
        "ERR_PROMPT_REQUIRED"
    );
    o.prompt = Some("p".into());
    assert_eq!(
        code(&registry, o.clone(), &env()).await,
        "ERR_INVALID_TIMEOUT"
    );
    o.timeout_seconds = None;
    assert_eq!(code(&registry, o.clone(), &env()).await, "ERR_INVALID_REPO");
    o.repo_path = "tmp/..".into();
    assert_eq!(
        code(&registry, o.clone(), &env()).await,
        "ERR_UNSUPPORTED_BACKEND"
    );
    o.backend = Some("fake".into());
    assert_eq!(
        code(&registry, o.clone(), &env()).await,
        "ERR_INVALID_SANDBOX"
    );
    o.sandbox = None;
    assert_eq!(
        code(&registry, o.clone(), &env()).await,
        "ERR_CONTEXT_CONFLICT"
    );
    o.context_text = None;
    assert_eq!(code(&registry, o.clone(), &env()).await, "ERR_CONTEXT_FILE");
    o.context_file = None;
    o.prompt = Some("p".repeat(500_001));
    let mut nested = env();
    nested.insert(DEPTH_ENV_VAR.into(), "1".into());
    assert_eq!(code(&registry, o.clone(), &nested).await, "ERR_TOO_LARGE");
    o.prompt = Some("p".into());
    assert_eq!(code(&registry, o, &nested).await, "ERR_DEPTH_LIMIT");
    assert!(
        backend.runs().is_empty(),
        "nothing runs before every check passes"
    );
}

#[tokio::test]
async fn timeouts_must_be_finite_and_positive() {
    let backend = Scripted::new("fake", Ok("ok".into()), None);
    for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let o = RelayRequest {
            timeout_seconds: Some(bad),
            ..options("/")
        };
        assert_eq!(
            code(&registry(&backend), o, &env()).await,
            "ERR_INVALID_TIMEOUT"
        );
    }
    for good in [0.001, 1e300] {
        let o = RelayRequest {
            timeout_seconds: Some(good),
            ..options("/")
        };
        assert_eq!(code(&registry(&backend), o, &env()).await, "ok");
    }
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_relay_reaches_the_backend_with_the_envelope_and_a_raised_depth() {
    let repo = repo_with_commit("main");
    std::fs::write(repo.path().join("a.txt"), "changed\n").expect("write");
    let backend = Scripted::new("fake", Ok("answer".into()), None);
    let o = RelayRequest {
        include_diff: Some(true),
        context_text: Some(" ctx ".into()),
        ..options(&repo.path().to_string_lossy())
    };
    let answer = relay(registry(&backend), o, call(&Arc::default())).await;
    assert_eq!(answer, Ok("answer".into()));
    let runs = backend.runs();
    let request = &runs[0];
    assert!(request
        .prompt
        .contains("Request:\nCheck this\n\nAdditional Context:\nctx\n\nGit Diff:\ndiff --git"));
    assert!(request.prompt.ends_with("+changed"), "{}", request.prompt);
    assert_eq!(
        request.terms.env.get(DEPTH_ENV_VAR).map(String::as_str),
        Some("1")
    );
    assert_eq!(request.terms.sandbox, "read-only");
    assert_eq!(request.terms.timeout.seconds(), 600.0);
}

#[tokio::test]
async fn backend_failures_carry_the_backend_name() {
    let failure = BackendFailure::reported(BackendFailureKind::Failed, "boom");
    let backend = Scripted::new("fake", Err(failure), None);
    let result = relay(registry(&backend), options("/"), call(&Arc::default())).await;
    let Err(RelayFailure::Relay(err)) = result else {
        panic!("expected a RelayError, got {result:?}");
    };
    assert_eq!(
        (err.code().as_str(), err.backend(), err.to_string().as_str()),
        ("ERR_BACKEND_FAILED", Some("fake"), "boom")
    );
}

#[tokio::test]
async fn an_abort_stops_a_running_backend() {
    let backend = Scripted::new("fake", Err(BackendFailure::Cancelled), None);
    let context = call(&Arc::default());
    let cancel = context.cancel.clone();
    let pending = tokio::spawn(relay(registry(&backend), options("/"), context));
    // The abort comes while the backend runs, and the backend is told of it.
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        backend.started.notified(),
    )
    .await
    .expect("the backend started");
    let given = backend.tokens.lock().expect("lock").clone();
    assert_eq!(given.len(), 1);
    assert!(!given[0].is_cancelled());
    cancel.cancel();
    assert_eq!(pending.await.expect("joined"), Err(RelayFailure::Aborted));
    assert!(given[0].is_cancelled());
}

fn thrown(is_relay_error: bool) -> ThrownValue {
    ThrownValue {
        handle: 7,
        is_relay_error,
        message: "review broke".into(),
    }
}

fn review_repo() -> tempfile::TempDir {
    let repo = repo_with_commit("main");
    git(repo.path(), &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.path().join("b.txt"), "feature work\n").expect("write");
    commit_all(repo.path(), "feature");
    repo
}

fn review_options(repo: &tempfile::TempDir) -> RelayRequest {
    RelayRequest {
        repo_path: repo.path().to_string_lossy().into_owned(),
        backend: Some("fake".into()),
        ..RelayRequest::default()
    }
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_native_review_answers_directly() {
    let repo = review_repo();
    let backend = Scripted::new("fake", Ok("generic".into()), Some(Ok("native".into())));
    let warnings = Arc::new(Warnings::default());
    let answer = review_relay(registry(&backend), review_options(&repo), call(&warnings)).await;
    assert_eq!(answer, Ok("native".into()));
    let reviews = backend.reviews.lock().expect("lock").clone();
    assert_eq!(reviews[0].base, "main");
    assert!(backend.runs().is_empty());
    assert!(warnings.0.lock().expect("lock").is_empty());
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_failed_native_review_warns_and_falls_back_to_the_diff() {
    let repo = review_repo();
    let failing = Some(Err(BackendFailure::Thrown(thrown(false))));
    let backend = Scripted::new("fake", Ok("generic".into()), failing);
    let warnings = Arc::new(Warnings::default());
    let answer = review_relay(registry(&backend), review_options(&repo), call(&warnings)).await;
    assert_eq!(answer, Ok("generic".into()));
    assert_eq!(
        *warnings.0.lock().expect("lock"),
        ["[phone-a-friend] review() failed, falling back to generic relay: review broke"]
    );
    let prompt = &backend.runs()[0].prompt;
    assert!(
        prompt.contains("Request:\nReview the following changes.\n\nGit Diff:\n"),
        "{prompt}"
    );
    assert!(prompt.ends_with("+feature work"), "{prompt}");
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_relay_error_from_a_native_review_is_rethrown() {
    let repo = review_repo();
    let backend = Scripted::new(
        "fake",
        Ok("generic".into()),
        Some(Err(BackendFailure::Thrown(thrown(true)))),
    );
    let warnings = Arc::new(Warnings::default());
    let answer = review_relay(registry(&backend), review_options(&repo), call(&warnings)).await;
    assert_eq!(answer, Err(RelayFailure::Thrown(thrown(true))));
    assert!(backend.runs().is_empty());
    assert!(warnings.0.lock().expect("lock").is_empty());
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_generic_review_uses_the_prompt_and_reports_git_failures() {
    let repo = review_repo();
    let backend = Scripted::new("fake", Ok("generic".into()), None);
    let o = RelayRequest {
        prompt: Some("Focus on errors".into()),
        base: Some("main".into()),
        ..review_options(&repo)
    };
    let answer = review_relay(registry(&backend), o, call(&Arc::default())).await;
    assert_eq!(answer, Ok("generic".into()));
    assert!(backend.runs()[0]
        .prompt
        .contains("Request:\nFocus on errors\n\nGit Diff:\n"));
    let o = RelayRequest {
        base: Some("no-such-base".into()),
        ..review_options(&repo)
    };
    let Err(RelayFailure::Relay(err)) =
        review_relay(registry(&backend), o, call(&Arc::default())).await
    else {
        panic!("expected ERR_GIT_DIFF");
    };
    assert_eq!(err.code(), "ERR_GIT_DIFF");
}

/// A repository whose `.git/HEAD` is a FIFO: every git command in it blocks.
fn fifo_head_repo() -> tempfile::TempDir {
    let repo = repo_with_commit("main");
    let head = repo.path().join(".git/HEAD");
    std::fs::remove_file(&head).expect("remove HEAD");
    let made = std::process::Command::new("mkfifo")
        .arg(&head)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    repo
}

fn relay_error_of(result: Result<String, RelayFailure>) -> RelayError {
    match result {
        Err(RelayFailure::Relay(err)) => err,
        other => panic!("expected a RelayError, got {other:?}"),
    }
}

#[tokio::test]
async fn the_first_checks_keep_their_order_at_the_entry_point() {
    let backend = Scripted::new("fake", Ok("ok".into()), None);
    let o = RelayRequest {
        prompt: Some(" ".into()),
        timeout_seconds: Some(f64::NAN),
        ..options("/no/such/repo")
    };
    let err = relay_error_of(relay(registry(&backend), o.clone(), call(&Arc::default())).await);
    assert_eq!(err.code(), "ERR_PROMPT_REQUIRED");
    let o = RelayRequest {
        prompt: Some("p".into()),
        ..o
    };
    let err = relay_error_of(relay(registry(&backend), o, call(&Arc::default())).await);
    assert_eq!(err.code(), "ERR_INVALID_TIMEOUT");
}

#[tokio::test]
async fn a_too_large_inline_context_is_refused_at_once_only_when_it_is_the_next_check() {
    let backend = Scripted::new("fake", Ok("ok".into()), None);
    let registry = registry(&backend);
    let repo = tempfile::tempdir().expect("temp dir");
    let big = RelayRequest {
        context_text: Some(format!("  {}  ", "x".repeat(MAX_CONTEXT_FILE_BYTES + 1)).into()),
        ..options(&repo.path().to_string_lossy())
    };
    let at_once = |o: &RelayRequest| {
        refused_at_once(&registry, Operation::Relay, o, "/").map(|failure| match failure {
            RelayFailure::Relay(e) => e.to_string(),
            other => panic!("expected a RelayError, got {other:?}"),
        })
    };
    // The same refusal the runtime's road makes, without it.
    let refusal = at_once(&big).expect("refused at once");
    assert_eq!(
        refusal,
        "Context text is too large (200001 bytes; max 200000 bytes)"
    );
    assert_eq!(code(&registry, big.clone(), &env()).await, "ERR_TOO_LARGE");
    // Trimmed as JavaScript trims: at the limit it is no refusal.
    let at_limit = RelayRequest {
        context_text: Some(format!(" {} ", "x".repeat(MAX_CONTEXT_FILE_BYTES)).into()),
        ..big.clone()
    };
    assert_eq!(at_once(&at_limit), None);
    // An earlier check still comes first.
    let bad_repo = RelayRequest {
        repo_path: "/no/such/repo".into(),
        ..big.clone()
    };
    assert!(at_once(&bad_repo).is_some_and(|m| m.starts_with("Repository path does not exist")));
    // A step between check 4 and the context (a schema, a session) or a context file is the
    // runtime road's to decide, in its order.
    for (o, later) in [
        (
            RelayRequest {
                schema: Some("not json".into()),
                ..big.clone()
            },
            "ERR_SCHEMA",
        ),
        (
            RelayRequest {
                context_file: Some("/no/such/file".into()),
                ..big.clone()
            },
            "ERR_CONTEXT_CONFLICT",
        ),
    ] {
        assert_eq!(at_once(&o), None);
        assert_eq!(code(&registry, o, &env()).await, later);
    }
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_git_that_never_ends_times_the_relay_out_before_the_backend() {
    let repo = fifo_head_repo();
    let backend = Scripted::new("fake", Ok("answer".into()), None);
    let o = RelayRequest {
        include_diff: Some(true),
        timeout_seconds: Some(0.3),
        ..options(&repo.path().to_string_lossy())
    };
    let started = std::time::Instant::now();
    let err = relay_error_of(relay(registry(&backend), o, call(&Arc::default())).await);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(err.code(), "ERR_TIMEOUT");
    assert_eq!(
        err.to_string(),
        "Relay timed out after 0.3s while running git diff"
    );
    assert!(backend.runs().is_empty());
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn a_review_times_out_detecting_the_base_or_diffing_against_it() {
    let repo = fifo_head_repo();
    let backend = Scripted::new("fake", Ok("answer".into()), None);
    let o = RelayRequest {
        timeout_seconds: Some(0.3),
        ..review_options(&repo)
    };
    let err =
        relay_error_of(review_relay(registry(&backend), o.clone(), call(&Arc::default())).await);
    assert_eq!(
        err.to_string(),
        "Relay timed out after 0.3s while running git rev-parse"
    );
    let o = RelayRequest {
        base: Some("main".into()),
        ..o
    };
    let err = relay_error_of(review_relay(registry(&backend), o, call(&Arc::default())).await);
    assert_eq!(
        err.to_string(),
        "Relay timed out after 0.3s while running git diff"
    );
    assert!(backend.runs().is_empty());
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn an_abort_during_preparation_aborts_the_call() {
    let repo = fifo_head_repo();
    let backend = Scripted::new("fake", Ok("answer".into()), None);
    let o = RelayRequest {
        include_diff: Some(true),
        ..options(&repo.path().to_string_lossy())
    };
    let context = call(&Arc::default());
    let cancel = context.cancel.clone();
    let pending = tokio::spawn(relay(registry(&backend), o, context));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    cancel.cancel();
    assert_eq!(pending.await.expect("joined"), Err(RelayFailure::Aborted));
    assert!(backend.runs().is_empty());
}

#[cfg_attr(windows, ignore = "runs git: none under wine")]
#[tokio::test]
async fn the_backend_gets_what_preparation_left_of_the_deadline() {
    let repo = repo_with_commit("main");
    std::fs::write(repo.path().join("a.txt"), "changed\n").expect("write");
    let backend = Scripted::new("fake", Ok("answer".into()), None);
    let o = RelayRequest {
        include_diff: Some(true),
        timeout_seconds: Some(30.0),
        ..options(&repo.path().to_string_lossy())
    };
    let started = tokio::time::Instant::now();
    relay(registry(&backend), o, call(&Arc::default()))
        .await
        .expect("answer");
    let request = &backend.runs()[0];
    assert_eq!(request.terms.timeout.seconds(), 30.0);
    assert_eq!(request.terms.deadline.timeout(), request.terms.timeout);
    let left = request.terms.deadline.remaining();
    let limit = std::time::Duration::from_secs(30);
    assert!(
        left < limit && left >= limit - started.elapsed(),
        "{left:?}"
    );
}

#[tokio::test]
async fn with_fit_a_context_that_would_pass_the_envelope_limit_is_cut_with_a_note() {
    let backend = Scripted::new("fake", Ok("answer".into()), None);
    let context: String = (0..2_000)
        .map(|n| format!("context line {n:080}\n"))
        .collect();
    let o = RelayRequest {
        prompt: Some("p".repeat(400_000)),
        context_text: Some(context.as_str().into()),
        ..options("/")
    };
    let refused = relay(registry(&backend), o.clone(), call(&Arc::default())).await;
    assert_eq!(relay_error_of(refused).code(), "ERR_TOO_LARGE");
    let o = RelayRequest {
        fit: Some(true),
        ..o
    };
    let answer = relay(registry(&backend), o, call(&Arc::default())).await;
    assert_eq!(answer, Ok("answer".into()));
    let prompt = &backend.runs()[0].prompt;
    assert!(
        prompt.len() <= crate::limits::MAX_PROMPT_BYTES,
        "{}",
        prompt.len()
    );
    let note = prompt.rsplit('\n').next().unwrap_or("");
    assert!(
        note.starts_with("[phone-a-friend: the context was cut to fit the envelope: ")
            && note.ends_with(&format!(
                " of its {} bytes were left out; read the rest where it came from]",
                context.trim_end().len()
            )),
        "{note}"
    );
    // Cut at a line's end: the last kept line is whole.
    let kept = prompt.rsplit('\n').nth(1).unwrap_or("");
    assert_eq!(kept.len(), "context line ".len() + 80, "{kept}");
}

#[tokio::test(start_paused = true)]
async fn a_backend_that_makes_no_progress_is_stopped_after_the_idle_timeout() {
    // A folder is all these need: no git (none under wine).
    let repo = tempfile::tempdir().expect("temp dir");
    // Settles only when cancelled: the watchdog marks it stalled, then cancels it after the grace.
    let backend = Scripted::new("fake", Err(BackendFailure::Cancelled), None);
    let request = RelayRequest {
        idle_timeout_seconds: Some(30.0),
        ..options(&repo.path().to_string_lossy())
    };
    let started = tokio::time::Instant::now();
    let err = relay_error_of(relay(registry(&backend), request, call(&Arc::default())).await);
    assert_eq!(err.code(), "ERR_BACKEND_TIMEOUT");
    assert_eq!(
        crate::failure_reason::reason_of_error(&err).map(|reason| reason.as_str()),
        Some("stalled")
    );
    assert_eq!(
        err.to_string(),
        "fake made no progress for 30s (idleTimeoutSeconds)"
    );
    // The idle time-out, then the grace for the backend to stop on its own; not the wall clock.
    assert_eq!(started.elapsed().as_secs(), 35);
    assert!(backend.tokens.lock().expect("lock")[0].is_cancelled());
}

#[tokio::test]
async fn an_idle_timeout_is_checked_with_the_timeout() {
    let backend = Scripted::new("fake", Ok("ok".into()), None);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let request = RelayRequest {
            idle_timeout_seconds: Some(bad),
            ..options("/")
        };
        let err = relay_error_of(relay(registry(&backend), request, call(&Arc::default())).await);
        assert_eq!(err.code(), "ERR_INVALID_TIMEOUT");
        assert_eq!(err.to_string(), "Idle timeout must be greater than zero");
    }
    assert!(backend.runs().is_empty());
}

fn two(first: &Arc<Scripted>, second: &Arc<Scripted>) -> Registry {
    let (a, b): (Arc<dyn Backend>, Arc<dyn Backend>) = (first.clone(), second.clone());
    Registry::new([a, b])
}

#[tokio::test]
async fn a_backend_that_cannot_answer_now_hands_the_same_envelope_to_the_next() {
    // A folder is all these need: no git (none under wine).
    let repo = tempfile::tempdir().expect("temp dir");
    let limited = BackendFailure::reported(BackendFailureKind::Failed, "429 Too Many Requests");
    let first = Scripted::new("first", Err(limited), None);
    let second = Scripted::new("second", Ok("from second".into()), None);
    let request = RelayRequest {
        backend: Some("first".into()),
        fallback: Some(vec!["second".into()]),
        ..options(&repo.path().to_string_lossy())
    };
    let warnings = Arc::new(Warnings::default());
    let answered = super::relay(two(&first, &second), request, call(&warnings)).await;
    let answered = answered.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(answered.answer, "from second");
    assert_eq!(answered.backend, "second");
    assert_eq!(answered.attempts.len(), 1);
    assert_eq!(
        (
            answered.attempts[0].backend.as_str(),
            answered.attempts[0].reason
        ),
        ("first", crate::failure_reason::Reason::RateLimit)
    );
    assert_eq!(first.runs()[0].prompt, second.runs()[0].prompt);
    assert_eq!(
        warnings.0.lock().expect("lock").as_slice(),
        ["[phone-a-friend] fallback: first cannot answer now (rate-limit): 429 Too Many Requests; asking second"]
    );
}

#[tokio::test]
async fn a_crash_is_no_reason_to_ask_another_and_an_unknown_fallback_is_refused_first() {
    // A folder is all these need: no git (none under wine).
    let repo = tempfile::tempdir().expect("temp dir");
    let crashed = BackendFailure::reported(BackendFailureKind::Failed, "exited with code 3");
    let first = Scripted::new("first", Err(crashed), None);
    let second = Scripted::new("second", Ok("from second".into()), None);
    let request = RelayRequest {
        backend: Some("first".into()),
        fallback: Some(vec!["second".into()]),
        ..options(&repo.path().to_string_lossy())
    };
    let err =
        relay_error_of(relay(two(&first, &second), request.clone(), call(&Arc::default())).await);
    assert_eq!(err.to_string(), "exited with code 3");
    assert!(second.runs().is_empty());
    let unknown = RelayRequest {
        fallback: Some(vec!["nobody".into()]),
        ..request
    };
    let err = relay_error_of(relay(two(&first, &second), unknown, call(&Arc::default())).await);
    assert_eq!(err.code(), "ERR_UNSUPPORTED_BACKEND");
    assert_eq!(first.runs().len(), 1);
}
