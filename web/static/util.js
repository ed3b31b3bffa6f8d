// SPDX-License-Identifier: GPL-2.0-only
// util.js: formatting, the URL state (hash) and API query building. No DOM drawing here.

/** Nanoseconds as a short human string (ns, µs, ms or s). */
export function fmtNs(ns) {
	if (!Number.isFinite(ns)) return '?';
	const a = Math.abs(ns);
	if (a < 1e3) return `${Math.round(ns)} ns`;
	if (a < 1e6) return `${(ns / 1e3).toFixed(a < 1e4 ? 2 : 1)} µs`;
	if (a < 1e9) return `${(ns / 1e6).toFixed(a < 1e7 ? 2 : 1)} ms`;
	return `${(ns / 1e9).toFixed(a < 1e10 ? 3 : 2)} s`;
}

export function fmtPct(part, whole) {
	if (!(whole > 0)) return '0%';
	const p = (100 * part) / whole;
	return `${p >= 10 ? p.toFixed(1) : p.toFixed(2)}%`;
}

export function fmtInt(n) {
	if (n === null || n === undefined || !Number.isFinite(Number(n))) return '?';
	return Number(n).toLocaleString('en-US');
}

export function fmtBytes(b) {
	if (!Number.isFinite(b)) return '?';
	if (b < 1024) return `${b} B`;
	if (b < 1048576) return `${(b / 1024).toFixed(1)} KiB`;
	if (b < 1073741824) return `${(b / 1048576).toFixed(1)} MiB`;
	return `${(b / 1073741824).toFixed(2)} GiB`;
}

