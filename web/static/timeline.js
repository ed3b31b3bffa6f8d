// SPDX-License-Identifier: GPL-2.0-only
// timeline.js: FlameScope's sub-second heat map (columns = seconds, rows = row_ms slots, darker =
// more on-CPU samples) and the per-slot on-CPU / blocked / run-queue strip under it, from
// GET /api/timeline. Dragging on either selects a time range (onSelect(from_ms, to_ms)). For
// ranges above an hour the server sends no heat map (columns 0): the strip alone, one bar per
// slot of the step it picked (step_ms).
import { fitCanvas, fmtClock, fmtInt, fmtNs } from './util.js';
import { FAMILY_COLORS, FAMILY_NAMES } from './flame.js';

const LANE_H = 16;
const AXIS_H = 16;
const HEAT_LEVELS = 24;

function heatPalette() {
	// White-ish to dark red, like FlameScope's default scale.
	const out = [];
	for (let k = 0; k < HEAT_LEVELS; k++) {
		const t = (k + 1) / HEAT_LEVELS;
		const r = Math.round(255 - 70 * t);
		const g = Math.round(236 - 226 * t);
		const b = Math.round(206 - 200 * t);
		out.push(`rgb(${r},${g},${b})`);
	}
	return out;
}
const HEAT = heatPalette();
const TICKS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];

