export interface BackendReport {
    name: string;
    found: boolean;
    version?: string;
    install?: string;
}
export interface DoctorReport {
    backends: BackendReport[];
    ollamaServer: {
        url: string;
        reachable: boolean;
    };
}
/** What is installed and reachable; `signal` cuts it short (the CLI's Ctrl-C). */
export declare function doctor(signal?: AbortSignal): Promise<DoctorReport>;
export declare function formatDoctor(report: DoctorReport): string;
