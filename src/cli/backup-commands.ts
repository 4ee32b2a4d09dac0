/** `aps backup` and `aps restore`: the commands over backup.ts and restore.ts. */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { megabytes } from './backup-manifest.js';
import { backup } from './backup.js';
import { restore } from './restore.js';
import type { CliSession } from './session.js';

const rate = (bytes: number, seconds: number) =>
  `${megabytes(bytes)} in ${seconds.toFixed(1)} s (${(bytes / 1e6 / Math.max(seconds, 1e-3)).toFixed(1)} MB/s)`;

export function registerBackup(program: Command, session: CliSession): void {
  program
    .command('backup')
    .description(
      'Write one archive of the database, its stored files and search snapshots (while the server runs)',
    )
    .requiredOption('--out <file>', 'the archive to write (.tar.gz or .tgz: compressed; else .tar)')
    .option('--json', 'print the manifest as JSON')
    .action(async (opts: { out: string; json?: boolean }) => {
      await session.requireDatabase('nothing to back up');
      const config = session.config();
      const out = resolve(opts.out);
      const result = await backup(config, out, (line) => {
        session.note(line);
      });
      const { manifest } = result;
      if (opts.json === true) {
        console.log(JSON.stringify(manifest));
        return;
      }
      const counts =
        manifest.counts === null
          ? 'stored files only: back up the database with pg_dump -Fc'
          : `${manifest.counts.documents} documents, ${manifest.counts.chunks} chunks`;
      const data = manifest.files.reduce((sum, f) => sum + f.size, 0);
      console.log(`wrote ${out}: ${counts}, ${manifest.files.length} files`);
      console.log(`${rate(data, result.seconds)}; archive ${megabytes(result.bytes)}`);
      if (manifest.dropped.length > 0) {
        console.log(
          `${manifest.dropped.length} documents deleted while the backup ran are left out (listed in the manifest)`,
        );
      }
    });

  program
    .command('restore')
    .description('Restore an archive of `aps backup` into the data directory (--data-dir)')
    .argument('<file>', 'the archive')
    .option('--force', 'replace the content of a data directory that is not empty')
    .action(async (file: string, opts: { force?: boolean }) => {
      const config = session.config();
      const result = await restore(resolve(file), config.dataDir, opts.force === true);
      const { manifest } = result;
      const counts =
        manifest.counts === null
          ? 'stored files'
          : `${manifest.counts.documents} documents, ${manifest.counts.chunks} chunks`;
      console.log(`restored ${counts} into ${result.target}`);
      console.log(rate(result.bytes, result.seconds));
      if (result.snapshotsDropped > 0) {
        console.log(`${result.snapshotsDropped} search snapshots will be rebuilt at start`);
      }
      if (manifest.database.kind === 'postgres') {
        console.log('the database is not in this archive: restore it with pg_restore');
      } else if (
        config.database.driver !== 'sqlite' ||
        !config.database.filename.startsWith(result.target)
      ) {
        console.log(`serve it with DATA_DIR=${result.target} and DATABASE_URL unset`);
      }
    });
}
