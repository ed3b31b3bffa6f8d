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

let passed = 0;
let failed = 0;

class Check extends Error {}
function ok(cond, msg) {
	if (!cond) throw new Check(msg);
}

async function step(name, fn) {
	try {
		await fn();
		passed++;
		console.log(`ok ${passed + failed} - ${name}`);
	} catch (e) {
		failed++;
		console.log(`not ok ${passed + failed} - ${name}`);
		console.log(`  # ${e instanceof Check ? e.message : e.stack || e}`);
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
	const requests = [];
	try {
		// deviceScaleFactor 2 exercises the devicePixelRatio path of every canvas.
		const page = await browser.newPage({ viewport: { width: 1400, height: 950 }, deviceScaleFactor: 2 });
		page.on('console', (m) => {
			if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
		});
		page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
		page.on('requestfailed', (r) => {
			const why = r.failure()?.errorText || '?';
			// A reload cancels what the old document had in flight: not a failure of the viewer.
			if (reloading && why.includes('ERR_ABORTED')) return;
			problems.push(`request failed: ${r.url()} (${why})`);
		});
		page.on('response', (r) => {
			if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
		});
		page.on('request', (r) => requests.push(new URL(r.url())));
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
			zoomFrame = frames.find((f) => f.kind === 'process' && blocked(f)) || frames.find((f) => f.depth >= 1 && blocked(f));
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

		await step('no console errors or failed requests during the whole run', async () => noProblems('end'));
	} finally {
		await browser.close();
	}
}

main()
	.catch((e) => {
		if (!(e instanceof Check) && !failed) {
			failed++;
			console.log(`not ok - ${e.stack || e}`);
		}
	})
	.finally(() => {
		console.log(`${passed} passed, ${failed} failed`);
		process.exitCode = failed ? 1 : 0;
	});
