/**
 * What the console knows of the server beyond a page: its health (public `/health`), polled while
 * the console is open. `readOnly` drives the banner on every page and disables what would fail.
 */
import { computed, reactive } from 'vue';
import type { Health } from './types.js';

export const serverState = reactive<{ health: Health | null; error: string | null }>({
  health: null,
  error: null,
});

export const readOnly = computed(() => serverState.health?.mode === 'read_only');

/** Why the server is read-only, for the banner. */
export const readOnlyReason = computed(
  () => serverState.health?.migration.errorMessage ?? 'the database migration failed',
);

export async function refreshHealth(): Promise<void> {
  try {
    const response = await fetch('/health', { headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(`/health answered ${response.status}`);
    serverState.health = (await response.json()) as Health;
    serverState.error = null;
  } catch (error) {
    serverState.error = error instanceof Error ? error.message : String(error);
  }
}

let timer: ReturnType<typeof setInterval> | undefined;

/** Polls /health every `intervalMs` (and at once). */
export function watchHealth(intervalMs = 15_000): void {
  clearInterval(timer);
  void refreshHealth();
  timer = setInterval(() => void refreshHealth(), intervalMs);
}
