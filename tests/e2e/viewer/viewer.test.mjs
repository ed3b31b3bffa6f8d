#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
// Browser test of the bundled viewer against a running `hotcold serve` (or the dev server):
//
//   HOTCOLD_URL=http://127.0.0.1:8080 node tests/e2e/viewer/viewer.test.mjs
//
// Uses only the documented API (docs/api.md) and the viewer's read-only debug hook
// (window.__hotcold, docs/viewer.md). Headless Chromium at /usr/bin/chromium (CHROMIUM to
// override). Every wait is bounded; the first failed check stops the run with a message and a
// non-zero exit. Prints "N passed, N failed" last.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const BASE = (process.env.HOTCOLD_URL || '').replace(/\/+$/, '');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const DATA_WAIT_MS = Number(process.env.HOTCOLD_WAIT_S || 60) * 1000;
const T = 20000; // bound of every in-page wait, ms
const HIGHLIGHT = [230, 0, 230]; // search match colour (flame.js MATCH_RGB)
// Lock nodes (docs/viewer.md): blocked waits deep violet, spun ones light violet.
const LOCK_RGB = [126, 87, 194];
const LOCK_SPIN_RGB = [179, 157, 219];
// `hotcold serve --locks` with `hc-workload locks` run between these two instants (unix ms),
// pid HC_LOCKS_PID (test_viewer.sh).
const LOCKS_FROM_MS = Number(process.env.HC_LOCKS_FROM_MS || 0);
const LOCKS_TO_MS = Number(process.env.HC_LOCKS_TO_MS || 0);
const LOCKS_PID = Number(process.env.HC_LOCKS_PID || 0);

let passed = 0;
let failed = 0;
const requests = []; // every request of every page, as URLs

class Check extends Error {}
function ok(cond, msg) {
	if (!cond) throw new Check(msg);
}

const started = Date.now();

async function step(name, fn) {
	const t0 = Date.now();
	try {
		await fn();
		passed++;
		// How long it took, and since the start: meson gives the whole run 300 s.
		console.log(`ok ${passed + failed} - ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s, at ${((Date.now() - started) / 1000).toFixed(0)} s)`);
	} catch (e) {
		failed++;
		console.log(`not ok ${passed + failed} - ${name}`);
		console.log(`  # ${e instanceof Check ? e.message : e.stack || e}`);
		if (e && typeof e === 'object') e.counted = true;
		throw e;
	}
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits (bounded) until the API has a non-empty profile, so the page does not meet a 503. */
async function waitForData() {
	const deadline = Date.now() + DATA_WAIT_MS;
	let last = '';
	while (Date.now() < deadline) {
		try {
			const st = await fetch(`${BASE}/api/status`);
			const pr = await fetch(`${BASE}/api/profile?from=-60s`);
			if (st.ok && pr.ok) {
				const doc = await pr.json();
				if (doc.schema === 'hotcold-profile/1' && doc.flamegraph?.children?.length > 0 && doc.flamegraph.value > 0) return;
				last = 'profile has no frames yet';
			} else last = `status ${st.status}, profile ${pr.status}`;
		} catch (e) {
			last = e.message;
		}
		await sleep(500);
	}
	throw new Check(`no data from ${BASE} within ${DATA_WAIT_MS / 1000} s (${last})`);
}

// ---------------------------------------------------------------------------- diff helpers

const settleOn = (p) => p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** [r, g, b, a] of the flame canvas at a viewport position (CSS px). */
const pixelAt = (p, x, y) => p.evaluate(({ x, y }) => {
	const c = document.getElementById('flame');
	const r = c.getBoundingClientRect();
	const s = c.width / r.width;
	return [...c.getContext('2d').getImageData(Math.floor((x - r.left) * s), Math.floor((y - r.top) * s), 1, 1).data];
}, { x, y });

const near = (a, b, tol = 3) => [0, 1, 2].every((k) => Math.abs(a[k] - b[k]) <= tol);

// The colour rule of docs/viewer.md ("Differential flame graphs"), written out independently:
// rel = (new self - base self) / max(base self, new self); level = sign(rel) * ceil(|rel| * 24)
// for |rel| >= 2 %, else 0; channel c = round(255 - 200 * |level| / 24); grew [255, c, c],
// shrank [c, c, 255], unchanged white.
function expectedLevel(baseSelf, newSelf) {
	const m = Math.max(baseSelf, newSelf);
	const rel = m > 0 ? (newSelf - baseSelf) / m : 0;
	if (Math.abs(rel) < 0.02) return 0;
	return Math.sign(rel) * Math.min(24, Math.ceil(Math.abs(rel) * 24));
}

function expectedRGB(level) {
	const c = Math.round(255 - (200 * Math.abs(level)) / 24);
	return level > 0 ? [255, c, c] : level < 0 ? [c, c, 255] : [255, 255, 255];
}

/** A hotcold-profile/1 flamegraph from {name, kind, pid/tid/module, self: {on, off}, children}. */
function profileTree(n) {
	const kids = (n.children || []).map(profileTree);
	const sum = (k) => kids.reduce((a, c) => a + c[k], 0);
	const on = (n.self?.on || 0) + sum('on_cpu_ns');
	const off = (n.self?.off || 0) + sum('off_cpu_ns');
	const rq = sum('runqueue_ns');
	const o = { name: n.name, kind: n.kind };
	for (const k of ['pid', 'tid', 'module', 'inlined']) if (n[k] !== undefined) o[k] = n[k];
	return Object.assign(o, {
		value: on + off + rq, on_cpu_ns: on, off_cpu_ns: off, runqueue_ns: rq, samples: Math.round(on / 1e6), children: kids,
	});
}

function profileDoc(root, durationNs, startedAt) {
	const fg = profileTree(root);
	return {
		schema: 'hotcold-profile/1', host: 'diff-test', kernel: null, started_at: startedAt, duration_ns: durationNs,
		sampling: { frequency_hz: 1000, period_ns: 1000000, cpus: 1, expected_samples: 0, samples: fg.samples, idle_samples: 0, per_cpu: [], lost: {} },
		totals: { on_cpu_ns: fg.on_cpu_ns, off_cpu_ns: fg.off_cpu_ns, runqueue_ns: 0, idle_ns: 0 },
		symbolize: {}, flamegraph: fg, histograms: {},
	};
}

/**
 * Matching in diffs: unresolved frames of one module stay apart by offset (as the flame graph
 * and report --diff keep them), equal ones merge; processes merge by name whatever their pid.
 */
async function diffMatchStep(page) {
	await step('diff matching: unresolved frames apart by offset, processes by name', () => diffMatch(page));
	await page.close();
}

async function diffMatch(page) {
	await page.goto(`${BASE}/#live=0`, { timeout: 30000 });
	const r = await page.evaluate(async () => {
		const { mergeTrees } = await import('/diff.js');
		const w = (on) => ({ value: on, on_cpu_ns: on, off_cpu_ns: 0, runqueue_ns: 0, samples: 1 });
		const unk = (off, on) => ({ name: '[unknown]', kind: 'user', module: '/lib/x.so', offset: off, ...w(on), children: [] });
		const tree = (pid, kids) => {
			const sum = kids.reduce((a, c) => a + c.value, 0);
			const thr = { name: 'p', kind: 'thread', tid: pid, ...w(sum), children: kids };
			return { name: 'all', kind: 'root', ...w(sum), children: [{ name: 'p', kind: 'process', pid, ...w(sum), children: [thr] }] };
		};
		const m = mergeTrees(tree(1, [unk('0x10', 5), unk('0x20', 7)]), tree(2, [unk('0x10', 3)]));
		const thr = m.children[0].children[0];
		return { procs: m.children.length, frames: thr.children.map((c) => [c.offset, c.v[0], c.v[4]]) };
	});
	ok(r.procs === 1, `processes merge by name: ${JSON.stringify(r)}`);
	ok(r.frames.length === 2, `unresolved frames stay apart by offset: ${JSON.stringify(r)}`);
}

/**
 * Inlined frames (docs/viewer.md): a file whose compute has square and mul inlined into it,
 * next to an out-of-line square. The inlined frames are hatched (light diagonal stripes over
 * their colour: several colours along one pixel row, where a plain frame has one), say
 * "(inlined)" in the tooltip, and zoom as frames of their own.
 */
async function inlineSteps(page, noProblems) {
	const MS = 1e6;
	const fn = (name, onMs, children = [], inlined) => ({ name, kind: 'user', module: '/usr/bin/app', inlined, self: { on: onMs * MS }, children });
	const doc = profileDoc({ name: 'all', kind: 'root', children: [{ name: 'app', kind: 'process', pid: 100, children: [{ name: 'app', kind: 'thread', tid: 100, children: [
		fn('main', 0, [fn('compute', 10, [fn('square', 200, [fn('mul', 300, [], true)], true)]), fn('square', 400)]),
	] }] }] }, 1e9, '2026-11-22T08:00:00.000Z');
	const hook = (f, arg) => page.evaluate(f, arg);
	const file = path.join(os.tmpdir(), `hotcold-inline-test-${process.pid}.json`);
	fs.writeFileSync(file, JSON.stringify(doc));
	try {
		await step('inlined frames: hatched, apart from their out-of-line namesake', async () => {
			await page.goto(`${BASE}/#live=0`, { timeout: T });
			await page.waitForFunction(() => window.__hotcold?.ready, null, { timeout: T });
			await page.setInputFiles('#file', file);
			await page.waitForFunction(() => __hotcold.source === 'file' && __hotcold.nodesDrawn > 0, null, { timeout: T });
			await page.mouse.move(1, 1);
			await settleOn(page);
			const fr = await hook(() => __hotcold.frames(3, 500));
			const sq = fr.filter((f) => f.name === 'square');
			const inl = sq.find((f) => f.inlined);
			const real = sq.find((f) => !f.inlined);
			const mul = fr.find((f) => f.name === 'mul');
			ok(inl && real && mul?.inlined, `square (inlined and not) and mul (inlined) drawn: ${JSON.stringify(fr.map((f) => [f.name, f.inlined]))}`);
			ok(!fr.find((f) => f.name === 'compute').inlined, 'compute marked inlined');
			ok((await hook(() => __hotcold.hatchedDrawn)) === 2, `hatched ${await hook(() => __hotcold.hatchedDrawn)} frames, expected 2`);
			// Row 2 of each bar, above the text, across 16 px from its middle.
			const colours = async (f) => {
				const seen = new Set();
				for (let dx = 0; dx < 16; dx++) seen.add((await pixelAt(page, f.x + f.w / 2 + dx, f.y + 2)).slice(0, 3).join(','));
				return seen;
			};
			const ci = await colours(inl);
			const cr = await colours(real);
			ok(ci.size >= 2, `inlined square not striped: ${[...ci]}`);
			ok(cr.size === 1, `out-of-line square not plain: ${[...cr]}`);
			ok((await colours(mul)).size >= 2, 'inlined mul not striped');
		});

		await step('inlined frames: the tooltip says so, and zoom tells the two squares apart', async () => {
			const fr = await hook(() => __hotcold.frames(3, 500));
			const inl = fr.find((f) => f.name === 'square' && f.inlined);
			await page.mouse.move(inl.x + inl.w / 2, inl.y + inl.h / 2);
			await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: T });
			const tt = await page.textContent('#tooltip');
			ok(tt.includes('square (inlined)') && tt.includes('inlined into its caller'), `tooltip: ${JSON.stringify(tt)}`);
			await page.mouse.click(inl.x + inl.w / 2, inl.y + inl.h / 2);
			await page.waitForFunction(() => __hotcold.zoomPath.length === 5, null, { timeout: T });
			const zp = await hook(() => __hotcold.zoomPath);
			ok(zp[4] === 'square (inlined)', `zoom path ${JSON.stringify(zp)}`);
			// Zoomed in, the inlined square spans the view; the out-of-line one is not drawn.
			const after = await hook(() => __hotcold.frames(3, 500));
			ok(!after.some((f) => f.name === 'square' && !f.inlined), 'out-of-line square drawn when zoomed into the inlined one');
			noProblems('inlined frames');
		});
	} finally {
		fs.rmSync(file, { force: true });
		await page.close();
	}
}

