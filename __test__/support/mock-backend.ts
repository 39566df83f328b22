import type { Backend, BackendReviewOptions, BackendRunOptions, SandboxMode } from '@phone-a-friend/relay'

const ALL_MODES: SandboxMode[] = ['read-only', 'workspace-write', 'danger-full-access']

/** A JS backend that records what it receives and answers as told. */
export class MockBackend implements Backend {
  runs: BackendRunOptions[] = []
  reviews: BackendReviewOptions[] = []
  allowedSandboxes: Iterable<SandboxMode>
  review?: (options: BackendReviewOptions) => Promise<string>

  constructor(
    readonly name: string,
    private answer: (options: BackendRunOptions) => Promise<string> | string = () => 'mock answer',
    options: { allowed?: Iterable<SandboxMode>; review?: (options: BackendReviewOptions) => Promise<string> | string } = {},
  ) {
    this.allowedSandboxes = options.allowed ?? new Set(ALL_MODES)
    const review = options.review
    if (review) {
      this.review = async (reviewOptions) => {
        this.reviews.push(reviewOptions)
        return review(reviewOptions)
      }
    }
  }

  async run(options: BackendRunOptions): Promise<string> {
    this.runs.push(options)
    return this.answer(options)
  }
}
