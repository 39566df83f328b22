//! Whether a backend is still getting anywhere (`idleTimeoutSeconds`, docs/CONTRACT.md §14): what
//! the backend itself produces touches its [`Progress`] (a CLI's bytes on stdout or stderr,
//! Ollama's body, a JavaScript backend's chunks); a wait on the caller's own consumer pauses the
//! clock, so a caller that reads slowly is never taken for a stalled backend. The call's stall
//! watchdog ([`Progress::idle`]) fires once nothing touched it for the idle time-out; it then
//! marks the run stalled ([`Progress::stall`]), and the backend stops as a time-out would stop it
//! ([`Progress::stalled`]), with its last words.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::deadline::Timeout;

/// A run's progress, watched or not; cheap to clone (clones share it).
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<Watch>>);

struct Watch {
    /// The idle time-out.
    limit: Timeout,
    started: Instant,
    /// When it was last touched: milliseconds since `started`.
    last: AtomicU64,
    /// Waits on the consumer under way: while any is, the clock does not run.
    paused: AtomicUsize,
    stalled: CancellationToken,
}

impl Progress {
    /// Progress nobody watches: touching it costs a branch, and it never stalls.
    pub fn unwatched() -> Progress {
        Progress(None)
    }

    /// Progress watched for `limit` without any.
    pub fn watching(limit: Timeout) -> Progress {
        Progress(Some(Arc::new(Watch {
            limit,
            started: Instant::now(),
            last: AtomicU64::new(0),
            paused: AtomicUsize::new(0),
            stalled: CancellationToken::new(),
        })))
    }

    /// The same watch for a new run, its clock starting now (each run of a call has its own).
    pub fn restarted(&self) -> Progress {
        self.limit()
            .map_or_else(Progress::unwatched, Progress::watching)
    }

    /// The idle time-out, when watched.
    pub fn limit(&self) -> Option<Timeout> {
        self.0.as_ref().map(|watch| watch.limit)
    }

    pub fn is_watched(&self) -> bool {
        self.0.is_some()
    }

    /// The backend produced something.
    pub fn touch(&self) {
        if let Some(watch) = &self.0 {
            watch.last.store(watch.elapsed_ms(), Ordering::Relaxed);
        }
    }

    /// Stops the clock until the guard is dropped (a wait on the caller's consumer), then
    /// counts that as progress.
    pub fn pause(&self) -> Paused<'_> {
        if let Some(watch) = &self.0 {
            watch.paused.fetch_add(1, Ordering::Relaxed);
        }
        Paused(self)
    }

    /// Resolves once nothing touched the progress for its idle time-out, the clock not running
    /// while paused; never when unwatched.
    pub async fn idle(&self) {
        let Some(watch) = &self.0 else {
            return std::future::pending().await;
        };
        loop {
            let last = watch.last.load(Ordering::Relaxed);
            let due = watch.started + Duration::from_millis(last) + watch.limit.duration();
            tokio::time::sleep_until(due).await;
            let touched = watch.last.load(Ordering::Relaxed) != last;
            let paused = watch.paused.load(Ordering::Relaxed) > 0;
            if paused {
                // Counted from the end of the wait, which touches it.
                watch.last.store(watch.elapsed_ms(), Ordering::Relaxed);
            } else if !touched {
                return;
            }
        }
    }

    /// Marks the run stalled: a backend that watches [`Progress::stalled`] stops.
    pub fn stall(&self) {
        if let Some(watch) = &self.0 {
            watch.stalled.cancel();
        }
    }

    /// Resolves, with the idle time-out, once the run was marked stalled; never when unwatched.
    pub async fn stalled(&self) -> Timeout {
        match &self.0 {
            Some(watch) => {
                watch.stalled.cancelled().await;
                watch.limit
            }
            None => std::future::pending().await,
        }
    }

    pub fn is_stalled(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|watch| watch.stalled.is_cancelled())
    }
}

impl Watch {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// While held, a [`Progress`]'s clock does not run.
pub struct Paused<'a>(&'a Progress);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        if let Some(watch) = &self.0 .0 {
            watch.paused.fetch_sub(1, Ordering::Relaxed);
        }
        self.0.touch();
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Progress").field(&self.limit()).finish()
    }
}

/// The same watch (clones of one progress), or both unwatched.
impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Progress {}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Timeout = Timeout::whole_seconds(std::num::NonZeroU32::MIN.saturating_add(9));

    #[tokio::test(start_paused = true)]
    async fn idle_fires_a_limit_after_the_last_touch() {
        let progress = Progress::watching(LIMIT);
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(4)).await;
        progress.touch();
        progress.idle().await;
        assert_eq!(start.elapsed().as_secs(), 14);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_stops_the_clock_and_its_end_counts_as_progress() {
        let progress = Progress::watching(LIMIT);
        let start = Instant::now();
        let paused = progress.pause();
        let released = async {
            tokio::time::sleep(Duration::from_secs(25)).await;
            drop(paused);
        };
        tokio::join!(progress.idle(), released);
        assert_eq!(start.elapsed().as_secs(), 35);
    }

    #[tokio::test(start_paused = true)]
    async fn unwatched_progress_never_idles_and_never_stalls() {
        let progress = Progress::unwatched();
        progress.touch();
        progress.stall();
        assert!(!progress.is_stalled());
        let waited = tokio::time::timeout(Duration::from_secs(3600), async {
            tokio::join!(progress.idle(), progress.stalled())
        });
        assert!(waited.await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stall_reaches_every_clone_and_a_restart_is_a_new_watch() {
        let progress = Progress::watching(LIMIT);
        let clone = progress.clone();
        progress.stall();
        clone.stalled().await;
        assert!(clone.is_stalled());
        let next = progress.restarted();
        assert_eq!(next.limit(), Some(LIMIT));
        assert!(!next.is_stalled());
        assert_ne!(next, progress);
    }
}