/**
 * (1) Two files with known content: one function doubled (compute), one removed (old_fn), one
 * new (new_fn), the rest unchanged; the new capture has two `app` processes with other pids
 * and tids, and lasts 3 s against the base's 2 s (so normalisation is on by default).
 */
async function diffFileSteps(page, noProblems) {
	const MS = 1e6;
	const fn = (name, onMs, children = [], offMs = 0) => ({ name, kind: 'user', module: '/usr/bin/app', self: { on: onMs * MS, off: offMs * MS }, children });
	const proc = (name, pid, tid, children) => ({ name, kind: 'process', pid, children: [{ name, kind: 'thread', tid, children }] });
	const base = profileDoc({ name: 'all', kind: 'root', children: [
		proc('app', 100, 100, [fn('main', 20, [fn('compute', 100), fn('parse', 50), fn('old_fn', 30), fn('wait_io', 0, [], 40)])]),
		proc('other', 300, 300, [fn('loop', 0, [fn('tick', 2), fn('poll', 50), fn('spin', 8)])]),
	] }, 2e9, '2026-11-22T08:00:00.000Z');
	const next = profileDoc({ name: 'all', kind: 'root', children: [
		proc('app', 200, 201, [fn('main', 20, [fn('compute', 150), fn('parse', 50), fn('new_fn', 40), fn('wait_io', 0, [], 40)])]),
		proc('app', 250, 251, [fn('main', 0, [fn('compute', 50)])]),
		proc('other', 301, 302, [fn('loop', 0, [fn('tick', 2), fn('poll', 50), fn('spin', 8)])]),
	] }, 3e9, '2026-11-22T09:00:00.000Z');
	// Expected per path: base and new inclusive, base and new self, all-kinds ms; [] is the root.
	const M = ['app', 'app', 'main'];
	const table = [
		{ path: ['app'], b: 240, n: 350, bs: 0, ns: 0 },
		{ path: M, b: 240, n: 350, bs: 20, ns: 20 },
		{ path: [...M, 'compute'], b: 100, n: 200, bs: 100, ns: 200 },
		{ path: [...M, 'parse'], b: 50, n: 50, bs: 50, ns: 50 },
		{ path: [...M, 'new_fn'], b: 0, n: 40, bs: 0, ns: 40 },
		{ path: [...M, 'wait_io'], b: 40, n: 40, bs: 40, ns: 40 },
		// No self time on either side: unchanged, also normalised (2 + 50 + 8 ms scaled by 41/30
		// do not add up to 60 ms scaled in floating point).
		{ path: ['other', 'other', 'loop'], b: 60, n: 60, bs: 0, ns: 0 },
		{ path: ['other', 'other', 'loop', 'poll'], b: 50, n: 50, bs: 50, ns: 50 },
		{ path: [], b: 300, n: 410, bs: 0, ns: 0 },
	];
	const hook = (f, arg) => page.evaluate(f, arg);
	const node = (labels) => hook((l) => __hotcold.diffNode(l), labels);
	const frames = () => hook(() => __hotcold.frames(3, 500));

	async function checkTable(scale, where) {
		for (const t of table) {
			const d = await node(t.path);
			ok(d, `${where}: ${t.path.join(' › ')} not in the diff tree`);
			const lvl = expectedLevel(t.bs * MS * scale, t.ns * MS);
			ok(Math.abs(d.base - t.b * MS * scale) < 1 && Math.abs(d.baseRaw - t.b * MS) < 1 && d.new === t.n * MS,
				`${where}: ${t.path.join(' › ')} base ${d.base} (raw ${d.baseRaw}) new ${d.new}, expected base ${t.b} ms × ${scale}, new ${t.n} ms`);
			ok(Math.abs(d.delta - (t.n - t.b * scale) * MS) < 1, `${where}: ${t.path.join(' › ')} delta ${d.delta}`);
			ok(Math.abs(d.baseSelf - t.bs * MS * scale) < 1 && d.newSelf === t.ns * MS, `${where}: ${t.path.join(' › ')} self ${d.baseSelf} / ${d.newSelf}`);
			ok(d.level === lvl && JSON.stringify(d.rgb) === JSON.stringify(expectedRGB(lvl)),
				`${where}: ${t.path.join(' › ')} colour level ${d.level} rgb(${d.rgb}), expected ${lvl} rgb(${expectedRGB(lvl)})`);
		}
	}
	/** The pixel just inside the left edge of each named frame has its expected colour. */
	async function checkPixels(levels, where) {
		await page.mouse.move(1, 1); // no hover outline
		await settleOn(page);
		const fr = await frames();
		for (const [name, lvl] of Object.entries(levels)) {
			const f = fr.find((x) => x.name === name);
			ok(f && f.diff, `${where}: frame ${name} not drawn (${fr.map((x) => x.name)})`);
			ok(f.diff.level === lvl, `${where}: ${name} level ${f.diff.level}, expected ${lvl}`);
			const px = await pixelAt(page, f.x + 1.5, f.y + f.h / 2);
			ok(near(px, expectedRGB(lvl)), `${where}: ${name} pixel rgb(${px.slice(0, 3)}), expected rgb(${expectedRGB(lvl)})`);
		}
	}

	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hotcold-diff-'));
	try {
		const baseFile = path.join(dir, 'base.json');
		const newFile = path.join(dir, 'new.json');
		fs.writeFileSync(baseFile, JSON.stringify(base));
		fs.writeFileSync(newFile, JSON.stringify(next));

		await step('diff of two files: a base file, then the new file', async () => {
			await page.goto(`${BASE}/#live=0`, { timeout: T });
			await page.waitForFunction(() => window.__hotcold?.ready, null, { timeout: T });
			ok((await hook(() => __hotcold.diff)) === null, 'diff mode before any base');
			ok(await page.isHidden('#diff-bar'), 'diff bar shown without a base');
			await page.setInputFiles('#base-file', baseFile);
			// Live profile against the base file first.
			await page.waitForFunction(() => __hotcold.diff?.ready && __hotcold.source === 'api', null, { timeout: T });
			ok(await page.isVisible('#diff-bar'), 'diff bar hidden in diff mode');
			ok(await page.isHidden('#legend'), 'the normal legend is still shown in diff mode');
			await page.setInputFiles('#file', newFile);
			await page.waitForFunction(() => __hotcold.source === 'file' && __hotcold.diff?.ready && __hotcold.diff.newTotal === 410e6, null, { timeout: T });
			const d = await hook(() => __hotcold.diff);
			ok(d.kind === 'file' && d.base.file === 'base.json', `diff ${JSON.stringify(d)}`);
			ok(d.baseTotal === 300 * MS && d.newTotal === 410 * MS, `totals ${d.baseTotal} / ${d.newTotal}`);
			ok(d.normalizeDefault === true && d.normalize === true && Math.abs(d.scale - 410 / 300) < 1e-12,
				`2 s vs 3 s should normalise by default: ${JSON.stringify(d)}`);
			ok(await page.isChecked('#diff-norm'), 'normalise box not ticked');
			ok((await page.textContent('#diff-desc')).includes('base.json'), 'diff bar does not name the base file');
		});

		await step('diff of two files: merged values, deltas and colours (normalised)', async () => {
			await checkTable(410 / 300, 'normalised');
			ok((await node([...M, 'old_fn'])) === null, 'old_fn (gone) is drawn with the new widths');
			await checkPixels({ compute: 8, parse: -7, new_fn: 24, main: -7, loop: 0, poll: -7 }, 'normalised');
			// The two `app` processes of the new capture are one frame; its ids say so.
			const procs = (await frames()).filter((f) => f.depth === 1);
			ok(procs.length === 2 && procs.every((f) => f.pid === undefined), `processes drawn: ${JSON.stringify(procs.map((f) => [f.name, f.pid]))}`);
		});

		await step('diff of two files: normalisation off changes deltas and colours', async () => {
			await page.click('#diff-norm');
			await page.waitForFunction(() => __hotcold.diff?.scale === 1 && location.hash.includes('norm=0'), null, { timeout: T });
			ok((await hook(() => __hotcold.diff.normalize)) === false, 'still normalised');
			await checkTable(1, 'raw');
			await checkPixels({ compute: 12, parse: 0, new_fn: 24, main: 0, poll: 0 }, 'raw');
		});

		await step('diff of two files: tooltip gives base, new and the change', async () => {
			const f = (await frames()).find((x) => x.name === 'compute');
			await page.mouse.move(f.x + f.w / 2, f.y + f.h / 2);
			await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: T });
			const tt = await page.textContent('#tooltip');
			for (const want of ['new 200.0 ms', 'base 100.0 ms', 'change +100.0 ms (+100.0%)'])
				ok(tt.includes(want), `tooltip lacks ${JSON.stringify(want)}: ${JSON.stringify(tt)}`);
			await page.mouse.move(1, 1);
		});

		await step('diff of two files: base widths show the removed function, on-CPU mode', async () => {
			await page.click('#diff-w-base');
			await page.waitForFunction(() => __hotcold.diff?.widths === 'base' && location.hash.includes('dw=base'), null, { timeout: T });
			const gone = await node([...M, 'old_fn']);
			ok(gone && gone.base === 30 * MS && gone.new === 0 && gone.level === -24, `old_fn ${JSON.stringify(gone)}`);
			ok((await node([...M, 'new_fn'])) === null, 'new_fn (not in base) drawn with the base widths');
			await checkPixels({ old_fn: -24, compute: 12 }, 'base widths');
			const fr = await frames();
			const all = fr.find((x) => x.depth === 0);
			const compute = fr.find((x) => x.name === 'compute');
			ok(Math.abs(compute.w / all.w - 100 / 300) < 0.01, `compute is ${compute.w} of ${all.w} px with base widths`);
			await page.click('#mode-on');
			await page.waitForFunction(() => __hotcold.diff?.newTotal === 370e6, null, { timeout: T });
			const d = await hook(() => __hotcold.diff);
			ok(d.baseTotal === 260 * MS, `on-CPU base total ${d.baseTotal}`);
			ok((await node([...M, 'wait_io'])) === null, 'blocked-only wait_io drawn in on-CPU mode');
			await page.click('#mode-all');
			await page.click('#diff-w-new');
			await page.waitForFunction(() => __hotcold.diff?.widths === 'new' && __hotcold.diff.newTotal === 410e6, null, { timeout: T });
		});

		await step('diff of two files: search and zoom work on the diff', async () => {
			await page.fill('#search', 'compute');
			await page.press('#search', 'Enter');
			await page.waitForFunction(() => __hotcold.match.nodes > 0, null, { timeout: T });
			const m = await hook(() => __hotcold.match);
			ok(m.nodes === 1 && Math.abs(m.pctTotal - (100 * 200) / 410) < 1e-6, `match ${JSON.stringify(m)} (one merged compute, 200 of 410 ms)`);
			await settleOn(page);
			const hit = (await frames()).find((f) => f.matched);
			const px = await pixelAt(page, hit.x + 1.5, hit.y + 3);
			ok(near(px, HIGHLIGHT), `matched frame pixel rgb(${px.slice(0, 3)})`);
			await page.fill('#search', '');
			await page.press('#search', 'Enter');
			const main = (await frames()).find((f) => f.name === 'main');
			await page.mouse.click(main.x + 4, main.y + main.h / 2);
			await page.waitForFunction(() => __hotcold.zoomPath.length === 3, null, { timeout: T });
			ok(JSON.stringify(await hook(() => __hotcold.zoomPath)) === JSON.stringify(M), 'zoom path');
			ok((await page.locator('#crumbs button.crumb').count()) === 4, 'breadcrumb');
			await page.keyboard.press('Escape');
			await page.waitForFunction(() => __hotcold.zoomPath.length === 2, null, { timeout: T });
			await page.locator('#crumbs button.crumb').first().click();
			await page.waitForFunction(() => __hotcold.zoomPath.length === 0, null, { timeout: T });
		});

		await step('diff of two files: leaving diff mode restores the normal view', async () => {
			await page.click('#diff-exit');
			await page.waitForFunction(() => __hotcold.diff === null, null, { timeout: T });
			ok(!/(^|[#&])(base|norm|dw)=/.test(await page.evaluate(() => location.hash)), 'diff keys left in the URL');
			ok(await page.isHidden('#diff-bar'), 'diff bar still shown');
			await settleOn(page);
			const fr = await frames();
			ok(fr.length > 0 && fr.every((f) => f.diff === undefined), 'frames still carry diff values');
			const pids = fr.filter((f) => f.kind === 'process').map((f) => f.pid).sort();
			ok(JSON.stringify(pids) === '[200,250,301]', `processes of the new file by pid: ${JSON.stringify(pids)}`);
			const corner = await page.evaluate(() => [...document.getElementById('flame').getContext('2d').getImageData(1, 1, 1, 1).data]);
			ok(corner[3] === 0, `diff background left on the canvas: rgba(${corner})`);
			noProblems('after the file diff');
		});
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
		await page.close();
	}
}

/** Drags on the heat map from fraction f0 to f1 of its width, at half height. */
async function dragHeat(page, f0, f1) {
	const box = await page.locator('#heat-overlay').boundingBox();
	const y = box.y + box.height * 0.5;
	await page.mouse.move(box.x + box.width * f0, y);
	await page.mouse.down();
	for (let k = 1; k <= 5; k++) await page.mouse.move(box.x + box.width * (f0 + ((f1 - f0) * k) / 5), y);
	await page.mouse.up();
}

/** (2) Two ranges of the real server: set a base, pick another range, reload, leave. */
async function diffRangeSteps(page, noProblems, setReloading) {
	const hook = (f, arg) => page.evaluate(f, arg);
	const profileReq = (pred) => page.waitForRequest((r) => {
		const u = new URL(r.url());
		return u.pathname === '/api/profile' && pred(u.searchParams);
	}, { timeout: T });
	const rangeReq = (rg, kind = 'all') => profileReq((q) => q.get('from') === String(rg.from_ms) && q.get('to') === String(rg.to_ms) && q.get('kind') === kind);
	// The root weight of every /api/profile answer the page received, by relative URL: a past
	// second may still gain off-CPU time (flushed at the wakeup), so asking again later could
	// give another total.
	const answers = new Map();
	page.on('response', async (r) => {
		const u = new URL(r.url());
		if (u.pathname !== '/api/profile' || !r.ok()) return;
		try {
			answers.set(`api/profile${u.search}`, (await r.json()).flamegraph.value);
		} catch {
			/* the body of an answer to a document that was reloaded meanwhile */
		}
	});
	const rootOf = async (url) => {
		const deadline = Date.now() + T;
		while (!answers.has(url)) {
			ok(Date.now() < deadline, `the page received no answer for ${url}`);
			await sleep(50);
		}
		return answers.get(url);
	};
	let s1;
	let s2;
	let cols; // heat-map columns to drag over: [first, last] whole seconds the store holds
	try {
		await step('diff of two ranges: "set as base" requests the base range', async () => {
			// Ranges must hold data: wait (bounded) until the store holds 12 s, then pick columns
			// among the newest it holds (the oldest are the first a full store drops), without the
			// newest second (still filling).
			let ret = null;
			const deadline = Date.now() + DATA_WAIT_MS;
			for (;;) {
				const r = await fetch(`${BASE}/api/timeline?from=-60s`);
				ret = r.ok ? (await r.json()).retention : null;
				if (ret && ret.newest_ms - ret.oldest_ms >= 12000) break;
				ok(Date.now() < deadline, `the store holds less than 12 s: ${JSON.stringify(ret)}`);
				await sleep(1000);
			}
			await page.goto(`${BASE}/#live=0`, { timeout: T });
			await page.waitForFunction(() => window.__hotcold?.ready && __hotcold.timelineLoads > 0, null, { timeout: T });
			const tl = await hook(() => __hotcold.timeline);
			const first = Math.max(0, Math.ceil((ret.oldest_ms - tl.start_ms) / 1000)) + 1;
			const last = Math.min(tl.columns - 1, Math.floor((ret.newest_ms - tl.start_ms) / 1000)) - 1;
			ok(last - first >= 8, `too few columns with data: ${first}..${last} of ${tl.columns} (${JSON.stringify(ret)})`);
			cols = { first, last, n: tl.columns, at: (c) => (c + 0.5) / tl.columns, ret, tl };
			const loads0 = await hook(() => __hotcold.profileLoads);
			// Base: three seconds; new (below): the six after them, a different length.
			await dragHeat(page, cols.at(last - 9), cols.at(last - 7));
			await page.waitForFunction((n) => __hotcold.selection && __hotcold.profileLoads > n, loads0, { timeout: T });
			s1 = await hook(() => __hotcold.selection);
			ok(await page.isVisible('#diff-set'), 'no "set as base" control');
			const baseReq = rangeReq(s1);
			const newReq = profileReq((q) => q.get('from') === '-60s' && !q.has('to'));
			await page.click('#diff-set');
			await Promise.all([baseReq, newReq]);
			await page.waitForFunction(() => __hotcold.diff?.ready, null, { timeout: T });
			const d = await hook(() => __hotcold.diff);
			ok(d.kind === 'range' && d.base.from_ms === s1.from_ms && d.base.to_ms === s1.to_ms, `diff ${JSON.stringify(d)}`);
			const hash = await page.evaluate(() => location.hash);
			ok(hash.includes(`base=${s1.from_ms}..${s1.to_ms}`) && !hash.includes('sel='), `URL ${hash}`);
			ok((await page.textContent('#base-info')).includes('base'), 'the base range is not shown under the timeline');
			// The base is marked on the heat map in orange.
			const orange = await page.evaluate(({ a, b }) => {
				const c = document.getElementById('heat-overlay');
				const r = c.getBoundingClientRect();
				const s = c.width / r.width;
				const d = c.getContext('2d').getImageData(Math.floor(((a + b) / 2) * r.width * s), Math.floor(0.25 * r.height * s), 1, 1).data;
				// the middle column of the base: fully shaded
				return [...d];
			}, { a: cols.at(cols.last - 8), b: cols.at(cols.last - 8) });
			ok(orange[3] > 0 && orange[0] > orange[2], `heat map overlay at the base is rgba(${orange}), not orange`);
		});

		await step('diff of two ranges: picking another range draws the diff', async () => {
			const loads0 = await hook(() => __hotcold.profileLoads);
			await dragHeat(page, cols.at(cols.last - 5), cols.at(cols.last));
			await page.waitForFunction((n) => __hotcold.profileLoads > n && __hotcold.diff?.ready, loads0, { timeout: T });
			s2 = await hook(() => __hotcold.selection);
			ok(s2 && s2.from_ms >= s1.to_ms, `second range ${JSON.stringify(s2)} vs base ${JSON.stringify(s1)}`);
			ok(requests.some((u) => u.pathname === '/api/profile' && u.searchParams.get('from') === String(s2.from_ms) && u.searchParams.get('to') === String(s2.to_ms)),
				'no profile request for the new range');
			const d = await hook(() => __hotcold.diff);
			ok(d.base.from_ms === s1.from_ms && d.base.to_ms === s1.to_ms, `base moved: ${JSON.stringify(d.base)}`);
			const bq = new URL(d.lastBaseUrl, BASE).searchParams;
			ok(bq.get('from') === String(s1.from_ms) && bq.get('to') === String(s1.to_ms) && bq.get('kind') === 'all', `base URL ${d.lastBaseUrl}`);
			// Totals are the roots of the two answers.
			const bt = await rootOf(`api/profile?from=${s1.from_ms}&to=${s1.to_ms}&kind=all`);
			const nt = await rootOf(`api/profile?from=${s2.from_ms}&to=${s2.to_ms}&kind=all`);
			ok(d.baseTotal === bt && d.newTotal === nt,
				`totals ${d.baseTotal} / ${d.newTotal}, the API says ${bt} / ${nt}`);
			// The answers cover the two ranges widened to whole seconds: 3 s and 6 s.
			ok(d.baseDurationNs === 3e9 && d.newDurationNs === 6e9,
				`the answers cover ${d.baseDurationNs} and ${d.newDurationNs} ns, not 3 and 6 s (${JSON.stringify({ s1, s2, retention: cols.ret })})`);
			// Ranges of different lengths: normalised by default, base scaled to new's total.
			ok(d.normalizeDefault === true && d.normalize === true && (await page.isChecked('#diff-norm')), `not normalised by default: ${JSON.stringify(d)}`);
			ok(Math.abs(d.scale - d.newTotal / d.baseTotal) < 1e-9 * d.scale, `scale ${d.scale}, totals ${d.baseTotal} / ${d.newTotal}`);
			await page.mouse.move(1, 1);
			await settleOn(page);
			const fr = await hook(() => __hotcold.frames(6, 2000));
			ok(fr.length > 1 && fr.every((f) => f.diff), 'frames without diff values');
			for (const f of fr) {
				const x = f.diff;
				ok(Math.abs(x.delta - (x.new - x.base)) <= 1e-6 * Math.max(1, x.new, x.base), `${f.name}: delta ${x.delta} != ${x.new} - ${x.base}`);
				ok(x.level === expectedLevel(x.baseSelf, x.newSelf), `${f.name}: level ${x.level} for self ${x.baseSelf} -> ${x.newSelf}`);
				ok(f.depth === 0 || Math.abs(f.value - x.new) < 1e-6 * x.new, `${f.name}: width ${f.value} is not new's ${x.new}`);
			}
			const pick = fr.find((f) => f.depth >= 1 && f.w >= 6);
			const px = await pixelAt(page, pick.x + 1.5, pick.y + pick.h / 2);
			ok(near(px, expectedRGB(pick.diff.level)), `${pick.name}: pixel rgb(${px.slice(0, 3)}), level ${pick.diff.level}`);
		});

		await step('diff of two ranges: the mode asks both ranges for that kind', async () => {
			const reqs = [rangeReq(s1, 'on'), rangeReq(s2, 'on')];
			const loads0 = await hook(() => __hotcold.profileLoads);
			await page.click('#mode-on');
			await Promise.all(reqs);
			// Both answers are taken together: one more profile load is the diff of the two.
			await page.waitForFunction((n) => __hotcold.profileLoads > n && __hotcold.diff?.ready, loads0, { timeout: T });
			ok(new URL((await hook(() => __hotcold.diff)).lastBaseUrl, BASE).searchParams.get('kind') === 'on', 'base not asked with kind=on');
			// The totals are now on-CPU time only, on both sides.
			const d = await hook(() => __hotcold.diff);
			const bt = await rootOf(`api/profile?from=${s1.from_ms}&to=${s1.to_ms}&kind=on`);
			const nt = await rootOf(`api/profile?from=${s2.from_ms}&to=${s2.to_ms}&kind=on`);
			ok(d.baseTotal === bt && d.newTotal === nt,
				`on-CPU totals ${d.baseTotal} / ${d.newTotal}, the API says ${bt} / ${nt}`);
			const back = [rangeReq(s1), rangeReq(s2)];
			await page.click('#mode-all');
			await Promise.all(back);
		});

		await step('diff of two ranges: reload restores it', async () => {
			await page.waitForFunction(() => __hotcold.diff?.ready && __hotcold.lastProfileUrl.includes('kind=all'), null, { timeout: T });
			const before = await hook(() => ({ state: __hotcold.state, hash: location.hash, diff: __hotcold.diff }));
			const reqs = [rangeReq(s1), rangeReq(s2)];
			answers.clear();
			setReloading(true);
			await page.reload({ timeout: T });
			await Promise.all(reqs);
			await page.waitForFunction(() => window.__hotcold?.diff?.ready && __hotcold.renders > 0, null, { timeout: T });
			setReloading(false);
			const after = await hook(() => ({ state: __hotcold.state, hash: location.hash, diff: __hotcold.diff }));
			ok(after.hash === before.hash, `hash ${before.hash} -> ${after.hash}`);
			ok(JSON.stringify(after.state) === JSON.stringify(before.state), `state ${JSON.stringify(after.state)}`);
			for (const k of ['kind', 'base', 'normalize', 'widths', 'baseDurationNs', 'newDurationNs'])
				ok(JSON.stringify(after.diff[k]) === JSON.stringify(before.diff[k]), `diff.${k}: ${JSON.stringify(before.diff[k])} -> ${JSON.stringify(after.diff[k])}`);
			// The totals are those of the answers after the reload (past seconds may still grow).
			const bt = await rootOf(`api/profile?from=${s1.from_ms}&to=${s1.to_ms}&kind=all`);
			const nt = await rootOf(`api/profile?from=${s2.from_ms}&to=${s2.to_ms}&kind=all`);
			ok(after.diff.baseTotal === bt && after.diff.newTotal === nt, `totals after the reload ${after.diff.baseTotal} / ${after.diff.newTotal}, answers ${bt} / ${nt}`);
			ok((await hook(() => __hotcold.nodesDrawn)) > 0, 'nothing drawn after the reload');
		});

		await step('diff of two ranges: leaving diff mode restores the normal view', async () => {
			await page.click('#diff-exit');
			await page.waitForFunction(() => __hotcold.diff === null, null, { timeout: T });
			const hash = await page.evaluate(() => location.hash);
			ok(!hash.includes('base=') && hash.includes(`sel=${s2.from_ms}..${s2.to_ms}`), `URL ${hash}`);
			await settleOn(page);
			const fr = await hook(() => __hotcold.frames(6, 2000));
			ok(fr.length > 1 && fr.every((f) => f.diff === undefined), 'frames still carry diff values');
			ok(fr.filter((f) => f.kind === 'process').every((f) => Number.isInteger(f.pid)), 'process frames without pids');
			const corner = await page.evaluate(() => [...document.getElementById('flame').getContext('2d').getImageData(1, 1, 1, 1).data]);
			ok(corner[3] === 0, `diff background left on the canvas: rgba(${corner})`);
			ok(await page.isHidden('#diff-bar') && await page.isVisible('#legend') && await page.isHidden('#base-info'), 'diff controls still shown');
			noProblems('after the range diff');
		});
	} finally {
		await page.close();
	}
}

/** The flame canvas pixel just inside the left edge of a frame (canvas id). */
const framePixel = (p, canvasId, f) => p.evaluate(({ id, x, y }) => {
	const c = document.getElementById(id);
	const r = c.getBoundingClientRect();
	const s = c.width / r.width;
	return [...c.getContext('2d').getImageData(Math.floor((x - r.left + 1.5) * s), Math.floor((y - r.top + 3) * s), 1, 1).data];
}, { id: canvasId, x: f.x, y: f.y });

/**
 * Frames (hook getter `fn`) of a flame graph that satisfy pred; if none is in view, the graph
 * is scrolled to its deepest rows (the top, in flame order: lock nodes end their paths) first.
 */
async function framesWhere(page, fn, scrollerId, pred) {
	let f = (await page.evaluate(fn)).filter(pred);
	if (f.length) return f;
	await page.evaluate((id) => {
		document.getElementById(id).scrollTop = 0;
	}, scrollerId);
	await settleOn(page);
	f = (await page.evaluate(fn)).filter(pred);
	return f;
}

/**
 * (3) Kernel lock contention: serve runs with --locks, and `hc-workload locks` ran between
 * HC_LOCKS_FROM_MS and HC_LOCKS_TO_MS. The Locks view shows /api/locks for the range (the table,
 * the waiters' flame graph under hc_lock_thread, lock_wait_ns), follows a selection on the heat
 * map, opens a saved profile's locks section, says when tracking is off; the main flame graph
 * draws lock nodes in the lock colour.
 */
async function locksSteps(browser, watch, noProblems) {
	const page = watch(await browser.newPage({ viewport: { width: 1400, height: 950 }, deviceScaleFactor: 2 }));
	const hook = (f, arg) => page.evaluate(f, arg);
	const settle = () => settleOn(page);
	const from = LOCKS_FROM_MS - 1000;
	const to = LOCKS_TO_MS + 2000;
	const locksReq = (pred) => page.waitForRequest((r) => {
		const u = new URL(r.url());
		return u.pathname === '/api/locks' && pred(u.searchParams);
	}, { timeout: T });
	let api;
	try {
		await step('locks: the workload ran and serve has its contention', async () => {
			ok(LOCKS_FROM_MS > 0 && LOCKS_TO_MS > LOCKS_FROM_MS && LOCKS_PID > 0,
				'HC_LOCKS_FROM_MS, HC_LOCKS_TO_MS and HC_LOCKS_PID must say when hc-workload locks ran (test_viewer.sh)');
			const st = await (await fetch(`${BASE}/api/status`)).json();
			ok(st.locks?.enabled === true, `serve does not track locks: ${JSON.stringify(st.locks)}`);
			// sealed 2 s after they end: wait (bounded) until the range has its contention
			const deadline = Date.now() + T;
			for (;;) {
				const res = await fetch(`${BASE}/api/locks?from=${from}&to=${to}`);
				ok(res.ok, `GET /api/locks: HTTP ${res.status}`);
				api = await res.json();
				if (api.by_kind?.some((k) => k.kind === 'rwsem:W' && !k.spin && k.count > 0)) break;
				ok(Date.now() < deadline, `no blocked rwsem:W waits in ${from}..${to}: ${JSON.stringify(api.by_kind)}`);
				await sleep(500);
			}
		});

		await step('locks view: the table by kind, for the range asked', async () => {
			const req = locksReq((q) => q.get('from') === String(from) && q.get('to') === String(to));
			await page.goto(`${BASE}/#view=locks&range=${from}..${to}&live=0`, { timeout: T });
			await req;
			await page.waitForFunction(() => __hotcold.locks.state === 'shown' && __hotcold.locks.loads > 0, null, { timeout: T });
			ok(await page.isVisible('#locks-table'), 'the table is not shown');
			ok(await page.isVisible('#timeline-panel'), 'the timeline is not shown with the locks');
			const rows = await page.$$eval('#locks-rows tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
			// the view's answer is a new query: the same rows as the API's, same order
			const shown = await hook(() => __hotcold.locks.rows);
			ok(rows.length === shown.length && rows.length > 0, `${rows.length} rows in the table, ${shown.length} kinds`);
			const rw = shown.findIndex((r) => r.kind === 'rwsem:W' && r.how === 'block');
			ok(rw >= 0, `no rwsem:W block row: ${JSON.stringify(shown)}`);
			const k = api.by_kind.find((b) => b.kind === 'rwsem:W' && !b.spin);
			ok(shown[rw].count === k.count && shown[rw].total === k.total_ns && shown[rw].max === k.max_ns,
				`rwsem:W block row ${JSON.stringify(shown[rw])}, /api/locks says ${JSON.stringify(k)}`);
			ok(rows[rw][0] === 'rwsem:W' && rows[rw][1] === 'block' && rows[rw][2] === k.count.toLocaleString('en-US'),
				`table row ${JSON.stringify(rows[rw])}`);
			ok(Math.abs(shown[rw].mean - k.total_ns / k.count) < 1, 'mean is not total / count');
			const spins = shown.filter((r) => r.how === 'spin');
			ok(spins.length > 0 && spins.every((r) => rows[shown.indexOf(r)][1] === 'spin'), 'no spin rows');
			noProblems('locks view');
		});

		await step("locks view: the waiters' flame graph, under hc_lock_thread, lock nodes in the lock colour", async () => {
			await page.locator('#lflame-scroll').scrollIntoViewIfNeeded();
			await settle();
			const l = await hook(() => __hotcold.locks);
			ok(l.nodes > 1 && l.nodesDrawn > 0, `waiters' graph: ${l.nodes} nodes, ${l.nodesDrawn} drawn`);
			const frames = await hook(() => __hotcold.lockFrames(3, 3000));
			ok(frames.some((f) => f.kind === 'user' && f.name === 'hc_lock_thread'), `no hc_lock_thread frame among ${frames.length}`);
			const locks = await framesWhere(page, () => __hotcold.lockFrames(3, 3000), 'lflame-scroll', (f) => f.kind === 'lock');
			ok(locks.length > 0, 'no lock node drawn');
			const blocked = locks.find((f) => f.name.startsWith('rwsem:W') && f.offCpu > f.onCpu);
			ok(blocked, `no blocked rwsem:W lock node: ${JSON.stringify(locks.map((f) => f.name))}`);
			const px = await framePixel(page, 'lflame', blocked);
			ok(near(px, LOCK_RGB), `blocked lock node pixel rgb(${px.slice(0, 3)}), expected rgb(${LOCK_RGB})`);
			const spun = locks.find((f) => f.onCpu > f.offCpu && f.w >= 3);
			if (spun) {
				const sp = await framePixel(page, 'lflame', spun);
				ok(near(sp, LOCK_SPIN_RGB), `spun lock node pixel rgb(${sp.slice(0, 3)}), expected rgb(${LOCK_SPIN_RGB})`);
			}
			// hovering names it a lock wait, with spin and block apart
			await page.mouse.move(blocked.x + Math.min(blocked.w / 2, 20), blocked.y + blocked.h / 2);
			await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: T });
			const tt = await page.textContent('#tooltip');
			ok(tt.startsWith(`lock wait: ${blocked.name}`) && /blocked/.test(tt) && /contentions/.test(tt), `tooltip: ${JSON.stringify(tt)}`);
			await page.mouse.move(1, 1);
		});

		await step('locks view: lock_wait_ns histograms, spin and block apart', async () => {
			const l = await hook(() => __hotcold.locks);
			ok(l.histBars > 0 && l.histSeries >= 2, `lock_wait_ns: ${l.histBars} bars in ${l.histSeries} series`);
			const painted = await page.evaluate(() => [...document.querySelectorAll('#lock-hists canvas')].some((c) => {
				const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
				for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true;
				return false;
			}));
			ok(painted, 'lock_wait_ns canvas is blank');
		});

		await step('locks view: follows the range selected on the heat map', async () => {
			const loads = await hook(() => __hotcold.locks.loads);
			const req = locksReq((q) => q.has('from') && q.get('from') !== String(from));
			await dragHeat(page, 0.2, 0.7);
			const q = new URL((await req).url()).searchParams;
			const sel = await hook(() => __hotcold.selection);
			ok(sel && Number(q.get('from')) === sel.from_ms && Number(q.get('to')) === sel.to_ms,
				`locks asked for ${q.get('from')}..${q.get('to')}, selection ${JSON.stringify(sel)}`);
			await page.waitForFunction((n) => __hotcold.locks.loads > n, loads, { timeout: T });
			noProblems('locks selection');
		});

		await step('main flame graph: lock nodes are drawn in the lock colour and named lock waits', async () => {
			await page.goto(`${BASE}/#range=${from}..${to}&pid=${LOCKS_PID}&mode=off&live=0`, { timeout: T });
			await page.waitForFunction(() => __hotcold.ready && __hotcold.nodesDrawn > 0, null, { timeout: T });
			// The frames and the canvas are read in separate steps: a render landing between them
			// (seen under ASan: the pixel black, or another node's) is read again, until the
			// drawing settles (bounded by T).
			let locks, f, px;
			for (const until = Date.now() + T; ;) {
				await settle();
				locks = await framesWhere(page, () => __hotcold.frames(3, 5000), 'flame-scroll', (fr) => fr.kind === 'lock');
				// the main graph's lock nodes are named by kind (the workload's: mmap_lock, an rwsem)
				f = locks.find((fr) => /^rwsem:[RW]$/.test(fr.name));
				px = f ? await framePixel(page, 'flame', f) : null;
				if ((px && near(px, LOCK_RGB)) || Date.now() > until) break;
				await new Promise((r) => setTimeout(r, 100));
			}
			ok(locks.length > 0, `no lock node at least 3 px wide in the flame graph of pid ${LOCKS_PID}`);
			ok(f, `lock nodes ${JSON.stringify(locks.map((fr) => fr.name))}: no rwsem:R or rwsem:W`);
			ok(near(px, LOCK_RGB), `main graph lock node ${f.name} pixel rgb(${px.slice(0, 3)}), expected rgb(${LOCK_RGB})`);
			await page.mouse.move(f.x + Math.min(f.w / 2, 20), f.y + f.h / 2);
			await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: T });
			const tt = await page.textContent('#tooltip');
			ok(tt.startsWith(`lock wait: ${f.name}`), `tooltip: ${JSON.stringify(tt)}`);
			await page.mouse.move(1, 1);
			noProblems('main graph lock nodes');
		});

		await step("locks view: a saved profile's locks section", async () => {
			const prof = await (await fetch(`${BASE}/api/profile?from=${from}&to=${to}`)).json();
			const { range, histograms, ...section } = api;
			const doc = { ...prof, locks: section, histograms: { ...prof.histograms, lock_wait_ns: histograms.lock_wait_ns } };
			const file = path.join(os.tmpdir(), `hotcold-viewer-locks-${process.pid}.json`);
			fs.writeFileSync(file, JSON.stringify(doc));
			try {
				await page.click('#tab-locks');
				const loads = await hook(() => __hotcold.locks.loads);
				await page.setInputFiles('#file', file);
				await page.waitForFunction((n) => __hotcold.source === 'file' && __hotcold.locks.loads > n, loads, { timeout: T });
			} finally {
				fs.rmSync(file, { force: true });
			}
			const l = await hook(() => __hotcold.locks);
			ok(l.state === 'shown' && l.events === api.events && l.rows.length === api.by_kind.length && l.nodes > 1,
				`from the file: ${JSON.stringify({ state: l.state, events: l.events, rows: l.rows.length, nodes: l.nodes })}`);
			ok(/saved profile/.test(await page.textContent('#locks-info')), 'the info line does not name the file');
			await page.click('#source-close');
			await page.waitForFunction(() => __hotcold.source === 'api', null, { timeout: T });
			noProblems('locks from a file');
		});
	} finally {
		await page.close();
	}

	// Tracking off: the page is told so by /api/status (or by a 409 from /api/locks) and says
	// it instead of failing. The answers are substituted: this server does track locks. A page
	// of its own, not watched: the substituted 409 is meant.
	const off = await browser.newPage({ viewport: { width: 1200, height: 800 } });
	try {
		await step('locks view: lock tracking off is said, nothing is asked', async () => {
			let asked = 0;
			// A request still in flight when the page reloads is disposed under its handler:
			// that is not a failure of the viewer.
			await off.route('**/api/status', async (route) => {
				try {
					const res = await route.fetch();
					const st = await res.json();
					await route.fulfill({ response: res, json: { ...st, locks: { enabled: false } } });
				} catch (e) {
					if (!/disposed|closed|Target/.test(String(e))) throw e;
				}
			});
			await off.route('**/api/locks*', (route) => {
				asked++;
				return route.fulfill({ status: 409, contentType: 'application/json', body: JSON.stringify({ error: 'lock tracking is off' }) });
			});
			await off.goto(`${BASE}/#view=locks&live=0`, { timeout: T });
			await off.waitForFunction(() => __hotcold.locks.state === 'off', null, { timeout: T });
			ok(asked === 0, `/api/locks asked ${asked} times though tracking is off`);
			const note = await off.textContent('#locks-note');
			ok(/--locks/.test(note) && (await off.isVisible('#locks-note')) && (await off.isHidden('#locks-body')), `note: ${JSON.stringify(note)}`);
			ok((await off.isHidden('#error')), 'an error banner is shown');
			// a server whose status says nothing, answering 409: the same note
			await off.unroute('**/api/status');
			await off.route('**/api/status', async (route) => {
				try {
					const res = await route.fetch();
					const { locks, ...st } = await res.json();
					await route.fulfill({ response: res, json: st });
				} catch (e) {
					if (!/disposed|closed|Target/.test(String(e))) throw e;
				}
			});
			await off.reload({ timeout: T });
			await off.waitForFunction(() => __hotcold.locks.state === 'off', null, { timeout: T });
			ok(asked > 0, '/api/locks not asked when the status does not tell');
			ok(/--locks/.test(await off.textContent('#locks-note')), 'no note after a 409');
		});
	} finally {
		await off.close();
	}
}

