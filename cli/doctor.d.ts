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
export declare function doctor(): Promise<DoctorReport>;
export declare function formatDoctor(report: DoctorReport): string;
