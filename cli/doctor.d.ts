export interface BackendReport {
    name: string;
    /** A relay to it can run: a CLI backend when its CLI is on PATH, ollama when its server answers. */
    ready: boolean;
    /** Its CLI is on PATH (for ollama this is not needed: the relay talks to the server). */
    found: boolean;
    /** The last line of `<cli> --version` (the CLI backends). */
    version?: string;
    /** Where to get it, when it is not ready. */
    install?: string;
    /** ollama: the server probed, from OLLAMA_HOST. */
    host?: string;
    /** ollama: the model a relay would ask for (`--model`, else OLLAMA_MODEL); absent when none is set. */
    model?: string;
    /** ollama: the models the server has, when it said. */
    models?: string[];
}
export interface DoctorReport {
    backends: BackendReport[];
}
export interface DoctorOptions {
    /** The model a relay to ollama would use; else OLLAMA_MODEL. */
    model?: string;
    /** Cuts the checks short (the CLI's Ctrl-C). */
    signal?: AbortSignal;
}
/**
 * What is ready. codex, gemini, claude and opencode need their CLI on PATH. ollama needs its
 * server to answer at OLLAMA_HOST, whether or not the `ollama` binary is installed here (the
 * relay only talks HTTP).
 */
export declare function doctor(options?: DoctorOptions): Promise<DoctorReport>;
export declare function formatDoctor(report: DoctorReport): string;
