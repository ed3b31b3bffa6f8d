// SPDX-License-Identifier: GPL-2.0-only
// diff.js: the data side of differential flame graphs (FlameGraph's difffolded.pl, speedscope's
// compare). Two hotcold-profile/1 trees, a base and a new one, are merged into one tree here;
// flame.js flattens and draws it (flattenDiff). Processes and threads are matched by name
// (pids and tids differ between captures), frames by (kind, name, module, inlined), wakers by
// name.
// Nodes that share a key on one side (two `postgres` processes) are summed.

/** Colour steps on each side of "unchanged" (flame.js adds 2 * DIFF_LEVELS + 1 colours). */
export const DIFF_LEVELS = 24;
/** A relative change of self time below this (2 %) is drawn as unchanged. */
export const DIFF_NEUTRAL = 0.02;

// Weights per node: v[0..3] base on-CPU, blocked, run-queue ns and samples; v[4..7] the new.
const SIDE = 4;

function keyOf(node) {
	switch (node.kind) {
	case 'process':
		return `p\0${node.name}`;
	case 'thread':
		return `t\0${node.name}`;
	case 'waker':
		return `w\0${node.name}`;
	default:
		// unresolved frames stay apart by offset, as in the flame graph and report --diff
		return `f\0${node.kind}\0${node.name}\0${node.module ?? ''}\0${node.offset ?? ''}\0${node.inlined === true}`;
	}
}

function mkNode(src, name) {
	const n = { name, kind: src.kind, module: src.module, offset: src.offset, v: [0, 0, 0, 0, 0, 0, 0, 0], children: [], ids: null, byKey: null };
	if (src.inlined === true) n.inlined = true;
	return n;
}

// Below this many children a linear scan finds a match faster than building and hashing keys
// (most frames have one to three children).
const SCAN_MAX = 12;

function sameNode(m, c, name) {
	if (m.name !== name || m.kind !== c.kind) return false;
	const k = c.kind;
	return k === 'process' || k === 'thread' || k === 'waker' ||
		(m.module === c.module && m.offset === c.offset && (m.inlined === true) === (c.inlined === true));
}

const MAX_IDS = 8; // pids/tids remembered per side for the tooltip

function addIds(dst, src, side) {
	const id = src.kind === 'thread' ? src.tid : src.pid;
	if (id === undefined) return;
	if (!dst.ids) dst.ids = [[], []];
	const a = dst.ids[side];
	if (a.length < MAX_IDS && !a.includes(id)) a.push(id);
}

function addWeights(dst, src, side) {
	const o = side * SIDE;
	dst.v[o] += +src.on_cpu_ns || 0;
	dst.v[o + 1] += +src.off_cpu_ns || 0;
	dst.v[o + 2] += +src.runqueue_ns || 0;
	dst.v[o + 3] += +src.samples || 0;
}

/**
 * Adds one side's tree under dst (the merged root). The filter ({pid, tid, comm}: strings,
 * '' = any) drops processes and threads as flatten() does, applied to both sides alike.
 * Iterative: paths may be ~260 levels deep and a merged tree has up to twice the nodes.
 */
