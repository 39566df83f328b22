import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const identity = {
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
}

/** A real git repository in a temp folder. */
export class TempRepo {
  readonly path: string

  constructor(branch = 'main') {
    this.path = mkdtempSync(join(tmpdir(), 'paf-repo-'))
    this.git('init', '-q', '-b', branch)
  }

  git(...args: string[]): string {
    return execFileSync('git', ['-C', this.path, ...args], { encoding: 'utf8', env: { ...process.env, ...identity } })
  }

  write(file: string, content: string | Buffer): this {
    writeFileSync(join(this.path, file), content)
    return this
  }

  commit(message: string): this {
    this.git('add', '-A')
    this.git('commit', '-q', '--allow-empty', '-m', message)
    return this
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true })
  }
}

const madeDirs = new Set<string>()
process.once('exit', () => {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true })
})

/** A temp folder that is not a repository; removed when the test process exits. */
export function tempDir(prefix = 'paf-dir-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  madeDirs.add(dir)
  return dir
}
