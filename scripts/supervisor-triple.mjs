// Which cargo target the supervisor of a napi target is built for. On Linux it is the musl target
// of the same arch, for glibc and musl systems alike: linked statically it needs no C library of
// the system's, and each running copy (one per CLI relay) holds 0.44 MB of memory against 0.98 MB
// for a static glibc build, whose start-up code and tables are larger (BENCHMARKS.md, "The
// supervisor, built with musl"). Elsewhere it is the target itself.

/** `x86_64-unknown-linux-gnu` -> `x86_64-unknown-linux-musl`; `aarch64-apple-darwin` unchanged. */
export function supervisorTriple(triple) {
  const [arch, , os] = triple.split('-')
  return os === 'linux' ? `${arch}-unknown-linux-musl` : triple
}
