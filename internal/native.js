"use strict";
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __setModuleDefault = (this && this.__setModuleDefault) || (Object.create ? (function(o, v) {
    Object.defineProperty(o, "default", { enumerable: true, value: v });
}) : function(o, v) {
    o["default"] = v;
});
var __importStar = (this && this.__importStar) || (function () {
    var ownKeys = function(o) {
        ownKeys = Object.getOwnPropertyNames || function (o) {
            var ar = [];
            for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) ar[ar.length] = k;
            return ar;
        };
        return ownKeys(o);
    };
    return function (mod) {
        if (mod && mod.__esModule) return mod;
        var result = {};
        if (mod != null) for (var k = ownKeys(mod), i = 0; i < k.length; i++) if (k[i] !== "default") __createBinding(result, mod, k[i]);
        __setModuleDefault(result, mod);
        return result;
    };
})();
Object.defineProperty(exports, "__esModule", { value: true });
exports.binding = exports.onMainThread = exports.scope = void 0;
const binding = __importStar(require("../binding.js"));
exports.binding = binding;
const invocations_js_1 = require("./invocations.js");
const calls_js_1 = require("./calls.js");
/**
 * This module instance's scope: its backend registry, its warning sink, and how its JS backends
 * are told to stop. Workers get their own; a scope's calls are cancelled when its thread ends.
 */
exports.scope = binding.createScope((warning) => {
    const onWarning = (0, calls_js_1.callRecord)(warning.callTag)?.onWarning;
    if (onWarning) {
        try {
            onWarning(warning.message);
        }
        catch {
            // A caller's callback that throws must not take the relay down with it.
        }
        return;
    }
    // Looked up on each call so a test's spy on console.error sees it.
    console.error(warning.message);
}, invocations_js_1.abortInvocation);
/** Whether this module runs on the process's main thread, where native code reads `process.env` itself. */
exports.onMainThread = binding.onProcessMainThread();
