/**
 * PostgreSQL revocation generation (see revocations.ts): a trigger of migration 0015 NOTIFYs
 * `aps_api_keys` on every bump of `api_key_generation`; each instance holds a LISTEN connection
 * (queue/postgres/listener.ts: reconnected with back-off) and reads the counter again when
 * notified or reconnected. Until that read answers, and whenever the connection is down, the
 * generation is unknown and every verification reads the database, so a revocation elsewhere is
 * never missed: an instance trusts its cache only while it is sure to hear of the next one.
 */
import type pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { QueueListener, type Notice } from '../queue/postgres/listener.js';
import type { RevocationGeneration } from './revocations.js';

export const REVOCATION_CHANNEL = 'aps_api_keys';

export class PostgresRevocations implements RevocationGeneration {
  private generation: number | null = null;
  /** Bumped by every notice: a read that started before the last notice is stale. */
  private epoch = 0;
  private readonly listener: QueueListener;

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: FastifyBaseLogger,
  ) {
    this.listener = new QueueListener({
      poolOptions: pool.options,
      channel: REVOCATION_CHANNEL,
      log,
      onNotice: (notice) => {
        this.noticed(notice);
      },
      onConnected: () => {
        this.refresh();
      },
    });
    this.listener.start();
  }

  current(): number | null {
    return this.listener.client === undefined ? null : this.generation;
  }

  refresh(): void {
    this.generation = null;
    const epoch = ++this.epoch;
    this.pool
      .query<{ generation: string }>('select generation from api_key_generation where id = 1')
      .then(({ rows }) => {
        if (epoch === this.epoch && rows[0] !== undefined) {
          this.generation = Number(rows[0].generation);
        }
      })
      .catch((error: unknown) => {
        this.log.warn({ err: error }, 'could not read the API key generation');
      });
  }

  /**
   * A bump committed somewhere (this instance's own revocations too: the LISTEN connection hears
   * them). The notice carries the committed generation, and notices arrive in commit order, so a
   * newer one is adopted as it is and one already known changes nothing; no window opens in which
   * every request pays a full verification. A notice without a readable number reads it again.
   */
  private noticed(notice: Notice): void {
    const { generation } = notice;
    if (typeof generation !== 'number' || !Number.isSafeInteger(generation)) {
      this.refresh();
      return;
    }
    if (this.generation !== null && generation <= this.generation) return;
    this.epoch++; // a read still in flight started before this commit: its answer is older
    this.generation = generation;
  }

  async close(): Promise<void> {
    this.epoch++;
    this.generation = null;
    await this.listener.stop();
  }
}
