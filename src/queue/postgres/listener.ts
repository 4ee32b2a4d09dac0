/**
 * The queue's one dedicated LISTEN connection per instance: NOTIFYs on the channel wake claimers
 * and waiters at once, and the heartbeat renews leases on it so that renewals never wait for a
 * pool slot. When it fails (or the heartbeat finds it unresponsive) it is replaced, with back-off;
 * the poll covers what is announced meanwhile.
 */
import pg from 'pg';
import type { QueueLogger } from './shared.js';

/**
 * A NOTIFY payload (unchecked JSON): the queue's `{ e: 'queued', type }` or `{ e: 'done', id,
 * type }`, or the API key generation's `{ e: 'generation', generation }` (revocations-postgres.ts).
 */
export interface Notice {
  e?: unknown;
  id?: unknown;
  type?: unknown;
  generation?: unknown;
}

interface ListenerOptions {
  /** The pool's connection settings: the LISTEN connection is opened beside the pool. */
  poolOptions: pg.Pool['options'];
  channel: string;
  log: QueueLogger;
  onNotice: (notice: Notice) => void;
  /** Connected (again): what was announced while nobody listened has to be looked up. */
  onConnected: () => void;
}

/** The LISTEN connection, reconnected until `stop()`. */
export class QueueListener {
  private listener: pg.Client | undefined;
  /** Gives up the current LISTEN connection (it failed or stopped answering) and reconnects. */
  private dropListener: ((error: Error) => void) | undefined;
  private listenerFailures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: ListenerOptions) {}

  /** The connection while it is up (and listening). */
  get client(): pg.Client | undefined {
    return this.listener;
  }

  /** Opens the connection (in the background). */
  start(): void {
    void this.connectListener();
  }

  /** Replaces `client` (it stopped answering), unless it has been replaced already. */
  drop(client: pg.Client, error: Error): void {
    if (client === this.listener) this.dropListener?.(error);
  }

  /** No more reconnects; ends the connection. Returns the end, or undefined if none was up. */
  stop(): Promise<void> | undefined {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = undefined;
    return listener?.end().catch(() => undefined);
  }

  private async connectListener(): Promise<void> {
    if (this.stopped) return;
    const options = this.options.poolOptions;
    // `password` is not enumerable in the pool's options: pass it on explicitly.
    const client = new pg.Client({
      ...options,
      password: options.password,
      keepAlive: true,
      application_name: `${options.application_name ?? 'aps'} (queue)`,
    });
    const state = { dead: false };
    const onDown = (error?: Error) => {
      if (state.dead) return;
      state.dead = true;
      if (this.listener === client) {
        this.listener = undefined;
        this.dropListener = undefined;
      }
      if (error !== undefined && !this.stopped) {
        this.options.log.warn(
          { err: error },
          'job queue: the LISTEN connection failed; reconnecting',
        );
      }
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onDown);
    client.on('end', () => {
      onDown();
    });
    client.on('notification', (message) => {
      this.onNotice(message.payload);
    });
    try {
      await client.connect();
      await client.query(`listen ${this.options.channel}`);
    } catch (error) {
      onDown(error as Error);
      return;
    }
    // Closed meanwhile, or the connection dropped already (onDown reconnects then).
    if (this.isStopped() || state.dead) {
      state.dead = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    this.dropListener = onDown;
    this.listenerFailures = 0;
    // Whatever was announced while nobody listened: look now.
    this.options.onConnected();
  }

  private isStopped(): boolean {
    return this.stopped;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer !== undefined) return;
    this.listenerFailures += 1;
    const delay = Math.min(10_000, 250 * 2 ** Math.min(this.listenerFailures, 6));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connectListener();
    }, delay).unref();
  }

  private onNotice(payload: string | undefined): void {
    if (payload === undefined) return;
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    this.options.onNotice(notice);
  }
}
