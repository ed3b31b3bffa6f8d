// SPDX-License-Identifier: GPL-2.0-only
// app.js: the hotcold viewer. Wires the URL state (location.hash), the JSON API of
// `hotcold serve` (docs/api.md) or a saved hotcold-profile/1 file, and the three views
// (flame graph, timeline, histograms), the Locks view (locks.js), and the differential flame
// graph of two profiles (two ranges of the server, or two files; diff.js). Names from profiles only ever reach the page
// through textContent or canvas text, never as HTML.
import {
	$, RELATIVE_RE, apiUrl, compileSearch, dataRangeParams, fmtBytes,
	fmtDuration, fmtInt, fmtLength, fmtNs, fmtPct, fmtResolution, fmtSpan, fmtWhen, fromLocalInput, hashFromState,
	parseAbsRange, relativeFor, relativeLabel, relativeMs, stateFromHash, toLocalInput, windowParams,
	zoneLabel,
} from './util.js';
import {
	FlameView, INLINED, childrenOf, diffInfo, displayName, flatten, flattenDiff, nodeLabel, pathLabels, resolvePath, rootWeight,
} from './flame.js';
import { LocksView, kindRows } from './locks.js';
import { defaultNormalize, mergeTrees } from './diff.js';
import { Timeline } from './timeline.js';
import { drawHistograms, histOrder } from './hist.js';

const REFRESH_MS = 5000;
// Live reloads of a long relative range come at most every width / LIVE_SLOTS (a 7 d range
// every 14 min): one more slot's worth of data, not a week's profile every 5 s.
const LIVE_SLOTS = 720;
// The longest range the server fills the heat map for (docs/api.md); longer: the strip only.
const HEAT_MAX_MS = 3600e3;
const SCHEMA = 'hotcold-profile/1';

let state = stateFromHash(location.hash);
let source = 'api'; // 'api' | 'file'
let fileName = '';
let profile = null; // the hotcold-profile/1 document drawn
let data = null; // its flattened form for state.mode + filters
let profileHint = 4096; // node capacity to start flattening with: document bytes / 70
let profileBytes = 0;
// Differential graph: `profile` is the new profile, baseDoc the base: the answer for the range
// state.base (source 'api'), or a file (baseFile, its name). Never both kinds at once.
let baseDoc = null;
let baseFile = '';
let baseError = ''; // why the base range could not be loaded (the new profile is drawn alone)
const baseCache = { url: '', doc: null }; // the base range's answer: not refetched by live ticks
let merged = null; // {base, prof, fk, tree}: the merged tree of baseDoc and profile for a filter
const debug = {
	profileLoads: 0, timelineLoads: 0, statusLoads: 0, histLoads: 0, histBars: 0, histSeries: 0,
	lastProfileUrl: '', lastLoad: null, lastZoom: null, errors: [], ready: false,
	complete: false, baseLoads: 0, lastBaseUrl: '', lastTimelineUrl: '',
};
const gen = { profile: 0, timeline: 0, status: 0, hist: 0, locks: 0 };
// Whether the server tracks lock contention (/api/status locks.enabled): undefined until known.
let serverLocks;
// What /api/status says the server holds: {configuredS, spanS, oldestMs, newestMs} (NaN: not said).
let retention = null;
// The server picks the timeline's step itself (its answers say resolution_s): never send one.
let serverPicksStep = false;
let absDirty = false; // the from/to fields were edited and not applied: leave them alone
let lastLiveMs = 0; // when the range's data was last (re)loaded
const known = { procs: new Map(), threads: new Map() }; // for the filter datalists

// ---------------------------------------------------------------------------- errors, fetch

function showError(msg) {
	const el = $('error');
	el.textContent = msg;
	el.hidden = false;
	debug.errors.push(msg);
	if (debug.errors.length > 50) debug.errors.shift();
}

function clearError() {
	$('error').hidden = true;
}

/** Fetches a URL; resolves {text, ms} or throws an Error carrying the API's error message. */
async function fetchText(url) {
	const t0 = performance.now();
	const res = await fetch(url, { cache: 'no-store', headers: { Accept: 'application/json' } });
	const text = await res.text();
	if (!res.ok) {
		let why = text.slice(0, 200);
		try {
			why = JSON.parse(text).error || why;
		} catch {
			/* not JSON: keep the text */
		}
		throw new Error(`${url.split('?')[0]}: HTTP ${res.status}: ${why}`);
	}
	return { text, ms: performance.now() - t0, arrived: performance.now() };
}

async function fetchJSON(url) {
	const { text } = await fetchText(url);
	return JSON.parse(text);
}

// ---------------------------------------------------------------------------- URL state

function writeHash() {
	const h = hashFromState(state);
	const url = location.pathname + location.search + h;
	if (url !== location.pathname + location.search + location.hash) history.replaceState(null, '', url);
}

function filterOf(s) {
	return { pid: s.pid, tid: s.tid, comm: s.comm };
}

function syncControls() {
	syncRange();
	$('live').checked = state.live;
	$('icicle').checked = state.icicle;
	for (const b of document.querySelectorAll('button.mode')) b.setAttribute('aria-pressed', String(b.dataset.mode === state.mode));
	const search = $('search');
	if (search.value !== state.q) search.value = state.q;
	for (const k of ['pid', 'tid', 'comm']) {
		const el = $(`f-${k}`);
		if (el.value !== state[k]) el.value = state[k];
	}
	$('tab-flame').setAttribute('aria-pressed', String(state.view === 'flame'));
	$('tab-hist').setAttribute('aria-pressed', String(state.view === 'hist'));
	$('tab-locks').setAttribute('aria-pressed', String(state.view === 'locks'));
	$('locks-panel').hidden = state.view !== 'locks';
	$('flame-panel').hidden = state.view !== 'flame';
	$('controls').hidden = state.view !== 'flame';
	$('hist-panel').hidden = state.view !== 'hist';
	$('timeline-panel').hidden = source !== 'api';
	$('source').hidden = source !== 'file';
	$('source-name').textContent = source === 'file' ? `file: ${fileName}` : '';
	const sel = parseAbsRange(state.sel);
	$('sel-clear').hidden = !sel;
	$('sel-zoom').hidden = !sel || source !== 'api';
	$('sel-info').textContent = sel
		? `selected ${spanText(sel.from, sel.to)}`
		: '';
	timeline.setSelection(sel);
	flame.setIcicle(state.icicle);
	const dk = diffKind();
	$('diff-bar').hidden = !(dk && state.view === 'flame');
	$('legend').hidden = !!dk;
	$('diff-set').hidden = source !== 'api';
	const br = dk === 'range' ? parseAbsRange(state.base) : null;
	$('base-info').hidden = !br;
	$('base-info').textContent = br ? `base ${spanText(br.from, br.to)}` : '';
	timeline.setBase(br);
	for (const b of document.querySelectorAll('button.dw')) b.setAttribute('aria-pressed', String(b.dataset.dw === state.dw));
	renderDiffBar();
}

// ---------------------------------------------------------------------------- range navigation

/** The window in unix ms: the absolute range, or the relative one ending at the current second. */
function windowRange(nowMs = Date.now()) {
	const abs = parseAbsRange(state.range);
	if (abs) return abs;
	const to = Math.floor(nowMs / 1000) * 1000;
	return { from: to - relativeMs(state.range), to };
}

