/** Which cargo target the supervisor of a napi target is built for (scripts/supervisor-triple.mjs). */
export function supervisorTriple(triple: string): string
