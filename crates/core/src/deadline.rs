//! One deadline per call (docs/CONTRACT.md §14): the relay's `timeoutSeconds`, counted from the
//! call, and the caller's cancellation. Every wait, read and child process of the call is bounded
//! by it, from the first `stat` of preparation to the backend's last byte.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::errors::{RelayError, RelayFailure};
use crate::text::js_number;

/// A validated timeout: finite and greater than zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout(f64);

/// Longest wait we hand to timers; larger timeouts mean "practically never".
const LONGEST_WAIT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

impl Timeout {
    /// `None` unless `seconds` is a finite number greater than zero.
    pub fn from_seconds(seconds: f64) -> Option<Timeout> {
        (seconds.is_finite() && seconds > 0.0).then_some(Timeout(seconds))
    }

    /// A whole number of seconds, valid by construction (for the package's own bounds).
    pub const fn whole_seconds(seconds: std::num::NonZeroU32) -> Timeout {
        Timeout(seconds.get() as f64)
    }

    pub fn seconds(self) -> f64 {
        self.0
    }

    pub fn duration(self) -> Duration {
        Duration::try_from_secs_f64(self.0)
            .unwrap_or(LONGEST_WAIT)
            .min(LONGEST_WAIT)
    }

    /// The number as JavaScript prints it, for `… timed out after <n>s`.
    pub fn display(self) -> String {
        js_number(self.0)
    }
}

/// Why a bounded step stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The call's time ran out.
    TimedOut,
    /// The caller aborted (or gave up on) the call.
    Cancelled,
}

#[derive(Debug, Clone)]
pub struct Deadline {
    timeout: Timeout,
    at: Instant,
    cancel: CancellationToken,
}

impl Deadline {
    /// A deadline `timeout` from now, also ended by `cancel`.
    pub fn starting_now(timeout: Timeout, cancel: CancellationToken) -> Deadline {
        // `Timeout::duration` is capped at ten years, so this cannot overflow.
        let at = Instant::now() + timeout.duration();
        Deadline {
            timeout,
            at,
            cancel,
        }
    }

    /// The timeout this deadline was made from, for messages (`… timed out after <n>s`).
    pub fn timeout(&self) -> Timeout {
        self.timeout
    }

    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Time left (zero once past).
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// `Err` once cancelled or past the deadline: for loops that do blocking work in steps.
    pub fn check(&self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            Err(Stop::Cancelled)
        } else if Instant::now() >= self.at {
            Err(Stop::TimedOut)
        } else {
            Ok(())
        }
    }

    /// Resolves when the deadline passes or the call is cancelled, saying which.
    pub async fn reached(&self) -> Stop {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Stop::Cancelled,
            () = tokio::time::sleep_until(self.at) => Stop::TimedOut,
        }
    }

    /// What the caller sees when `stop` ended the step `during` (e.g. "reading the context file"):
    /// `ERR_TIMEOUT` with the call's timeout, or the call is aborted.
    pub fn failure(&self, stop: Stop, during: &'static str) -> RelayFailure {
        match stop {
            Stop::Cancelled => RelayFailure::Aborted,
            Stop::TimedOut => RelayError::Timeout {
                after: self.timeout.display(),
                during,
            }
            .into(),
        }
    }

    /// Runs `work` until it finishes or the deadline stops it (then `work` is dropped).
    pub async fn bound<F: Future>(&self, work: F) -> Result<F::Output, Stop> {
        tokio::select! {
            biased;
            stop = self.reached() => Err(stop),
            output = work => Ok(output),
        }
    }
}

impl Deadline {
    /// Runs blocking `work` on a thread of its own, waiting for it until the deadline stops the
    /// wait: CPU-bound work that may take long never holds a runtime worker, and the call
    /// settles on time (the thread then finishes unobserved). `Ok(Err(_))` when no thread
    /// could be started or `work` panicked.
    pub async fn bound_on_thread<T, W>(&self, name: &str, work: W) -> Result<io::Result<T>, Stop>
    where
        T: Send + 'static,
        W: FnOnce() -> T + Send + 'static,
    {
        self.check()?;
        let (done, result) = tokio::sync::oneshot::channel();
        if let Err(e) = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let _ = done.send(work());
            })
        {
            return Ok(Err(e));
        }
        self.bound(result).await.map(|received| {
            received.map_err(|_| io::Error::other("the thread ended without a result"))
        })
    }
}

/// Two deadlines are equal when they end at the same instant after the same timeout (the
/// cancellation tokens are not compared): lets requests that carry one derive `PartialEq`.
impl PartialEq for Deadline {
    fn eq(&self, other: &Self) -> bool {
        self.timeout == other.timeout && self.at == other.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout(seconds: f64) -> Timeout {
        Timeout::from_seconds(seconds).expect("valid timeout")
    }

    #[tokio::test(start_paused = true)]
    async fn bound_stops_work_at_the_deadline() {
        let deadline = Deadline::starting_now(timeout(2.0), CancellationToken::new());
        let quick = deadline
            .bound(tokio::time::sleep(Duration::from_secs(1)))
            .await;
        assert_eq!(quick, Ok(()));
        let slow = deadline
            .bound(tokio::time::sleep(Duration::from_secs(5)))
            .await;
        assert_eq!(slow, Err(Stop::TimedOut));
        assert_eq!(deadline.check(), Err(Stop::TimedOut));
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_wins_over_the_clock() {
        let cancel = CancellationToken::new();
        let deadline = Deadline::starting_now(timeout(60.0), cancel.clone());
        assert_eq!(deadline.check(), Ok(()));
        // Both have happened: the time has run out and the caller has aborted.
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(deadline.check(), Err(Stop::TimedOut));
        cancel.cancel();
        assert_eq!(deadline.check(), Err(Stop::Cancelled));
        assert_eq!(deadline.reached().await, Stop::Cancelled);
        let work = deadline.bound(std::future::pending::<()>()).await;
        assert_eq!(work, Err(Stop::Cancelled));
    }

    #[tokio::test]
    async fn work_on_a_thread_is_waited_for_only_until_the_deadline() {
        let deadline = Deadline::starting_now(timeout(0.2), CancellationToken::new());
        assert_eq!(
            deadline
                .bound_on_thread("quick", || 4)
                .await
                .ok()
                .map(|r| r.ok()),
            Some(Some(4))
        );
        // Work that does not end before the deadline: the wait ends, the work runs on.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (finished, has_finished) = std::sync::mpsc::channel();
        let stuck = deadline
            .bound_on_thread("stuck", move || {
                let _ = released.recv();
                let _ = finished.send(());
            })
            .await;
        assert!(matches!(stuck, Err(Stop::TimedOut)));
        assert!(has_finished.try_recv().is_err(), "the wait ended first");
        let _ = release.send(());
        assert!(has_finished.recv().is_ok());
        // A cancelled call starts no thread.
        let cancel = CancellationToken::new();
        let aborted = Deadline::starting_now(timeout(60.0), cancel.clone());
        cancel.cancel();
        let started = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = started.clone();
        let result = aborted
            .bound_on_thread("never", move || {
                flag.store(true, std::sync::atomic::Ordering::SeqCst)
            })
            .await;
        assert!(matches!(result, Err(Stop::Cancelled)));
        assert!(!started.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test(start_paused = true)]
    async fn a_huge_timeout_does_not_overflow() {
        let deadline = Deadline::starting_now(timeout(1e300), CancellationToken::new());
        assert_eq!(deadline.check(), Ok(()));
        assert!(deadline.remaining() > Duration::from_secs(3600));
    }
}