/** How far back from now the server holds data, in seconds (NaN when it did not say). */
function heldS(nowMs) {
	if (Number.isFinite(retention?.oldestMs)) return Math.max(0, (nowMs - retention.oldestMs) / 1000);
	return retention ? retention.spanS : NaN;
}

/** The presets: disabled beyond the server's retention, marked where it holds less so far. */
function syncPresets(sel) {
	const held = heldS(Date.now());
	for (const o of sel.options) {
		if (o.dataset.custom) continue;
		o.dataset.label ??= o.textContent;
		const s = relativeMs(o.value) / 1000;
		const beyond = retention?.configuredS > 0 && s > retention.configuredS;
		const partial = !beyond && held >= 0 && s > held + Math.max(5, 0.02 * s);
		o.disabled = beyond;
		o.textContent = o.dataset.label + (beyond
			? ` (beyond the ${fmtSpan(retention.configuredS)} retention)`
			: partial ? ` (${fmtSpan(held)} held)` : '');
	}
}

/** The range menu (a range that is no preset gets an entry of its own), steps, live, from/to. */
function syncRange() {
	const sel = $('range');
	for (const o of [...sel.options]) if (o.dataset.custom && o.value !== state.range) o.remove();
	if (![...sel.options].some((o) => o.value === state.range)) {
		const o = document.createElement('option');
		o.value = state.range;
		o.dataset.custom = '1';
		const abs = parseAbsRange(state.range);
		o.textContent = abs ? `${fmtWhen(abs.from)} – ${fmtWhen(abs.to)}` : relativeLabel(state.range);
		sel.append(o);
	}
	syncPresets(sel);
	sel.value = state.range;
	const abs = !!parseAbsRange(state.range);
	const api = source === 'api';
	$('live-ctl').hidden = abs;
	$('go-live').hidden = !abs || !api;
	const w = windowRange();
	$('step-back').disabled = !api || (Number.isFinite(retention?.oldestMs) && w.from <= retention.oldestMs);
	$('step-fwd').disabled = !api || !abs;
	$('abs-from').disabled = $('abs-to').disabled = $('abs-go').disabled = !api;
	fillAbs(w);
}

/** The from/to fields show the window, unless they hold an edit not applied yet. */
function fillAbs(w = windowRange()) {
	$('abs-zone').textContent = zoneLabel(w.to);
	if (absDirty) return;
	const f = $('abs-from');
	const t = $('abs-to');
	if (document.activeElement === f || document.activeElement === t) return;
	// No min/max from the retention: a range reaching past what is held is clipped by the
	// server, not refused, and the newest second held lags the clock.
	f.value = toLocalInput(w.from);
	t.value = toLocalInput(w.to);
}

/** Shows another range: the selection goes, everything reloads. */
function setRange(range, live = state.live) {
	state.range = range;
	state.sel = '';
	state.live = live;
	absDirty = false;
	writeHash();
	syncControls();
	refreshAll();
}

/** Back to following the newest data, over the same width (a preset's name when one has it). */
function goLive(widthMs = windowRange().to - windowRange().from) {
	const preset = [...$('range').options].find((o) => !o.dataset.custom && relativeMs(o.value) === Math.round(widthMs / 1000) * 1000);
	setRange(preset ? preset.value : relativeFor(widthMs), true);
}

/** Steps the window by its width: back (-1) or forward (+1); forward past now is live again. */
function stepRange(dir) {
	if (source !== 'api') return;
	const w = windowRange();
	const width = w.to - w.from;
	if (dir > 0 && !parseAbsRange(state.range)) return; // a relative range is at the newest already
	if (dir < 0 && $('step-back').disabled) return; // nothing held before it
	const from = w.from + dir * width;
	const to = w.to + dir * width;
	if (dir > 0 && to > Date.now()) {
		goLive(width);
		return;
	}
	setRange(`${from}..${to}`);
}

function applyAbs() {
	if (source !== 'api') return;
	const from = fromLocalInput($('abs-from').value);
	const to = fromLocalInput($('abs-to').value);
	if (!Number.isFinite(from) || !Number.isFinite(to)) {
		showError('from/to: give a date and a time for both');
		return;
	}
	if (!(to > from)) {
		showError('from/to: from must be before to');
		return;
	}
	clearError();
	setRange(`${from}..${to}`);
}

function zoomToSelection() {
	if (source === 'api' && parseAbsRange(state.sel)) setRange(state.sel);
}

/** "1 min resolution, from disk": an answer's resolution_s and source (absent: 1 s, memory). */
function resolutionText(res, src) {
	const r = Number(res) > 0 ? Number(res) : 1;
	return `${fmtResolution(r)} resolution, from ${typeof src === 'string' && src ? src : 'memory'}`;
}

/** Which resolution the flame graph and the timeline show, from their answers. */
function renderResolution() {
	const el = $('res-info');
	if (source !== 'api') {
		el.textContent = '';
		el.title = '';
		return;
	}
	const parts = [];
	const tips = [];
	const rg = profile?.range;
	const pr = profile ? resolutionText(rg?.resolution_s, rg?.source) : '';
	if (pr) {
		parts.push(pr);
		tips.push(`flame graph: ${pr}${rg?.tier ? ` (tier ${rg.tier})` : ''}`);
	}
	const tl = timeline.data;
	if (tl) {
		const tr = resolutionText(tl.resolution_s, tl.source);
		const slots = `timeline ${fmtResolution(Math.max(1, Math.round((tl.step_ms || 1000) / 1000)))} slots`;
		parts.push(tr === pr ? slots : `${slots}, ${tr}`);
		tips.push(`timeline: ${tr}${tl.tier ? ` (tier ${tl.tier})` : ''}, one slot per ${fmtNs((tl.step_ms || 1000) * 1e6)}`);
	}
	el.textContent = parts.join(' · ');
	el.title = tips.join('\n');
}

// ---------------------------------------------------------------------------- differential

/** 'range' (base = a range of the server), 'file' (base = a file) or '' (no diff). */
function diffKind() {
	if (baseFile) return 'file';
	if (state.base && source === 'api') return 'range';
	return '';
}

function diffReady() {
	return diffKind() !== '' && baseDoc !== null && profile !== null;
}

/** Normalise (base scaled to new's total): as asked, else when the two lengths differ. */
function normEffective() {
	if (state.norm) return state.norm === '1';
	return defaultNormalize(baseDoc, profile);
}

function spanText(fromMs, toMs) {
	return `${fmtWhen(fromMs)} – ${fmtWhen(toMs)} (${fmtLength(toMs - fromMs)})`;
}

/** The time a document covers, as text. */
function docSpan(doc) {
	const start = Date.parse(doc?.started_at);
	const dur = Number(doc?.duration_ns);
	if (!Number.isFinite(start) || !(dur > 0)) return '?';
	return spanText(start, start + dur / 1e6);
}