export function fmtDuration(s) {
	if (!Number.isFinite(s)) return '?';
	if (s < 120) return `${Math.round(s)}s`;
	if (s < 7200) return `${Math.round(s / 60)}m`;
	if (s < 172800) return `${(s / 3600).toFixed(1)}h`;
	return `${(s / 86400).toFixed(1)}d`;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** Local wall-clock time of a unix-ms instant, HH:MM:SS(.mmm). */
export function fmtClock(ms, withMs = false) {
	const d = new Date(ms);
	const s = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
	return withMs ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
}

/** Local date and time of a unix-ms instant: YYYY-MM-DD HH:MM:SS, the date left out for today. */
export function fmtWhen(ms, nowMs = Date.now()) {
	const d = new Date(ms);
	const n = new Date(nowMs);
	const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
	const today = d.getFullYear() === n.getFullYear() && d.getMonth() === n.getMonth() && d.getDate() === n.getDate();
	const ms3 = d.getMilliseconds() ? `.${pad(d.getMilliseconds(), 3)}` : '';
	return `${today ? '' : `${day} `}${fmtClock(ms)}${ms3}`;
}

/** A length of time in seconds for labels: 45 s, 12 min, 6 h, 1.5 h, 7 d. */
export function fmtSpan(s) {
	if (!Number.isFinite(s)) return '?';
	const r = (x) => String(Number(x.toFixed(1)));
	if (s < 120) return `${r(s)} s`;
	if (s < 3600) return `${r(s / 60)} min`;
	if (s < 172800) return `${r(s / 3600)} h`;
	return `${r(s / 86400)} d`;
}

/** A length of time in ms: to the ms up to 2 min (12.3 s), then 5 min, 6 h, 7 d. */
export function fmtLength(ms) {
	return Math.abs(ms) < 120e3 ? fmtNs(ms * 1e6) : fmtSpan(ms / 1000);
}

/** A store's resolution (seconds per bucket) as text: 1 s, 10 s, 1 min. */
export function fmtResolution(s) {
	if (s % 3600 === 0) return `${s / 3600} h`;
	if (s % 60 === 0) return `${s / 60} min`;
	return `${s} s`;
}

/** An instant as a datetime-local input's value (local time, whole seconds). */
export function toLocalInput(ms) {
	const d = new Date(ms);
	return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
		`${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A datetime-local input's value (local time) as unix ms, NaN if it is not one. */
export function fromLocalInput(v) {
	const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,3}))?)?$/.exec(v || '');
	if (!m) return NaN;
	const [y, mo, d, h, mi, s = '0', f = '0'] = m.slice(1);
	const t = new Date(+y, +mo - 1, +d, +h, +mi, +s, +f.padEnd(3, '0'));
	return t.getMonth() === +mo - 1 ? t.getTime() : NaN;
}

/** The local time zone at an instant: "Europe/Berlin, UTC+01:00" (the name when known). */
export function zoneLabel(ms) {
	const off = -new Date(ms).getTimezoneOffset();
	const a = Math.abs(off);
	const utc = `UTC${off < 0 ? '−' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
	let name = '';
	try {
		name = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
	} catch {
		/* no Intl time zone: the offset says it */
	}
	return name && name !== 'UTC' ? `${name}, ${utc}` : utc;
}

/** A relative time the API accepts: -30s, -5m, -1h, -7d, -500ms. */
export const RELATIVE_RE = /^-(\d{1,9})(ms|s|m|h|d)$/;

export function relativeMs(rel) {
	const m = RELATIVE_RE.exec(rel);
	if (!m) return NaN;
	const mult = { ms: 1, s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[m[2]];
	return Number(m[1]) * mult;
}

/** The relative range of a width (ms): the largest unit that divides it, in whole seconds. */
export function relativeFor(widthMs) {
	const s = Math.max(1, Math.round(widthMs / 1000));
	if (s % 86400 === 0) return `-${s / 86400}d`;
	if (s % 3600 === 0) return `-${s / 3600}h`;
	if (s % 60 === 0) return `-${s / 60}m`;
	return `-${s}s`;
}

/** A relative range as a label: -90s -> "last 90 s", -6h -> "last 6 h". */
export function relativeLabel(rel) {
	const m = RELATIVE_RE.exec(rel);
	if (!m) return rel;
	return `last ${m[1]} ${{ ms: 'ms', s: 's', m: 'min', h: 'h', d: 'd' }[m[2]]}`;
}

/** "FROM..TO" in unix ms -> {from, to} or null. */
export function parseAbsRange(s) {
	const m = /^(\d{1,15})\.\.(\d{1,15})$/.exec(s || '');
	if (!m) return null;
	const from = Number(m[1]);
	const to = Number(m[2]);
	return from < to ? { from, to } : null;
}

export const DEFAULT_STATE = Object.freeze({
	view: 'flame', // flame | hist | locks
	range: '-60s', // relative window (-60s, -7d) or absolute FROM..TO (unix ms)
	sel: '', // selected sub-range FROM..TO (unix ms) for the flame graph and histograms
	mode: 'all', // all | on | off
	zoom: [], // labels from the root's child to the zoomed frame
	q: '', // search: substring, or /regex/flags
	pid: '',
	tid: '',
	comm: '',
	icicle: false,
	live: true,
	max_nodes: '',
	base: '', // differential graph: the base range FROM..TO (unix ms); the new one is sel/range
	norm: '', // diff: '1' scale base to new's total, '0' do not, '' by default (different lengths)
	dw: 'new', // diff: widths from the 'new' or the 'base' profile
});

/** Parses the location hash into a full state object (unknown keys are ignored). */
export function stateFromHash(hash) {
	const p = new URLSearchParams((hash || '').replace(/^#/, ''));
	const s = { ...DEFAULT_STATE, zoom: [] };
	const view = p.get('view');
	if (view === 'flame' || view === 'hist' || view === 'locks') s.view = view;
	const range = p.get('range');
	if (range && (RELATIVE_RE.test(range) || parseAbsRange(range))) s.range = range;
	const sel = p.get('sel');
	if (sel && parseAbsRange(sel)) s.sel = sel;
	const mode = p.get('mode');
	if (mode === 'all' || mode === 'on' || mode === 'off') s.mode = mode;
	s.zoom = p.getAll('zoom').filter((z) => z.length > 0);
	s.q = p.get('q') || '';
	for (const k of ['pid', 'tid', 'max_nodes']) {
		const v = p.get(k);
		if (v && /^\d{1,10}$/.test(v)) s[k] = v;
	}
	const comm = p.get('comm');
	if (comm && new TextEncoder().encode(comm).length <= 15) s.comm = comm;
	s.icicle = p.get('icicle') === '1';
	s.live = p.get('live') !== '0';
	const base = p.get('base');
	if (base && parseAbsRange(base)) s.base = base;
	const norm = p.get('norm');
	if (norm === '0' || norm === '1') s.norm = norm;
	if (p.get('dw') === 'base') s.dw = 'base';
	return s;
}

/** The hash for a state: only keys that differ from the defaults, in a fixed order. */
export function hashFromState(s) {
	const p = new URLSearchParams();
	if (s.view !== DEFAULT_STATE.view) p.set('view', s.view);
	if (s.range !== DEFAULT_STATE.range) p.set('range', s.range);
	if (s.sel) p.set('sel', s.sel);
	if (s.mode !== DEFAULT_STATE.mode) p.set('mode', s.mode);
	for (const z of s.zoom) p.append('zoom', z);
	if (s.q) p.set('q', s.q);
	for (const k of ['pid', 'tid', 'comm', 'max_nodes']) if (s[k]) p.set(k, s[k]);
	if (s.icicle) p.set('icicle', '1');
	if (!s.live) p.set('live', '0');
	if (s.base) p.set('base', s.base);
	if (s.norm) p.set('norm', s.norm);
	if (s.dw !== DEFAULT_STATE.dw) p.set('dw', s.dw);
	const str = p.toString();
	return str ? `#${str}` : '';
}

/** The window of the timeline as API from/to parameters. */
export function windowParams(s) {
	const abs = parseAbsRange(s.range);
	if (abs) return { from: String(abs.from), to: String(abs.to) };
	return { from: s.range };
}

/** The range of the flame graph and histograms: the selection, else the window. */
export function dataRangeParams(s) {
	const sel = parseAbsRange(s.sel);
	if (sel) return { from: String(sel.from), to: String(sel.to) };
	return windowParams(s);
}

export function apiUrl(path, params) {
	const p = new URLSearchParams();
	for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, v);
	const q = p.toString();
	return q ? `${path}?${q}` : path;
}

/** Compiles the search box: /re/flags is a regular expression, anything else a substring. */
export function compileSearch(q) {
	if (!q) return null;
	const m = /^\/(.+)\/([imsu]*)$/.exec(q);
	if (m) {
		try {
			const re = new RegExp(m[1], m[2]);
			return { test: (s) => re.test(s), error: null };
		} catch (e) {
			return { test: () => false, error: `bad regular expression: ${e.message}` };
		}
	}
	const needle = q.toLowerCase();
	return { test: (s) => s.toLowerCase().includes(needle), error: null };
}

/** Element by id; throws if the page lacks it (a broken index.html should fail loudly). */
export function $(id) {
	const el = document.getElementById(id);
	if (!el) throw new Error(`missing element #${id}`);
	return el;
}

/** Sizes a canvas to its CSS box at the device pixel ratio; returns [cssW, cssH, dpr, ctx]. */
export function fitCanvas(canvas, cssW, cssH) {
	const dpr = window.devicePixelRatio || 1;
	const w = Math.max(1, Math.round(cssW * dpr));
	const h = Math.max(1, Math.round(cssH * dpr));
	if (canvas.width !== w) canvas.width = w;
	if (canvas.height !== h) canvas.height = h;
	const ctx = canvas.getContext('2d');
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	return [cssW, cssH, dpr, ctx];
}
