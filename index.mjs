// ESM entry: the same objects as the CommonJS one, so `instanceof RelayError` holds across both.
export * from './index.js'
export { default } from './index.js'
