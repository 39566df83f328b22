/** A review's verdict (docs/CONTRACT.md §13), in the envelope of upstream, the phone-a-friend v4.1.1 CLI (`schema_version` 1). */
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
