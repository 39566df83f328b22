//! `runProgram()`: a program that is not a backend (a host CLI's `mcp add`, for the CLI's
//! `install`), run by the core's one process runner, supervised as a backend is: past its
//! time-out, on the scope's end or when the host dies, it and everything it started are stopped
//! (docs/GUARANTEES.md, "Nothing outlives its relay").

use std::time::Duration;

use napi::bindgen_prelude::PromiseRaw;
use napi::Result;
use napi_derive::napi;

use crate::caller_env;
use crate::scope::RelayScope;
use relay_core::progress::Progress;
use relay_core::secrets::mask_secrets;
use relay_core::subprocess::{run_process, ProcessError, ProcessSpec, StdinSource};

/// How a program ran.
#[napi(object, object_from_js = false)]
pub struct NativeProgramRun {
    /// Its exit code; null when a signal ended it or it was stopped.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// What it printed, trimmed, at most `outputLimit` bytes each.
    pub stdout: String,
    pub stderr: String,
    /// It ran past its time-out: it and every process it started were stopped.
    pub timed_out: bool,
}

/// A program to run, stdin empty.
#[napi(object)]
pub struct NativeProgram {
    /// As `programCommandLine` gives it: the program, then its leading arguments.
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub cwd: String,
    /// Its whole environment, entries as `NativeCaller.env`'s; absent: this process's.
    pub env: Option<String>,
    pub timeout_ms: u32,
    /// Bytes kept of stdout and of stderr each; the rest is counted and dropped.
    pub output_limit: u32,
}

/// Runs `program` to its end or its time-out. Rejects, with the OS's words, when it cannot be
/// started.
#[napi(ts_return_type = "Promise<NativeProgramRun>")]
pub fn run_program<'env>(
    napi_env: &'env napi::Env,
    scope: &RelayScope,
    program: NativeProgram,
) -> Result<PromiseRaw<'env, NativeProgramRun>> {
    let NativeProgram {
        command,
        args,
        cwd,
        env,
        timeout_ms,
        output_limit,
    } = program;
    let mut parts = command.into_iter();
    let program = parts
        .next()
        .ok_or_else(|| napi::Error::from_reason("runProgram: the command is empty"))?;
    let spec = ProcessSpec {
        program: program.into(),
        args: parts.chain(args).map(Into::into).collect(),
        cwd: cwd.into(),
        env: caller_env(env.as_deref(), None),
        stdin: StdinSource::Null,
        timeout: Duration::from_millis(u64::from(timeout_ms)),
        output_limit: usize::try_from(output_limit).unwrap_or(usize::MAX),
        remove_on_stop: Vec::new(),
        progress: Progress::unwatched(),
    };
    let cancel = scope.child_token();
    napi_env.spawn_future(async move {
        match run_process(spec, &cancel).await {
            Ok(output) => Ok(NativeProgramRun {
                code: output.code,
                signal: output.signal,
                stdout: output.stdout.text,
                stderr: output.stderr.text,
                timed_out: false,
            }),
            Err(ProcessError::TimedOut { stderr }) => Ok(NativeProgramRun {
                code: None,
                signal: None,
                stdout: String::new(),
                stderr: stderr.text,
                timed_out: true,
            }),
            Err(error) => Err(napi::Error::from_reason(
                mask_secrets(&error.to_string()).into_owned(),
            )),
        }
    })
}
