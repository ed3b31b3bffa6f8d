// SPDX-License-Identifier: GPL-2.0-only
// hist.js: DTrace-style distributions (docs/histograms.md): one block per series, rows
// "value | bar | count", from one bucket before the first non-empty one to one after the last,
// the bar a share of the series' total, as libdtrace prints quantize()/lquantize().
import { fitCanvas, fmtInt } from './util.js';

const FONT = '12px "DejaVu Sans Mono", Menlo, Consolas, monospace';
const LINE_H = 16;
const MAX_SERIES = 64;

const HIST_COLORS = {
	priority: 'hsl(8,80%,52%)',
	oncpu_slice_us: 'hsl(24,85%,50%)',
	offcpu_us: 'hsl(212,75%,50%)',
	runqueue_latency_us: 'hsl(135,55%,36%)',
	runqueue_length: 'hsl(150,45%,38%)',
	lock_wait_ns: 'rgb(126,87,194)',
};

/** Display order: the documented ones first, anything newer after them by name. */
export const HIST_ORDER = ['priority', 'oncpu_slice_us', 'offcpu_us', 'runqueue_latency_us', 'runqueue_length', 'lock_wait_ns'];
export function histOrder(names) {
	const rank = (n) => (HIST_ORDER.includes(n) ? HIST_ORDER.indexOf(n) : HIST_ORDER.length);
	return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

export const HIST_TITLES = {
	priority: 'Priority of on-CPU samples (lquantize, like DTrace profpri.d)',
	runqueue_latency_us: 'Run-queue latency, µs (quantize, like bcc runqlat)',
	oncpu_slice_us: 'On-CPU time slices, µs (quantize, like bcc cpudist)',
	offcpu_us: 'Blocked time, µs (quantize, like bcc cpudist -O)',
	runqueue_length: 'Run-queue length at each sample (lquantize, like bcc runqlen)',
	lock_wait_ns: 'Kernel lock waits, ns, per kind, spin and block apart (quantize, like lockstat -h)',
};

// Quantize buckets are labelled by their bound nearest zero: 0, +-2^k.
const qPrev = (v) => (v > 1 ? v / 2 : v === 1 ? 0 : v === 0 ? -1 : v * 2);
const qNext = (v) => (v > 0 ? v * 2 : v === 0 ? 1 : v === -1 ? 0 : v / 2);
const qValue = (b) => (b.min !== null && b.min > 0 ? b.min : b.max !== null && b.max < 0 ? b.max : 0);

/** The rows DTrace prints for one series: [{label, count}]. */
export function seriesRows(h, series) {
	const buckets = series.buckets || [];
	if (h.type === 'quantize') {
		const nz = buckets.filter((b) => b.count > 0);
		if (!nz.length) return [-1, 0, 1].map((v) => ({ label: String(v), count: 0 }));
		const byValue = new Map(buckets.map((b) => [qValue(b), b.count]));
		const first = qValue(nz[0]);
		const last = qValue(nz[nz.length - 1]);
		const rows = [];
		const lo = first === -(2 ** 62) ? first : qPrev(first);
		const hi = last === 2 ** 62 ? last : qNext(last);
		for (let v = lo, guard = 0; guard < 130; guard++) {
			rows.push({ label: String(v), count: byValue.get(v) || 0 });
			if (v === hi) break;
			v = qNext(v);
		}
		return rows;
	}
	// lquantize: every bucket is listed; label underflow/overflow as DTrace does.
	const label = (b) => (b.min === null ? `< ${b.max + 1}` : b.max === null ? `>= ${b.min}` : String(b.min));
	let a = buckets.findIndex((b) => b.count > 0);
	let z = buckets.length - 1 - [...buckets].reverse().findIndex((b) => b.count > 0);
	if (a < 0) {
		a = 0;
		z = Math.min(2, buckets.length - 1);
	} else {
		a = Math.max(0, a - 1);
		z = Math.min(buckets.length - 1, z + 1);
	}
	return buckets.slice(a, z + 1).map((b) => ({ label: label(b), count: b.count }));
}

/**
 * Draws histograms into container (replacing its content).
 * @param list [{name, hist}] in display order; hist null with error text in `error`.
 * @returns {{bars: number, series: number}} bars: non-empty bars drawn.
 */
export function drawHistograms(container, list) {
	container.replaceChildren();
	let bars = 0;
	let seriesDrawn = 0;
	const width = Math.max(480, Math.min(860, container.clientWidth - 24));
	for (const { name, hist, error } of list) {
		const sec = document.createElement('section');
		sec.className = 'hist';
		sec.dataset.name = name;
		const h3 = document.createElement('h3');
		h3.textContent = name;
		const sub = document.createElement('span');
		sub.className = 'hist-sub';
		sub.textContent = HIST_TITLES[name] || (hist ? `${hist.type}, ${hist.unit}` : '');
		h3.append(' ', sub);
		sec.append(h3);
		container.append(sec);
		if (!hist) {
			const p = document.createElement('p');
			p.className = 'note';
			p.textContent = error || 'not available';
			sec.append(p);
			continue;
		}
		const series = (hist.series || []).slice(0, MAX_SERIES);
		if (!series.length) {
			const p = document.createElement('p');
			p.className = 'note';
			p.textContent = 'no data in this range';
			sec.append(p);
			continue;
		}
		const blocks = series.map((s) => ({ key: s.key, rows: seriesRows(hist, s) }));
		const lines = blocks.reduce((n, b) => n + b.rows.length + 3, 0);
		const canvas = document.createElement('canvas');
		canvas.className = 'hist-canvas';
		canvas.setAttribute('role', 'img');
		canvas.setAttribute('aria-label', `${name} distribution`);
		canvas.style.width = `${width}px`;
		canvas.style.height = `${lines * LINE_H}px`;
		sec.append(canvas);
		if ((hist.series || []).length > MAX_SERIES) {
			const p = document.createElement('p');
			p.className = 'note';
			p.textContent = `${hist.series.length - MAX_SERIES} more series not shown`;
			sec.append(p);
		}
		const [W, H, , ctx] = fitCanvas(canvas, width, lines * LINE_H);
		ctx.clearRect(0, 0, W, H);
		ctx.font = FONT;
		ctx.textBaseline = 'middle';
		const cw = ctx.measureText('0000000000').width / 10;
		const valueW = 18 * cw; // "%16s " and the bar's left edge
		const countX = W - 12 * cw;
		const barX = valueW + cw;
		const barW = Math.max(80, countX - barX - cw);
		const color = HIST_COLORS[name] || 'hsl(260,45%,55%)';
		let y = 0;
		for (const b of blocks) {
			seriesDrawn++;
			const total = b.rows.reduce((n, r) => n + r.count, 0);
			ctx.fillStyle = '#000';
			ctx.font = `bold ${FONT}`;
			ctx.fillText(b.key, 2 * cw, y + LINE_H / 2);
			ctx.font = FONT;
			y += LINE_H;
			ctx.fillStyle = '#666';
			ctx.textAlign = 'right';
			ctx.fillText(`value (${hist.unit})`, valueW - cw, y + LINE_H / 2);
			ctx.textAlign = 'center';
			ctx.fillText('Distribution', barX + barW / 2, y + LINE_H / 2);
			ctx.textAlign = 'left';
			ctx.fillText('count', countX, y + LINE_H / 2);
			y += LINE_H;
			for (const r of b.rows) {
				ctx.fillStyle = '#222';
				ctx.textAlign = 'right';
				ctx.fillText(r.label, valueW - cw, y + LINE_H / 2);
				ctx.textAlign = 'left';
				ctx.fillStyle = '#999';
				ctx.fillRect(barX - 2, y, 1, LINE_H);
				if (r.count > 0 && total > 0) {
					ctx.fillStyle = color;
					ctx.fillRect(barX, y + 2, Math.max(1, (r.count / total) * barW), LINE_H - 4);
					bars++;
				}
				ctx.fillStyle = '#222';
				ctx.fillText(fmtInt(r.count), countX, y + LINE_H / 2);
				y += LINE_H;
			}
			y += LINE_H;
		}
	}
	return { bars, series: seriesDrawn };
}
