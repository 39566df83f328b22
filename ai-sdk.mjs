// ESM entry of the AI SDK provider: the same objects as the CommonJS one (see index.mjs for why
// it is loaded with require() and named here).
import { createRequire } from 'node:module'

const api = createRequire(import.meta.url)('./dist/ai-sdk.js')

export const { PhoneAFriendLanguageModel, SCHEMA_ERROR_HEADER, createPhoneAFriend, phoneAFriend } = api
export default api
