/** The console's entry: the API prefix, the tab's session, then the app. */
import { createApp } from 'vue';
import App from './App.vue';
import { api, loadConfig } from './lib/api.js';
import { restoreSession, setRefresher } from './lib/session.js';
import type { TokenResponse } from './lib/types.js';
import { router } from './router.js';
import './styles.css';

async function start(): Promise<void> {
  await loadConfig();
  setRefresher(() => api<TokenResponse>('POST', '/auth/token/refresh'));
  restoreSession();
  createApp(App).use(router).mount('#app');
}

start().catch((error: unknown) => {
  const app = document.getElementById('app');
  if (app !== null) {
    app.textContent = `The console could not start: ${error instanceof Error ? error.message : String(error)}`;
  }
});