function renderDiffBar() {
	const dk = diffKind();
	if (!dk) return;
	$('diff-norm').checked = diffReady() ? normEffective() : state.norm === '1';
	const df = data?.diff;
	$('diff-scale').textContent = df && df.scale !== 1 ? `base × ${df.scale.toPrecision(4)}` : '';
	let nw;
	if (source === 'file') nw = `file ${fileName}`;
	else {
		const sel = parseAbsRange(state.sel);
		nw = sel ? spanText(sel.from, sel.to) : `the whole window (${state.range}): select the range to compare on the heat map`;
	}
	const bs = dk === 'file' ? `file ${baseFile}` : spanText(...Object.values(parseAbsRange(state.base)));
	let note = '';
	if (!baseDoc) note = baseError ? ` (unavailable: ${baseError})` : ' (loading…)';
	else if (dk === 'range' && !(Number(baseDoc.duration_ns) > 0)) note = ' (the server no longer holds any of it)';
	$('diff-desc').textContent = `new: ${nw} · base: ${bs}${note}`;
}

/** Flattens the diff of baseDoc and profile (merged once per pair of documents and filter). */
function useDiff(renderNow) {
	const filter = filterOf(state);
	const fk = `${filter.pid}/${filter.tid}/${filter.comm}`;
	if (!merged || merged.base !== baseDoc || merged.prof !== profile || merged.fk !== fk)
		merged = { base: baseDoc, prof: profile, fk, tree: mergeTrees(baseDoc.flamegraph, profile.flamegraph, filter) };
	useData(flattenDiff(merged.tree, state.mode, { normalize: normEffective(), widths: state.dw }), renderNow);
	debug.complete = true;
	const doc = profile;
	setTimeout(() => {
		if (profile === doc) rememberProcs(doc.flamegraph);
	}, 0);
}

/** The base range's document, fetched once per URL (live ticks reload only the new one). */
async function fetchBase(url) {
	if (baseCache.url === url) return baseCache.doc;
	debug.lastBaseUrl = url;
	let doc;
	try {
		doc = JSON.parse((await fetchText(url)).text);
		checkDoc(doc);
	} catch (e) {
		throw new Error(`base range: ${e.message}`);
	}
	baseCache.url = url;
	baseCache.doc = doc;
	debug.baseLoads++;
	return doc;
}

/** The range shown now, in unix ms: the selection, else what the last answer covered. */
function currentRange() {
	const sel = parseAbsRange(state.sel);
	if (sel) return sel;
	const rg = profile?.range;
	if (Number.isFinite(rg?.from_ms) && Number.isFinite(rg?.to_ms) && rg.to_ms > rg.from_ms)
		return { from: rg.from_ms, to: rg.to_ms };
	const start = Date.parse(profile?.started_at);
	const dur = Number(profile?.duration_ns);
	if (Number.isFinite(start) && dur > 0) return { from: start, to: Math.round(start + dur / 1e6) };
	return parseAbsRange(state.range);
}

/** "Compare… set as base": the range shown becomes the base; the next selection is new. */
function setBaseRange() {
	if (source !== 'api') return;
	const r = currentRange();
	if (!r) {
		showError('compare: no range to use as the base yet');
		return;
	}
	state.base = `${Math.round(r.from)}..${Math.round(r.to)}`;
	state.sel = '';
	baseFile = '';
	baseDoc = null;
	baseError = '';
	merged = null;
	writeHash();
	syncControls();
	loadProfile();
	loadViewData();
}

async function openBaseFile(file) {
	try {
		const doc = JSON.parse(await file.text());
		checkDoc(doc);
		baseFile = file.name;
		baseDoc = doc;
		merged = null;
		state.base = '';
		debug.baseLoads++;
		writeHash();
		syncControls();
		if (profile) reflatten(true);
		clearError();
	} catch (e) {
		showError(`${file.name}: ${e.message}`);
	}
}

/** Leaves diff mode: the normal flame graph of the new profile (nothing to fetch). */
function exitDiff() {
	state.base = '';
	state.norm = '';
	state.dw = 'new';
	baseFile = '';
	baseDoc = null;
	baseError = '';
	merged = null;
	baseCache.url = '';
	baseCache.doc = null;
	writeHash();
	syncControls();
	if (profile) reflatten(true);
	else loadProfile();
}

// ---------------------------------------------------------------------------- flame graph

const flame = new FlameView(
	{ scroller: $('flame-scroll'), spacer: $('flame-spacer'), canvas: $('flame'), overlay: $('flame-overlay') },
	{
		onZoom: (i, t) => zoomTo(i, t),
		onHover: (i, x, y) => showTooltip(i, x, y),
		onRender: () => {},
	},
);

function zoomTo(i, tEvent = performance.now()) {
	if (!data) return;
	state.zoom = pathLabels(data, i);
	writeHash();
	flame.setZoom(i);
	flame.scheduleRender((st) => {
		debug.lastZoom = { renderMs: st.lastRenderMs, eventToPaintMs: performance.now() - tEvent, index: i };
	});
	renderCrumbs();
	updateSearchInfo();
}

const PROGRESSIVE_BYTES = 6 << 20; // above this (~40k nodes), draw a quick pass first

function reflatten(renderNow = false) {
	if (!profile) return;
	if (diffReady()) {
		useDiff(renderNow);
		return;
	}
	const tree = profile.flamegraph;
	if (!tree || typeof tree !== 'object') {
		showError('the profile has no flamegraph');
		return;
	}
	const doc = profile;
	const filter = filterOf(state);
	// A huge profile is first flattened without the nodes too narrow to be seen at the root
	// (< 1/4 px), drawn, and completed in the next task. Not when a zoom is to be restored:
	// the zoomed frame may be one of the narrow ones.
	if (renderNow && profileBytes > PROGRESSIVE_BYTES && state.zoom.length === 0) {
		const minW = (rootWeight(tree, state.mode) * 0.25) / Math.max(1, $('flame-scroll').clientWidth);
		useData(flatten(tree, state.mode, filter, 4096, minW), true);
		debug.complete = false;
		// After the quick picture has been presented: rAF runs before the frame, the timeout
		// after it.
		requestAnimationFrame(() => setTimeout(() => {
			if (profile !== doc) return;
			const t0 = performance.now();
			useData(flatten(tree, state.mode, filter, profileHint), false);
			if (debug.lastLoad) {
				debug.lastLoad.completeMs = performance.now() - t0;
				debug.lastLoad.nodes = data.n;
			}
			debug.complete = true;
		}, 0));
	} else {
		useData(flatten(tree, state.mode, filter, profileHint), renderNow);
		debug.complete = true;
	}
	// The filter suggestions are not needed for the picture: after it.
	setTimeout(() => {
		if (profile === doc) rememberProcs(tree);
	}, 0);
}

function useData(d, renderNow) {
	data = d;
	flame.setData(data, resolvePath(data, state.zoom));
	applySearch();
	// The text around the graph first, so that the picture is drawn at its final size.
	renderCrumbs();
	renderFlameInfo();
	updateSearchInfo();
	renderDiffBar();
	if (renderNow) flame.render(); // the first picture should not wait for a frame
}

function applySearch() {
	const m = compileSearch(state.q);
	if (m?.error) {
		$('search-info').textContent = m.error;
		flame.setSearch(null);
		return;
	}
	flame.setSearch(m);
	updateSearchInfo();
}

