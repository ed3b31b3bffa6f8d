// SPDX-License-Identifier: GPL-2.0-only
// flame.js: the flame graph. The hotcold-profile/1 tree is flattened once per (profile, mode,
// filter) into typed arrays in pre-order; zooming, searching and scrolling only change the
// viewport, so a redraw walks depth rows with a binary search and touches the visible nodes only.
import { fitCanvas } from './util.js';
import { DIFF_LEVELS, diffLevel, diffRGB, relChange, sideWeight } from './diff.js';

export const ROW_H = 18; // CSS px per depth row (17 px bar + 1 px gap)
const MIN_PX = 0.5; // narrower rectangles are merged into grey runs
const FONT_PX = 11;
const FONT = `${FONT_PX}px "DejaVu Sans Mono", Menlo, Consolas, monospace`;
const ANCESTOR_ALPHA = 0.55; // frames below the zoomed one, drawn full width

// Palette: three colour families (on-CPU, blocked, run-queue) x 16 shades, then specials.
// Within a family: 0-5 user frames, 6-11 kernel frames (by name hash), 12 process,
// 13 thread, 14 waker, 15 anything else.
export const FAM_ON = 0;
export const FAM_OFF = 1;
export const FAM_RQ = 2;
const SHADES = 16;
const C_ROOT = 3 * SHADES;
const C_MERGED = C_ROOT + 1;
const C_MATCH = C_ROOT + 2;
// Differential colours: C_DIFF0 + DIFF_LEVELS + level, level -DIFF_LEVELS..DIFF_LEVELS (diff.js).
const C_DIFF0 = C_ROOT + 3;
const C_DIFF_NEUTRAL = C_DIFF0 + DIFF_LEVELS;
// Lock nodes (kind "lock": the kernel lock a path waited for, docs/locks.md), whatever the
// family: violet, which no family uses; blocked (the main graph's, most waiters') deep,
// spinning light.
const C_LOCK = C_DIFF0 + 2 * DIFF_LEVELS + 1;
const C_LOCK_SPIN = C_LOCK + 1;
export const LOCK_RGB = [126, 87, 194];
export const LOCK_SPIN_RGB = [179, 157, 219];
export const MATCH_RGB = [230, 0, 230];
/** Background of a differential graph: white (unchanged) frames must stand out from it. */
export const DIFF_BG = '#e4e4e4';
/** Strong family colours: legend, split strips, timeline strip. */
export const FAMILY_COLORS = ['hsl(8,85%,50%)', 'hsl(212,75%,50%)', 'hsl(135,55%,36%)'];
export const FAMILY_NAMES = ['on-CPU', 'blocked', 'run-queue'];

const hsl = (h, s, l) => `hsl(${h},${s}%,${l}%)`;
function buildPalette() {
	const fam = [
		// [user hue, step], [kernel hue, step], sat, process, thread, waker, other
		{ u: [0, 8], k: [26, 5], s: 82, l: 56, p: hsl(6, 62, 46), t: hsl(16, 64, 52), wk: hsl(340, 55, 62), o: hsl(20, 40, 62) },
		{ u: [198, 5], k: [182, 4], s: 62, l: 60, p: hsl(222, 48, 48), t: hsl(215, 50, 55), wk: hsl(176, 48, 50), o: hsl(205, 30, 65) },
		{ u: [88, 6], k: [128, 5], s: 44, l: 52, p: hsl(110, 36, 38), t: hsl(120, 36, 45), wk: hsl(150, 40, 50), o: hsl(100, 25, 60) },
	];
	const colors = [];
	const dark = []; // true: draw white text on it
	for (const f of fam) {
		for (let i = 0; i < 6; i++) colors.push(hsl(f.u[0] + i * f.u[1], f.s, f.l + (i % 3) * 3));
		for (let i = 0; i < 6; i++) colors.push(hsl(f.k[0] + i * f.k[1], f.s - 6, f.l + 8 + (i % 3) * 3));
		colors.push(f.p, f.t, f.wk, f.o);
		for (let i = 0; i < 12; i++) dark.push(false);
		dark.push(true, false, false, false);
	}
	colors.push(hsl(0, 0, 74), hsl(0, 0, 82), `rgb(${MATCH_RGB.join(',')})`);
	dark.push(false, false, true);
	// sRGB channel -> linear light, for the relative luminance of a colour (WCAG).
	const lin = (c) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
	for (let l = -DIFF_LEVELS; l <= DIFF_LEVELS; l++) {
		const [r, g, b] = diffRGB(l);
		colors.push(`rgb(${r},${g},${b})`);
		// White text where black would have less contrast (relative luminance under ~0.18).
		dark.push(0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b) < 0.18);
	}
	colors.push(`rgb(${LOCK_RGB.join(',')})`, `rgb(${LOCK_SPIN_RGB.join(',')})`);
	dark.push(true, false);
	return { colors, dark };
}
const PALETTE = buildPalette();

