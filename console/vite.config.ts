/**
 * Builds the console (console/) into dist/console/, served by the server at /console/
 * (src/http/console.ts). `npm run build` runs it after the server's tsc; `npm run console:dev`
 * serves it with hot reload, the API proxied to a server on APS_URL (default localhost:4000).
 */
import { fileURLToPath } from 'node:url';
import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'vite';

const target = process.env.APS_URL ?? 'http://127.0.0.1:4000';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [vue()],
  define: {
    __VUE_OPTIONS_API__: 'false',
    __VUE_PROD_DEVTOOLS__: 'false',
    __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false',
  },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // Nothing inline (the CSP allows no inline script, and data: URLs only for images).
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: true,
    // A slow shared machine is not news: no timing warnings in every build's output.
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
  server: {
    proxy: {
      '/api': target,
      '/health': target,
      '/console/config.json': target,
    },
  },
});