function addSide(dst, srcRoot, side, filter, keyed) {
	const fPid = filter.pid ? Number(filter.pid) : -1;
	const fTid = filter.tid ? Number(filter.tid) : -1;
	const fComm = filter.comm || '';
	const stD = [dst];
	const stS = [srcRoot];
	while (stD.length) {
		const d = stD.pop();
		const s = stS.pop();
		const ch = s.children;
		if (!ch) continue;
		for (let k = 0; k < ch.length; k++) {
			const c = ch[k];
			if (c.kind === 'process' && ((fPid >= 0 && c.pid !== fPid) || (fComm && c.name !== fComm))) continue;
			if (c.kind === 'thread' && fTid >= 0 && c.tid !== fTid) continue;
			const name = typeof c.name === 'string' ? c.name : String(c.name ?? '');
			let m;
			if (d.byKey) m = d.byKey.get(keyOf(c));
			else {
				const dc = d.children;
				for (let j = 0; j < dc.length; j++) {
					if (sameNode(dc[j], c, name)) {
						m = dc[j];
						break;
					}
				}
			}
			if (!m) {
				m = mkNode(c, name);
				d.children.push(m);
				if (d.byKey) d.byKey.set(keyOf(c), m);
				else if (d.children.length > SCAN_MAX) {
					d.byKey = new Map();
					for (const x of d.children) d.byKey.set(keyOf(x), x);
					keyed.push(d);
				}
			}
			addWeights(m, c, side);
			if (c.kind === 'process' || c.kind === 'thread' || c.kind === 'waker') addIds(m, c, side);
			if (c.children && c.children.length) {
				stD.push(m);
				stS.push(c);
			}
		}
	}
}

/**
 * Merges two flamegraph roots into one diff tree: {name, kind, module?, inlined?, v: [8 weights],
 * ids: [[base ids], [new ids]] | null, children}. The root's weights are the documents' roots
 * (pruned time included), or with a filter what the kept processes add up to.
 */
export function mergeTrees(baseRoot, newRoot, filter = {}) {
	const root = mkNode({ kind: 'root' }, 'all');
	const keyed = []; // nodes that grew a key map: dropped once merged
	addSide(root, baseRoot, 0, filter, keyed);
	addSide(root, newRoot, 1, filter, keyed);
	const filtering = !!(filter.pid || filter.tid || filter.comm);
	if (filtering) {
		for (const c of root.children) for (let k = 0; k < 2 * SIDE; k++) root.v[k] += c.v[k];
	} else {
		addWeights(root, baseRoot, 0);
		addWeights(root, newRoot, 1);
	}
	for (const x of keyed) x.byKey = null;
	let n = 0;
	const st = [root];
	while (st.length) {
		const x = st.pop();
		n++;
		for (const c of x.children) st.push(c);
	}
	root.count = n; // capacity for flattenDiff
	return root;
}

/** Weight of a merged node for a mode ('all' | 'on' | 'off') on one side (0 base, 1 new). */
export function sideWeight(node, mode, side) {
	const o = side * SIDE;
	const v = node.v;
	if (mode === 'on') return v[o];
	if (mode === 'off') return v[o + 1] + v[o + 2];
	return v[o] + v[o + 1] + v[o + 2];
}

/** Relative change of a self time, base b -> new n: (n - b) / max(b, n), in [-1, 1]. */
export function relChange(b, n) {
	const m = Math.max(b, n);
	return m > 0 ? (n - b) / m : 0;
}

/** Colour level: 0 unchanged, 1..DIFF_LEVELS grew, -1..-DIFF_LEVELS shrank. */
export function diffLevel(rel) {
	const a = Math.abs(rel);
	if (!(a >= DIFF_NEUTRAL)) return 0;
	const l = Math.min(DIFF_LEVELS, Math.max(1, Math.ceil(a * DIFF_LEVELS)));
	return rel > 0 ? l : -l;
}

/** [r, g, b] of a level: white, to red (grew) or blue (shrank) as |level| grows. */
export function diffRGB(level) {
	const t = Math.min(1, Math.abs(level) / DIFF_LEVELS);
	const c = Math.round(255 - 200 * t);
	if (level > 0) return [255, c, c];
	if (level < 0) return [c, c, 255];
	return [255, 255, 255];
}

/**
 * Whether to scale base to new's total by default: when the two documents cover different
 * lengths of time (by more than 1 %), as two ranges picked on the heat map usually do.
 */
export function defaultNormalize(baseDoc, newDoc) {
	const b = Number(baseDoc?.duration_ns);
	const n = Number(newDoc?.duration_ns);
	if (!(b > 0 && n > 0)) return false;
	return Math.abs(b - n) > 0.01 * Math.max(b, n);
}
