// Every relative link in the repository's Markdown leads somewhere: the file exists, and a
// `#fragment` names a heading of that file (as GitHub makes a heading's anchor).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '..')

const PAGES = [
  'README.md',
  'CHANGELOG.md',
  'BENCHMARKS.md',
  'examples/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
]

/** The text outside fenced code blocks, with inline code spans blanked. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`\n]*?\1/g, 'code')
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors of a Markdown file's headings (a repeated heading gets `-1`, `-2`, …). */
function anchors(file: string): Set<string> {
  const markdown = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const match of markdown.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1])
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    result.add(count === 0 ? base : `${base}-${count}`)
  }
  return result
}

/** The relative link targets of a page: `[text](target)`, with no scheme. */
function links(page: string): string[] {
  const text = prose(readFileSync(join(ROOT, page), 'utf8'))
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1])
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}

describe('relative links in the Markdown', () => {
  it('finds the pages and their links', () => {
    for (const page of ['README.md', 'docs/README.md', 'docs/API.md']) expect(PAGES).toContain(page)
    expect(links('README.md').length).toBeGreaterThan(10)
  })

  it.each(PAGES)('%s: every link leads to a file, and every fragment to a heading', (page) => {
    const broken: string[] = []
    for (const target of links(page)) {
      const [path, fragment] = target.split('#', 2)
      const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURI(path))
      if (relative(ROOT, file).startsWith('..') || !existsSync(file)) {
        broken.push(`${target}: no such file`)
        continue
      }
      if (fragment === undefined) continue
      if (!statSync(file).isFile() || !file.endsWith('.md')) {
        broken.push(`${target}: a fragment of something other than a Markdown file`)
      } else if (!anchors(file).has(fragment)) {
        broken.push(`${target}: no heading with that anchor`)
      }
    }
    expect(broken).toEqual([])
  })
})
