/**
 * Edit distance with adjacent transpositions (optimal string alignment): the Levenshtein
 * distance, except that swapping two neighbours (`reveiw` → `review`) costs 1, not 2.
 */
export declare function editDistance(a: string, b: string): number;
/**
 * The candidate `input` was most likely meant to be, ignoring case and leading dashes: the
 * closest within about a third of its length (at least 1), the first listed on a tie; else
 * undefined.
 */
export declare function closest(input: string, candidates: readonly string[]): string | undefined;