// ---------------------------------------------------------------------------- range navigation

const PRESETS = ['-30s', '-60s', '-5m', '-15m', '-1h', '-6h', '-24h', '-7d'];
const UNIT_S = { s: 1, m: 60, h: 3600, d: 86400 };
const presetS = (v) => Number(v.slice(1, -1)) * UNIT_S[v.slice(-1)];
// The pages of these steps run in a zone without daylight saving: UTC+05:30.
const ZONE = 'Asia/Kolkata';
const ZONE_OFF_MS = 5.5 * 3600e3;
/** A unix-ms instant as a datetime-local value in ZONE. */
const localIn = (ms) => new Date(ms + ZONE_OFF_MS).toISOString().slice(0, 19);
/** A datetime-local field's value read back: HTML normalises away ":00" seconds, so add it back. */
const fieldIn = async (page, sel) => {
	const v = await page.inputValue(sel);
	return /T\d\d:\d\d$/.test(v) ? `${v}:00` : v;
};
/** "1 min resolution, from disk" as docs/viewer.md says it; absent fields: 1 s from memory. */
const resText = (res, src) => {
	const r = Number(res) > 0 ? Number(res) : 1;
	return `${r % 60 === 0 ? `${r / 60} min` : `${r} s`} resolution, from ${src || 'memory'}`;
};

