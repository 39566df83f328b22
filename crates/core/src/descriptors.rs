//! Out of file descriptors (EMFILE for the process, ENFILE for the system): what needs one
//! waits for one to free up, within its call's time, so that a burst of relays larger than
//! the limit becomes a queue rather than a row of failures. Every relay releases its
//! descriptors when it ends, so a wait is as long as the shortest relay under way. On Windows
//! the same holds for handles (`ERROR_TOO_MANY_OPEN_FILES`, `ERROR_NO_SYSTEM_RESOURCES`).

use std::io;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first pause after a failure; each next one is twice as long, up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const LONGEST_PAUSE: Duration = Duration::from_millis(50);

/// The OS's codes for "no descriptor to be had" (the process's limit, then the system's).
#[cfg(unix)]
pub const OUT_OF_DESCRIPTORS: [i32; 2] = [libc::EMFILE, libc::ENFILE];
/// The OS's codes for "no memory or other resource for a new process".
#[cfg(unix)]
pub const OUT_OF_RESOURCES: [i32; 2] = [libc::EAGAIN, libc::ENOMEM];

#[cfg(windows)]
pub const OUT_OF_DESCRIPTORS: [i32; 2] = [
    windows_sys::Win32::Foundation::ERROR_TOO_MANY_OPEN_FILES as i32,
    windows_sys::Win32::Foundation::ERROR_NO_SYSTEM_RESOURCES as i32,
];
#[cfg(windows)]
pub const OUT_OF_RESOURCES: [i32; 3] = [
    windows_sys::Win32::Foundation::ERROR_NOT_ENOUGH_MEMORY as i32,
    windows_sys::Win32::Foundation::ERROR_OUTOFMEMORY as i32,
    windows_sys::Win32::Foundation::ERROR_COMMITMENT_LIMIT as i32,
];

/// Whether `error` says there is no file descriptor to be had.
pub fn out_of_descriptors(error: &io::Error) -> bool {
    error
        .raw_os_error()
        .is_some_and(|code| OUT_OF_DESCRIPTORS.contains(&code))
}

/// Whether `error` says the system lacks what a new process needs: descriptors, memory or
/// process slots.
pub fn out_of_resources(error: &io::Error) -> bool {
    out_of_descriptors(error)
        || error
            .raw_os_error()
            .is_some_and(|code| OUT_OF_RESOURCES.contains(&code))
}

/// Calls `attempt` until it does not fail for want of a file descriptor, pausing in between,
/// until `until`: then its last failure (the OS's words) is the result. `None` once `cancel`
/// is cancelled.
pub async fn when_available<T>(
    until: Instant,
    cancel: &CancellationToken,
    mut attempt: impl FnMut() -> io::Result<T>,
) -> Option<io::Result<T>> {
    let mut pause = FIRST_PAUSE;
    loop {
        if cancel.is_cancelled() {
            return None;
        }
        let result = attempt();
        let now = Instant::now();
        match result {
            Err(e) if out_of_descriptors(&e) && now < until => {
                let wake = until.min(now + pause);
                pause = (pause * 2).min(LONGEST_PAUSE);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return None,
                    () = tokio::time::sleep_until(wake) => {}
                }
            }
            result => return Some(result),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emfile() -> io::Error {
        io::Error::from_raw_os_error(OUT_OF_DESCRIPTORS[0])
    }

    /// An error that is none of the above.
    const OTHER: i32 = 2; // ENOENT, ERROR_FILE_NOT_FOUND

    #[tokio::test(start_paused = true)]
    async fn retries_until_a_descriptor_frees_up() {
        let mut attempts = 0;
        let until = Instant::now() + Duration::from_secs(10);
        let result = when_available(until, &CancellationToken::new(), || {
            attempts += 1;
            match attempts {
                1 => Err(emfile()),
                2 => Err(io::Error::from_raw_os_error(OUT_OF_DESCRIPTORS[1])),
                _ => Ok("spawned"),
            }
        })
        .await;
        assert_eq!(result.map(|r| r.ok()), Some(Some("spawned")));
        assert_eq!(attempts, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_the_os_words_at_the_deadline_and_other_errors_at_once() {
        let started = Instant::now();
        let until = started + Duration::from_secs(2);
        let mut attempts = 0;
        let result = when_available(until, &CancellationToken::new(), || -> io::Result<()> {
            attempts += 1;
            Err(emfile())
        })
        .await;
        let error = result.and_then(|r| r.err());
        assert_eq!(
            error.and_then(|e| e.raw_os_error()),
            Some(OUT_OF_DESCRIPTORS[0])
        );
        assert_eq!(Instant::now(), until);
        // Paused at most 50 ms at a time: a freed descriptor is taken soon.
        assert!(attempts >= 40, "{attempts} attempts");
        let mut attempts = 0;
        let other = when_available(
            until + Duration::from_secs(5),
            &CancellationToken::new(),
            || -> io::Result<()> {
                attempts += 1;
                Err(io::Error::from_raw_os_error(OTHER))
            },
        )
        .await;
        assert_eq!(
            other.and_then(|r| r.err()).and_then(|e| e.raw_os_error()),
            Some(OTHER)
        );
        assert_eq!(attempts, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancel_ends_the_wait() {
        let cancel = CancellationToken::new();
        let until = Instant::now() + Duration::from_secs(60);
        let waiting = when_available(until, &cancel, || -> io::Result<()> { Err(emfile()) });
        let cancelling = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(waiting, cancelling);
        assert!(result.is_none());
        assert!(Instant::now() < until);
    }
}