function updateSearchInfo() {
	const info = $('search-info');
	if (!state.q || !data) {
		info.textContent = '';
		return;
	}
	const m = flame.match;
	m.viewNs = flame.viewMatchNs();
	m.pctView = data.w[flame.zoom] > 0 ? (100 * m.viewNs) / data.w[flame.zoom] : 0;
	info.textContent = m.nodes
		? `matched ${fmtNs(m.ns)} = ${fmtPct(m.ns, data.total)} of total` +
		  (flame.zoom ? `, ${fmtPct(m.viewNs, data.w[flame.zoom])} of view` : '') +
		  ` (${fmtInt(m.nodes)} frames)`
		: 'no match';
}

function renderCrumbs() {
	const nav = $('crumbs');
	nav.replaceChildren();
	if (!data) return;
	const path = [];
	for (let i = flame.zoom; i >= 0; i = data.parent[i]) path.push(i);
	path.reverse();
	path.forEach((i, k) => {
		if (k) {
			const s = document.createElement('span');
			s.className = 'sep';
			s.textContent = '›';
			nav.append(s);
		}
		const b = document.createElement('button');
		b.type = 'button';
		b.className = 'crumb';
		const n = data.nodes[i];
		const id = n.kind === 'process' || n.kind === 'thread' ? n.pid ?? n.tid : undefined;
		b.textContent = i === 0 ? 'all' : id !== undefined ? `${n.name} [${id}]` : nodeLabel(n);
		b.title = `${nodeLabel(n)} (${n.kind})`;
		if (i === flame.zoom) b.setAttribute('aria-current', 'true');
		b.addEventListener('click', () => zoomTo(i));
		nav.append(b);
	});
}

function renderFlameInfo() {
	const el = $('flame-info');
	if (!profile || !data) {
		el.textContent = '';
		return;
	}
	const parts = [];
	if (data.diff) {
		const df = data.diff;
		parts.push(`new ${docSpan(profile)}: ${fmtNs(df.newTotal)}`);
		parts.push(`base ${docSpan(baseDoc)}: ${fmtNs(df.baseTotal)}` + (df.scale !== 1 ? ` (normalised × ${df.scale.toPrecision(4)})` : ''));
		const dt = df.newTotal - df.baseTotal;
		parts.push(`total changed ${signedNs(dt)}` + (df.baseTotal > 0 ? ` (${signedPct(dt, df.baseTotal)})` : '') +
			(df.scale !== 1 ? ': normalised away, colours compare shares' : ''));
		parts.push(`${fmtInt(data.n)} frames`);
		parts.push(df.widths === 'base' ? 'widths: base' : 'widths: new');
		el.textContent = parts.join(' · ');
		return;
	}
	const start = Date.parse(profile.started_at);
	const dur = profile.duration_ns;
	if (Number.isFinite(start) && dur > 0)
		parts.push(spanText(start, start + dur / 1e6));
	parts.push(
		`total ${fmtNs(data.total)}: on-CPU ${fmtNs(data.on[0])}, blocked ${fmtNs(data.off[0])}, run-queue ${fmtNs(data.rq[0])}`,
	);
	parts.push(`${fmtInt(data.n)} frames`);
	const pruned = profile.range?.pruned ?? profile.pruned; // /api/profile: range.pruned
	if (pruned && pruned.nodes > 0)
		parts.push(`${fmtInt(pruned.nodes)} small frames (${fmtNs(pruned.value_ns)}) folded into their parents (max_nodes ${fmtInt(pruned.max_nodes)})`);
	if (data.n <= 1) parts.push('no samples in this range');
	el.textContent = parts.join(' · ');
}

function showTooltip(i, cx, cy) {
	const tt = $('tooltip');
	if (i < 0 || !data) {
		tt.hidden = true;
		return;
	}
	if (data.diff) {
		showDiffTooltip(i, cx, cy);
		return;
	}
	const n = data.nodes[i];
	const w = data.w[i];
	const p = data.parent[i];
	let childSum = 0;
	for (let j = i + 1; j < data.end[i]; j = data.end[j]) childSum += data.w[j];
	const row = ttRow;
	const name = document.createElement('div');
	name.className = 'tt-name';
	name.textContent = displayName(n);
	const meta = [n.kind === 'lock' ? 'blocked waiting for this kernel lock (kind, then its name when known)' : n.kind];
	if (n.inlined === true) meta.push('inlined into its caller (DWARF)');
	/* pid/tid 0: the store merged exited processes or threads by name (docs/store.md) */
	if (n.pid !== undefined) meta.push(n.pid === 0 && n.kind === 'process' ? 'exited processes, merged by name' : `pid ${n.pid}`);
	if (n.tid !== undefined) meta.push(n.tid === 0 && n.kind === 'thread' ? 'threads merged by name' : `tid ${n.tid}`);
	if (n.module) meta.push(n.module);
	if (n.offset) meta.push(`+${n.offset}`);
	const rows = [name, row(meta.join(' · ')), row(`${fmtNs(w)} · ${fmtPct(w, data.total)} of total` + (p >= 0 ? ` · ${fmtPct(w, data.w[p])} of parent` : ''))];
	if (data.on[i] > 0 || state.mode !== 'off') rows.push(row(`on-CPU ${fmtNs(data.on[i])} (${fmtPct(data.on[i], w)})`, 'tt-on'));
	if (state.mode !== 'on') {
		rows.push(row(`blocked ${fmtNs(data.off[i])} (${fmtPct(data.off[i], w)})`, 'tt-off'));
		rows.push(row(`run-queue ${fmtNs(data.rq[i])} (${fmtPct(data.rq[i], w)})`, 'tt-rq'));
	}
	rows.push(row(`samples ${fmtInt(n.samples)}` + (w - childSum > 0 && childSum > 0 ? ` · self ${fmtNs(w - childSum)}` : '')));
	placeTooltip(rows, cx, cy);
}

const MODE_TEXT = { all: 'on-CPU + blocked + run-queue', on: 'on-CPU', off: 'blocked + run-queue' };

function signedNs(ns) {
	return ns > 0 ? `+${fmtNs(ns)}` : ns < 0 ? `−${fmtNs(-ns)}` : '±0';
}

function signedPct(part, whole) {
	if (!(whole > 0)) return '';
	const p = (100 * part) / whole;
	const a = Math.abs(p);
	const t = a >= 10 ? a.toFixed(1) : a.toFixed(2);
	return `${p > 0 ? '+' : p < 0 ? '−' : '±'}${t}%`;
}

function ttRow(text, cls) {
	const d = document.createElement('div');
	d.className = cls ? `tt-row ${cls}` : 'tt-row';
	d.textContent = text;
	return d;
}