/**
 * The whole retention: presets limited by /api/status's retention, absolute from/to (local
 * time, the URL, the API), step back/forward, zoom to a selection, live, the resolution said.
 * Against the real server, then (answers substituted) a server holding days on disk.
 */
async function rangeSteps(browser, watch, noProblems, setReloading) {
	const page = watch(await browser.newPage({ viewport: { width: 1400, height: 950 }, timezoneId: ZONE }));
	const hook = (f, arg) => page.evaluate(f, arg);
	const apiReq = (p, pred) => page.waitForRequest((r) => {
		const u = new URL(r.url());
		return u.pathname === p && pred(u.searchParams);
	}, { timeout: T });
	const rangeReqs = (from, to) => ['/api/profile', '/api/timeline'].map((p) => apiReq(p, (q) => q.get('from') === String(from) && q.get('to') === String(to)));
	const waitRange = (range) => page.waitForFunction((r) => __hotcold.state.range === r, range, { timeout: T });
	const unfocus = () => page.evaluate(() => document.activeElement?.blur());
	try {
		await step('range presets: 30 s to 7 d, those beyond the retention disabled', async () => {
			await page.goto(`${BASE}/#live=0`, { timeout: T });
			await page.waitForFunction(() => window.__hotcold?.ready && __hotcold.statusLoads > 0, null, { timeout: T });
			const st = await (await fetch(`${BASE}/api/status`)).json();
			const conf = st.retention?.configured_s;
			ok(conf > 0, `status has no retention.configured_s: ${JSON.stringify(st.retention)}`);
			ok((await hook(() => __hotcold.retention))?.configuredS === conf, 'the page did not take the retention');
			const opts = await page.$$eval('#range option', (os) => os.map((o) => ({ v: o.value, d: o.disabled, t: o.textContent })));
			for (const v of PRESETS) {
				const o = opts.find((x) => x.v === v);
				ok(o, `no preset ${v}: ${JSON.stringify(opts)}`);
				const beyond = presetS(v) > conf;
				ok(o.d === beyond, `preset ${v} ${o.d ? 'disabled' : 'enabled'} with ${conf} s retention: ${JSON.stringify(o)}`);
				ok(!beyond || /beyond/.test(o.t), `preset ${v} beyond the retention does not say so: ${o.t}`);
			}
		});

		let abs; // {from, to}: the range given in the from/to fields
		await step('absolute from/to: local time with its zone, in the URL and the API requests', async () => {
			ok(/\+05:30/.test(await page.textContent('#abs-zone')), `zone shown: ${await page.textContent('#abs-zone')}`);
			const to = Math.floor(Date.now() / 1000) * 1000 - 3000;
			abs = { from: to - 10000, to };
			await page.fill('#abs-from', localIn(abs.from));
			await page.fill('#abs-to', localIn(abs.to));
			const reqs = rangeReqs(abs.from, abs.to);
			await page.click('#abs-go');
			await Promise.all(reqs);
			await waitRange(`${abs.from}..${abs.to}`);
			ok((await page.evaluate(() => location.hash)).includes(`range=${abs.from}..${abs.to}`), 'the URL has no range');
			const w = await hook(() => __hotcold.window);
			ok(w.absolute && w.from_ms === abs.from && w.to_ms === abs.to, `window ${JSON.stringify(w)}`);
			ok(await page.isVisible('#go-live') && await page.isHidden('#live-ctl'), 'an absolute range offers "live" (and no live box)');
		});

		await step('absolute from/to: a reload asks the same range and fills the fields', async () => {
			const reqs = rangeReqs(abs.from, abs.to);
			setReloading(true);
			await page.reload({ timeout: T });
			await Promise.all(reqs);
			await page.waitForFunction(() => window.__hotcold?.ready, null, { timeout: T });
			setReloading(false);
			const got = [await fieldIn(page, '#abs-from'), await fieldIn(page, '#abs-to')];
			ok(got[0] === localIn(abs.from) && got[1] === localIn(abs.to),
				`fields ${got[0]} / ${got[1]}, expected ${localIn(abs.from)} / ${localIn(abs.to)}`);
			ok((await page.inputValue('#range')) === `${abs.from}..${abs.to}`, 'the range menu does not show the absolute range');
		});

		await step('step back and forward by the width ([ ] and the buttons); forward past now is live', async () => {
			const w = abs.to - abs.from;
			await unfocus();
			let reqs = rangeReqs(abs.from - w, abs.to - w);
			await page.keyboard.press('[');
			await Promise.all(reqs);
			await waitRange(`${abs.from - w}..${abs.to - w}`);
			reqs = rangeReqs(abs.from, abs.to);
			await page.keyboard.press(']');
			await Promise.all(reqs);
			await waitRange(`${abs.from}..${abs.to}`);
			reqs = rangeReqs(abs.from - w, abs.to - w);
			await page.click('#step-back');
			await Promise.all(reqs);
			reqs = rangeReqs(abs.from, abs.to);
			await page.click('#step-fwd');
			await Promise.all(reqs);
			await waitRange(`${abs.from}..${abs.to}`);
			// Forward from a range that ends 2 s ago goes past now: it follows the newest data
			// again, as wide (the preset of that width).
			const to = Math.floor(Date.now() / 1000) * 1000 - 2000;
			await page.fill('#abs-from', localIn(to - 30000));
			await page.fill('#abs-to', localIn(to));
			await page.press('#abs-to', 'Enter');
			await waitRange(`${to - 30000}..${to}`);
			await page.click('#step-fwd');
			await waitRange('-30s');
			const st = await hook(() => __hotcold.state);
			ok(st.live && !st.sel, `forward past now: ${JSON.stringify(st)}`);
			ok(await page.isDisabled('#step-fwd'), 'forward is not disabled at the newest data');
			ok(await page.isVisible('#live-ctl') && await page.isHidden('#go-live'), 'live range: the live box, not "live"');
			// back from a relative range: the 10 s before the current second
			const t0 = Date.now();
			await page.click('#step-back');
			await page.waitForFunction(() => __hotcold.window.absolute, null, { timeout: T });
			const b = await hook(() => __hotcold.window);
			const t1 = Date.now();
			ok(b.to_ms - b.from_ms === 30000 && b.to_ms >= t0 - 31000 && b.to_ms <= t1 - 30000, `back from live: ${JSON.stringify(b)} between ${t0} and ${t1}`);
			await page.click('#go-live');
			await waitRange('-30s');
			ok((await hook(() => __hotcold.state)).live, '"live" did not turn live on');
		});

		await step('zoom to selection: the selection becomes the range', async () => {
			await page.selectOption('#range', '-5m');
			await page.waitForFunction(() => __hotcold.timeline?.columns > 0 && __hotcold.timeline.to_ms - __hotcold.timeline.from_ms > 20000, null, { timeout: T });
			await page.click('#live');
			await dragHeat(page, 0.3, 0.6);
			await page.waitForFunction(() => __hotcold.selection, null, { timeout: T });
			const sel = await hook(() => __hotcold.selection);
			ok(await page.isVisible('#sel-zoom'), 'no "zoom to selection" with a selection');
			const reqs = rangeReqs(sel.from_ms, sel.to_ms);
			await page.click('#sel-zoom');
			await Promise.all(reqs);
			await waitRange(`${sel.from_ms}..${sel.to_ms}`);
			ok(!(await hook(() => __hotcold.selection)) && await page.isHidden('#sel-zoom'), 'the selection stayed');
			ok((await page.evaluate(() => location.hash)).includes(`range=${sel.from_ms}..${sel.to_ms}`), 'URL range');
			// and back by its width
			const w = sel.to_ms - sel.from_ms;
			const back = rangeReqs(sel.from_ms - w, sel.to_ms - w);
			await unfocus();
			await page.keyboard.press('[');
			await Promise.all(back);
		});

		await step('the resolution shown is what the answers say (none said: 1 s, from memory)', async () => {
			await page.waitForFunction(() => __hotcold.resolution.length > 0, null, { timeout: T });
			const url = await hook(() => __hotcold.lastProfileUrl);
			const rg = (await (await fetch(`${BASE}/${url}`)).json()).range || {};
			const text = await hook(() => __hotcold.resolution);
			ok(text.startsWith(resText(rg.resolution_s, rg.source)), `resolution ${JSON.stringify(text)} for range ${JSON.stringify(rg)}`);
			ok(/timeline \d+ (s|min) slots/.test(text), `no timeline slots in ${JSON.stringify(text)}`);
			ok(!(await hook(() => __hotcold.timeline.heatNote)), 'the heat-map note shows with a heat map');
			noProblems('range navigation');
		});
	} finally {
		await page.close();
	}

	// A server holding two days of a 7 d retention on disk (issue 20's contract), answers
	// substituted: the timeline synthesized, the profile the real one with its range's resolution.
	const disk = watch(await browser.newPage({ viewport: { width: 1400, height: 950 } }));
	const dhook = (f, arg) => disk.evaluate(f, arg);
	const DAY = 86400e3;
	const timelineAsked = [];
	try {
		await disk.route('**/api/status', async (route) => {
			try {
				const res = await route.fetch();
				const st = await res.json();
				const now = Date.now();
				await route.fulfill({ response: res, json: { ...st, retention: { configured_s: 604800, span_s: 172800,
					oldest: new Date(now - 2 * DAY).toISOString(), newest: new Date(now).toISOString() } } });
			} catch (e) {
				if (!/disposed|closed|Target/.test(String(e))) throw e;
			}
		});
		await disk.route('**/api/timeline*', (route) => {
			const q = new URL(route.request().url()).searchParams;
			timelineAsked.push(q);
			const now = Math.floor(Date.now() / 1000) * 1000;
			const at = (v) => (/^\d+$/.test(v) ? Number(v) : now - presetS(v) * 1000);
			const to = q.has('to') ? at(q.get('to')) : now;
			const from = at(q.get('from'));
			const long = to - from > 3600e3;
			const stepMs = q.has('step') ? Number(q.get('step').slice(0, -1)) * 1000 : long ? 900e3 : 60e3;
			const f = Math.floor(from / stepMs) * stepMs;
			const slots = { t_ms: [], on_cpu_ns: [], off_cpu_ns: [], runqueue_ns: [], samples: [] };
			for (let t = f; t < to; t += stepMs) {
				slots.t_ms.push(t);
				slots.on_cpu_ns.push(stepMs * 1e5 * (2 + Math.sin(t / 3.6e6)));
				slots.off_cpu_ns.push(stepMs * 1e5);
				slots.runqueue_ns.push(stepMs * 1e4);
				slots.samples.push(stepMs / 10);
			}
			const cols = long ? 0 : Math.ceil((to - f) / 1000);
			return route.fulfill({ json: {
				from_ms: f, to_ms: to, step_ms: stepMs, resolution_s: 60, source: 'disk', tier: '1m', slots,
				heatmap: { start_ms: f, columns: cols, rows: 50, row_ms: 20, max: 0, counts: Array.from({ length: cols }, () => new Array(50).fill(0)) },
				retention: { oldest_ms: now - 2 * DAY, newest_ms: now },
			} });
		});
		await disk.route('**/api/profile*', async (route) => {
			try {
				const res = await route.fetch();
				const doc = await res.json();
				await route.fulfill({ response: res, json: { ...doc, range: { ...doc.range, resolution_s: 60, source: 'disk', tier: '1m' } } });
			} catch (e) {
				if (!/disposed|closed|Target/.test(String(e))) throw e;
			}
		});

		await step('days on disk: 7 d enabled and marked as partly held', async () => {
			await disk.goto(`${BASE}/#live=0`, { timeout: T });
			await disk.waitForFunction(() => window.__hotcold?.ready && __hotcold.statusLoads > 0, null, { timeout: T });
			const opts = await disk.$$eval('#range option', (os) => os.map((o) => ({ v: o.value, d: o.disabled, t: o.textContent })));
			const o = (v) => opts.find((x) => x.v === v);
			ok(PRESETS.every((v) => !o(v).d), `a preset is disabled with 7 d retention: ${JSON.stringify(opts)}`);
			ok(/2 d held/.test(o('-7d').t), `7 d does not say 2 d held: ${o('-7d').t}`);
			ok(!/held/.test(o('-24h').t), `24 h says it is partly held: ${o('-24h').t}`);
		});

		await step('days on disk: a 7 d range asks no step, draws the strip at the server\'s step, no heat map', async () => {
			const req = disk.waitForRequest((r) => {
				const u = new URL(r.url());
				return u.pathname === '/api/timeline' && u.searchParams.get('from') === '-7d';
			}, { timeout: T });
			await disk.selectOption('#range', '-7d');
			const q = new URL((await req).url()).searchParams;
			ok(!q.has('step'), `a 7 d timeline asked with step=${q.get('step')}`);
			await disk.waitForFunction(() => __hotcold.timeline?.step_ms === 900000, null, { timeout: T });
			const tl = await dhook(() => __hotcold.timeline);
			ok(tl.columns === 0 && tl.heatNote && tl.slots >= 670, `timeline ${JSON.stringify(tl)}`);
			ok(/heat map: ranges up to 1 h/.test(await disk.textContent('#heat-note')), `note: ${await disk.textContent('#heat-note')}`);
			await disk.waitForFunction(() => /1 min resolution, from disk/.test(__hotcold.resolution) && /timeline 15 min slots/.test(__hotcold.resolution), null, { timeout: T });
			// The strip has bars: the on-CPU lane holds pixels of more than its background.
			const colours = await disk.evaluate(() => {
				const c = document.getElementById('strip');
				const d = c.getContext('2d').getImageData(0, 0, c.width, Math.floor((c.height * 16) / 64)).data;
				const seen = new Set();
				for (let i = 0; i < d.length; i += 4) seen.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);
				return seen.size;
			});
			ok(colours > 2, `the strip's on-CPU lane has ${colours} colours: no bars`);
		});

		await step('days on disk: a selection on the strip, zoomed into, asks its range with no step', async () => {
			const box = await disk.locator('#strip-overlay').boundingBox();
			const y = box.y + 8;
			await disk.mouse.move(box.x + box.width * 0.5, y);
			await disk.mouse.down();
			for (let k = 1; k <= 4; k++) await disk.mouse.move(box.x + box.width * (0.5 + 0.005 * k), y);
			await disk.mouse.up();
			await disk.waitForFunction(() => __hotcold.selection, null, { timeout: T });
			const sel = await dhook(() => __hotcold.selection);
			ok(sel.from_ms % 900000 === 0 && (sel.to_ms - sel.from_ms) % 900000 === 0 && sel.to_ms > sel.from_ms,
				`a strip selection of whole 15 min slots: ${JSON.stringify(sel)}`);
			const n = timelineAsked.length;
			await disk.click('#sel-zoom');
			await disk.waitForFunction((r) => __hotcold.state.range === r && __hotcold.timeline?.from_ms === Number(r.split('..')[0]),
				`${sel.from_ms}..${sel.to_ms}`, { timeout: T });
			const q = timelineAsked.slice(n).find((x) => x.get('from') === String(sel.from_ms));
			ok(q && q.get('to') === String(sel.to_ms) && !q.has('step'), `timeline asked: ${q}`);
			noProblems('days on disk');
		});
	} finally {
		await disk.close();
	}
}

