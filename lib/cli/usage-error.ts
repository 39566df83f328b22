/** A command line the CLI cannot run as given: exit 2, with the command's usage (docs/CONTRACT.md §9). */
export class UsageError extends Error {}
