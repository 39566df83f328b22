"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.editDistance = editDistance;
exports.closest = closest;
/**
 * Edit distance with adjacent transpositions (optimal string alignment): the Levenshtein
 * distance, except that swapping two neighbours (`reveiw` → `review`) costs 1, not 2.
 */
function editDistance(a, b) {
    // rows[i][j]: the distance between the first i characters of a and the first j of b.
    const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
    for (let i = 1; i <= a.length; i++) {
        for (let j = 1; j <= b.length; j++) {
            const substitution = rows[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1);
            let best = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, substitution);
            if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
                best = Math.min(best, rows[i - 2][j - 2] + 1);
            rows[i][j] = best;
        }
    }
    return rows[a.length][b.length];
}
/** Past this length an input is not a typo of a short name (and is not worth the work). */
const MAX_INPUT = 40;
/**
 * The candidate `input` was most likely meant to be, ignoring case and leading dashes: the
 * closest within about a third of its length (at least 1), the first listed on a tie; else
 * undefined.
 */
function closest(input, candidates) {
    const bare = (name) => name.replace(/^-+/, '').toLowerCase();
    const wanted = bare(input);
    if (wanted.length === 0 || wanted.length > MAX_INPUT)
        return undefined;
    const limit = Math.max(1, Math.floor(wanted.length / 3));
    let best;
    for (const name of candidates) {
        const distance = editDistance(wanted, bare(name));
        if (distance <= limit && (best === undefined || distance < best.distance))
            best = { name, distance };
    }
    return best?.name;
}