/** Tooltip of a differential graph: base, new and the change, for the selected kind. */
function showDiffTooltip(i, cx, cy) {
	const n = data.nodes[i];
	const df = data.diff;
	const di = diffInfo(data, i);
	const name = document.createElement('div');
	name.className = 'tt-name';
	name.textContent = n.inlined === true ? n.name + INLINED : n.name;
	const meta = [n.kind];
	if (n.inlined === true) meta.push('inlined into its caller (DWARF)');
	if (n.module) meta.push(n.module);
	if (n.ids) {
		const idName = n.kind === 'thread' ? 'tid' : 'pid';
		const ids = (a) => (a.length ? a.join(', ') : '—');
		meta.push(`${idName} base ${ids(n.ids[0])}, new ${ids(n.ids[1])}`);
	}
	const bTot = df.baseTotal * df.scale;
	const rows = [name, ttRow(meta.join(' · ')), ttRow(`${MODE_TEXT[data.mode] || data.mode} time`, 'muted')];
	rows.push(ttRow(`new ${fmtNs(di.new)} · ${fmtPct(di.new, df.newTotal)} of new`));
	rows.push(ttRow(`base ${fmtNs(di.baseRaw)} · ${fmtPct(di.base, bTot)} of base` + (df.scale !== 1 ? ` · normalised × ${df.scale.toPrecision(4)} = ${fmtNs(di.base)}` : '')));
	let change;
	if (di.base > 0 && di.new > 0) change = `${signedNs(di.delta)} (${signedPct(di.delta, di.base)})`;
	else if (di.new > 0) change = `${signedNs(di.delta)} (new: not in base)`;
	else change = `${signedNs(di.delta)} (gone: not in new)`;
	rows.push(ttRow(`change ${change}`, di.delta > 0 ? 'tt-grew' : di.delta < 0 ? 'tt-shrank' : ''));
	if (di.baseSelf > 0 || di.newSelf > 0) {
		rows.push(ttRow(`self: new ${fmtNs(di.newSelf)}, base ${fmtNs(di.baseSelf)}, change ${signedNs(di.selfDelta)}` +
			(di.baseSelf > 0 ? ` (${signedPct(di.selfDelta, di.baseSelf)})` : '')));
	}
	rows.push(ttRow(di.level > 0 ? 'colour: self time grew' : di.level < 0 ? 'colour: self time shrank' : 'colour: self time unchanged', 'muted'));
	placeTooltip(rows, cx, cy);
}

function placeTooltip(rows, cx, cy) {
	const tt = $('tooltip');
	tt.replaceChildren(...rows);
	tt.hidden = false;
	const r = tt.getBoundingClientRect();
	let x = cx + 14;
	let y = cy + 16;
	if (x + r.width > window.innerWidth - 4) x = Math.max(4, cx - r.width - 10);
	if (y + r.height > window.innerHeight - 4) y = Math.max(4, cy - r.height - 10);
	tt.style.left = `${x}px`;
	tt.style.top = `${y}px`;
}

function rememberProcs(tree) {
	if (known.procs.size > 2000) return;
	for (const p of tree.children || []) {
		if (p.kind !== 'process') continue;
		if (!p.pid) continue; /* merged by name: not a pid to filter on */
		known.procs.set(p.pid, p.name);
		for (const t of p.children || []) if (t.kind === 'thread' && t.tid) known.threads.set(t.tid, `${t.name} (pid ${p.pid})`);
	}
	const fill = (id, entries) => {
		const dl = $(id);
		dl.replaceChildren(
			...entries.slice(0, 500).map(([v, label]) => {
				const o = document.createElement('option');
				o.value = String(v);
				if (label) o.label = label;
				return o;
			}),
		);
	};
	fill('dl-pid', [...known.procs].map(([pid, name]) => [pid, name]));
	fill('dl-tid', [...known.threads]);
	fill('dl-comm', [...new Set(known.procs.values())].sort().map((c) => [c, '']));
}

/** Throws unless doc is a hotcold-profile/1 document with a flame graph. */
function checkDoc(doc) {
	if (!doc || doc.schema !== SCHEMA || !doc.flamegraph || typeof doc.flamegraph !== 'object') {
		throw new Error(`not a ${SCHEMA} document (schema: ${JSON.stringify(doc?.schema)})`);
	}
}

/** Accepts a parsed profile (from the API or a file) and draws it. */
function acceptProfile(doc, timing) {
	checkDoc(doc);
	profile = doc;
	profileHint = timing?.bytes ? Math.ceil(timing.bytes / 70) : 4096;
	profileBytes = timing?.bytes || 0;
	// Registered before reflatten() queues the completion of a progressive load, so that this
	// timeout runs first: it measures when the first picture was presented.
	const ll = timing ? { nextFrameMs: null } : null;
	if (ll) requestAnimationFrame(() => setTimeout(() => {
		ll.nextFrameMs = performance.now() - timing.arrived;
	}, 0));
	const t1 = performance.now();
	reflatten(true);
	const t2 = performance.now();
	if (ll) {
		debug.lastLoad = Object.assign(ll, {
			url: timing.url, bytes: timing.bytes, fetchMs: timing.fetchMs, parseMs: timing.parseMs,
			flattenMs: data.flattenMs, renderMs: flame.stats.lastRenderMs,
			arrivalToRenderMs: t2 - timing.arrived, setupMs: t2 - t1, nodes: data.n, partial: data.partial,
			firstNodes: data.n, completeMs: null,
			renderSetupMs: flame.stats.setupMs, walkMs: flame.stats.walkMs, fillMs: flame.stats.fillMs, textMs: flame.stats.textMs,
		});
	}
	debug.profileLoads++;
	debug.ready = true;
	renderResolution();
}

async function loadProfile() {
	if (source !== 'api') return;
	const g = ++gen.profile;
	const common = { kind: state.mode, pid: state.pid, tid: state.tid, comm: state.comm, max_nodes: state.max_nodes };
	const url = apiUrl('api/profile', { ...dataRangeParams(state), ...common });
	debug.lastProfileUrl = url;
	// A differential graph of two ranges: the base with the same kind and filters, in parallel.
	const baseAsked = diffKind() === 'range' ? state.base : '';
	const br = parseAbsRange(baseAsked);
	const baseUrl = br ? apiUrl('api/profile', { from: String(br.from), to: String(br.to), ...common }) : '';
	try {
		// A base that cannot be had (e.g. dropped from the store) leaves the new profile drawn alone.
		const [r, b] = await Promise.all([
			fetchText(url),
			baseUrl ? fetchBase(baseUrl).then((doc) => ({ doc }), (e) => ({ error: e.message })) : null,
		]);
		if (g !== gen.profile || source !== 'api') return;
		if (b && state.base === baseAsked && diffKind() === 'range') {
			baseDoc = b.doc || null;
			baseError = b.error || '';
		}
		const t0 = performance.now();
		const doc = JSON.parse(r.text);
		const parseMs = performance.now() - t0;
		acceptProfile(doc, { url, bytes: r.text.length, fetchMs: r.ms, parseMs, arrived: r.arrived });
		clearError();
		if (b?.error) showError(b.error);
	} catch (e) {
		if (g === gen.profile) showError(`profile: ${e.message}`);
	}
}

// ---------------------------------------------------------------------------- timeline

const timeline = new Timeline(
	{
		heat: $('heat'), heatOverlay: $('heat-overlay'), heatNote: $('heat-note'), strip: $('strip'),
		stripOverlay: $('strip-overlay'), info: $('tl-info'),
	},
	{
		onSelect: (from, to) => {
			if (!(to > from)) return;
			state.sel = `${Math.round(from)}..${Math.round(to)}`;
			writeHash();
			syncControls();
			loadProfile();
			loadViewData();
		},
	},
);

