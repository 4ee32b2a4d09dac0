/**
 * The worker thread of lease-keeper.ts: renews this instance's leases on a connection of its own,
 * so that a long synchronous pass on the main thread cannot let them expire.
 *
 * In: `{type: 'start', connection, owner, leaseMs, everyMs}` once; then `{type: 'jobs', jobs}`
 * (the running jobs, `{id, attempt}`, which also says the main thread is alive) whenever the main
 * thread's heartbeat runs. It renews while the last such message is less than `maxStallMs` old:
 * a main thread hung for good must not keep its jobs for ever.
 */
import { parentPort } from 'node:worker_threads';
import pg from 'pg';

interface Start {
  type: 'start';
  connection: pg.ClientConfig;
  owner: string;
  leaseMs: number;
  everyMs: number;
  maxStallMs: number;
}
interface Jobs {
  type: 'jobs';
  jobs: { id: string; attempt: number }[];
}

let settings: Start | undefined;
let jobs: Jobs['jobs'] = [];
let heardAt = Date.now();
let client: pg.Client | undefined;

async function connected(config: Start): Promise<pg.Client> {
  if (client !== undefined) return client;
  const fresh = new pg.Client({
    ...config.connection,
    keepAlive: true,
    statement_timeout: config.everyMs,
    application_name: 'aps-lease-keeper',
  });
  fresh.on('error', () => {
    if (client === fresh) client = undefined; // reconnects at the next renewal
  });
  await fresh.connect();
  client = fresh;
  return fresh;
}

async function renew(config: Start): Promise<void> {
  if (jobs.length === 0 || Date.now() - heardAt > config.maxStallMs) return;
  try {
    const db = await connected(config);
    await db.query(
      `update aps_jobs set lease_until = now() + $3::int * interval '1 millisecond'
       where owner = $2 and status = 'running'
         and (id, attempt) in (select * from unnest($1::text[], $4::int[]))`,
      [jobs.map((j) => j.id), config.owner, config.leaseMs, jobs.map((j) => j.attempt)],
    );
  } catch {
    // The main thread's own heartbeat reports failures; this one tries again next time.
    const broken = client;
    client = undefined;
    void broken?.end().catch(() => undefined);
  }
}

parentPort?.on('message', (message: Start | Jobs) => {
  if (message.type === 'jobs') {
    jobs = message.jobs;
    heardAt = Date.now();
    return;
  }
  settings = message;
  const config = settings;
  // Connected before the first job needs it.
  connected(config).catch(() => undefined);
  let running = false;
  setInterval(() => {
    if (running) return;
    running = true;
    void renew(config).finally(() => {
      running = false;
    });
  }, config.everyMs);
});
