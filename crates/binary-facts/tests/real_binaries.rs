//! The checker on real binaries made here with the toolchains scripts/platforms/cross-setup.sh
//! installs (zig, mingw) and the host's cc: a program linked against this machine's glibc (2.36
//! on Debian 12) must fail the 2.17 floor, the same program linked by zig against 2.17 must pass,
//! and so on per format. A missing toolchain skips its cases with a line saying so.
use std::path::{Path, PathBuf};
use std::process::Command;

use binary_facts::{facts, Facts, Floor, Version};

const PROGRAM: &str = r#"
#include <pthread.h>
#include <stdio.h>
static void *run(void *arg) { return arg; }
int main(void) {
    pthread_t thread;
    pthread_create(&thread, 0, run, 0);
    pthread_join(thread, 0);
    puts("hi");
    return 0;
}
"#;

/// The folder for the binary `name` and its own copy of the program: tests run in parallel, and
/// one shared source rewritten by one test while another compiles it linked an empty file once.
fn work_dir(name: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("binary-facts");
    std::fs::create_dir_all(&dir).expect("a folder under cargo's target tmpdir");
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, PROGRAM).expect("the test program written");
    (dir, source)
}

fn zig() -> Option<PathBuf> {
    let zig = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/platforms/bin/zig");
    zig.exists().then_some(zig)
}

/// Compiles the program with `compiler` and `args` to `name`; None (and a line) if the compiler
/// is not installed.
fn compile(compiler: &Path, args: &[&str], name: &str) -> Option<Facts> {
    let (dir, source) = work_dir(name);
    let out = dir.join(name);
    let status = match Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .status()
    {
        Ok(status) => status,
        Err(error) => {
            println!("[{}: {error}: skipped]", compiler.display());
            return None;
        }
    };
    assert!(status.success(), "{} {args:?} failed", compiler.display());
    let data = std::fs::read(&out).expect("the program just built");
    Some(facts(&data).expect("its headers read"))
}