async function loadTimeline() {
	if (source !== 'api') return;
	const g = ++gen.timeline;
	const p = windowParams(state);
	// Above an hour, or once the server has shown that it picks the step (its answers say
	// resolution_s), no step: the server picks one its stored resolution can fill. Up to an
	// hour on a server that does not, at most 2000 slots (the heat map stays 1 s per column).
	const w = windowRange();
	const spanMs = w.to - w.from;
	const stepS = Math.max(1, Math.ceil(spanMs / 1000 / 2000));
	if (!serverPicksStep && spanMs <= HEAT_MAX_MS && stepS > 1) p.step = `${stepS}s`;
	debug.lastTimelineUrl = apiUrl('api/timeline', p);
	try {
		const tl = await fetchJSON(apiUrl('api/timeline', p));
		if (g !== gen.timeline) return;
		if (tl.resolution_s !== undefined) serverPicksStep = true;
		timeline.setData(tl);
		debug.timelineLoads++;
		renderResolution();
	} catch (e) {
		if (g === gen.timeline) showError(`timeline: ${e.message}`);
	}
}

// ---------------------------------------------------------------------------- status line

function fmtHz(hz) {
	return Number.isFinite(hz) ? `${Number(hz.toFixed(2))} Hz` : '? Hz';
}

// Events lost, by count: the reasons in nanoseconds (offcpu_lost_ns) are time, not events.
function lostSum(lost) {
	let n = 0;
	for (const [k, v] of Object.entries(lost || {}))
		if (Number.isFinite(v) && !k.endsWith('_ns')) n += v;
	return n;
}

function lostTitle(lost) {
	return Object.entries(lost || {})
		.filter(([, v]) => v > 0)
		.map(([k, v]) => `${k}: ${k.endsWith('_ns') ? fmtNs(v) : fmtInt(v)}`)
		.join(', ');
}

async function loadStatus() {
	if (source !== 'api') return;
	const g = ++gen.status;
	try {
		const s = await fetchJSON('api/status');
		if (g !== gen.status || source !== 'api') return;
		debug.statusLoads++;
		// An older server has no `locks`: unknown, /api/locks tells.
		serverLocks = s.locks ? s.locks.enabled !== false : null;
		const parts = [
			`${s.host ?? '?'} · Linux ${s.kernel ?? '?'}`,
			`${fmtHz(s.frequency_hz)} × ${s.cpus} CPU${s.cpus === 1 ? '' : 's'}`,
			`${fmtInt(s.samples)} samples (${fmtInt(s.idle_samples)} idle)`,
			`lost ${fmtInt(lostSum(s.lost))}`,
			s.offcpu === false ? 'off-CPU tracking off' : 'off-CPU on',
		];
		if (s.locks?.enabled) parts.push(`locks on (${fmtInt(s.locks.events)} contentions)`);
		if (s.retention) parts.push(`retention ${fmtDuration(s.retention.span_s)} of ${fmtDuration(s.retention.configured_s)}`);
		retention = s.retention ? {
			configuredS: Number(s.retention.configured_s), spanS: Number(s.retention.span_s),
			oldestMs: Date.parse(s.retention.oldest), newestMs: Date.parse(s.retention.newest),
		} : null;
		syncRange();
		if (s.memory?.store_bytes !== undefined) parts.push(`store ${fmtBytes(s.memory.store_bytes)}`);
		if (s.uptime_s !== undefined) parts.push(`up ${fmtDuration(s.uptime_s)}`);
		if (s.version) parts.push(`hotcold ${s.version}`);
		const el = $('status');
		el.textContent = parts.join(' · ');
		el.title = lostTitle(s.lost) || 'no events lost';
	} catch (e) {
		if (g === gen.status) {
			$('status').textContent = `status: ${e.message}`;
			showError(`status: ${e.message}`);
		}
	}
}

function fileStatus(doc) {
	const sm = doc.sampling || {};
	const parts = [
		`saved profile ${fileName}`,
		`${doc.host ?? '?'} · Linux ${doc.kernel ?? '?'}`,
		`${doc.started_at ?? '?'} + ${fmtNs(doc.duration_ns)}`,
		`${fmtHz(sm.frequency_hz)} × ${sm.cpus ?? '?'} CPUs`,
		`${fmtInt(sm.samples)} samples (${fmtInt(sm.idle_samples)} idle)`,
		`lost ${fmtInt(lostSum(sm.lost))}`,
	];
	const el = $('status');
	el.textContent = parts.join(' · ');
	el.title = lostTitle(sm.lost) || 'no events lost';
}

// ---------------------------------------------------------------------------- histograms

async function loadHists() {
	const g = ++gen.hist;
	let list;
	if (source === 'file') {
		const hs = profile?.histograms || {};
		list = histOrder(Object.keys(hs)).map((name) => {
				const h = hs[name];
				const series = state.comm && name !== 'runqueue_length' ? (h.series || []).filter((s) => s.key === state.comm) : h.series;
				return { name, hist: { ...h, series } };
			});
	} else {
		try {
			const names = histOrder((await fetchJSON('api/histograms')).histograms || []);
			const p = { ...dataRangeParams(state), pid: state.pid, comm: state.comm };
			list = await Promise.all(
				names.map(async (name) => {
					try {
						return { name, hist: await fetchJSON(apiUrl(`api/histograms/${encodeURIComponent(name)}`, p)) };
					} catch (e) {
						return { name, hist: null, error: e.message };
					}
				}),
			);
		} catch (e) {
			if (g === gen.hist) showError(`histograms: ${e.message}`);
			return;
		}
	}
	if (g !== gen.hist) return;
	const r = drawHistograms($('hists'), list);
	debug.histBars = r.bars;
	debug.histSeries = r.series;
	debug.histLoads++;
}

// ---------------------------------------------------------------------------- locks

const LOCKS_OFF = 'Lock tracking is off: this server runs without --locks. Start it with ' +
	'`hotcold serve --locks` to see kernel lock contention here (docs/locks.md).';

/** Tooltip of the waiters' flame graph: a lock node is a lock wait; spin and block apart. */
function showLockTooltip(d, i, cx, cy) {
	const tt = $('tooltip');
	if (i < 0 || !d) {
		tt.hidden = true;
		return;
	}
	const n = d.nodes[i];
	const w = d.w[i];
	const p = d.parent[i];
	const name = document.createElement('div');
	name.className = 'tt-name';
	name.textContent = displayName(n);
	const meta = [n.kind];
	if (n.pid !== undefined) meta.push(`pid ${n.pid}`);
	if (n.tid !== undefined) meta.push(`tid ${n.tid}`);
	if (n.module) meta.push(n.module);
	const rows = [name, ttRow(meta.join(' · '))];
	rows.push(ttRow(`waited ${fmtNs(w)} · ${fmtPct(w, d.total)} of all waiting` + (p >= 0 ? ` · ${fmtPct(w, d.w[p])} of parent` : '')));
	rows.push(ttRow(`spun ${fmtNs(d.on[i])} (${fmtPct(d.on[i], w)})`, 'tt-lock-spin'));
	rows.push(ttRow(`blocked ${fmtNs(d.off[i])} (${fmtPct(d.off[i], w)})`, 'tt-lock'));
	rows.push(ttRow(`contentions ${fmtInt(n.samples)}` + (n.samples > 0 ? ` · mean ${fmtNs(w / n.samples)}` : '')));
	placeTooltip(rows, cx, cy);
}

const locksView = new LocksView({ onHover: showLockTooltip });

