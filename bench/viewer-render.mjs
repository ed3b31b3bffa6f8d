#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
// Render benchmark of the web viewer (web/static): a deterministic synthetic 100k-node
// hotcold-profile/1, served by the dev server (tests/e2e/viewer/dev-server.mjs), opened in
// headless Chromium. Per repetition (a fresh page each): (a) profile JSON arrived -> first flame
// graph drawn (parse + flatten + draw), (b) click-to-zoom redraw, (c) JSON.parse alone.
// Prints medians over the repetitions.
//
//   node bench/viewer-render.mjs [--nodes 100000] [--reps 5] [--keep FILE] [--strict]
//
// --strict: exit 1 when the median arrival -> first render is 200 ms or more.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createDevServer, mulberry32 } from '../tests/e2e/viewer/dev-server.mjs';

const args = process.argv.slice(2);
const opt = (k, d) => {
	const i = args.indexOf(k);
	return i >= 0 ? args[i + 1] : d;
};
const NODES = Number(opt('--nodes', 100000));
const REPS = Number(opt('--reps', 5));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** A deterministic profile with exactly `total` nodes: processes, threads, user then kernel frames. */
export function syntheticProfile(total, seed = 42) {
	const rnd = mulberry32(seed);
	const pick = (n) => Math.floor(rnd() * n);
	const mk = (name, kind, extra = {}) => ({ name, kind, ...extra, value: 0, on_cpu_ns: 0, off_cpu_ns: 0, runqueue_ns: 0, samples: 0, children: [], _d: 0 });
	const root = mk('all', 'root');
	let count = 1;
	const frontier = [];
	const nProc = 60;
	for (let p = 0; p < nProc && count < total; p++) {
		const pid = 1000 + p * 37;
		const proc = mk(`proc-${p % 45}`, 'process', { pid });
		proc._d = 1;
		root.children.push(proc);
		count++;
		const nThr = 1 + pick(6);
		for (let t = 0; t < nThr && count < total; t++) {
			const th = mk(t ? `worker-${t}` : `proc-${p % 45}`, 'thread', { tid: pid + t });
			th._d = 2;
			proc.children.push(th);
			count++;
			frontier.push(th);
		}
	}
	const modules = ['/usr/bin/app', '/usr/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/libssl.so.3', '/usr/bin/postgres', '/usr/lib/libz.so.1'];
	// Grow: pick a frontier node (half uniformly, half among recent ones so stacks get deep) and
	// give it a child.
	while (count < total) {
		const k = rnd() < 0.5
			? pick(frontier.length)
			: frontier.length - 1 - Math.min(frontier.length - 1, Math.floor(-Math.log(1 - rnd()) * 40));
		const parent = frontier[k];
		const d = parent._d + 1;
		let node;
		if (d > 70) {
			frontier.splice(k, 1);
			continue;
		}
		const kernel = d > 14 + (parent.tid ?? 0) % 9 || parent.kind === 'kernel';
		if (kernel) node = mk(`kfunc_${pick(1500)}`, 'kernel');
		else node = mk(`app::module${pick(40)}::function_${pick(3000)}`, 'user', { module: modules[pick(modules.length)] });
		node._d = d;
		parent.children.push(node);
		count++;
		frontier.push(node);
		if (parent.children.length > 1 + pick(5)) frontier.splice(frontier.indexOf(parent), 1);
	}
	// Self times on every node (leaves weigh more), then inclusive sums bottom-up.
	const period = 10101010;
	const order = [];
	const st = [root];
	while (st.length) {
		const n = st.pop();
		order.push(n);
		for (const c of n.children) st.push(c);
	}
	for (let i = order.length - 1; i >= 0; i--) {
		const n = order[i];
		if (n.kind !== 'root') {
			const leaf = n.children.length === 0;
			const samples = leaf ? 1 + pick(40) : pick(3);
			n.samples += samples;
			n.on_cpu_ns += samples * period;
			const r = rnd();
			if (leaf && r < 0.35) n.off_cpu_ns += Math.round(rnd() * 5e8);
			if (leaf && r > 0.8) n.runqueue_ns += Math.round(rnd() * 5e7);
		}
		for (const c of n.children) {
			n.samples += c.samples;
			n.on_cpu_ns += c.on_cpu_ns;
			n.off_cpu_ns += c.off_cpu_ns;
			n.runqueue_ns += c.runqueue_ns;
		}
		n.value = n.on_cpu_ns + n.off_cpu_ns + n.runqueue_ns;
	}
	for (const n of order) {
		delete n._d;
		n.children.sort((a, b) => b.value - a.value || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
	}
	const emit = (n) => {
		const o = { name: n.name, kind: n.kind };
		if (n.pid !== undefined) o.pid = n.pid;
		if (n.tid !== undefined) o.tid = n.tid;
		if (n.module !== undefined) o.module = n.module;
		Object.assign(o, { value: n.value, on_cpu_ns: n.on_cpu_ns, off_cpu_ns: n.off_cpu_ns, runqueue_ns: n.runqueue_ns, samples: n.samples });
		o.children = n.children.map(emit);
		return o;
	};
	const here = path.dirname(fileURLToPath(import.meta.url));
	const base = JSON.parse(fs.readFileSync(path.join(here, '../fixtures/viewer/profile.json'), 'utf8'));
	return {
		schema: 'hotcold-profile/1', host: 'synthetic', kernel: '6.1.0-bench', started_at: '2026-11-22T10:00:00.000Z',
		duration_ns: 60e9,
		sampling: { frequency_hz: 99, period_ns: period, cpus: 8, expected_samples: 47520, samples: root.samples, idle_samples: 0, per_cpu: [], lost: {} },
		totals: { on_cpu_ns: root.on_cpu_ns, off_cpu_ns: root.off_cpu_ns, runqueue_ns: root.runqueue_ns, idle_ns: 0, cpu_unclaimed_ns: 0, kernel_samples: 0, user_samples: 0 },
		symbolize: {},
		flamegraph: emit(root),
		histograms: base.histograms,
		_nodes: count,
	};
}

const median = (a) => {
	const s = [...a].sort((x, y) => x - y);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
	const t0 = Date.now();
	const doc = syntheticProfile(NODES);
	const nodes = doc._nodes;
	delete doc._nodes;
	const file = opt('--keep') || path.join(os.tmpdir(), `hotcold-bench-${process.pid}.json`);
	fs.writeFileSync(file, JSON.stringify(doc));
	const bytes = fs.statSync(file).size;
	console.log(`synthetic profile: ${nodes} nodes, ${(bytes / 1048576).toFixed(1)} MiB (generated in ${Date.now() - t0} ms)`);

	const { server } = createDevServer({ profilePath: file });
	await new Promise((r) => server.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${server.address().port}/#live=0`;
	const browser = await chromium.launch({
		executablePath: CHROMIUM,
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
	});
	const rows = [];
	try {
		for (let rep = 0; rep < REPS; rep++) {
			const page = await browser.newPage({ viewport: { width: 1600, height: 1000 }, deviceScaleFactor: 1 });
			const errors = [];
			page.on('pageerror', (e) => errors.push(e.message));
			page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
			await page.goto(url);
			await page.waitForFunction(() => window.__hotcold?.ready && window.__hotcold.lastLoad?.nodes > 0, null, { timeout: 60000 });
			await page.waitForTimeout(100); // let nextFrameMs land
			const load = await page.evaluate(() => window.__hotcold.lastLoad);
			// Zoom into the widest frame at depth >= 3 (a real subtree), then back out to the root.
			const frame = await page.evaluate(() => window.__hotcold.frames(30, 500).find((f) => f.depth >= 3));
			if (!frame) throw new Error('no frame to zoom into');
			await page.mouse.click(frame.x + Math.min(frame.w / 2, 40), frame.y + frame.h / 2);
			await page.waitForFunction((i) => window.__hotcold.lastZoom?.index === i, frame.index, { timeout: 10000 });
			const zin = await page.evaluate(() => window.__hotcold.lastZoom);
			await page.click('#crumbs button.crumb >> nth=0');
			await page.waitForFunction(() => window.__hotcold.lastZoom?.index === 0, null, { timeout: 10000 });
			const zout = await page.evaluate(() => window.__hotcold.lastZoom);
			const drawn = await page.evaluate(() => window.__hotcold.nodesDrawn);
			if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
			rows.push({ ...load, otherMs: load.arrivalToRenderMs - load.parseMs - load.flattenMs - load.renderMs, zoomInMs: zin.renderMs, zoomInPaintMs: zin.eventToPaintMs, zoomOutMs: zout.renderMs, zoomOutPaintMs: zout.eventToPaintMs, drawn });
			await page.close();
		}
	} finally {
		await browser.close();
		server.close();
		if (!opt('--keep')) fs.rmSync(file, { force: true });
	}
	const cols = [
		['JSON.parse (c)', 'parseMs'],
		['flatten (first pass)', 'flattenMs'],
		['first draw', 'renderMs'],
		['  of which layout + canvas size', 'renderSetupMs'],
		['  of which walk rows', 'walkMs'],
		['  of which fill rectangles', 'fillMs'],
		['  of which text', 'textMs'],
		['other page work (crumbs, info)', 'otherMs'],
		['arrival -> next frame painted', 'nextFrameMs'],
		['complete flatten + redraw (bg)', 'completeMs'],
		['arrival -> first render (a)', 'arrivalToRenderMs'],
		['zoom in: redraw (b)', 'zoomInMs'],
		['zoom in: click -> painted', 'zoomInPaintMs'],
		['zoom out: redraw', 'zoomOutMs'],
		['zoom out: click -> painted', 'zoomOutPaintMs'],
		['fetch (dev server, loopback)', 'fetchMs'],
	];
	console.log(`\n${nodes} nodes (${rows[0].firstNodes} in the first pass), ${REPS} repetitions, 1600x1000 viewport, ${rows[0].drawn} rectangles drawn at the root`);
	console.log(`${'measure'.padEnd(32)} ${'median ms'.padStart(10)} ${'min ms'.padStart(8)}   runs`);
	for (const [label, k] of cols) {
		const v = rows.map((r) => r[k]);
		if (v.some((x) => typeof x !== 'number')) continue;
		console.log(`${label.padEnd(32)} ${median(v).toFixed(1).padStart(10)} ${Math.min(...v).toFixed(1).padStart(8)}   ${v.map((x) => x.toFixed(1)).join(' ')}`);
	}
	// The target: a 100k-node profile drawn within 200 ms of its arrival. Timings depend on the
	// machine's load (the VM has 2 CPUs), so missing it is an error only with --strict.
	const a = median(rows.map((r) => r.arrivalToRenderMs));
	const load = os.loadavg()[0].toFixed(2);
	console.log(`\ntarget arrival -> first render < 200 ms: ${a < 200 ? 'met' : 'NOT met'} (median ${a.toFixed(1)} ms; load average ${load} on ${os.cpus().length} CPUs)`);
	if (!(a < 200) && args.includes('--strict')) process.exitCode = 1;
}

main().catch((e) => {
	console.error(`viewer-render: ${e.stack || e}`);
	process.exit(1);
});