// Shade within a family from a few characters of the name: stable for a name, cheap enough to
// run on every node (interning 100k names in a Map costs more than the rest of flatten).
function nameShade(s) {
	if (typeof s !== 'string' || s.length === 0) return 0;
	const n = s.length;
	const h = n * 31 + s.charCodeAt(0) * 7 + s.charCodeAt(n >> 1) * 13 + s.charCodeAt(n - 1) * 17 + s.charCodeAt((n * 3) >> 2);
	return h % 6;
}


/** What the viewer appends to an inlined frame's name (labels, tooltip). */
export const INLINED = ' (inlined)';

/**
 * Zoom-path label of a node: frames by name, processes/threads/wakers with their id. Nodes of
 * a differential graph match by name and carry no id: their label is the name alone. An
 * inlined frame is `NAME (inlined)`: it is not its out-of-line namesake.
 */
export function nodeLabel(node) {
	switch (node.kind) {
	case 'process':
		return node.pid === undefined ? node.name : `${node.name}#${node.pid}`;
	case 'thread':
		return node.tid === undefined ? node.name : `${node.name}#${node.tid}`;
	case 'waker':
		return node.tid === undefined ? `waker:${node.name}` : `waker:${node.name}#${node.tid}`;
	default:
		return node.inlined === true ? node.name + INLINED : node.name;
	}
}

