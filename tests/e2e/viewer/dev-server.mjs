#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
// A stand-in for `hotcold serve` while developing the viewer and for bench/viewer-render.mjs:
// serves web/static/ and answers the JSON API of docs/api.md from fixtures. It follows the
// documented rules that matter to the viewer (GET/HEAD only, loopback Host, unknown parameters
// are 400, Cache-Control: no-store, nosniff) and adds the CSP the real viewer runs under, so a
// CSP violation shows up as a console error here too. It is NOT the server under test:
// tests/e2e/viewer/viewer.test.mjs runs against the real `hotcold serve`.
//
//   node tests/e2e/viewer/dev-server.mjs [--port N] [--profile FILE] [--retention S] [--proxy URL]
//
// --retention S (default 600) is how long it claims to hold; with more than an hour it answers
// like serve with a data dir (docs/api.md): ranges within the newest 10 min at 1 s from memory,
// then from disk at the finest tier whose horizon covers the range (1 s for an hour, 10 s for a
// day, 1 min beyond), a timeline without `step` at a step it picks (about 600 slots), and no
// heat map above an hour.
//
// --proxy http://127.0.0.1:8080 forwards /api/ to a running `hotcold serve` (real data) while
// serving web/static/ from the work tree: the viewer's current files without rebuilding hotcold.
//
// Prints "listening on http://127.0.0.1:PORT" once ready. 127.0.0.1 only.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const STATIC = path.join(repo, 'web/static');

const TYPES = {
	'.html': 'text/html; charset=utf-8',
	'.js': 'text/javascript; charset=utf-8',
	'.css': 'text/css; charset=utf-8',
	'.svg': 'image/svg+xml',
	'.json': 'application/json',
};
export const CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PARAMS = {
	'/api/profile': ['from', 'to', 'pid', 'tid', 'comm', 'kind', 'max_nodes'],
	'/api/histograms': [],
	'/api/histogram': ['from', 'to', 'pid', 'comm'],
	'/api/timeline': ['from', 'to', 'step'],
	'/api/locks': ['from', 'to', 'max_nodes'],
	'/api/status': [],
};

class HttpError extends Error {
	constructor(status, msg) {
		super(msg);
		this.status = status;
	}
}