/** The range shown, as text, from an /api/locks answer. */
function locksWhere(doc) {
	const r = doc?.range;
	if (!Number.isFinite(r?.from_ms) || !Number.isFinite(r?.to_ms)) return '';
	const res = r.resolution_s !== undefined ? ` · ${resolutionText(r.resolution_s, r.source)}` : '';
	return `${spanText(r.from_ms, r.to_ms)}${res}`;
}

async function loadLocks() {
	const g = ++gen.locks;
	if (source === 'file') {
		const l = profile?.locks;
		if (l && typeof l === 'object') locksView.show(l, profile.histograms?.lock_wait_ns || null, `saved profile ${fileName}`);
		else locksView.showOff(`${fileName} has no locks section: it was recorded without --locks (docs/locks.md).`);
		return;
	}
	try {
		if (serverLocks === undefined) await loadStatus();
		if (g !== gen.locks || source !== 'api') return;
		if (serverLocks === false) {
			locksView.showOff(LOCKS_OFF);
			return;
		}
		const doc = await fetchJSON(apiUrl('api/locks', { ...dataRangeParams(state), max_nodes: state.max_nodes }));
		if (g !== gen.locks || source !== 'api') return;
		locksView.show(doc, doc.histograms?.lock_wait_ns || null, locksWhere(doc));
	} catch (e) {
		if (g !== gen.locks) return;
		// The server says tracking is off (409) though its status did not: the same message.
		if (/HTTP 409/.test(e.message)) locksView.showOff(LOCKS_OFF);
		else locksView.showError(`locks: ${e.message}`);
	}
}

// ---------------------------------------------------------------------------- refresh

function refreshAll() {
	if (source !== 'api') return;
	lastLiveMs = performance.now();
	loadStatus();
	loadTimeline();
	loadProfile();
	loadViewData();
}

function liveTick() {
	if (source !== 'api' || !state.live || document.hidden || !RELATIVE_RE.test(state.range)) return;
	loadStatus();
	if (performance.now() - lastLiveMs < Math.max(REFRESH_MS, relativeMs(state.range) / LIVE_SLOTS) - 250) return;
	lastLiveMs = performance.now();
	loadTimeline();
	if (!state.sel) {
		loadProfile();
		loadViewData();
	}
}

// ---------------------------------------------------------------------------- files

async function openFile(file) {
	try {
		const text = await file.text();
		const t0 = performance.now();
		const doc = JSON.parse(text);
		const parseMs = performance.now() - t0;
		checkDoc(doc);
		// A range base needs the server: a file shown leaves a range diff (a base file stays).
		if (state.base) {
			state.base = '';
			if (!baseFile) baseDoc = null;
			merged = null;
			writeHash();
		}
		const prev = { source, fileName };
		source = 'file';
		fileName = file.name;
		gen.profile++;
		try {
			acceptProfile(doc, { url: `file:${file.name}`, bytes: text.length, fetchMs: 0, parseMs, arrived: t0 });
		} catch (e) {
			source = prev.source;
			fileName = prev.fileName;
			throw e;
		}
		fileStatus(doc);
		clearError();
		syncControls();
		renderResolution();
		loadViewData();
	} catch (e) {
		showError(`${file.name}: ${e.message}`);
	}
}

function backToLive() {
	source = 'api';
	fileName = '';
	profile = null;
	syncControls();
	refreshAll();
}

// ---------------------------------------------------------------------------- events

function bind() {
	$('tab-flame').addEventListener('click', () => setView('flame'));
	$('tab-hist').addEventListener('click', () => setView('hist'));
	$('tab-locks').addEventListener('click', () => setView('locks'));
	$('range').addEventListener('change', (e) => setRange(e.target.value));
	$('step-back').addEventListener('click', () => stepRange(-1));
	$('step-fwd').addEventListener('click', () => stepRange(1));
	$('go-live').addEventListener('click', () => goLive());
	$('sel-zoom').addEventListener('click', zoomToSelection);
	$('abs-go').addEventListener('click', applyAbs);
	for (const id of ['abs-from', 'abs-to']) {
		const el = $(id);
		el.addEventListener('input', () => {
			absDirty = true;
		});
		el.addEventListener('keydown', (e) => {
			if (e.key === 'Enter') applyAbs();
			if (e.key === 'Escape') {
				absDirty = false;
				el.blur();
				fillAbs();
			}
		});
	}
	$('live').addEventListener('change', (e) => {
		state.live = e.target.checked;
		writeHash();
	});
	$('refresh').addEventListener('click', () => refreshAll());
	$('sel-clear').addEventListener('click', () => {
		state.sel = '';
		writeHash();
		syncControls();
		loadProfile();
		loadViewData();
	});
	for (const b of document.querySelectorAll('button.mode')) {
		b.addEventListener('click', () => {
			if (state.mode === b.dataset.mode) return;
			state.mode = b.dataset.mode;
			writeHash();
			syncControls();
			if (source === 'api') loadProfile();
			else reflatten();
		});
	}
	$('icicle').addEventListener('change', (e) => {
		state.icicle = e.target.checked;
		writeHash();
		flame.setIcicle(state.icicle);
	});
	const search = $('search');
	let timer = 0;
	const commit = () => {
		clearTimeout(timer);
		if (search.value === state.q) return;
		state.q = search.value;
		writeHash();
		applySearch();
	};
	search.addEventListener('input', () => {
		clearTimeout(timer);
		timer = setTimeout(commit, 200);
	});
	search.addEventListener('keydown', (e) => {
		if (e.key === 'Enter') commit();
		if (e.key === 'Escape') {
			search.value = '';
			commit();
		}
	});
	for (const k of ['pid', 'tid', 'comm']) {
		$(`f-${k}`).addEventListener('change', (e) => {
			const v = e.target.value.trim();
			const ok = k === 'comm' ? new TextEncoder().encode(v).length <= 15 : /^\d{0,10}$/.test(v);
			if (!ok) {
				showError(`${k}: ${k === 'comm' ? 'a process name has at most 15 bytes' : 'a number'}`);
				return;
			}
			setFilter({ ...filterOf(state), [k]: v });
		});
	}
	$('f-clear').addEventListener('click', () => setFilter({ pid: '', tid: '', comm: '' }));
	$('file').addEventListener('change', (e) => {
		const f = e.target.files?.[0];
		if (f) openFile(f);
		e.target.value = '';
	});
	$('source-close').addEventListener('click', backToLive);
	$('base-file').addEventListener('change', (e) => {
		const f = e.target.files?.[0];
		if (f) openBaseFile(f);
		e.target.value = '';
	});
	$('diff-set').addEventListener('click', setBaseRange);
	$('diff-exit').addEventListener('click', exitDiff);
	$('diff-norm').addEventListener('change', (e) => {
		state.norm = e.target.checked ? '1' : '0';
		writeHash();
		reflatten();
	});
	for (const b of document.querySelectorAll('button.dw')) {
		b.addEventListener('click', () => {
			if (state.dw === b.dataset.dw) return;
			state.dw = b.dataset.dw;
			writeHash();
			syncControls();
			reflatten();
		});
	}
	const drop = $('drop');
	const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes('Files');
	window.addEventListener('dragover', (e) => {
		if (!hasFiles(e)) return;
		e.preventDefault();
		drop.hidden = false;
	});
	window.addEventListener('dragleave', (e) => {
		if (!e.relatedTarget) drop.hidden = true;
	});
	window.addEventListener('drop', (e) => {
		if (!hasFiles(e)) return;
		e.preventDefault();
		drop.hidden = true;
		const f = e.dataTransfer.files?.[0];
		if (f) openFile(f);
	});
	window.addEventListener('keydown', (e) => {
		const t = e.target;
		if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement) return;
		if (e.key === 'Escape' && data && flame.zoom > 0) zoomTo(data.parent[flame.zoom]);
		if (e.key === '/') {
			e.preventDefault();
			$('search').focus();
		}
		if (e.key === '[' || e.key === ']') {
			e.preventDefault();
			stepRange(e.key === '[' ? -1 : 1);
		}
	});
	window.addEventListener('hashchange', () => {
		// Only a hand-edited URL gets here (replaceState does not fire it).
		const prevBase = state.base;
		state = stateFromHash(location.hash);
		absDirty = false;
		if (state.base !== prevBase) {
			if (state.base) baseFile = '';
			if (!baseFile) baseDoc = null;
			merged = null;
		}
		syncControls();
		if (source === 'api') refreshAll();
		else reflatten();
	});
	setInterval(liveTick, REFRESH_MS);
	watchPixelRatio();
}

