/** A review's verdict (SPEC 13), in upstream's envelope (`schema_version` 1). */
export interface Verdict {
    schema_version: 1;
    /** Follows from the findings: any blocker or important finding means `iterate`; `abstain` only without findings. */
    verdict: 'ship' | 'iterate' | 'abstain';
    summary: string;
    findings: VerdictFinding[];
}
export interface VerdictFinding {
    severity: 'blocker' | 'important' | 'nit';
    title: string;
    rationale: string;
    /** `file` or `file:line`, or `null`. */
    location: string | null;
}