/** docs/api.md time parameters -> unix ms. */
export function parseTime(s, nowMs) {
	if (s === 'now') return nowMs;
	let m = /^-(\d+)(ms|s|m|h|d)$/.exec(s);
	if (m) return nowMs - Number(m[1]) * { ms: 1, s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[m[2]];
	if (/^\d{1,15}$/.test(s)) return Number(s);
	m = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(s);
	if (m) return Date.parse(s);
	throw new HttpError(400, `bad time: ${JSON.stringify(s)}`);
}

/** A small seeded PRNG: deterministic fixtures (also the render benchmark's). */
export function mulberry32(seed) {
	return () => {
		seed |= 0;
		seed = (seed + 0x6d2b79f5) | 0;
		let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

export function createDevServer({ profilePath = path.join(repo, 'fixtures/viewer/profile.json'), retentionS = 600, proxy = '' } = {}) {
	const profileText = fs.readFileSync(profilePath, 'utf8');
	const profile = JSON.parse(profileText);
	const startedMs = Date.now();
	const freq = profile.sampling?.frequency_hz ?? 99;
	const cpus = profile.sampling?.cpus ?? 2;
	const log = [];

	function retention(nowMs) {
		const newest = Math.floor(nowMs / 1000) * 1000 - 1000;
		return { oldest_ms: newest - (retentionS - 1) * 1000, newest_ms: newest };
	}

	// Which tier answers a range (the contract of issue 20): the finest whose horizon covers it.
	function tierOf(fromMs, nowMs) {
		const age = (nowMs - fromMs) / 1000;
		if (retentionS <= 3600 || age <= 600) return { resolution_s: 1, source: 'memory', tier: '1s' };
		if (age <= 3600) return { resolution_s: 1, source: 'disk', tier: '1s' };
		if (age <= 86400) return { resolution_s: 10, source: 'disk', tier: '10s' };
		return { resolution_s: 60, source: 'disk', tier: '1m' };
	}

	const STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

	function range(q, nowMs, defSpan = 60000) {
		const to = q.has('to') ? parseTime(q.get('to'), nowMs) : nowMs;
		const from = q.has('from') ? parseTime(q.get('from'), nowMs) : to - defSpan;
		if (!(from < to)) throw new HttpError(400, 'from must be before to');
		return { from, to };
	}

	// Deterministic per absolute second, so refreshes agree with each other.
	function second(sec) {
		const rnd = mulberry32(sec);
		const busy = 0.12 + 0.1 * Math.sin(sec / 17) + 0.1 * rnd();
		const rows = [];
		const perRow = (freq * cpus * 20) / 1000;
		for (let r = 0; r < 50; r++) {
			const burst = (sec % 7 === 0 && r >= 10 && r < 22) || (sec % 11 === 3 && r > 35) ? 0.6 : 0;
			rows.push(Math.max(0, Math.round(perRow * Math.min(1, busy + burst + 0.2 * (rnd() - 0.5)))));
		}
		const samples = rows.reduce((a, b) => a + b, 0);
		return {
			rows,
			samples,
			on: Math.round((samples * 1e9) / freq),
			off: Math.round(cpus * 4e9 * (0.6 + 0.4 * rnd())),
			rq: Math.round(cpus * 2e8 * busy * (0.5 + rnd())),
		};
	}

	function timeline(q, nowMs) {
		const { from, to } = range(q, nowMs);
		let stepMs = 1000;
		const ret = retention(nowMs);
		const f = Math.max(Math.floor(from / 1000) * 1000, ret.oldest_ms);
		const t = Math.min(Math.ceil(to / 1000) * 1000, ret.newest_ms + 1000);
		if (!(f < t)) throw new HttpError(503, 'no data in that range');
		const tier = tierOf(f, nowMs);
		if (q.has('step')) {
			const m = /^(\d+)s$/.exec(q.get('step'));
			if (!m || Number(m[1]) < 1) throw new HttpError(400, 'step: whole seconds, at least 1s');
			stepMs = Number(m[1]) * 1000;
		} else if (retentionS > 3600) {
			const want = Math.max(tier.resolution_s, (t - f) / 1000 / 600);
			stepMs = (STEPS_S.find((x) => x >= want) || 86400) * 1000;
		}
		if ((t - f) / stepMs > 10000) throw new HttpError(400, 'more than 10000 slots');
		const slots = { t_ms: [], on_cpu_ns: [], off_cpu_ns: [], runqueue_ns: [], samples: [] };
		// Slots of more than a minute from one second of each minute (a week has 604800 seconds).
		const every = stepMs > 60000 ? 60000 : 1000;
		for (let s = f; s < t; s += stepMs) {
			let on = 0, off = 0, rq = 0, n = 0;
			for (let k = s; k < Math.min(s + stepMs, t); k += every) {
				const x = second(k / 1000);
				const w = Math.min(every, t - k) / 1000;
				on += x.on * w; off += x.off * w; rq += x.rq * w; n += x.samples * w;
			}
			slots.t_ms.push(s);
			slots.on_cpu_ns.push(on);
			slots.off_cpu_ns.push(off);
			slots.runqueue_ns.push(rq);
			slots.samples.push(n);
		}
		const counts = [];
		let max = 0;
		const heat = !(retentionS > 3600 && t - f > 3600e3);
		for (let s = f; heat && s < t; s += 1000) {
			const rows = second(s / 1000).rows;
			for (const v of rows) if (v > max) max = v;
			counts.push(rows);
		}
		return {
			from_ms: f, to_ms: t, step_ms: stepMs, ...(retentionS > 3600 ? tier : {}), slots,
			heatmap: { start_ms: f, columns: counts.length, rows: 50, row_ms: 20, max, counts },
			retention: ret,
		};
	}

	function filterTree(node, kind, pid, tid, comm, depth = 0) {
		const keepKind = (n) => (kind === 'on' ? n.on_cpu_ns : kind === 'off' ? n.off_cpu_ns + n.runqueue_ns : n.value);
		const out = { ...node };
		if (kind === 'on') { out.off_cpu_ns = 0; out.runqueue_ns = 0; }
		if (kind === 'off') { out.on_cpu_ns = 0; out.samples = 0; }
		out.value = out.on_cpu_ns + out.off_cpu_ns + out.runqueue_ns;
		out.children = [];
		for (const c of node.children) {
			if (c.kind === 'process' && ((pid !== null && c.pid !== pid) || (comm !== null && c.name !== comm))) continue;
			if (c.kind === 'thread' && tid !== null && c.tid !== tid) continue;
			if (!(keepKind(c) > 0)) continue;
			out.children.push(filterTree(c, kind, pid, tid, comm, depth + 1));
		}
		if (depth === 0 && (pid !== null || tid !== null || comm !== null)) {
			for (const k of ['value', 'on_cpu_ns', 'off_cpu_ns', 'runqueue_ns', 'samples'])
				out[k] = out.children.reduce((a, c) => a + c[k], 0);
		}
		return out;
	}

	function num(q, k, max = 4294967295) {
		if (!q.has(k)) return null;
		const v = q.get(k);
		if (!/^\d{1,10}$/.test(v) || Number(v) > max) throw new HttpError(400, `${k}: not a number`);
		return Number(v);
	}

	function profileAnswer(q, nowMs) {
		// The range covered, as the real server says it: widened to whole seconds, clipped to the
		// seconds held (the tree stays the fixture's).
		const { from, to } = range(q, nowMs);
		const ret = retention(nowMs);
		const f = Math.max(Math.floor(from / 1000) * 1000, ret.oldest_ms);
		const t = Math.min(Math.ceil(to / 1000) * 1000, ret.newest_ms + 1000);
		const covered = {
			started_at: new Date(f).toISOString(), duration_ns: Math.max(0, t - f) * 1e6,
			range: {
				from: new Date(f).toISOString(), to: new Date(t).toISOString(), from_ms: f, to_ms: t,
				...(retentionS > 3600 ? tierOf(f, nowMs) : {}),
			},
		};
		const kind = q.get('kind') ?? 'all';
		if (!['all', 'on', 'off'].includes(kind)) throw new HttpError(400, 'kind: all, on or off');
		num(q, 'max_nodes', 1000000);
		const comm = q.has('comm') ? q.get('comm') : null;
		if (comm !== null && Buffer.byteLength(comm) > 15) throw new HttpError(400, 'comm: at most 15 bytes');
		const pid = num(q, 'pid');
		const tid = num(q, 'tid');
		if (kind === 'all' && pid === null && tid === null && comm === null) return JSON.stringify({ ...profile, ...covered });
		return JSON.stringify({ ...profile, ...covered, flamegraph: filterTree(profile.flamegraph, kind, pid, tid, comm) });
	}

	function histogram(name, q, nowMs) {
		range(q, nowMs);
		num(q, 'pid');
		const h = profile.histograms?.[name];
		if (!h) throw new HttpError(404, `no histogram ${JSON.stringify(name)}`);
		const comm = q.get('comm');
		return comm ? { ...h, series: h.series.filter((s) => s.key === comm) } : h;
	}

	function status(nowMs) {
		const ret = retention(nowMs);
		const sm = profile.sampling || {};
		const up = Math.round((nowMs - startedMs) / 1000) + retentionS;
		return {
			version: '0.1.0-dev', host: profile.host ?? 'dev', kernel: profile.kernel ?? null,
			started_at: new Date(nowMs - up * 1000).toISOString(), uptime_s: up,
			frequency_hz: freq, period_ns: sm.period_ns ?? Math.round(1e9 / freq), cpus,
			offcpu: true, samples: (sm.samples ?? 0) * 200, idle_samples: (sm.idle_samples ?? 0) * 200,
			lost: sm.lost ?? {},
			retention: {
				configured_s: retentionS, oldest: new Date(ret.oldest_ms).toISOString(),
				newest: new Date(ret.newest_ms).toISOString(), span_s: retentionS,
			},
			memory: { store_bytes: 12345678, server_rss_bytes: 0, collector_rss_bytes: 0 },
			locks: profile.locks ? { enabled: true, events: profile.locks.events } : { enabled: false },
		};
	}

	/** The fixture's locks section (a profile recorded with --locks), as /api/locks answers. */
	function locksAnswer(q, nowMs) {
		if (!profile.locks) throw new HttpError(409, 'lock tracking is off: start hotcold serve with --locks (docs/locks.md)');
		const to = q.has('to') ? parseTime(q.get('to'), nowMs) : nowMs;
		const from = q.has('from') ? parseTime(q.get('from'), nowMs) : to - 60000;
		const ms = (t) => Math.floor(t / 1000) * 1000;
		return {
			...profile.locks,
			range: { from: new Date(ms(from)).toISOString(), to: new Date(ms(to)).toISOString(), from_ms: ms(from), to_ms: ms(to), pruned: { max_nodes: 20000, nodes: 0, value_ns: 0 } },
			histograms: { lock_wait_ns: profile.histograms?.lock_wait_ns ?? { type: 'quantize', unit: 'ns', series: [] } },
		};
	}

	function route(url, nowMs) {
		const p = url.pathname;
		const allowed = p.startsWith('/api/histograms/') ? PARAMS['/api/histogram'] : PARAMS[p];
		if (allowed) for (const k of url.searchParams.keys()) if (!allowed.includes(k)) throw new HttpError(400, `unknown parameter ${JSON.stringify(k)}`);
		if (p === '/api/profile') return profileAnswer(url.searchParams, nowMs);
		if (p === '/api/timeline') return timeline(url.searchParams, nowMs);
		if (p === '/api/status') return status(nowMs);
		if (p === '/api/locks') return locksAnswer(url.searchParams, nowMs);
		if (p === '/api/histograms') return { histograms: Object.keys(profile.histograms || {}).sort() };
		if (p.startsWith('/api/histograms/')) return histogram(decodeURIComponent(p.slice(16)), url.searchParams, nowMs);
		throw new HttpError(404, `no such path: ${p}`);
	}

	const server = http.createServer((req, res) => {
		const nowMs = Date.now();
		const url = new URL(req.url, 'http://127.0.0.1');
		log.push({ method: req.method, path: url.pathname, query: url.search, t: nowMs });
		if (log.length > 10000) log.shift();
		const base = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };
		const send = (status, type, body, extra = {}) => {
			res.writeHead(status, { ...base, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
			res.end(req.method === 'HEAD' ? undefined : body);
		};
		const fail = (status, msg, extra) => send(status, 'application/json', `${JSON.stringify({ error: msg })}\n`, extra);
		try {
			if (req.method !== 'GET' && req.method !== 'HEAD') return fail(405, 'method not allowed', { Allow: 'GET, HEAD' });
			const host = (req.headers.host || '').replace(/:\d+$/, '');
			if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) return fail(421, 'Host must be a loopback name');
			if (proxy && url.pathname.startsWith('/api/')) {
				fetch(new URL(url.pathname + url.search, proxy), { method: req.method })
					.then(async (r) => {
						const body = Buffer.from(await r.arrayBuffer());
						send(r.status, r.headers.get('content-type') || 'application/json', body);
					})
					.catch((e) => fail(502, `proxy: ${e.message}`));
				return undefined;
			}
			if (url.pathname.startsWith('/api/')) {
				const out = route(url, nowMs);
				return send(200, 'application/json', typeof out === 'string' ? out : `${JSON.stringify(out)}\n`);
			}
			const name = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
			// Exact names of files in web/static (one directory level at most), like the embedded table.
			if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)?\.[a-z]+$/.test(name)) return fail(404, 'not found');
			const file = path.join(STATIC, name);
			const type = TYPES[path.extname(name)];
			if (!type || !fs.existsSync(file)) return fail(404, 'not found');
			return send(200, type, fs.readFileSync(file), { 'Content-Security-Policy': CSP });
		} catch (e) {
			if (e instanceof HttpError) return fail(e.status, e.message);
			return fail(500, String(e?.message || e));
		}
	});
	return { server, log };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const args = process.argv.slice(2);
	const opt = (k, d) => {
		const i = args.indexOf(k);
		return i >= 0 ? args[i + 1] : d;
	};
	const { server } = createDevServer({
		profilePath: opt('--profile') && path.resolve(opt('--profile')), proxy: opt('--proxy', ''),
		retentionS: Number(opt('--retention', 600)),
	});
	server.listen(Number(opt('--port', process.env.PORT || 0)), '127.0.0.1', () => {
		console.log(`listening on http://127.0.0.1:${server.address().port}`);
	});
}
