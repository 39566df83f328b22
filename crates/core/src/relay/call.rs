//! What a call brings besides its request: the caller's environment and directory, its
//! cancellation, where its warnings and streamed text go, and the link its backends reach it by.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::activity::Activity;
use crate::backend::CallLink;
use crate::dry_run::DryRun;
use crate::env::Env;
use crate::fit::{Fitted, Status};
use crate::git::DiffSource;
use crate::stream::ChunkSink;

/// What a preparation reads of its call besides the request.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    /// The caller's environment, snapshotted when the call was made.
    pub env: &'a Env,
    /// The caller's working directory, for relative paths.
    pub cwd: &'a str,
    pub link: &'a CallLink,
    pub cancel: &'a CancellationToken,
}

/// Where a call's warnings go (a review's fallback, a session save): the addon hands them to
/// the call's `onWarning`, else `console.error`; the MCP server writes them to stderr.
pub trait Warn: Send + Sync {
    fn warn(&self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// What a call brings besides its request.
#[derive(Clone)]
pub struct CallContext {
    /// The caller's environment, snapshotted when the call was made.
    pub env: Env,
    /// The caller's working directory, for relative paths.
    pub cwd: String,
    pub cancel: CancellationToken,
    pub warn: Arc<dyn Warn>,
    /// Handed to backends as [`crate::backend::Terms::link`].
    pub link: CallLink,
    /// Where the backend's text goes as it is produced; `ChunkSink::discard()` for `relay()`.
    pub chunks: ChunkSink,
    /// Where its backends say what they do, for a caller who watches; else unwatched.
    pub activity: Activity,
}

impl CallContext {
    /// What a preparation reads of the call.
    pub fn caller(&self) -> Caller<'_> {
        Caller {
            env: &self.env,
            cwd: &self.cwd,
            link: &self.link,
            cancel: &self.cancel,
        }
    }

    /// `includeDiff` that got another diff than the uncommitted changes says which, and why.
    pub(crate) async fn warn_about_diff(&self, diff: Option<DiffSource>) {
        if let Some(warning) = diff.and_then(DiffSource::warning) {
            self.warn.warn(warning).await;
        }
    }

    /// A fitted diff says once, in one line, how much was left out and where the list is.
    pub(crate) async fn warn_about_fit(&self, fitted: Option<&Fitted>) {
        let Some(fitted) = fitted else {
            return;
        };
        let partial = fitted
            .coverage
            .iter()
            .filter(|file| file.status != Status::Whole)
            .count();
        self.warn
            .warn(format!(
                "[phone-a-friend] fit: the diff was fitted to {} bytes: {partial} of {} changed \
                 files cut or left out ({} bytes not sent); the envelope's Diff Coverage section \
                 lists them, and a dry run shows them",
                fitted.budget,
                fitted.coverage.len(),
                fitted.left_out_bytes()
            ))
            .await;
    }

    /// What the backend would refuse that only its answer would tell (an Ollama chat without a
    /// model), said by the dry run.
    pub(super) async fn warn_about_refusals(&self, dry_run: &DryRun) {
        for warning in dry_run.refusals() {
            self.warn.warn(warning).await;
        }
    }
}
