// Everything a call needs beyond the error classes and the constants, as one module. The build
// bundles it with what it imports into one file (scripts/bundle-core.mjs): Node spends about
// 0.3 ms resolving, reading and compiling each CommonJS module, which a first call paid for
// sixteen of them (BENCHMARKS.md, "One file for the call's modules").
export * as calls from './calls.js'
export * as options from './options.js'
export * as backends from './backends.js'
export * as native from './native.js'
export * as doctor from './doctor.js'
export * as env from './env.js'