/** An axis label: the time, with the day (MM-DD HH:MM) on ranges longer than a day. */
function tickLabel(ms, spanS) {
	if (spanS <= 86400) return fmtClock(ms);
	const d = new Date(ms);
	const p = (n) => String(n).padStart(2, '0');
	return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

export class Timeline {
	constructor(els, cb) {
		this.els = els; // {heat, heatOverlay, heatNote, strip, stripOverlay, info}
		this.cb = cb;
		this.data = null;
		this.sel = null; // {from, to} unix ms
		this.base = null; // {from, to} unix ms: the base range of a differential graph
		this.drag = null;
		this.pending = false;
		new ResizeObserver(() => this.scheduleRender()).observe(els.heat.parentElement);
		this.bindDrag(els.heatOverlay, (x, y) => this.heatTime(x, y), (t) => t + this.rowMs());
		this.bindDrag(els.stripOverlay, (x) => this.slotTime(x), (t) => t + this.stepMs());
		els.heatOverlay.addEventListener('mousemove', (e) => this.hoverHeat(e));
		els.heatOverlay.addEventListener('mouseleave', () => this.setInfo(''));
	}

	rowMs() {
		return this.data?.heatmap?.row_ms || 20;
	}

	stepMs() {
		return this.data?.step_ms || 1000;
	}

	/** The time axis: the heat map's whole seconds, or the answer's range. */
	axis() {
		const d = this.data;
		const hm = d?.heatmap;
		if (hm && hm.columns > 0) return [hm.start_ms, hm.start_ms + hm.columns * 1000];
		if (d) return [d.from_ms, Math.max(d.to_ms, d.from_ms + 1)];
		return [0, 1];
	}

	xOf(t) {
		const [a, b] = this.axis();
		return ((t - a) / (b - a)) * this.els.heat.clientWidth;
	}

	/** Start of the heat-map cell under (x, y): second column + sub-second row. */
	heatTime(x, y) {
		const hm = this.data?.heatmap;
		if (!hm || !(hm.columns > 0)) return null;
		const W = this.els.heat.clientWidth;
		const H = this.els.heat.clientHeight;
		const col = Math.min(hm.columns - 1, Math.max(0, Math.floor((x / W) * hm.columns)));
		const row = Math.min(hm.rows - 1, Math.max(0, Math.floor((y / H) * hm.rows)));
		return hm.start_ms + col * 1000 + row * hm.row_ms;
	}

	/** Start of the strip slot under x. */
	slotTime(x) {
		const d = this.data;
		if (!d) return null;
		const [a, b] = this.axis();
		const t = a + (x / this.els.strip.clientWidth) * (b - a);
		const step = this.stepMs();
		const base = d.slots?.t_ms?.[0] ?? a;
		return base + Math.floor((t - base) / step) * step;
	}

	bindDrag(target, timeAt, cellEnd) {
		const pos = (e) => {
			const r = target.getBoundingClientRect();
			return [e.clientX - r.left, e.clientY - r.top];
		};
		target.addEventListener('mousedown', (e) => {
			if (e.button !== 0 || !this.data) return;
			e.preventDefault();
			const [x, y] = pos(e);
			const t = timeAt(x, y);
			if (t === null) return;
			this.drag = { t0: t, t1: t, x0: x, moved: false, cellEnd };
			const move = (ev) => {
				const [mx, my] = pos(ev);
				const tt = timeAt(mx, my);
				if (tt === null) return;
				this.drag.t1 = tt;
				if (Math.abs(mx - this.drag.x0) > 2) this.drag.moved = true;
				this.drawOverlays();
			};
			const up = (ev) => {
				window.removeEventListener('mousemove', move);
				window.removeEventListener('mouseup', up);
				move(ev);
				const dr = this.drag;
				this.drag = null;
				const from = Math.min(dr.t0, dr.t1);
				const to = dr.cellEnd(Math.max(dr.t0, dr.t1));
				this.cb.onSelect(from, to);
			};
			window.addEventListener('mousemove', move);
			window.addEventListener('mouseup', up);
		});
	}

	dragRange() {
		if (!this.drag) return this.sel;
		const from = Math.min(this.drag.t0, this.drag.t1);
		return { from, to: this.drag.cellEnd(Math.max(this.drag.t0, this.drag.t1)) };
	}

	hoverHeat(e) {
		const hm = this.data?.heatmap;
		if (!hm || !(hm.columns > 0)) return;
		const r = this.els.heatOverlay.getBoundingClientRect();
		const t = this.heatTime(e.clientX - r.left, e.clientY - r.top);
		const col = Math.floor((t - hm.start_ms) / 1000);
		const row = Math.floor((t - hm.start_ms - col * 1000) / hm.row_ms);
		const n = hm.counts?.[col]?.[row] ?? 0;
		this.setInfo(`${fmtClock(t, true)} +${hm.row_ms} ms: ${fmtInt(n)} on-CPU samples (drag to select)`);
	}

	setInfo(s) {
		this.els.info.textContent = s;
	}

	setData(data) {
		this.data = data;
		// The server fills the heat map for ranges up to an hour (columns 0 above): say so.
		const note = this.els.heatNote;
		note.hidden = !data || data.heatmap?.columns > 0;
		this.els.heat.classList.toggle('heat-none', !note.hidden);
		note.textContent = data && data.to_ms - data.from_ms > 3600e3
			? 'heat map: ranges up to 1 h (drag on the strip below to select a range, then zoom to it)'
			: 'no heat map for this range';
		this.scheduleRender();
	}

	setSelection(sel) {
		this.sel = sel;
		this.scheduleRender();
	}

	setBase(base) {
		this.base = base;
		this.scheduleRender();
	}

	scheduleRender() {
		if (this.pending) return;
		this.pending = true;
		requestAnimationFrame(() => {
			this.pending = false;
			this.render();
		});
	}

	render() {
		this.renderHeat();
		this.renderStrip();
		this.drawOverlays();
	}

	renderHeat() {
		const c = this.els.heat;
		const [W, H, , ctx] = fitCanvas(c, c.clientWidth, c.clientHeight);
		ctx.fillStyle = '#f6f6f6';
		ctx.fillRect(0, 0, W, H);
		const hm = this.data?.heatmap;
		if (!hm || !(hm.columns > 0) || !Array.isArray(hm.counts)) return;
		const cols = hm.columns;
		const rows = hm.rows;
		const max = hm.max > 0 ? hm.max : 1;
		// Bin columns into at most one per pixel (max of the bin).
		const bins = Math.max(1, Math.min(cols, Math.floor(W)));
		const cellH = H / rows;
		const paths = HEAT.map(() => []);
		for (let b = 0; b < bins; b++) {
			const c0 = Math.floor((b * cols) / bins);
			const c1 = Math.max(c0 + 1, Math.floor(((b + 1) * cols) / bins));
			const x = (c0 / cols) * W;
			const w = (c1 / cols) * W - x;
			for (let r = 0; r < rows; r++) {
				let v = 0;
				for (let k = c0; k < c1; k++) {
					const n = hm.counts[k]?.[r] ?? 0;
					if (n > v) v = n;
				}
				if (v <= 0) continue;
				const lvl = Math.min(HEAT_LEVELS - 1, Math.floor(Math.sqrt(v / max) * HEAT_LEVELS));
				paths[lvl].push(x, r * cellH, w > 2 ? w - 0.5 : w, cellH);
			}
		}
		for (let l = 0; l < HEAT_LEVELS; l++) {
			const p = paths[l];
			if (!p.length) continue;
			ctx.fillStyle = HEAT[l];
			ctx.beginPath();
			for (let k = 0; k < p.length; k += 4) ctx.rect(p[k], p[k + 1], p[k + 2], p[k + 3]);
			ctx.fill();
		}
	}

	renderStrip() {
		const c = this.els.strip;
		const [W, H, , ctx] = fitCanvas(c, c.clientWidth, c.clientHeight);
		ctx.clearRect(0, 0, W, H);
		const d = this.data;
		if (!d || !d.slots) return;
		const s = d.slots;
		const lanes = [s.on_cpu_ns || [], s.off_cpu_ns || [], s.runqueue_ns || []];
		const t = s.t_ms || [];
		const step = this.stepMs();
		ctx.font = '10px "DejaVu Sans", sans-serif';
		ctx.textBaseline = 'top';
		for (let f = 0; f < 3; f++) {
			const v = lanes[f];
			const top = f * LANE_H;
			let max = 0;
			for (const n of v) if (n > max) max = n;
			ctx.fillStyle = f % 2 ? '#f2f2f2' : '#fafafa';
			ctx.fillRect(0, top, W, LANE_H);
			if (max > 0) {
				ctx.fillStyle = FAMILY_COLORS[f];
				ctx.beginPath();
				for (let k = 0; k < v.length && k < t.length; k++) {
					if (!(v[k] > 0)) continue;
					const x = this.xOf(t[k]);
					const w = Math.max(1, this.xOf(t[k] + step) - x - (W / v.length > 3 ? 1 : 0));
					const h = Math.max(1, (v[k] / max) * (LANE_H - 2));
					ctx.rect(x, top + LANE_H - h, w, h);
				}
				ctx.fill();
			}
			const perS = max / (step / 1000);
			const label = `${FAMILY_NAMES[f]} (max ${fmtNs(perS)}/s)`;
			ctx.fillStyle = 'rgba(255,255,255,0.8)';
			ctx.fillRect(1, top + 1, ctx.measureText(label).width + 5, 12);
			ctx.fillStyle = '#222';
			ctx.fillText(label, 3, top + 2);
		}
		// Time axis.
		const top = 3 * LANE_H;
		ctx.fillStyle = '#fff';
		ctx.fillRect(0, top, W, AXIS_H);
		const [a, b] = this.axis();
		const spanS = (b - a) / 1000;
		const tick = TICKS_S.find((x) => (spanS / x) * 90 <= W) || 86400;
		ctx.fillStyle = '#555';
		ctx.strokeStyle = '#999';
		ctx.beginPath();
		const first = Math.ceil(a / 1000 / tick) * tick * 1000;
		for (let tt = first; tt <= b; tt += tick * 1000) {
			const x = Math.round(this.xOf(tt)) + 0.5;
			ctx.moveTo(x, top);
			ctx.lineTo(x, top + 4);
			if (x < W - 50) ctx.fillText(tickLabel(tt, spanS), x + 2, top + 3);
		}
		ctx.stroke();
	}

	drawOverlays() {
		const { heat, heatOverlay, strip, stripOverlay } = this.els;
		const [W, H, , hctx] = fitCanvas(heatOverlay, heat.clientWidth, heat.clientHeight);
		hctx.clearRect(0, 0, W, H);
		const [SW, SH, , sctx] = fitCanvas(stripOverlay, strip.clientWidth, strip.clientHeight);
		sctx.clearRect(0, 0, SW, SH);
		if (!this.data) return;
		// The base of a differential graph under the selection, in orange.
		if (this.base) this.drawRange(this.base, hctx, W, H, sctx, SW, ['rgba(255,140,0,0.30)', 'rgba(190,90,0,0.95)', 'rgba(255,140,0,0.28)']);
		const r = this.dragRange();
		if (r) this.drawRange(r, hctx, W, H, sctx, SW, ['rgba(20,90,255,0.28)', 'rgba(10,50,200,0.9)', 'rgba(20,90,255,0.22)']);
	}

	drawRange(r, hctx, W, H, sctx, SW, [fill, stroke, stripFill]) {
		const hm = this.data?.heatmap;
		// Heat map: shade the selected part of every column it crosses.
		if (hm && hm.columns > 0) {
			hctx.fillStyle = fill;
			hctx.strokeStyle = stroke;
			const colW = W / hm.columns;
			const c0 = Math.max(0, Math.floor((r.from - hm.start_ms) / 1000));
			const c1 = Math.min(hm.columns - 1, Math.floor((r.to - 1 - hm.start_ms) / 1000));
			for (let col = c0; col <= c1; col++) {
				const cs = hm.start_ms + col * 1000;
				const y0 = (Math.max(0, r.from - cs) / 1000) * H;
				const y1 = (Math.min(1000, r.to - cs) / 1000) * H;
				hctx.fillRect(col * colW, y0, Math.max(1, colW), y1 - y0);
			}
			const x0 = Math.max(0, this.xOf(r.from));
			const x1 = Math.min(W, this.xOf(r.to));
			if (x1 > x0) {
				hctx.lineWidth = 1;
				hctx.strokeRect(Math.floor(x0) + 0.5, 0.5, Math.max(1, x1 - x0 - 1), H - 1);
			}
		}
		const x0 = Math.max(0, this.xOf(r.from));
		const x1 = Math.min(SW, this.xOf(r.to));
		if (x1 <= x0) return;
		sctx.fillStyle = stripFill;
		sctx.fillRect(x0, 0, Math.max(1, x1 - x0), 3 * LANE_H);
	}
}
