#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
// Runs viewer.test.mjs against the dev server (fixtures, no root, no BPF): a check of the
// viewer alone. The real check is viewer.test.mjs against `hotcold serve`.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDevServer } from './dev-server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { server } = createDevServer();
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}`;
console.log(`# dev server at ${url}`);
const child = spawn(process.execPath, [path.join(here, 'viewer.test.mjs')], {
	stdio: 'inherit',
	env: { ...process.env, HOTCOLD_URL: url },
});
const timer = setTimeout(() => {
	console.error('run-dev: viewer.test.mjs did not finish in 180 s');
	child.kill('SIGKILL');
}, 180000);
child.on('exit', (code, sig) => {
	clearTimeout(timer);
	server.close();
	process.exit(code ?? (sig ? 1 : 0));
});