async function main() {
	if (!BASE) {
		console.error('viewer.test: set HOTCOLD_URL, e.g. HOTCOLD_URL=http://127.0.0.1:8080');
		process.exit(2);
	}
	await step(`the API at ${BASE} has data`, waitForData);

	const browser = await chromium.launch({
		executablePath: CHROMIUM,
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
	});
	const problems = []; // console errors, page errors, failed requests
	let reloading = false;
	/** Records a page's console errors, page errors, failed requests and requests. */
	const watch = (p) => {
		p.on('console', (m) => {
			if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
		});
		p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
		p.on('requestfailed', (r) => {
			const why = r.failure()?.errorText || '?';
			// A reload cancels what the old document had in flight: not a failure of the viewer.
			if (reloading && why.includes('ERR_ABORTED')) return;
			problems.push(`request failed: ${r.url()} (${why})`);
		});
		p.on('response', (r) => {
			if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
		});
		p.on('request', (r) => requests.push(new URL(r.url())));
		return p;
	};
	try {
		// deviceScaleFactor 2 exercises the devicePixelRatio path of every canvas.
		const page = watch(await browser.newPage({ viewport: { width: 1400, height: 950 }, deviceScaleFactor: 2 }));
		const hook = (expr) => page.evaluate(expr);
		// Two animation frames: pending layouts and redraws are done.
		const settle = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
		const noProblems = (where) => ok(problems.length === 0, `${where}: ${problems.join('; ')}`);
		const profileReq = (pred) =>
			page.waitForRequest((r) => {
				const u = new URL(r.url());
				return u.pathname === '/api/profile' && pred(u.searchParams);
			}, { timeout: T });

		await step('page loads without console errors or failed requests', async () => {
			await page.goto(`${BASE}/`, { timeout: T });
			await page.waitForFunction(() => window.__hotcold?.ready && window.__hotcold.renders > 0, null, { timeout: T });
			await page.waitForFunction(() => window.__hotcold.timelineLoads > 0 && window.__hotcold.statusLoads > 0, null, { timeout: T });
			ok((await page.title()) === 'hotcold', 'title is not "hotcold"');
			const status = await page.textContent('#status');
			ok(/Hz/.test(status) && /CPU/.test(status), `status line lacks frequency/CPUs: ${JSON.stringify(status)}`);
			ok(requests.some((u) => u.pathname === '/api/profile'), 'no /api/profile request');
			noProblems('after load');
		});

		await step('flame graph canvas draws non-blank pixels', async () => {
			const h = await hook(() => ({ n: __hotcold.nodes, drawn: __hotcold.nodesDrawn, ms: __hotcold.lastRenderMs }));
			ok(h.n > 1, `profile flattened to ${h.n} nodes`);
			ok(h.drawn > 0, `nodesDrawn = ${h.drawn}`);
			ok(typeof h.ms === 'number' && h.ms >= 0, `lastRenderMs = ${h.ms}`);
			const px = await page.evaluate(() => {
				const c = document.getElementById('flame');
				const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
				let n = 0;
				for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
				return { n, w: c.width, h: c.height, cssW: c.getBoundingClientRect().width };
			});
			ok(px.n > 2000, `only ${px.n} painted pixels in the flame canvas`);
			ok(Math.abs(px.w - 2 * px.cssW) <= 2, `canvas backing store ${px.w} px for ${px.cssW} CSS px at DPR 2`);
		});

		await step('live refresh can be turned off (URL live=0)', async () => {
			await page.click('#live');
			await page.waitForFunction(() => location.hash.includes('live=0'), null, { timeout: T });
		});

		await step('dragging on the timeline loads the profile for that range', async () => {
			const tl = await hook(() => __hotcold.timeline);
			ok(tl && tl.columns > 0, `timeline has no heat map: ${JSON.stringify(tl)}`);
			const box = await page.locator('#heat-overlay').boundingBox();
			const loads0 = await hook(() => __hotcold.profileLoads);
			const req = profileReq((q) => q.has('from') && q.has('to') && /^\d+$/.test(q.get('from')));
			const y = box.y + box.height * 0.5;
			await page.mouse.move(box.x + box.width * 0.3, y);
			await page.mouse.down();
			for (let k = 1; k <= 5; k++) await page.mouse.move(box.x + box.width * (0.3 + 0.06 * k), y);
			await page.mouse.up();
			const q = new URL((await req).url()).searchParams;
			const sel = await hook(() => __hotcold.selection);
			ok(sel, 'no selection after the drag');
			ok(Number(q.get('from')) === sel.from_ms && Number(q.get('to')) === sel.to_ms,
				`request from=${q.get('from')} to=${q.get('to')} but selection ${sel.from_ms}..${sel.to_ms}`);
			// Where the drag was: columns at 30% and 60% of the width, the row at half height.
			const row = Math.floor(0.5 * tl.rows);
			const expFrom = tl.start_ms + Math.floor(0.3 * tl.columns) * 1000 + row * tl.row_ms;
			const expTo = tl.start_ms + Math.min(tl.columns - 1, Math.floor(0.6 * tl.columns)) * 1000 + (row + 1) * tl.row_ms;
			ok(Math.abs(sel.from_ms - expFrom) <= 1000 && Math.abs(sel.to_ms - expTo) <= 1000,
				`selection ${sel.from_ms}..${sel.to_ms}, expected about ${expFrom}..${expTo}`);
			ok((await page.evaluate(() => location.hash)).includes(`sel=${sel.from_ms}..${sel.to_ms}`), 'URL has no sel');
			await page.waitForFunction((n) => __hotcold.profileLoads > n, loads0, { timeout: T });
			noProblems('after the range selection');
		});

		let zoomFrame;
		let processPid;
		await step('clicking a frame zooms (breadcrumb grows, URL has zoom)', async () => {
			await settle();
			const frames = await hook(() => __hotcold.frames(20, 400));
			const blocked = (f) => f.offCpu + f.runqueue > 0;
			// The workload's process when the harness names it: other processes on a busy machine
			// come and go (and may be renamed or merged by the store) between two loads.
			const workload = Number(process.env.HC_WORKLOAD_PID || 0);
			zoomFrame = frames.find((f) => f.kind === 'process' && f.pid === workload && blocked(f)) ||
				frames.find((f) => f.kind === 'process' && blocked(f)) || frames.find((f) => f.depth >= 1 && blocked(f));
			ok(zoomFrame, `no frame with off-CPU time at least 20 px wide among ${frames.length}`);
			// The filter step uses the workload's pid when the harness says which it is.
			processPid = process.env.HC_WORKLOAD_PID ? Number(process.env.HC_WORKLOAD_PID) : zoomFrame.pid;
			const crumbs0 = await page.locator('#crumbs button.crumb').count();
			await page.mouse.click(zoomFrame.x + Math.min(zoomFrame.w / 2, 60), zoomFrame.y + zoomFrame.h / 2);
			await page.waitForFunction((d) => document.querySelectorAll('#crumbs button.crumb').length === d + 1, zoomFrame.depth, { timeout: T });
			const crumbs1 = await page.locator('#crumbs button.crumb').count();
			ok(crumbs1 > crumbs0, `breadcrumb did not grow (${crumbs0} -> ${crumbs1})`);
			ok((await page.evaluate(() => location.hash)).includes('zoom='), 'URL has no zoom');
			const zp = await hook(() => __hotcold.zoomPath);
			ok(zp.length === zoomFrame.depth, `zoom path ${JSON.stringify(zp)} for a frame at depth ${zoomFrame.depth}`);
			await settle();
			const after = await hook(() => __hotcold.frames(1, 1000));
			const z = after.find((f) => f.index === zoomFrame.index);
			const cssW = await page.evaluate(() => document.getElementById('flame').getBoundingClientRect().width);
			ok(z && z.w >= cssW - 2, `zoomed frame is ${z?.w} px wide, canvas ${cssW}`);
		});

		let searchName;
		await step('search highlights frames and reports their share', async () => {
			await settle();
			const frames = await hook(() => __hotcold.frames(12, 1000));
			const cand = frames.filter((f) => f.depth > zoomFrame.depth && f.offCpu + f.runqueue > 0);
			const pick = cand.find((f) => f.kind === 'user' || f.kind === 'kernel') || cand[0] || frames.find((f) => f.depth > 0);
			ok(pick, 'no frame to search for');
			searchName = pick.name;
			await page.fill('#search', searchName);
			await page.press('#search', 'Enter');
			await page.waitForFunction(() => __hotcold.match.nodes > 0, null, { timeout: T });
			const m = await hook(() => __hotcold.match);
			ok(m.pctTotal > 0 && m.pctTotal <= 100 + 1e-9, `matched share ${m.pctTotal}%`);
			ok((await hook(() => __hotcold.matchedDrawn)) > 0, 'no highlighted frame drawn');
			const info = await page.textContent('#search-info');
			ok(/%/.test(info), `search info shows no share: ${JSON.stringify(info)}`);
			ok((await hook(() => __hotcold.state.q)) === searchName, 'search not in the state');
			ok((await page.evaluate(() => location.hash)).includes('q='), 'URL has no q');
			// The pixel just inside the left edge of a matched frame has the highlight colour.
			await page.waitForFunction(() => __hotcold.frames(6, 2000).some((f) => f.matched), null, { timeout: T });
			await settle();
			const hit = (await hook(() => __hotcold.frames(6, 2000))).find((f) => f.matched);
			const rgb = await page.evaluate(({ x, y }) => {
				const c = document.getElementById('flame');
				const r = c.getBoundingClientRect();
				const s = c.width / r.width;
				return [...c.getContext('2d').getImageData(Math.floor((x - r.left + 1.5) * s), Math.floor((y - r.top + 3) * s), 1, 1).data];
			}, { x: hit.x, y: hit.y });
			ok(HIGHLIGHT.every((v, i) => Math.abs(v - rgb[i]) <= 3), `matched frame pixel is rgb(${rgb.slice(0, 3)}), not the highlight`);
		});

		await step('histograms view draws DTrace-style bars', async () => {
			const names = await (await fetch(`${BASE}/api/histograms`)).json();
			ok(Array.isArray(names.histograms) && names.histograms.length > 0, `GET /api/histograms: ${JSON.stringify(names)}`);
			const n0 = await hook(() => __hotcold.histLoads);
			await page.click('#tab-hist');
			await page.waitForFunction((n) => __hotcold.histLoads > n, n0, { timeout: T });
			const h = await hook(() => ({ bars: __hotcold.histBars, series: __hotcold.histSeries, sel: __hotcold.selection }));
			ok(h.bars > 0, `no bars drawn (${h.series} series)`);
			const asked = requests.filter((u) => u.pathname.startsWith('/api/histograms/'));
			for (const name of names.histograms)
				ok(asked.some((u) => u.pathname === `/api/histograms/${name}`), `histogram ${name} was not requested`);
			ok(asked.every((u) => !u.searchParams.has('from') || Number(u.searchParams.get('from')) === h.sel.from_ms),
				'a histogram request does not use the selected range');
			const painted = await page.evaluate(() => [...document.querySelectorAll('#hists canvas')].some((c) => {
				const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
				for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true;
				return false;
			}));
			ok(painted, 'histogram canvases are blank');
			await page.click('#tab-flame');
			await page.waitForFunction(() => !location.hash.includes('view=hist'), null, { timeout: T });
		});

		await step('mode switch requests kind=off', async () => {
			const loads0 = await hook(() => __hotcold.profileLoads);
			const req = profileReq((q) => q.get('kind') === 'off');
			await page.click('#mode-off');
			await req;
			await page.waitForFunction((n) => __hotcold.profileLoads > n, loads0, { timeout: T });
			ok((await page.getAttribute('#mode-off', 'aria-pressed')) === 'true', 'off-CPU button not pressed');
			ok((await page.evaluate(() => location.hash)).includes('mode=off'), 'URL has no mode=off');
		});

		await step('process filter requests pid= and clearing it drops it', async () => {
			ok(processPid !== undefined, 'no process frame seen');
			const loads0 = await hook(() => __hotcold.profileLoads);
			const req = profileReq((q) => q.get('pid') === String(processPid));
			await page.fill('#f-pid', String(processPid));
			await page.press('#f-pid', 'Enter');
			await page.locator('#search').focus(); // change fires on blur at the latest
			await req;
			ok((await page.evaluate(() => location.hash)).includes(`pid=${processPid}`), 'URL has no pid');
			await page.waitForFunction((n) => __hotcold.profileLoads > n && __hotcold.complete, loads0, { timeout: T });
			await settle();
			const procs = (await hook(() => __hotcold.frames(0.5, 5000))).filter((f) => f.depth === 1);
			const dbg = await hook(() => {
				const s = document.getElementById('flame-scroll');
				return { nodes: __hotcold.nodes, zoom: __hotcold.zoomPath, scroll: [s.scrollTop, s.scrollHeight, s.clientHeight], url: __hotcold.lastProfileUrl };
			});
			ok(procs.length > 0 && procs.every((f) => f.pid === processPid),
				`filtered by pid ${processPid}, drawn processes: ${JSON.stringify(procs.map((f) => f.pid))} (${JSON.stringify(dbg)})`);
			const req2 = profileReq((q) => !q.has('pid'));
			await page.click('#f-clear');
			await req2;
		});

		await step('icicle toggle is kept in the URL', async () => {
			await page.click('#icicle');
			await page.waitForFunction(() => location.hash.includes('icicle=1'), null, { timeout: T });
			await page.waitForFunction(() => __hotcold.nodesDrawn > 0, null, { timeout: T });
		});

		await step('reload restores the state from the URL', async () => {
			await page.waitForFunction(() => __hotcold.zoomPath.length > 0, null, { timeout: T });
			const before = await hook(() => ({ state: __hotcold.state, hash: location.hash, zoomPath: __hotcold.zoomPath }));
			ok(before.state.mode === 'off' && before.state.icicle && before.state.q === searchName && before.state.sel && before.state.zoom.length > 0,
				`state before reload is incomplete: ${JSON.stringify(before.state)}`);
			const firstReq = profileReq(() => true);
			reloading = true;
			await page.reload({ timeout: T });
			const q = new URL((await firstReq).url()).searchParams;
			await page.waitForFunction(() => window.__hotcold?.ready && window.__hotcold.renders > 0, null, { timeout: T });
			reloading = false;
			const after = await hook(() => ({ state: __hotcold.state, hash: location.hash, zoomPath: __hotcold.zoomPath }));
			ok(after.hash === before.hash, `hash changed: ${before.hash} -> ${after.hash}`);
			ok(JSON.stringify(after.state) === JSON.stringify(before.state), `state ${JSON.stringify(after.state)} != ${JSON.stringify(before.state)}`);
			const [f, t] = before.state.sel.split('..');
			ok(q.get('kind') === 'off' && q.get('from') === f && q.get('to') === t, `first profile request after reload: ${q}`);
			ok(JSON.stringify(after.zoomPath) === JSON.stringify(before.zoomPath), `zoom ${JSON.stringify(after.zoomPath)} != ${JSON.stringify(before.zoomPath)}`);
			ok((await page.locator('#crumbs button.crumb').count()) === before.zoomPath.length + 1, 'breadcrumb not restored');
			ok((await page.inputValue('#search')) === searchName, 'search box not restored');
			ok(await page.isChecked('#icicle'), 'icicle not restored');
			ok(!(await page.isChecked('#live')), 'live not restored');
			ok((await page.getAttribute('#mode-off', 'aria-pressed')) === 'true', 'mode not restored');
			await page.waitForFunction(() => __hotcold.match.nodes > 0, null, { timeout: T });
			ok((await page.textContent('#sel-info')).includes('selected'), 'selection not shown');
		});

		await step('a saved profile opens from the file input, and back to live', async () => {
			// A hotcold record file is the same document as /api/profile's answer.
			const res = await fetch(`${BASE}/api/profile?from=-60s`);
			ok(res.ok, `GET /api/profile: ${res.status}`);
			const doc = await res.json();
			const file = path.join(os.tmpdir(), `hotcold-viewer-test-${process.pid}.json`);
			fs.writeFileSync(file, JSON.stringify(doc));
			try {
				await page.setInputFiles('#file', file);
				await page.waitForFunction(() => __hotcold.source === 'file' && __hotcold.nodesDrawn > 0, null, { timeout: T });
			} finally {
				fs.rmSync(file, { force: true });
			}
			ok(await page.isHidden('#timeline-panel'), 'timeline still shown for a file');
			ok((await page.textContent('#status')).includes('saved profile'), 'status line does not describe the file');
			const loads = await hook(() => __hotcold.profileLoads);
			await page.click('#source-close');
			await page.waitForFunction((n) => __hotcold.source === 'api' && __hotcold.profileLoads > n, loads, { timeout: T });
			ok(await page.isVisible('#timeline-panel'), 'timeline not back');
		});

		await diffFileSteps(await browser.newPage({ viewport: { width: 1400, height: 950 }, deviceScaleFactor: 2 }).then(watch), noProblems);
		await diffMatchStep(await browser.newPage().then(watch));
		await inlineSteps(await browser.newPage({ viewport: { width: 1400, height: 950 }, deviceScaleFactor: 2 }).then(watch), noProblems);
		await diffRangeSteps(await browser.newPage({ viewport: { width: 1400, height: 950 }, deviceScaleFactor: 2 }).then(watch), noProblems,
			(on) => { reloading = on; });
		await rangeSteps(browser, watch, noProblems, (on) => { reloading = on; });
		await locksSteps(browser, watch, noProblems);

		await step('no console errors or failed requests during the whole run', async () => noProblems('end'));
	} finally {
		await browser.close();
	}
}

main()
	.catch((e) => {
		// A failure a step already reported is counted; anything else (a check or an error
		// outside a step) is a failure too, never a silent end of the run.
		if (!e?.counted) {
			failed++;
			console.log(`not ok - ${e instanceof Check ? e.message : e?.stack || e}`);
		}
	})
	.finally(() => {
		console.log(`${passed} passed, ${failed} failed`);
		process.exitCode = failed ? 1 : 0;
	});
