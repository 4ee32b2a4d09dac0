// Latency of one search: the retrieve route directly vs search_knowledge over MCP (HTTP, stdio).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
const [base, key, n = '100'] = process.argv.slice(2);
const N = Number(n);
const q = (i) => ({ query: `how often is the impeller replaced ${i % 7}` });
const p = (xs, f) => xs.sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))].toFixed(2);
async function time(label, fn) {
  for (let i = 0; i < 10; i++) await fn(i);
  const xs = [];
  for (let i = 0; i < N; i++) { const t = performance.now(); await fn(i); xs.push(performance.now() - t); }
  console.log(`${label}: p50 ${p(xs, 0.5)} ms, p95 ${p(xs, 0.95)} ms (n=${N})`);
}
await time('POST /knowledge/retrieve', async (i) => {
  const r = await fetch(`${base}/api/v1/knowledge/retrieve`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(q(i)) });
  await r.json();
});
const http = new Client({ name: 'lat', version: '1' });
await http.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
await time('MCP HTTP search_knowledge', (i) => http.callTool({ name: 'search_knowledge', arguments: q(i) }));
await time('MCP HTTP tools/list', () => http.listTools());
await http.close();
const stdio = new Client({ name: 'lat', version: '1' });
await stdio.connect(new StdioClientTransport({ command: process.execPath, args: ['dist/cli.js', 'mcp'], env: { PATH: process.env.PATH, APS_URL: base, APS_API_KEY: key }, stderr: 'ignore' }));
await time('MCP stdio search_knowledge', (i) => stdio.callTool({ name: 'search_knowledge', arguments: q(i) }));
await stdio.close();
