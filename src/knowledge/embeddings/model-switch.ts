/**
 * Changing the embedding model on a live knowledge base without a gap in semantic search. The
 * configured model is the target; while the current chunks' vectors of the target do not cover
 * them all, the model that does keeps answering (queries embedded by it, its vectors searched),
 * and every commit writes that model's vectors too (the pipeline's `alsoVectors`: by content hash
 * from the stored ones, or embedded afresh for a new text), so it stays whole. Re-indexing the
 * stale documents (`aps reindex --stale`, the console's System page) reuses their stored
 * markdown; once the target's vectors cover every current chunk, the target answers and the other
 * models' vectors are dropped.
 *
 * Which model answers is counted from the store (ChunkStore.vectorCoverage), so every process
 * and instance comes to the same answer. While nothing of another model is stored, no chunk is
 * counted (ChunkStore.otherModelsStored: a start costs two small lookups). While a switch is
 * under way the count is taken again after this process's commits and deletes and every
 * REFRESH_MS (another process may be re-indexing), at most once per REFRESH_MS. The other models' vectors are dropped DROP_AFTER_MS after the target first
 * covered everything: other instances, counting every REFRESH_MS, have moved to the target by then.
 */
import type { ChunkStore } from '../search/chunk-store.js';
import type { EmbeddingProvider } from './provider.js';

/** How often a pending switch is counted again, for writes made by other processes. */
const REFRESH_MS = 5000;
/** How long after the target covered every chunk the other models' vectors are dropped. */
const DROP_AFTER_MS = 3 * REFRESH_MS;

/** The two intervals (tests shorten them). */
export interface SwitchTimings {
  refreshMs: number;
  dropAfterMs: number;
}

/** What the System page and the status route show of a switch. */
export interface SwitchState {
  /** The model whose vectors answer semantic searches now. */
  serving: string;
  /** The configured model. */
  target: string;
  /**
   * Current chunks of searchable documents, and how many have a vector of the target: counted
   * while anything of another model is stored, else 0 (nothing to switch).
   */
  chunks: number;
  covered: number;
}

interface Log {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export class ModelSwitch {
  #serving: EmbeddingProvider;
  #state: SwitchState;
  #refreshing: Promise<void> | null = null;
  #countedAt = Number.NEGATIVE_INFINITY;
  /** When the target was first counted covering every chunk with other models' vectors left. */
  #completeAt: number | null = null;
  /** Counts again while a switch is pending (no commit or search may come to trigger it). */
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  /** Providers of other models, built once each (their models load on first use). */
  readonly #others = new Map<string, EmbeddingProvider | null>();

  constructor(
    readonly target: EmbeddingProvider,
    private readonly store: ChunkStore,
    private readonly providerFor: (model: string) => EmbeddingProvider | null,
    private readonly log: Log,
    private readonly timings: SwitchTimings = { refreshMs: REFRESH_MS, dropAfterMs: DROP_AFTER_MS },
  ) {
    this.#serving = target;
    this.#state = { serving: target.model, target: target.model, chunks: 0, covered: 0 };
  }

  /** The provider whose vectors answer searches. */
  serving(): EmbeddingProvider {
    return this.#serving;
  }

  /** Whether a switch is under way (or the other models' vectors are still to drop). */
  get pending(): boolean {
    return this.#serving !== this.target || this.#completeAt !== null;
  }

  /**
   * After a commit or delete of this process: counts again if a switch is under way and the
   * last count is older than REFRESH_MS (else the timer's next count sees it).
   */
  changed(): void {
    if (this.pending && performance.now() - this.#countedAt >= this.timings.refreshMs) {
      this.refresh().catch((error: unknown) => {
        this.log.warn({ err: error }, 'counting the embedding models’ vectors failed');
      });
    }
  }

  /** The model a commit must also write vectors of (the one answering), or null. */
  keeping(): EmbeddingProvider | null {
    return this.#serving === this.target ? null : this.#serving;
  }

  get state(): SwitchState {
    return this.#state;
  }

  /**
   * Counts the vectors again and decides which model answers; drops the other models' vectors
   * once the target's cover every current chunk. One count at a time (callers share it).
   */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#count().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #count(): Promise<void> {
    this.#countedAt = performance.now();
    // Nothing of another model stored (every start without a switch): no chunk is counted.
    if (!(await this.store.otherModelsStored(this.target.model))) {
      this.#serving = this.target;
      this.#state = {
        serving: this.target.model,
        target: this.target.model,
        chunks: 0,
        covered: 0,
      };
      this.#completeAt = null;
      this.#schedule();
      return;
    }
    const { chunks, byModel } = await this.store.vectorCoverage(this.target.model);
    const covered = byModel.get(this.target.model) ?? 0;
    let serving = this.target;
    if (covered < chunks) {
      // The model that covers most of the chunks, and more than the target, if it can embed here.
      const others = [...byModel].filter(([m, n]) => m !== this.target.model && n > covered);
      for (const [model] of others.sort((a, b) => b[1] - a[1])) {
        const provider = this.#provider(model);
        if (provider !== null) {
          serving = provider;
          break;
        }
      }
    }
    if (serving !== this.#serving) {
      this.log.info(
        { from: this.#serving.model, to: serving.model, chunks, covered },
        'semantic search answers with another embedding model',
      );
    }
    this.#serving = serving;
    this.#state = { serving: serving.model, target: this.target.model, chunks, covered };
    const stale = [...byModel.keys()].some((m) => m !== this.target.model);
    const complete = serving === this.target && covered >= chunks && stale;
    if (!complete) this.#completeAt = null;
    else {
      this.#completeAt ??= this.#countedAt;
      if (this.#countedAt - this.#completeAt >= this.timings.dropAfterMs) await this.#drop();
    }
    this.#schedule();
  }

  async #drop(): Promise<void> {
    const dropped = await this.store.dropVectors(this.target.model, () => this.#closed);
    if (dropped.length > 0) {
      this.log.info({ models: dropped }, 'dropped the vectors of models no longer used');
    }
    for (const model of dropped) await this.#close(model);
    this.#completeAt = null;
  }

  /** Keeps a timer while a switch is pending; none otherwise. */
  #schedule(): void {
    if (this.#closed || !this.pending) {
      if (this.#timer !== null) clearInterval(this.#timer);
      this.#timer = null;
      return;
    }
    this.#timer ??= setInterval(() => {
      this.refresh().catch((error: unknown) => {
        this.log.warn({ err: error }, 'counting the embedding models’ vectors failed');
      });
    }, this.timings.refreshMs).unref();
  }

  #provider(model: string): EmbeddingProvider | null {
    if (!this.#others.has(model)) {
      let provider: EmbeddingProvider | null = null;
      try {
        provider = this.providerFor(model);
      } catch (error) {
        this.log.warn({ err: error, model }, 'the previous embedding model cannot be loaded');
      }
      this.#others.set(model, provider);
    }
    return this.#others.get(model) ?? null;
  }

  async #close(model: string): Promise<void> {
    const provider = this.#others.get(model);
    this.#others.delete(model);
    await provider?.close();
  }

  /** Closes the providers of other models (the target belongs to the module). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#schedule();
    await this.#refreshing?.catch(() => undefined);
    await Promise.all([...this.#others.keys()].map((m) => this.#close(m)));
  }
}