fn zig_cc(target: &str, name: &str) -> Option<Facts> {
    let Some(zig) = zig() else {
        println!("[no zig in target/platforms/bin (scripts/platforms/cross-setup.sh): skipped]");
        return None;
    };
    let (dir, source) = work_dir(name);
    let out = dir.join(name);
    let status = Command::new(&zig)
        .args(["cc", "-target", target, "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("zig runs");
    assert!(status.success(), "zig cc -target {target} failed");
    Some(facts(&std::fs::read(&out).expect("the program just built")).expect("its headers read"))
}

#[test]
fn versions_compare_by_number() {
    let v = |text| Version::parse(text).expect("a version");
    assert!(v("2.9") < v("2.17"));
    assert!(v("2.17") == v("2.17.0"));
    assert!(v("10.15") < v("11.0"));
    assert!(Version::parse("PRIVATE").is_none());
}

#[test]
fn the_hosts_glibc_fails_the_floor() {
    let Some(found) = compile(Path::new("cc"), &["-pthread"], "host-glibc") else {
        return;
    };
    let glibc = found.versions.get("GLIBC").expect("a GLIBC_ version");
    assert!(
        *glibc > Version::parse("2.17").expect("a version"),
        "{found}"
    );
    let wrong = Floor::LinuxGnu.violations(&found);
    assert!(
        wrong
            .iter()
            .any(|w| w.contains("newer than the floor GLIBC_2.17")),
        "{wrong:?}"
    );
    // And it is no musl binary either.
    assert!(!Floor::LinuxMusl.violations(&found).is_empty());
}

#[test]
fn zig_against_glibc_2_17_passes() {
    for (target, name) in [
        ("x86_64-linux-gnu.2.17", "zig-x64-2.17"),
        ("aarch64-linux-gnu.2.17", "zig-arm64-2.17"),
    ] {
        let Some(found) = zig_cc(target, name) else {
            return;
        };
        assert_eq!(
            found.versions.get("GLIBC"),
            Version::parse("2.17").as_ref(),
            "{found}"
        );
        assert!(found.interpreter, "{found}");
        assert_eq!(
            Floor::LinuxGnu.violations(&found),
            Vec::<String>::new(),
            "{found}"
        );
    }
}

#[test]
fn the_macos_minimum_and_signature() {
    let Some(arm64) = zig_cc("aarch64-macos.11.0", "zig-macos-arm64-11") else {
        return;
    };
    assert_eq!(arm64.minos, Version::parse("11.0.0"), "{arm64}");
    assert!(arm64.code_signature, "zig signs arm64 code ad hoc: {arm64}");
    assert_eq!(arm64.needed, ["/usr/lib/libSystem.B.dylib"]);
    assert_eq!(Floor::DarwinArm64.violations(&arm64), Vec::<String>::new());
    assert!(
        !Floor::LinuxGnu.violations(&arm64).is_empty(),
        "a Mach-O is no ELF"
    );

    // zig's default is its newest macOS: what the release build had before MACOSX_DEPLOYMENT_TARGET.
    let Some(newest) = zig_cc("aarch64-macos", "zig-macos-arm64-default") else {
        return;
    };
    let wrong = Floor::DarwinArm64.violations(&newest);
    assert!(
        wrong
            .iter()
            .any(|w| w.contains("newer than the floor 11.0")),
        "{wrong:?}"
    );

    let Some(x64) = zig_cc("x86_64-macos.10.15", "zig-macos-x64-10.15") else {
        return;
    };
    assert_eq!(x64.minos, Version::parse("10.15"), "{x64}");
    assert_eq!(Floor::DarwinX64.violations(&x64), Vec::<String>::new());
    let wrong = Floor::DarwinX64.violations(&arm64);
    assert!(
        wrong
            .iter()
            .any(|w| w.contains("newer than the floor 10.15")),
        "{wrong:?}"
    );
}

#[test]
fn windows_imports_only_system_dlls() {
    let mingw = Path::new("x86_64-w64-mingw32-gcc");
    // Linked statically, as the addon links mingw's runtime.
    let Some(plain) = compile(mingw, &["-static", "-pthread"], "plain.exe") else {
        return;
    };
    assert!(plain.format.starts_with("PE"), "{plain}");
    assert_eq!(
        Floor::Windows.violations(&plain),
        Vec::<String>::new(),
        "{plain}"
    );
    // mingw's pthread as a DLL: libwinpthread-1.dll is on no user's machine.
    let Some(threads) = compile(mingw, &["-pthread"], "threads.exe") else {
        return;
    };
    let wrong = Floor::Windows.violations(&threads);
    assert!(
        wrong.iter().any(|w| w.contains("libwinpthread-1.dll")),
        "{wrong:?}"
    );
}

/// A shared library may leave symbols undefined: against glibc 2.17, gettid() (glibc 2.30) links
/// unversioned and would fail only when called on an old glibc. N-API's may be unversioned.
#[test]
fn a_function_the_old_glibc_lacks_fails() {
    let Some(zig) = zig() else {
        println!("[no zig in target/platforms/bin (scripts/platforms/cross-setup.sh): skipped]");
        return;
    };
    let (dir, source) = work_dir("library");
    std::fs::write(
        &source,
        "#define _GNU_SOURCE\n#include <unistd.h>\nint napi_create_int32(void);\n\
         int id(void) { return gettid() + napi_create_int32(); }\n",
    )
    .expect("the library's source written");
    let built = |target: &str, name: &str| {
        let out = dir.join(name);
        let status = Command::new(&zig)
            .args(["cc", "-shared", "-fPIC", "-target", target, "-o"])
            .arg(&out)
            .arg(&source)
            .status()
            .expect("zig runs");
        assert!(status.success(), "zig cc -shared -target {target} failed");
        facts(&std::fs::read(&out).expect("the library just built")).expect("its headers read")
    };
    let old = built("x86_64-linux-gnu.2.17", "library-2.17.so");
    let wrong = Floor::LinuxGnu.violations(&old);
    assert_eq!(
        wrong,
        ["calls gettid, which no library it links provides"],
        "{old}"
    );
    // Against glibc 2.30, gettid is there, versioned; only napi_create_int32 is unversioned.
    let new = built("x86_64-linux-gnu.2.30", "library-2.30.so");
    assert_eq!(new.unversioned, ["napi_create_int32"], "{new}");
    let wrong = Floor::LinuxGnu.violations(&new);
    assert!(wrong.iter().any(|w| w.contains("GLIBC_2.30")), "{wrong:?}");
}