/** Redraws every canvas when devicePixelRatio changes (zoom, another monitor): no resize event. */
function watchPixelRatio() {
	const mq = window.matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
	mq.addEventListener('change', () => {
		flame.layoutDirty = true;
		flame.scheduleRender();
		timeline.scheduleRender();
		loadViewData();
		watchPixelRatio();
	}, { once: true });
}

function setFilter(f) {
	state.pid = f.pid;
	state.tid = f.tid;
	state.comm = f.comm;
	writeHash();
	syncControls();
	if (source === 'api') loadProfile();
	else reflatten();
	loadViewData();
}

function setView(v) {
	if (state.view === v) return;
	state.view = v;
	writeHash();
	syncControls();
	if (v === 'hist') loadHists();
	else if (v === 'locks') {
		locksView.shown();
		loadLocks();
	} else {
		flame.layoutDirty = true;
		flame.scheduleRender();
	}
}

/** The data of the view shown beside the flame graph: the histograms or the locks. */
function loadViewData() {
	if (state.view === 'hist') loadHists();
	else if (state.view === 'locks') loadLocks();
}

// ---------------------------------------------------------------------------- debug hook

// Read-only view of the viewer's state for tests and benchmarks.
const hook = {
	get ready() { return debug.ready && debug.complete; },
	get complete() { return debug.complete; },
	get source() { return source; },
	get state() { return JSON.parse(JSON.stringify(state)); },
	get nodes() { return data ? data.n : 0; },
	get nodesDrawn() { return flame.stats.nodesDrawn; },
	get mergedDrawn() { return flame.stats.mergedDrawn; },
	get textsDrawn() { return flame.stats.textsDrawn; },
	get matchedDrawn() { return flame.stats.matchedDrawn; },
	get hatchedDrawn() { return flame.stats.hatchedDrawn || 0; },
	get renders() { return flame.stats.renders; },
	get lastRenderMs() { return flame.stats.lastRenderMs; },
	get lastLoad() { return debug.lastLoad && { ...debug.lastLoad }; },
	get lastZoom() { return debug.lastZoom && { ...debug.lastZoom }; },
	get zoomPath() { return data ? pathLabels(data, flame.zoom) : []; },
	get match() { return { ...flame.match }; },
	get selection() {
		const s = parseAbsRange(state.sel);
		return s ? { from_ms: s.from, to_ms: s.to } : null;
	},
	get timeline() {
		const t = timeline.data;
		return t ? {
			from_ms: t.from_ms, to_ms: t.to_ms, step_ms: t.step_ms, columns: t.heatmap?.columns, rows: t.heatmap?.rows,
			row_ms: t.heatmap?.row_ms, start_ms: t.heatmap?.start_ms, slots: t.slots?.t_ms?.length ?? 0,
			resolution_s: t.resolution_s ?? null, source: t.source ?? null, tier: t.tier ?? null, heatNote: !$('heat-note').hidden,
		} : null;
	},
	get window() {
		const w = windowRange();
		return { from_ms: w.from, to_ms: w.to, absolute: !!parseAbsRange(state.range) };
	},
	get retention() { return retention && { ...retention }; },
	get resolution() { return $('res-info').textContent; },
	get lastTimelineUrl() { return debug.lastTimelineUrl; },
	get profileLoads() { return debug.profileLoads; },
	get timelineLoads() { return debug.timelineLoads; },
	get statusLoads() { return debug.statusLoads; },
	get histLoads() { return debug.histLoads; },
	get histBars() { return debug.histBars; },
	get histSeries() { return debug.histSeries; },
	get lastProfileUrl() { return debug.lastProfileUrl; },
	get errors() { return [...debug.errors]; },
	get diff() {
		const dk = diffKind();
		if (!dk) return null;
		const df = data?.diff;
		const br = parseAbsRange(state.base);
		return {
			kind: dk, base: dk === 'range' ? { from_ms: br.from, to_ms: br.to } : { file: baseFile },
			ready: !!df && diffReady(), normalize: df ? df.normalize : null,
			normalizeDefault: diffReady() ? defaultNormalize(baseDoc, profile) : null,
			scale: df ? df.scale : null, widths: state.dw, baseTotal: df ? df.baseTotal : null,
			newTotal: df ? df.newTotal : null, baseDurationNs: baseDoc?.duration_ns ?? null,
			newDurationNs: profile?.duration_ns ?? null, baseLoads: debug.baseLoads, lastBaseUrl: debug.lastBaseUrl,
		};
	},
	get locks() {
		const v = locksView;
		return {
			state: v.state, message: v.message, loads: v.stats.loads, rows: v.doc ? kindRows(v.doc) : [],
			events: v.doc?.events ?? null, nodes: v.data ? v.data.n : 0, nodesDrawn: v.flame.stats.nodesDrawn,
			renders: v.flame.stats.renders, histBars: v.stats.bars, histSeries: v.stats.series, serverLocks,
		};
	},
	lockFrames(minW = 10, limit = 200) { return locksView.flame.visibleFrames(minW, limit); },
	diffNode(labels) { return diffNodeAt(labels); },
	frames(minW = 10, limit = 200) { return flame.visibleFrames(minW, limit); },
};

/** The diff values of the node at a zoom path (labels from the root's child), or null. */
function diffNodeAt(labels) {
	if (!data?.diff) return null;
	let i = 0;
	for (const label of labels) {
		let found = -1;
		for (const j of childrenOf(data, i)) {
			if (nodeLabel(data.nodes[j]) === label) {
				found = j;
				break;
			}
		}
		if (found < 0) return null;
		i = found;
	}
	const n = data.nodes[i];
	return { index: i, name: n.name, kind: n.kind, depth: data.depth[i], ...diffInfo(data, i) };
}
Object.defineProperty(window, '__hotcold', { value: Object.freeze(hook), writable: false, configurable: false });

// ---------------------------------------------------------------------------- start

bind();
syncControls();
refreshAll();
