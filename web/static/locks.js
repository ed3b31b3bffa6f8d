// SPDX-License-Identifier: GPL-2.0-only
// locks.js: the Locks view (docs/viewer.md): kernel lock contention of the range, lockstat
// style, from GET /api/locks or a saved profile's `locks` section (docs/locks.md): the table by
// kind (spin and block apart), the waiters' flame graph (flame.js) and the lock_wait_ns
// histograms (hist.js). Names from the data only reach the page through textContent or canvas
// text.
import { $, fmtInt, fmtNs, fmtPct } from './util.js';
import { FlameView, flatten } from './flame.js';
import { drawHistograms } from './hist.js';

const COLUMNS = ['kind', 'waited', 'count', 'total', 'max', 'mean', 'share'];

/** Rows of the table from a locks section's by_kind: [{kind, how, count, total, max, mean, share}]. */
export function kindRows(locks) {
	const by = Array.isArray(locks?.by_kind) ? locks.by_kind : [];
	const wait = Number(locks?.wait_ns) || by.reduce((n, k) => n + (Number(k.total_ns) || 0), 0);
	return by.map((k) => {
		const count = Number(k.count) || 0;
		const total = Number(k.total_ns) || 0;
		return {
			kind: String(k.kind), how: k.spin ? 'spin' : 'block', count, total,
			max: Number(k.max_ns) || 0, mean: count > 0 ? total / count : 0, share: wait > 0 ? total / wait : 0,
		};
	});
}

export class LocksView {
	/**
	 * @param {object} cb {onHover(data, i, clientX, clientY): the waiters' tooltip}
	 */
	constructor(cb) {
		this.cb = cb;
		this.doc = null; // the locks section shown (with its flamegraph), or null
		this.data = null; // the waiters' tree flattened
		this.state = 'empty'; // empty | shown | off | error
		this.message = '';
		this.stats = { loads: 0, rows: 0, bars: 0, series: 0 };
		this.flame = new FlameView(
			{ scroller: $('lflame-scroll'), spacer: $('lflame-spacer'), canvas: $('lflame'), overlay: $('lflame-overlay') },
			{
				onZoom: (i) => this.zoomTo(i),
				onHover: (i, x, y) => cb.onHover(this.data, i, x, y),
				onRender: () => {},
			},
		);
	}

	/** Lock tracking is off (or the file has no locks section): say so, draw nothing. */
	showOff(message) {
		this.state = 'off';
		this.message = message;
		this.doc = null;
		this.data = null;
		this.render();
	}

	showError(message) {
		this.state = 'error';
		this.message = message;
		this.render();
	}

	/**
	 * Shows a locks section: {events, wait_ns, by_kind, dropped, flamegraph} and the
	 * lock_wait_ns histogram (hist, or null). where: text describing the range.
	 */
	show(locks, hist, where) {
		const keepZoom = this.doc && this.data ? this.zoomLabels() : [];
		this.state = 'shown';
		this.message = where || '';
		this.doc = locks;
		this.hist = hist;
		const fg = locks?.flamegraph;
		this.data = fg && typeof fg === 'object' ? flatten(fg, 'all', {}) : null;
		this.stats.loads++;
		this.render(keepZoom);
	}

	zoomLabels() {
		const d = this.data;
		const out = [];
		for (let i = this.flame.zoom; i > 0; i = d.parent[i]) out.push(String(d.nodes[i].name));
		return out.reverse();
	}

	zoomTo(i) {
		if (!this.data) return;
		this.flame.setZoom(i);
	}

	/** Resets the layout when the panel becomes visible again. */
	shown() {
		this.flame.layoutDirty = true;
		this.flame.scheduleRender();
		if (this.doc) this.drawHist();
	}

	render(keepZoom = []) {
		const off = this.state === 'off' || this.state === 'error';
		const note = $('locks-note');
		note.hidden = !off;
		note.textContent = off ? this.message : '';
		note.className = this.state === 'error' ? 'error' : 'note';
		$('locks-body').hidden = off || !this.doc;
		if (off || !this.doc) return;
		this.renderInfo();
		this.renderTable();
		if (this.data) {
			// A zoomed frame that is still there stays zoomed across live reloads.
			let z = 0;
			for (const label of keepZoom) {
				let found = -1;
				for (let j = z + 1; j < this.data.end[z]; j = this.data.end[j]) {
					if (String(this.data.nodes[j].name) === label) {
						found = j;
						break;
					}
				}
				if (found < 0) break;
				z = found;
			}
			this.flame.setData(this.data, z);
		}
		this.drawHist();
	}

	renderInfo() {
		const l = this.doc;
		const parts = [];
		if (this.message) parts.push(this.message);
		parts.push(`${fmtInt(l.events)} contentions, waited ${fmtNs(Number(l.wait_ns))}`);
		if (l.failed > 0) parts.push(`${fmtInt(l.failed)} ended without the lock`);
		if (l.no_stack > 0) parts.push(`${fmtInt(l.no_stack)} without stacks (stack budget)`);
		const dropped = Object.entries(l.dropped || {}).filter(([, v]) => Number(v) > 0);
		if (dropped.length) parts.push(`dropped: ${dropped.map(([k, v]) => `${k} ${fmtInt(v)}`).join(', ')}`);
		const pruned = l.range?.pruned;
		if (pruned && pruned.nodes > 0) parts.push(`${fmtInt(pruned.nodes)} small frames folded into their parents`);
		$('locks-info').textContent = parts.join(' · ');
	}

	renderTable() {
		const rows = kindRows(this.doc);
		const body = $('locks-rows');
		body.replaceChildren();
		for (const r of rows) {
			const tr = document.createElement('tr');
			tr.className = r.how === 'spin' ? 'lk-spin' : 'lk-block';
			const cells = [r.kind, r.how, fmtInt(r.count), fmtNs(r.total), fmtNs(r.max), fmtNs(r.mean), fmtPct(r.share, 1)];
			cells.forEach((text, k) => {
				const td = document.createElement('td');
				td.textContent = text;
				td.dataset.col = COLUMNS[k];
				tr.append(td);
			});
			body.append(tr);
		}
		if (!rows.length) {
			const tr = document.createElement('tr');
			const td = document.createElement('td');
			td.colSpan = COLUMNS.length;
			td.className = 'muted';
			td.textContent = 'no lock contention in this range';
			tr.append(td);
			body.append(tr);
		}
		this.stats.rows = rows.length;
	}

	drawHist() {
		const el = $('lock-hists');
		if (el.clientWidth === 0) return; // hidden: drawn when shown
		// Series in the table's order, the most waited-for first (the store keeps them by name).
		const order = new Map(kindRows(this.doc).map((r, k) => [`${r.kind} ${r.how}`, k]));
		const rank = (s) => order.get(s.key) ?? order.size;
		const hist = this.hist && { ...this.hist, series: [...(this.hist.series || [])].sort((a, b) => rank(a) - rank(b)) };
		const r = drawHistograms(el, [
			hist ? { name: 'lock_wait_ns', hist } : { name: 'lock_wait_ns', hist: null, error: 'no lock_wait_ns histogram' },
		]);
		this.stats.bars = r.bars;
		this.stats.series = r.series;
	}
}