// A process, thread or waker label without its id: a zoom path taken in a differential graph
// (names only) still resolves in the normal one and the other way round.
const withoutId = (label) => label.replace(/#\d+$/, '');
const hasId = (kind) => kind === 'process' || kind === 'thread' || kind === 'waker';

function weightFn(mode) {
	if (mode === 'on') return (n) => n.on_cpu_ns || 0;
	if (mode === 'off') return (n) => (n.off_cpu_ns || 0) + (n.runqueue_ns || 0);
	return (n) => (n.on_cpu_ns || 0) + (n.off_cpu_ns || 0) + (n.runqueue_ns || 0);
}

// kind -> code by its first letter (a keyed lookup on the string is several times slower).
function kindCode(kind) {
	switch (typeof kind === 'string' ? kind.charCodeAt(0) : 0) {
	case 117: return kind === 'user' ? 3 : 6;
	case 107: return kind === 'kernel' ? 4 : 6;
	case 112: return kind === 'process' ? 1 : 6;
	case 116: return kind === 'thread' ? 2 : 6;
	case 119: return kind === 'waker' ? 5 : 6;
	case 114: return kind === 'root' ? 0 : 6;
	case 108: return kind === 'lock' ? 7 : 6;
	default: return 6;
	}
}
const CODE_SHADE = [15, 12, 13, -1, -1, 14, 15, -2]; // -1: by name hash (user 0-5, kernel 6-11), -2: lock

/** How the viewer names a node: a lock node is a lock wait (docs/viewer.md). */
export function displayName(node) {
	if (node.kind === 'lock') return `lock wait: ${node.name}`;
	return node.inlined === true ? node.name + INLINED : String(node.name);
}

/**
 * Flattens a flamegraph tree (pre-order) for a mode ('all' | 'on' | 'off') and a filter
 * ({pid, tid, comm}: strings, '' = any). Children start at their parent's x; what is left on
 * the right is the parent's self time. Nodes of zero weight are dropped. Each JSON node is read
 * once (its properties are megamorphic: nodes have different optional keys); capacityHint
 * (e.g. from the document's size) avoids regrowing the arrays. minWeight > 0 drops nodes
 * lighter than it with their subtrees (their time stays in the parent): a quick first picture
 * of a huge profile before the complete flattening.
 */
function regrow(a, cap) {
	const b = new a.constructor(cap);
	b.set(a);
	return b;
}

export function rootWeight(root, mode) {
	return weightFn(mode)(root);
}

export function flatten(root, mode, filter = {}, capacityHint = 4096, minWeight = 0) {
	const t0 = performance.now();
	const fPid = filter.pid ? Number(filter.pid) : -1;
	const fTid = filter.tid ? Number(filter.tid) : -1;
	const fComm = filter.comm || '';
	const filtering = fPid >= 0 || fTid >= 0 || fComm !== '';
	const useOn = mode !== 'off';
	const useOff = mode !== 'on';

	let cap = Math.max(64, capacityHint | 0);
	let x = new Float64Array(cap);
	let w = new Float64Array(cap);
	let on = new Float64Array(cap);
	let off = new Float64Array(cap);
	let rq = new Float64Array(cap);
	let cursor = new Float64Array(cap); // where the next child of node i starts
	let depth = new Uint16Array(cap);
	let parent = new Int32Array(cap);
	let color = new Uint8Array(cap);
	let inl = new Uint8Array(cap); // 1: a function inlined into its parent frame (hatched)
	const nodes = [];

	// Explicit stack of (node, parent index, depth); children pushed last-first.
	const stN = [root];
	const stP = [-1];
	const stD = [0];
	let n = 0;
	let maxDepth = 0;
	while (stN.length) {
		const node = stN.pop();
		const p = stP.pop();
		const d = stD.pop();
		const kc = kindCode(node.kind);
		if (filtering && (kc === 1 || kc === 2)) {
			if (kc === 1 && ((fPid >= 0 && node.pid !== fPid) || (fComm && node.name !== fComm))) continue;
			if (kc === 2 && fTid >= 0 && node.tid !== fTid) continue;
		}
		const o = useOn ? +node.on_cpu_ns || 0 : 0;
		const f = useOff ? +node.off_cpu_ns || 0 : 0;
		const r = useOff ? +node.runqueue_ns || 0 : 0;
		const wi = o + f + r;
		if (p >= 0 && !(wi > 0 && wi >= minWeight)) continue;
		if (n === cap) {
			// Inline, not a closure: a closure would move these locals into a heap context.
			cap *= 2;
			x = regrow(x, cap); w = regrow(w, cap); on = regrow(on, cap); off = regrow(off, cap);
			rq = regrow(rq, cap); cursor = regrow(cursor, cap); depth = regrow(depth, cap);
			parent = regrow(parent, cap); color = regrow(color, cap); inl = regrow(inl, cap);
		}
		const i = n++;
		nodes.push(node);
		const xi = p >= 0 ? cursor[p] : 0;
		if (p >= 0) cursor[p] = xi + wi;
		x[i] = xi;
		cursor[i] = xi;
		w[i] = wi;
		on[i] = o;
		off[i] = f;
		rq[i] = r;
		parent[i] = p;
		depth[i] = d;
		if (node.inlined === true) inl[i] = 1;
		if (d > maxDepth) maxDepth = d;
		if (d === 0) color[i] = C_ROOT;
		else {
			let fam = FAM_ON;
			if (f > o && f >= r) fam = FAM_OFF;
			else if (r > o && r > f) fam = FAM_RQ;
			let shade = CODE_SHADE[kc];
			if (shade === -2) color[i] = f > o ? C_LOCK : C_LOCK_SPIN;
			else {
				if (shade < 0) shade = (kc === 4 ? 6 : 0) + nameShade(node.name);
				color[i] = fam * SHADES + shade;
			}
		}
		const ch = node.children;
		if (ch) {
			for (let k = ch.length - 1; k >= 0; k--) {
				stN.push(ch[k]);
				stP.push(i);
				stD.push(d + 1);
			}
		}
	}
	if (n === 0) {
		// Only a zero-weight root was refused above when it had a parent; keep an empty root.
		n = 1;
		nodes.push(root);
		color[0] = C_ROOT;
	}
	// The root: with a filter its width and split are what the kept processes add up to.
	const childSum = cursor[0] - x[0];
	if (filtering) {
		w[0] = childSum;
		on[0] = off[0] = rq[0] = 0;
		for (let j = 1; j < n; j++) {
			if (parent[j] !== 0) continue;
			on[0] += on[j];
			off[0] += off[j];
			rq[0] += rq[j];
		}
	} else if (childSum > w[0]) w[0] = childSum;
	const { end, rows } = subtreeEnds(n, parent, depth, maxDepth);
	return {
		n, x: x.subarray(0, n), w: w.subarray(0, n), on: on.subarray(0, n), off: off.subarray(0, n),
		rq: rq.subarray(0, n), depth: depth.subarray(0, n), parent: parent.subarray(0, n), end,
		color: color.subarray(0, n), inl: inl.subarray(0, n), nodes, rows, maxDepth,
		mode, total: w[0], partial: minWeight > 0, flattenMs: performance.now() - t0,
	};
}

/** end[i] (one past node i's subtree, pre-order) and the node indices of each depth row. */
function subtreeEnds(n, parent, depth, maxDepth) {
	const end = new Int32Array(n);
	for (let i = 0; i < n; i++) end[i] = i + 1;
	for (let i = n - 1; i > 0; i--) if (end[i] > end[parent[i]]) end[parent[i]] = end[i];
	const counts = new Int32Array(maxDepth + 1);
	for (let i = 0; i < n; i++) counts[depth[i]]++;
	const rows = [];
	for (let dd = 0; dd <= maxDepth; dd++) rows.push(new Int32Array(counts[dd]));
	counts.fill(0);
	for (let i = 0; i < n; i++) rows[depth[i]][counts[depth[i]]++] = i;
	return { end, rows };
}

/**
 * Flattens a merged diff tree (diff.js mergeTrees) for a mode, into the arrays flatten()
 * returns, plus `diff`: per node the base and new inclusive weights (bw, nw; bw already
 * scaled, braw as in the base document), self times (bs, ns), the relative change of the self
 * time (rel) and its colour level.
 * normalize: base is scaled by new total / base total (difffolded.pl -n). widths: 'new' draws
 * the new profile's widths (paths that vanished have none), 'base' the base's (paths that
 * appeared have none). Siblings are ordered by the drawn width, widest first, then by name.
 * The colour of a node is the change of its self time: where the time went, not the ancestors
 * it passed through (an ancestor's inclusive time changes with every child).
 */
export function flattenDiff(root, mode, { normalize = false, widths = 'new' } = {}) {
	const t0 = performance.now();
	const bTot = sideWeight(root, mode, 0);
	const nTot = sideWeight(root, mode, 1);
	const scale = normalize && bTot > 0 && nTot > 0 ? nTot / bTot : 1;
	const useBase = widths === 'base';
	const cap = Math.max(64, (root.count | 0) + 1);
	const x = new Float64Array(cap);
	const w = new Float64Array(cap);
	const on = new Float64Array(cap);
	const off = new Float64Array(cap);
	const rq = new Float64Array(cap);
	const bw = new Float64Array(cap);
	const braw = new Float64Array(cap);
	const nw = new Float64Array(cap);
	const bs = new Float64Array(cap);
	const ns = new Float64Array(cap);
	const rel = new Float64Array(cap);
	const level = new Int8Array(cap);
	const cursor = new Float64Array(cap);
	const depth = new Uint16Array(cap);
	const parent = new Int32Array(cap);
	const color = new Uint8Array(cap);
	const inl = new Uint8Array(cap);
	const nodes = [];
	const o = useBase ? 0 : 4; // the drawn side's split (diff.js weight layout)
	const sideScale = useBase ? scale : 1;
	const stN = [root];
	const stP = [-1];
	const stD = [0];
	let n = 0;
	let maxDepth = 0;
	while (stN.length) {
		const node = stN.pop();
		const p = stP.pop();
		const d = stD.pop();
		const bRaw = sideWeight(node, mode, 0);
		const b = bRaw * scale;
		const nn = sideWeight(node, mode, 1);
		const wi = useBase ? b : nn;
		if (p >= 0 && !(wi > 0)) continue;
		const i = n++;
		nodes.push(node);
		const xi = p >= 0 ? cursor[p] : 0;
		if (p >= 0) cursor[p] = xi + wi;
		x[i] = xi;
		cursor[i] = xi;
		w[i] = wi;
		bw[i] = b;
		braw[i] = bRaw;
		nw[i] = nn;
		const v = node.v;
		on[i] = mode !== 'off' ? v[o] * sideScale : 0;
		off[i] = mode !== 'on' ? v[o + 1] * sideScale : 0;
		rq[i] = mode !== 'on' ? v[o + 2] * sideScale : 0;
		parent[i] = p;
		depth[i] = d;
		if (node.inlined === true) inl[i] = 1;
		if (d > maxDepth) maxDepth = d;
		// Self = inclusive - children, over every child (also those not drawn at these widths),
		// in the documents' integer ns and scaled after: a node without self time on either
		// side must come out exactly 0, not a rounding residue coloured as a 100 % change.
		let cb = 0;
		let cn = 0;
		const ch = node.children;
		const keyed = [];
		for (const c of ch) {
			const cbw = sideWeight(c, mode, 0);
			const cnw = sideWeight(c, mode, 1);
			cb += cbw;
			cn += cnw;
			const cw = useBase ? cbw * scale : cnw;
			if (cw > 0) keyed.push([cw, c]);
		}
		bs[i] = Math.max(0, bRaw - cb) * scale;
		ns[i] = Math.max(0, nn - cn);
		rel[i] = relChange(bs[i], ns[i]);
		level[i] = diffLevel(rel[i]);
		color[i] = C_DIFF_NEUTRAL + level[i];
		keyed.sort((p1, p2) => p2[0] - p1[0] || (p1[1].name < p2[1].name ? -1 : p1[1].name > p2[1].name ? 1 : 0));
		for (let k = keyed.length - 1; k >= 0; k--) {
			stN.push(keyed[k][1]);
			stP.push(i);
			stD.push(d + 1);
		}
	}
	const childSum = cursor[0] - x[0];
	if (childSum > w[0]) w[0] = childSum;
	const { end, rows } = subtreeEnds(n, parent, depth, maxDepth);
	const cut = (a) => a.subarray(0, n);
	return {
		n, x: cut(x), w: cut(w), on: cut(on), off: cut(off), rq: cut(rq), depth: cut(depth),
		parent: cut(parent), end, color: cut(color), inl: cut(inl), nodes, rows, maxDepth,
		mode, total: w[0], partial: false, flattenMs: performance.now() - t0,
		diff: {
			scale, normalize: !!normalize, widths: useBase ? 'base' : 'new',
			baseTotal: bTot, newTotal: nTot, bw: cut(bw), braw: cut(braw), nw: cut(nw), bs: cut(bs), ns: cut(ns),
			rel: cut(rel), level: cut(level),
		},
	};
}

/** What the viewer knows about node i of a differential graph (tooltip, debug hook). */
export function diffInfo(data, i) {
	const df = data.diff;
	if (!df || i < 0 || i >= data.n) return null;
	const base = df.bw[i];
	const nw = df.nw[i];
	const delta = nw - base;
	return {
		base, baseRaw: df.braw[i], new: nw, delta, deltaPct: base > 0 ? (100 * delta) / base : null,
		baseSelf: df.bs[i], newSelf: df.ns[i], selfDelta: df.ns[i] - df.bs[i], rel: df.rel[i],
		level: df.level[i], rgb: diffRGB(df.level[i]),
	};
}

/** Children of node i: j = i + 1, then hop over each child's subtree. */
export function* childrenOf(data, i) {
	for (let j = i + 1; j < data.end[i]; j = data.end[j]) yield j;
}

/** Resolves zoom labels to a node index; stops at the deepest label that still matches. */
export function resolvePath(data, labels) {
	let i = 0;
	for (const label of labels) {
		let found = -1;
		for (const j of childrenOf(data, i)) {
			if (nodeLabel(data.nodes[j]) === label) {
				found = j;
				break;
			}
		}
		if (found < 0) {
			const bare = withoutId(label);
			for (const j of childrenOf(data, i)) {
				const n = data.nodes[j];
				if (hasId(n.kind) && withoutId(nodeLabel(n)) === bare) {
					found = j;
					break;
				}
			}
		}
		if (found < 0) break;
		i = found;
	}
	return i;
}

export function pathLabels(data, i) {
	const out = [];
	for (; i > 0; i = data.parent[i]) out.push(nodeLabel(data.nodes[i]));
	return out.reverse();
}

/**
 * The stripes over an inlined frame: 45° lines, 2 px of translucent white every 6 px (CSS px:
 * the pattern follows the canvas transform), anchored to the canvas, so neighbouring inlined
 * frames continue one another's stripes.
 */
export const HATCH_PERIOD = 6;
function hatchPattern(ctx) {
	const c = document.createElement('canvas');
	c.width = c.height = HATCH_PERIOD;
	const g = c.getContext('2d');
	g.strokeStyle = 'rgba(255,255,255,0.55)';
	g.lineWidth = 2;
	g.beginPath();
	// the diagonal and its two neighbours, so that the tile joins its copies seamlessly
	for (const o of [-HATCH_PERIOD, 0, HATCH_PERIOD]) {
		g.moveTo(o, HATCH_PERIOD);
		g.lineTo(o + HATCH_PERIOD, 0);
	}
	g.stroke();
	return ctx.createPattern(c, 'repeat');
}

export class FlameView {
	/**
	 * @param {object} els {scroller, spacer, canvas, overlay}
	 * @param {object} cb {onZoom(i), onHover(i, clientX, clientY), onRender(stats)}
	 */
	constructor(els, cb) {
		this.els = els;
		this.cb = cb;
		this.data = null;
		this.zoom = 0;
		this.icicle = false;
		this.matched = null; // Uint8Array per node, or null without a search
		this.match = { nodes: 0, ns: 0, viewNs: 0, pctTotal: 0 };
		this.hover = -1;
		this.contentH = 0;
		this.visMaxDepth = 0;
		this.pending = false;
		this.charW = 0;
		this.stats = { renders: 0, nodesDrawn: 0, mergedDrawn: 0, textsDrawn: 0, matchedDrawn: 0, lastRenderMs: 0 };
		this.buckets = PALETTE.colors.map(() => []);
		this.strips = [[], [], []];
		this.hatched = []; // inlined frames' rectangles: x, y, w, h
		this.hatchPattern = null;
		this.afterRender = []; // one-shot callbacks: (stats) after the next render
		this.layoutDirty = true;
		this.resetScroll = true;
		// Where the view is scrolled to, kept as a model value rather than read back from the
		// DOM at layout time (a hidden panel loses its scroll offset): px from the bottom in
		// flame order (root at the bottom), from the top as an icicle.
		this.anchor = 0;

		const { scroller, canvas } = els;
		scroller.addEventListener('scroll', () => {
			if (!this.layoutDirty && scroller.clientHeight > 0) {
				this.anchor = this.icicle ? scroller.scrollTop : Math.max(0, scroller.scrollHeight - scroller.clientHeight - scroller.scrollTop);
			}
			this.scheduleRender();
		}, { passive: true });
		new ResizeObserver(() => {
			this.layoutDirty = true;
			this.scheduleRender();
		}).observe(scroller);
		canvas.addEventListener('mousemove', (e) => {
			const i = this.hitTest(e.clientX, e.clientY);
			if (i !== this.hover) {
				this.hover = i;
				this.drawOverlay();
			}
			cb.onHover(i, e.clientX, e.clientY);
		});
		canvas.addEventListener('mouseleave', () => {
			this.hover = -1;
			this.drawOverlay();
			cb.onHover(-1, 0, 0);
		});
		canvas.addEventListener('click', (e) => {
			const i = this.hitTest(e.clientX, e.clientY);
			if (i >= 0) cb.onZoom(i, performance.now());
		});
	}

	setData(data, zoomIndex) {
		this.data = data;
		this.zoom = Math.min(zoomIndex, data.n - 1);
		this.hover = -1;
		this.layoutDirty = true;
		this.scheduleRender();
	}

	setZoom(i) {
		if (!this.data || i === this.zoom) return;
		this.zoom = i;
		this.hover = -1;
		this.layoutDirty = true;
		this.resetScroll = true;
		this.scheduleRender();
	}

	setIcicle(on) {
		if (on === this.icicle) return;
		this.icicle = on;
		this.layoutDirty = true;
		this.resetScroll = true;
		this.scheduleRender();
	}

	/** Marks the nodes whose name matches; the share counts a match once, not its nested matches. */
	setSearch(matcher) {
		const d = this.data;
		if (!d || !matcher) {
			this.matched = null;
			this.match = { nodes: 0, ns: 0, viewNs: 0, pctTotal: 0, pctView: 0 };
			this.scheduleRender();
			return this.match;
		}
		const m = new Uint8Array(d.n);
		let count = 0;
		const nodes = d.nodes;
		for (let i = 1; i < d.n; i++) {
			const name = nodes[i].name;
			if (typeof name === 'string' && matcher.test(name)) {
				m[i] = 1;
				count++;
			}
		}
		let ns = 0;
		for (let i = 1; i < d.n; ) {
			if (m[i]) {
				ns += d.w[i];
				i = d.end[i];
			} else i++;
		}
		this.matched = m;
		this.match = { nodes: count, ns, viewNs: this.viewMatchNs(), pctTotal: d.total > 0 ? (100 * ns) / d.total : 0 };
		this.match.pctView = d.w[this.zoom] > 0 ? (100 * this.match.viewNs) / d.w[this.zoom] : 0;
		this.scheduleRender();
		return this.match;
	}

	viewMatchNs() {
		const d = this.data;
		const m = this.matched;
		if (!d || !m) return 0;
		for (let a = this.zoom; a > 0; a = d.parent[a]) if (m[a]) return d.w[this.zoom];
		let ns = 0;
		for (let i = this.zoom + 1; i < d.end[this.zoom]; ) {
			if (m[i]) {
				ns += d.w[i];
				i = d.end[i];
			} else i++;
		}
		return ns;
	}

	scheduleRender(then) {
		if (then) this.afterRender.push(then);
		if (this.pending) return;
		this.pending = true;
		requestAnimationFrame(() => {
			this.pending = false;
			this.render();
		});
	}

	layout() {
		const d = this.data;
		const { scroller, spacer } = this.els;
		const viewH = scroller.clientHeight;
		let md = d ? d.depth[this.zoom] : 0;
		if (d) for (let i = this.zoom; i < d.end[this.zoom]; i++) if (d.depth[i] > md) md = d.depth[i];
		this.visMaxDepth = md;
		this.contentH = Math.max(viewH, (md + 1) * ROW_H + 4);
		spacer.style.height = `${this.contentH - viewH}px`;
		if (this.resetScroll) this.anchor = 0;
		this.resetScroll = false;
		const maxTop = this.contentH - viewH;
		scroller.scrollTop = this.icicle ? Math.min(this.anchor, maxTop) : Math.max(0, maxTop - this.anchor);
		this.layoutDirty = false;
	}

	rowTop(depth) {
		return this.icicle ? depth * ROW_H + 2 : this.contentH - (depth + 1) * ROW_H - 2;
	}

	render() {
		const t0 = performance.now();
		if (this.els.scroller.clientHeight === 0) {
			// Hidden (another tab): nothing to draw; lay out again when shown (ResizeObserver).
			this.layoutDirty = true;
			this.finishRender();
			return;
		}
		if (this.layoutDirty) this.layout();
		const d = this.data;
		const { scroller, canvas } = this.els;
		const cssW = scroller.clientWidth;
		const viewH = scroller.clientHeight;
		const [, , , ctx] = fitCanvas(canvas, cssW, viewH);
		ctx.clearRect(0, 0, cssW, viewH);
		if (d?.diff) {
			ctx.fillStyle = DIFF_BG;
			ctx.fillRect(0, 0, cssW, viewH);
		}
		const st = this.stats;
		st.nodesDrawn = st.mergedDrawn = st.textsDrawn = st.matchedDrawn = 0;
		if (!d || d.n === 0 || !(d.w[this.zoom] > 0)) {
			st.lastRenderMs = performance.now() - t0;
			st.renders++;
			this.finishRender();
			return;
		}
		const tSetup = performance.now();
		ctx.font = FONT;
		if (!this.charW) this.charW = ctx.measureText('MMMMMMMMMM').width / 10;
		const charW = this.charW;
		const z = this.zoom;
		const x0 = d.x[z];
		const span = d.w[z];
		const scale = cssW / span;
		const zDepth = d.depth[z];
		const scrollTop = scroller.scrollTop;
		const buckets = this.buckets;
		for (const b of buckets) b.length = 0;
		for (const s of this.strips) s.length = 0;
		const hatched = this.hatched;
		hatched.length = 0;
		const inl = d.inl;
		const texts = [];
		const ancestors = [];
		const matched = this.matched;
		const { x, w, color, nodes } = d;
		// The split strip tells on/off/run-queue apart; in a diff the colour means change.
		const splitOk = d.mode !== 'on' && !d.diff;
		let drawn = 0, merged = 0, mdrawn = 0;
		const barH = ROW_H - 1;

		// Pre-order walk of the zoomed subtree: a node narrower than MIN_PX is merged into its
		// row's grey run and its whole subtree skipped (its descendants are narrower still), so
		// the walk costs what is drawn, not the size of the tree. Pre-order meets the nodes of
		// one depth left to right, so one open run per depth is enough.
		const { depth, end } = d;
		const endZ = end[z];
		const mS = new Float64Array(this.visMaxDepth + 1).fill(-1);
		const mE = new Float64Array(this.visMaxDepth + 1).fill(-1);
		const flushRun = (dep, y) => {
			if (mE[dep] - mS[dep] >= MIN_PX) {
				buckets[C_MERGED].push(mS[dep], y, mE[dep] - mS[dep], barH);
				merged++;
			}
			mS[dep] = mE[dep] = -1;
		};
		const emit = (i, dep, y, px, pw) => {
			const isMatch = matched !== null && matched[i] === 1;
			const c = isMatch ? C_MATCH : color[i];
			const rw = pw >= 3 ? pw - 1 : pw;
			if (dep < zDepth) ancestors.push(i, px, y, rw, c);
			else buckets[c].push(px, y, rw, barH);
			if (inl[i] === 1 && rw >= 2) hatched.push(px, y, rw, barH);
			drawn++;
			if (isMatch) mdrawn++;
			if (splitOk && pw >= 8 && dep > 0) {
				const wi = d.on[i] + d.off[i] + d.rq[i];
				const mx = Math.max(d.on[i], d.off[i], d.rq[i]);
				if (wi > 0 && mx < 0.95 * wi) {
					let sx = px;
					const parts = [d.on[i], d.off[i], d.rq[i]];
					for (let f = 0; f < 3; f++) {
						const sw = (parts[f] / wi) * rw;
						if (sw > 0) this.strips[f].push(sx, y + barH - 3, sw, 3);
						sx += sw;
					}
				}
			}
			if (pw > charW * 2 + 6) {
				const name = displayName(nodes[i]);
				const fit = Math.floor((pw - 6) / charW);
				let label = null;
				if (name.length <= fit) label = name;
				else if (fit >= 4) label = `${name.slice(0, fit - 2)}..`;
				if (label !== null) texts.push(label, px + 3, y + barH / 2 + 0.5, PALETTE.dark[c] ? 1 : 0);
			}
		};
		// Ancestors of the zoomed node: full width, faded.
		for (let a = d.parent[z]; a >= 0; a = d.parent[a]) {
			const y = this.rowTop(depth[a]) - scrollTop;
			if (y + ROW_H >= 0 && y <= viewH) emit(a, depth[a], y, 0, cssW);
		}
		for (let i = z; i < endZ; ) {
			const dep = depth[i];
			const y = this.rowTop(dep) - scrollTop;
			const vis = y + ROW_H >= 0 && y <= viewH;
			let px = (x[i] - x0) * scale;
			let pr = (x[i] + w[i] - x0) * scale;
			if (px < 0) px = 0;
			if (pr > cssW) pr = cssW;
			const pw = pr - px;
			if (pw < MIN_PX) {
				if (vis) {
					if (mE[dep] >= 0 && px - mE[dep] < MIN_PX) mE[dep] = pr;
					else {
						flushRun(dep, y);
						mS[dep] = px;
						mE[dep] = pr;
					}
				}
				i = end[i];
				continue;
			}
			if (vis) {
				if (mE[dep] >= 0) flushRun(dep, y);
				emit(i, dep, y, px, pw);
			}
			i++;
		}
		for (let dep = 0; dep <= this.visMaxDepth; dep++) if (mE[dep] >= 0) flushRun(dep, this.rowTop(dep) - scrollTop);
		const tFill = performance.now();
		const colors = PALETTE.colors;
		for (let c = 0; c < buckets.length; c++) {
			const b = buckets[c];
			if (!b.length) continue;
			ctx.fillStyle = colors[c];
			ctx.beginPath();
			for (let k = 0; k < b.length; k += 4) ctx.rect(b[k], b[k + 1], b[k + 2], b[k + 3]);
			ctx.fill();
		}
		if (ancestors.length) {
			ctx.globalAlpha = ANCESTOR_ALPHA;
			for (let k = 0; k < ancestors.length; k += 5) {
				ctx.fillStyle = colors[ancestors[k + 4]];
				ctx.fillRect(ancestors[k + 1], ancestors[k + 2], ancestors[k + 3], barH);
			}
			ctx.globalAlpha = 1;
		}
		if (hatched.length) {
			// Inlined frames: the frame's own colour under diagonal light stripes.
			if (!this.hatchPattern) this.hatchPattern = hatchPattern(ctx);
			ctx.fillStyle = this.hatchPattern;
			ctx.beginPath();
			for (let k = 0; k < hatched.length; k += 4) ctx.rect(hatched[k], hatched[k + 1], hatched[k + 2], hatched[k + 3]);
			ctx.fill();
		}
		st.hatchedDrawn = hatched.length / 4;
		for (let f = 0; f < 3; f++) {
			const s = this.strips[f];
			if (!s.length) continue;
			ctx.fillStyle = FAMILY_COLORS[f];
			ctx.beginPath();
			for (let k = 0; k < s.length; k += 4) ctx.rect(s[k], s[k + 1], s[k + 2], s[k + 3]);
			ctx.fill();
		}
		const tText = performance.now();
		ctx.textBaseline = 'middle';
		for (const pass of [0, 1]) {
			ctx.fillStyle = pass ? '#fff' : '#111';
			for (let k = 0; k < texts.length; k += 4) if (texts[k + 3] === pass) ctx.fillText(texts[k], texts[k + 1], texts[k + 2]);
		}
		st.textMs = performance.now() - tText;
		st.walkMs = tFill - tSetup;
		st.fillMs = tText - tFill;
		st.setupMs = tSetup - t0;
		st.nodesDrawn = drawn;
		st.mergedDrawn = merged;
		st.textsDrawn = texts.length / 4;
		st.matchedDrawn = mdrawn;
		st.renders++;
		this.drawOverlay();
		st.lastRenderMs = performance.now() - t0;
		this.finishRender();
	}

	finishRender() {
		const cbs = this.afterRender;
		this.afterRender = [];
		for (const f of cbs) f(this.stats);
		this.cb.onRender(this.stats);
	}

	/** The rectangle of node i in canvas CSS px, or null when it is not in the view. */
	rectOf(i) {
		const d = this.data;
		if (!d || i < 0 || i >= d.n) return null;
		const z = this.zoom;
		const x0 = d.x[z];
		const span = d.w[z];
		const cssW = this.els.scroller.clientWidth;
		if (d.x[i] >= x0 + span || d.x[i] + d.w[i] <= x0) return null;
		if (d.depth[i] > this.visMaxDepth) return null;
		const scale = cssW / span;
		const px = Math.max(0, (d.x[i] - x0) * scale);
		const pr = Math.min(cssW, (d.x[i] + d.w[i] - x0) * scale);
		const y = this.rowTop(d.depth[i]) - this.els.scroller.scrollTop;
		return { x: px, y, w: pr - px, h: ROW_H - 1 };
	}

	drawOverlay() {
		const { overlay, scroller } = this.els;
		const [cssW, cssH, , ctx] = fitCanvas(overlay, scroller.clientWidth, scroller.clientHeight);
		ctx.clearRect(0, 0, cssW, cssH);
		const r = this.rectOf(this.hover);
		if (!r) return;
		ctx.strokeStyle = '#000';
		ctx.lineWidth = 1.5;
		ctx.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(1, r.w - 1.5), r.h - 1.5);
	}

	/** The node under a client (viewport) position: depth row, then binary search. */
	hitTest(clientX, clientY) {
		const d = this.data;
		if (!d) return -1;
		const rect = this.els.canvas.getBoundingClientRect();
		const cx = clientX - rect.left;
		const cy = clientY - rect.top + this.els.scroller.scrollTop;
		const dep = this.icicle ? Math.floor((cy - 2) / ROW_H) : Math.floor((this.contentH - 2 - cy) / ROW_H);
		if (dep < 0 || dep > this.visMaxDepth) return -1;
		const z = this.zoom;
		const span = d.w[z];
		const cssW = this.els.scroller.clientWidth;
		if (cx < 0 || cx >= cssW || !(span > 0)) return -1;
		const t = d.x[z] + (cx / cssW) * span;
		const row = d.rows[dep];
		let lo = 0, hi = row.length - 1, found = -1;
		while (lo <= hi) {
			const mid = (lo + hi) >> 1;
			if (d.x[row[mid]] <= t) {
				found = mid;
				lo = mid + 1;
			} else hi = mid - 1;
		}
		if (found < 0) return -1;
		const i = row[found];
		return t < d.x[i] + d.w[i] ? i : -1;
	}

	/** Debug/test helper: visible frames at least minW px wide, widest first. */
	visibleFrames(minW = 10, limit = 200) {
		const d = this.data;
		if (!d) return [];
		const out = [];
		const viewH = this.els.scroller.clientHeight;
		const cr = this.els.canvas.getBoundingClientRect();
		const consider = (i) => {
			const r = this.rectOf(i);
			if (!r || r.w < minW || r.y < 0 || r.y + r.h > viewH) return;
			const n = d.nodes[i];
			out.push({
				index: i, name: n.name, kind: n.kind, pid: n.pid, tid: n.tid, inlined: d.inl[i] === 1, depth: d.depth[i],
				value: d.w[i], onCpu: d.on[i], offCpu: d.off[i], runqueue: d.rq[i], x: cr.left + r.x, y: cr.top + r.y, w: r.w, h: r.h,
				matched: this.matched ? this.matched[i] === 1 : false, color: PALETTE.colors[d.color[i]], samples: n.samples,
			});
			if (d.diff) out[out.length - 1].diff = diffInfo(d, i);
		};
		for (let a = d.parent[this.zoom]; a >= 0; a = d.parent[a]) consider(a);
		for (let i = this.zoom; i < d.end[this.zoom]; i++) consider(i);
		out.sort((a, b) => b.w - a.w || a.index - b.index);
		return out.slice(0, limit);
	}
}
